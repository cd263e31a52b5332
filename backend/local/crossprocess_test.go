package local_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/local"
)

// Environment of a racing child process.
const (
	envChild   = "OMNIGRAPH_LOCAL_RACE_CHILD" // set to the child's id
	envDir     = "OMNIGRAPH_LOCAL_RACE_DIR"
	envMode    = "OMNIGRAPH_LOCAL_RACE_MODE" // "create" or "match"
	envKey     = "OMNIGRAPH_LOCAL_RACE_KEY"
	envVersion = "OMNIGRAPH_LOCAL_RACE_VERSION"
	envSync    = "OMNIGRAPH_LOCAL_RACE_SYNC" // directory for ready/go files
)

const (
	raceProcs  = 6
	raceRounds = 4
)

// TestCrossProcessChild is the body of a racing process; it does nothing in
// a normal run.
func TestCrossProcessChild(t *testing.T) {
	id := os.Getenv(envChild)
	if id == "" {
		t.Skip("helper for TestCrossProcessRace; runs only in a child process")
	}
	s, err := local.New(os.Getenv(envDir))
	if err != nil {
		fmt.Printf("RESULT error %v\n", err)
		return
	}
	sync := os.Getenv(envSync)
	if err := os.WriteFile(filepath.Join(sync, "ready-"+id), nil, 0o644); err != nil {
		fmt.Printf("RESULT error %v\n", err)
		return
	}
	// Block until the parent fires the starting gun on stdin, so the writes
	// overlap as closely as the scheduler allows.
	if _, err := os.Stdin.Read(make([]byte, 1)); err != nil {
		fmt.Printf("RESULT error no starting signal: %v\n", err)
		return
	}
	// Hold the compare-to-rename window open: without a real lock, every
	// process would sit in it together and several would win.
	local.SetAfterCompare(func() { time.Sleep(3 * time.Millisecond) })
	ctx := t.Context()
	key, data := os.Getenv(envKey), []byte("written by "+id)
	if os.Getenv(envMode) == "create" {
		_, err = s.PutIfAbsent(ctx, key, data)
	} else {
		_, err = s.PutIfMatch(ctx, key, data, os.Getenv(envVersion))
	}
	switch {
	case err == nil:
		fmt.Println("RESULT win")
	case errors.Is(err, backend.ErrPrecondition):
		fmt.Println("RESULT lose")
	default:
		fmt.Printf("RESULT error %v\n", err)
	}
}

// race starts raceProcs OS processes that each try one conditional write of
// key, and returns the id of the single winner.
func race(t *testing.T, dir, mode, key, version string) string {
	t.Helper()
	sync := t.TempDir()
	cmds := make([]*exec.Cmd, raceProcs)
	guns := make([]io.WriteCloser, raceProcs)
	outs := make([]*bytes.Buffer, raceProcs)
	for i := range cmds {
		id := fmt.Sprintf("p%d", i)
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrossProcessChild$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), envChild+"="+id, envDir+"="+dir, envMode+"="+mode,
			envKey+"="+key, envVersion+"="+version, envSync+"="+sync)
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
	// Fire once every child is ready.
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(time.Millisecond) {
		ents, _ := os.ReadDir(sync)
		if len(ents) == raceProcs {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d children got ready", len(ents), raceProcs)
		}
	}
	for _, gun := range guns {
		gun.Write([]byte{1})
		gun.Close()
	}
	winner := ""
	for i, cmd := range cmds {
		err := cmd.Wait()
		out := outs[i].String()
		id := fmt.Sprintf("p%d", i)
		switch {
		case err != nil:
			t.Fatalf("child %s: %v\n%s", id, err, out)
		case strings.Contains(out, "RESULT win"):
			if winner != "" {
				t.Fatalf("%s %s: processes %s and %s both won", mode, key, winner, id)
			}
			winner = id
		case strings.Contains(out, "RESULT lose"):
		default:
			t.Fatalf("child %s did not lose with Precondition:\n%s", id, out)
		}
	}
	if winner == "" {
		t.Fatalf("%s %s: no process won", mode, key)
	}
	return winner
}

func TestCrossProcessRace(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	dir := t.TempDir()
	s, err := local.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	t.Run("PutIfAbsent", func(t *testing.T) {
		for round := 0; round < raceRounds; round++ {
			key := fmt.Sprintf("claims/%d", round)
			winner := race(t, dir, "create", key, "")
			got, _, err := s.Get(ctx, key)
			if err != nil || string(got) != "written by "+winner {
				t.Fatalf("round %d: content %q, %v; want the winner %s's", round, got, err, winner)
			}
		}
	})
	t.Run("PutIfMatch", func(t *testing.T) {
		a, err := s.Put(ctx, "lease", []byte("start"))
		if err != nil {
			t.Fatal(err)
		}
		for round := 0; round < raceRounds; round++ {
			winner := race(t, dir, "match", "lease", a.Version)
			got, attrs, err := s.Get(ctx, "lease")
			if err != nil || string(got) != "written by "+winner {
				t.Fatalf("round %d: content %q, %v; want the winner %s's", round, got, err, winner)
			}
			if attrs.Version == a.Version {
				t.Fatalf("round %d: version did not move", round)
			}
			a = attrs
		}
	})
}
