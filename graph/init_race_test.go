package graph_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/fault"
	"github.com/omnigraph-go/omnigraph/backend/local"
	"github.com/omnigraph-go/omnigraph/backend/mem"
	"github.com/omnigraph-go/omnigraph/graph"
)

// otherSchema shares Person (same columns) with testSchema and adds a type
// of its own, so its inits adopt and create tables alongside testSchema's.
const otherSchema = `
node Person {
  name: String @key
  age: I32?
}
node Dog {
  name: String @key
}
`

// checkWholeGraph opens the graph at store through a fresh handle and
// asserts it is the winner's and fully readable: every pinned table opens,
// the accepted schema is stored, and a write commits.
func checkWholeGraph(t *testing.T, store backend.StorageAdapter, winnerID, winnerSchema string) {
	t.Helper()
	ctx := context.Background()
	g, err := graph.Open(ctx, store, graph.OpenOptions{})
	if err != nil {
		t.Fatalf("open after the race: %v", err)
	}
	if g.ID() != winnerID {
		t.Fatalf("graph id %s, want the winner's %s", g.ID(), winnerID)
	}
	snap, err := g.Snapshot(ctx, "main")
	if err != nil {
		t.Fatal(err)
	}
	cat, err := snap.Catalog(ctx)
	if err != nil {
		t.Fatalf("the winner's schema is unreadable: %v", err)
	}
	if cat.Identity != winnerSchema {
		t.Fatalf("schema %s, want the winner's %s", cat.Identity, winnerSchema)
	}
	if _, err := snap.TableStats(ctx); err != nil {
		t.Fatalf("a table of the winner's graph is unreadable: %v", err)
	}
	mustInsertPerson(t, g, "after-race")
	snap, err = g.Snapshot(ctx, "main")
	if err != nil {
		t.Fatal(err)
	}
	stats, err := snap.TableStats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range stats {
		if s.Key == graph.NodeTableKey("Person") && s.Rows != 1 {
			t.Fatalf("Person has %d rows after one insert", s.Rows)
		}
	}
}

// TestRacingInitsNeverDeleteTheWinnersFiles pins "init never deletes what
// it did not create in this attempt; of racing inits one wins and every
// loser gets ErrGraphExists (or, for a different schema whose table it could
// not adopt, ErrNotEmpty), and the winner's graph stays whole".
func TestRacingInitsNeverDeleteTheWinnersFiles(t *testing.T) {
	const racers, rounds = 8, 12
	stores := []struct {
		name string
		new  func(t *testing.T) backend.StorageAdapter
	}{
		{"mem", func(*testing.T) backend.StorageAdapter { return mem.New() }},
		{"local", func(t *testing.T) backend.StorageAdapter {
			s, err := local.New(filepath.Join(t.TempDir(), "graph"))
			if err != nil {
				t.Fatal(err)
			}
			return s
		}},
	}
	for _, st := range stores {
		for _, mixed := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/mixed=%v", st.name, mixed), func(t *testing.T) {
				for round := 0; round < rounds; round++ {
					store := st.new(t)
					var (
						start sync.WaitGroup
						done  sync.WaitGroup
						errs  = make([]error, racers)
						gs    = make([]*graph.Graph, racers)
					)
					start.Add(1)
					for i := 0; i < racers; i++ {
						done.Add(1)
						go func(i int) {
							defer done.Done()
							schema := testSchema
							if mixed && i%2 == 1 {
								schema = otherSchema
							}
							start.Wait()
							gs[i], errs[i] = graph.Init(context.Background(), store, schema, graph.InitOptions{})
						}(i)
					}
					start.Done()
					done.Wait()
					winner := -1
					for i, err := range errs {
						switch {
						case err == nil && winner >= 0:
							t.Fatalf("round %d: inits %d and %d both succeeded", round, winner, i)
						case err == nil:
							winner = i
						case errors.Is(err, graph.ErrGraphExists):
						case mixed && errors.Is(err, graph.ErrNotEmpty) && strings.Contains(err.Error(), "--force"):
						default:
							t.Fatalf("round %d: losing init %d: %v, want ErrGraphExists", round, i, err)
						}
					}
					if winner < 0 {
						t.Fatalf("round %d: no init succeeded: %v", round, errs)
					}
					snap, err := gs[winner].Snapshot(context.Background(), "main")
					if err != nil {
						t.Fatal(err)
					}
					checkWholeGraph(t, store, gs[winner].ID(), snap.SchemaIdentity())
				}
			})
		}
	}
}

// Environment of an init-racing child process.
const (
	envInitChild = "OMNIGRAPH_INIT_RACE_CHILD"
	envInitDir   = "OMNIGRAPH_INIT_RACE_DIR"
	envInitSync  = "OMNIGRAPH_INIT_RACE_SYNC"
)

// TestInitRaceChild is the body of one racing init process; it does
// nothing in a normal run.
func TestInitRaceChild(t *testing.T) {
	id := os.Getenv(envInitChild)
	if id == "" {
		t.Skip("helper for TestRacingInitProcesses; runs only in a child process")
	}
	s, err := local.New(os.Getenv(envInitDir))
	if err != nil {
		fmt.Printf("RESULT error %v\n", err)
		return
	}
	if err := os.WriteFile(filepath.Join(os.Getenv(envInitSync), "ready-"+id), nil, 0o644); err != nil {
		fmt.Printf("RESULT error %v\n", err)
		return
	}
	if _, err := os.Stdin.Read(make([]byte, 1)); err != nil {
		fmt.Printf("RESULT error no starting signal: %v\n", err)
		return
	}
	g, err := graph.Init(context.Background(), s, testSchema, graph.InitOptions{})
	switch {
	case err == nil:
		fmt.Printf("RESULT win %s\n", g.ID())
	case errors.Is(err, graph.ErrGraphExists):
		fmt.Println("RESULT exists")
	default:
		fmt.Printf("RESULT error %v\n", err)
	}
}

// TestRacingInitProcesses runs the init race with real OS processes on one
// local directory: exactly one wins, the others report ErrGraphExists, and
// the winner's graph is whole afterwards.
func TestRacingInitProcesses(t *testing.T) {
	const procs = 4
	dir := filepath.Join(t.TempDir(), "graph")
	sync := t.TempDir()
	cmds := make([]*exec.Cmd, procs)
	guns := make([]io.WriteCloser, procs)
	outs := make([]*bytes.Buffer, procs)
	for i := range cmds {
		cmd := exec.Command(os.Args[0], "-test.run=^TestInitRaceChild$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), envInitChild+"="+fmt.Sprint(i), envInitDir+"="+dir, envInitSync+"="+sync)
		outs[i] = new(bytes.Buffer)
		cmd.Stdout, cmd.Stderr = outs[i], outs[i]
		gun, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		guns[i] = gun
		if err := cmd.Start(); err != nil {
			t.Fatalf("start child: %v", err)
		}
		cmds[i] = cmd
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(time.Millisecond) {
		if ents, _ := os.ReadDir(sync); len(ents) == procs {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the children did not get ready")
		}
	}
	for _, gun := range guns {
		gun.Write([]byte{1})
		gun.Close()
	}
	winnerID := ""
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("child %d: %v\n%s", i, err, outs[i])
		}
		out := outs[i].String()
		switch {
		case strings.Contains(out, "RESULT win "):
			if winnerID != "" {
				t.Fatalf("two processes won the init race")
			}
			rest := out[strings.Index(out, "RESULT win ")+len("RESULT win "):]
			winnerID = strings.Fields(rest)[0]
		case strings.Contains(out, "RESULT exists"):
		default:
			t.Fatalf("child %d: %s", i, out)
		}
	}
	if winnerID == "" {
		t.Fatal("no process won the init race")
	}
	s, err := local.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	g, err := graph.Open(context.Background(), s, graph.OpenOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := g.Snapshot(context.Background(), "main")
	if err != nil {
		t.Fatal(err)
	}
	checkWholeGraph(t, s, winnerID, snap.SchemaIdentity())
}

// TestInitLeftoversOfAnotherSchema pins "init adopts only leftovers it
// would have written itself; other leftovers are refused (ErrNotEmpty,
// pointing at --force) and kept, and ReclaimLeftovers deletes them".
func TestInitLeftoversOfAnotherSchema(t *testing.T) {
	ctx := context.Background()
	m := mem.New()
	// An interrupted init of a schema whose Person has other columns: its
	// Person table was created, then the process died.
	f := fault.New(m)
	other := "node Person {\n  name: String @key\n  email: String?\n}\n"
	for k := 1; ; k++ {
		f.Reset()
		for _, key := range allKeys(t, m) {
			m.Delete(ctx, key)
		}
		f.CrashAtWrite(k)
		if _, err := graph.Init(ctx, f, other, graph.InitOptions{}); err == nil {
			t.Fatal("never crashed after creating the Person table")
		}
		if _, err := m.Stat(ctx, "nodes/Person/_versions/18446744073709551614.json"); err == nil {
			break
		}
	}
	f.Reset()
	left := allKeys(t, m)
	_, err := graph.Init(ctx, m, testSchema, graph.InitOptions{})
	if !errors.Is(err, graph.ErrNotEmpty) || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("Init over another schema's leftovers = %v, want ErrNotEmpty pointing at --force", err)
	}
	for _, k := range left {
		if _, err := m.Stat(ctx, k); err != nil {
			t.Fatalf("the refused init deleted %s", k)
		}
	}
	g, err := graph.Init(ctx, m, testSchema, graph.InitOptions{ReclaimLeftovers: true})
	if err != nil {
		t.Fatalf("Init with ReclaimLeftovers: %v", err)
	}
	snap, err := g.Snapshot(ctx, "main")
	if err != nil {
		t.Fatal(err)
	}
	checkWholeGraph(t, m, g.ID(), snap.SchemaIdentity())
}
