package graph_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"testing"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/load"
	"github.com/omnigraph-go/omnigraph/graph/mutate"
	"github.com/omnigraph-go/omnigraph/recovery"
	"github.com/omnigraph-go/omnigraph/table"
)

// The writers under test, called only through their public entry points.
// A port of the graph package onto its subpackages changes these lines.
var (
	runLoad = func(ctx context.Context, g *graph.Graph, r io.Reader, opts load.Options) error {
		_, err := load.Run(ctx, g, r, opts)
		return err
	}
	runMutate = func(ctx context.Context, g *graph.Graph, src string, opts mutate.Options) error {
		_, err := mutate.Query(ctx, g, src, "", opts)
		return err
	}
	runDeleteBranch = func(ctx context.Context, g *graph.Graph, name string) error {
		return g.DeleteBranch(ctx, name)
	}
	runRepair = func(ctx context.Context, g *graph.Graph, confirm bool) (*graph.RepairReport, error) {
		return g.Repair(ctx, confirm)
	}
	// openForRepair opens a handle for runRepair as the CLI does.
	openForRepair = func(ctx context.Context, store backend.StorageAdapter, opts graph.OpenOptions) (*graph.Graph, error) {
		return graph.OpenForRepair(ctx, store, opts)
	}
)

// cwSeed is the graph every writer starts from: three people, two
// companies, three edges with explicit ids (so every run of the seed, and
// of the writers, produces the same rows).
const cwSeed = `{"type":"Person","data":{"name":"a","age":30}}
{"type":"Person","data":{"name":"b","age":31}}
{"type":"Person","data":{"name":"c","age":32}}
{"type":"Company","data":{"name":"x"}}
{"type":"Company","data":{"name":"y"}}
{"edge":"WorksAt","from":"a","to":"x","data":{"id":"e1"}}
{"edge":"WorksAt","from":"b","to":"y","data":{"id":"e2"}}
{"edge":"WorksAt","from":"c","to":"x","data":{"id":"e3"}}
`

func cwLoad(ctx context.Context, g *graph.Graph, branch string, mode load.Mode, data string) error {
	return runLoad(ctx, g, strings.NewReader(data), load.Options{Branch: branch, Mode: mode})
}

func cwSeedMain(t testing.TB, g *graph.Graph) {
	t.Helper()
	if err := cwLoad(context.Background(), g, "main", load.Append, cwSeed); err != nil {
		t.Fatalf("seed: %v", err)
	}
}

// cwWriter is one writer under the crash harness.
type cwWriter struct {
	name string
	// seed builds the acknowledged before-state (no faults armed).
	seed func(t testing.TB, r *crashRig)
	// run is the operation, through r.fault; its storage writes are what
	// the harness crashes.
	run func(ctx context.Context, r *crashRig) error
	// unfinished, when set, is what a restarted process runs when it finds
	// the before-state, to reach a writable graph (repair after a crash in
	// repair: the drift is still there); it must reach the after-state.
	unfinished func(ctx context.Context, t testing.TB, g *graph.Graph)
	// next, when set, is a writer-specific check that the recovered graph
	// takes writes (beyond the insert on main every writer gets).
	next func(ctx context.Context, t testing.TB, g *graph.Graph, where string)
}

var cwWriters = []cwWriter{
	{
		name: "mutation_update",
		seed: func(t testing.TB, r *crashRig) { cwSeedMain(t, r.g) },
		run: func(ctx context.Context, r *crashRig) error {
			return runMutate(ctx, r.g, `mutation m() { update Person set { age: 40 } where name = "a" update Person set { age: 41 } where name = "c" }`, mutate.Options{Branch: "main"})
		},
	},
	{
		// Deletes a and y: the cascade removes e1 (from a) and e2 (to
		// y), so the write touches Person, Company and WorksAt.
		name: "mutation_delete_cascade",
		seed: func(t testing.TB, r *crashRig) { cwSeedMain(t, r.g) },
		run: func(ctx context.Context, r *crashRig) error {
			return runMutate(ctx, r.g, `mutation m() { delete Person where name = "a" delete Company where name = "y" }`, mutate.Options{Branch: "main"})
		},
	},
	{
		// Replaces a (new age), inserts d and z, moves e1 to z, adds e4.
		name: "load_merge",
		seed: func(t testing.TB, r *crashRig) { cwSeedMain(t, r.g) },
		run: func(ctx context.Context, r *crashRig) error {
			return cwLoad(ctx, r.g, "main", load.Merge, `{"type":"Person","data":{"name":"a","age":50}}
{"type":"Person","data":{"name":"d","age":20}}
{"type":"Company","data":{"name":"z"}}
{"edge":"WorksAt","from":"a","to":"z","data":{"id":"e1"}}
{"edge":"WorksAt","from":"d","to":"z","data":{"id":"e4"}}
`)
		},
	},
	{
		// Replaces the whole Person and WorksAt images (b, c and their
		// edges go); Company keeps its rows.
		name: "load_overwrite",
		seed: func(t testing.TB, r *crashRig) { cwSeedMain(t, r.g) },
		run: func(ctx context.Context, r *crashRig) error {
			return cwLoad(ctx, r.g, "main", load.Overwrite, `{"type":"Person","data":{"name":"a","age":60}}
{"type":"Person","data":{"name":"d","age":21}}
{"edge":"WorksAt","from":"a","to":"y","data":{"id":"e5"}}
{"edge":"WorksAt","from":"d","to":"x","data":{"id":"e6"}}
`)
		},
	},
	{
		// A branch with forks of its own (Person, Company, WorksAt
		// written there), deleted from a handle on main.
		name: "branch_delete",
		seed: func(t testing.TB, r *crashRig) {
			ctx := context.Background()
			cwSeedMain(t, r.g)
			if _, err := r.g.CreateBranch(ctx, "feat", ""); err != nil {
				t.Fatal(err)
			}
			if err := cwLoad(ctx, r.g, "feat", load.Merge, `{"type":"Person","data":{"name":"f","age":1}}
{"type":"Company","data":{"name":"fc"}}
{"edge":"WorksAt","from":"f","to":"fc","data":{"id":"ef"}}
`); err != nil {
				t.Fatal(err)
			}
		},
		run: func(ctx context.Context, r *crashRig) error { return runDeleteBranch(ctx, r.g, "feat") },
		// Whether the delete landed or not, a branch of that name can be
		// (re)created and written, and shows main's rows exactly: no
		// residue of the deleted incarnation's forks comes back.
		next: func(ctx context.Context, t testing.TB, g *graph.Graph, where string) {
			t.Helper()
			if bs, _ := g.Branches(ctx); len(bs) > 1 {
				if err := runDeleteBranch(ctx, g, "feat"); err != nil {
					t.Fatalf("%s: delete the surviving branch: %v", where, err)
				}
			}
			if _, err := g.CreateBranch(ctx, "feat", ""); err != nil {
				t.Fatalf("%s: re-create the branch: %v", where, err)
			}
			if err := cwLoad(ctx, g, "feat", load.Merge, `{"type":"Company","data":{"name":"again"}}`+"\n"); err != nil {
				t.Fatalf("%s: write the re-created branch: %v", where, err)
			}
			img := imageOf(t, g)
			for _, key := range []string{recPerson, recCompany, graph.EdgeTableKey("WorksAt")} {
				want := img.Tables["main "+key]
				if key == recCompany {
					want = append(append([]string(nil), want...), "id=again,name=again")
					sort.Strings(want)
				}
				if got := img.Tables["feat "+key]; strings.Join(got, "|") != strings.Join(want, "|") {
					t.Fatalf("%s: re-created branch %s rows %v, want %v", where, key, got, want)
				}
			}
		},
	},
	{
		// Drift no sidecar covers (a foreign commit past the pin of
		// Person and of Company), then repair --confirm from a fresh
		// process, as the CLI runs it.
		name: "repair_confirm",
		seed: func(t testing.TB, r *crashRig) {
			cwSeedMain(t, r.g)
			commitStray(t, r.g, recPerson, "stray-p")
			commitStray(t, r.g, recCompany, "stray-c")
		},
		run: func(ctx context.Context, r *crashRig) error {
			g, err := openForRepair(ctx, r.fault, graph.OpenOptions{Process: graph.NewProcess()})
			if err != nil {
				return err
			}
			rep, err := runRepair(ctx, g, true)
			if err == nil && (!rep.Applied || len(rep.Records) != 1) {
				return fmt.Errorf("repair reported %+v, want the drift applied in one record", rep)
			}
			return err
		},
		unfinished: func(ctx context.Context, t testing.TB, g *graph.Graph) {
			t.Helper()
			rep, err := runRepair(ctx, g, true)
			if err != nil || !rep.Applied {
				t.Fatalf("repair again after a crash in repair: %+v %v", rep, err)
			}
		},
	},
}

// graphImage is the full content of a graph: for every live branch, every
// pinned table's rows (every column, ids and property values), sorted; and
// the table drift (HEAD past the pin) the manifest does not explain.
type graphImage struct {
	Tables map[string][]string // "branch table" -> rows
	Drift  []string            // "branch table"
}

func (a graphImage) equal(b graphImage) bool { return a.String() == b.String() }

func (a graphImage) String() string {
	keys := make([]string, 0, len(a.Tables))
	for k := range a.Tables {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var sb strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&sb, "%s: %s\n", k, strings.Join(a.Tables[k], " | "))
	}
	fmt.Fprintf(&sb, "drift: %v\n", a.Drift)
	return sb.String()
}

// tableRows is every row of one table at a snapshot, all columns, as
// sorted "col=value,..." strings.
func tableRows(t testing.TB, s *graph.Snapshot, key string) []string {
	t.Helper()
	ctx := context.Background()
	ds, err := s.OpenTable(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := ds.ScanRecord(ctx, table.ScanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	out := make([]string, 0, rec.NumRows())
	for i := 0; i < int(rec.NumRows()); i++ {
		cols := make([]string, rec.NumCols())
		for j := range cols {
			v := "NULL"
			if !rec.Column(j).IsNull(i) {
				v = rec.Column(j).ValueStr(i)
			}
			cols[j] = rec.ColumnName(j) + "=" + v
		}
		out = append(out, strings.Join(cols, ","))
	}
	sort.Strings(out)
	return out
}

func imageOf(t testing.TB, g *graph.Graph) graphImage {
	t.Helper()
	ctx := context.Background()
	bs, err := g.Branches(ctx)
	if err != nil {
		t.Fatal(err)
	}
	img := graphImage{Tables: map[string][]string{}}
	for _, b := range bs {
		s, err := g.Snapshot(ctx, b.Name)
		if err != nil {
			t.Fatalf("snapshot of live branch %s: %v", b.Name, err)
		}
		for _, p := range s.Tables() {
			img.Tables[b.Name+" "+p.Key] = tableRows(t, s, p.Key)
		}
	}
	ds, err := recovery.FindDrift(ctx, g.Store(), g.Manifest())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range ds {
		img.Drift = append(img.Drift, d.Branch+" "+d.Key)
	}
	sort.Strings(img.Drift)
	return img
}

// cwCheckRepairAudit: a repaired graph holds at most one repair audit row,
// and an acknowledged repair exactly one. (A repair that crashed between
// its publish and its audit append has none: repair arms no sidecar, so
// nothing writes the row later. See the report of item 18.)
func cwCheckRepairAudit(t testing.TB, g *graph.Graph, where string, acked bool) {
	t.Helper()
	rs, err := g.RecoveryAudit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, rec := range rs {
		if rec.RecoveryKind == recovery.Repaired {
			n++
		}
	}
	if n > 1 || (acked && n != 1) {
		t.Fatalf("%s: %d repair audit rows (acknowledged %v)", where, n, acked)
	}
}

// cwPrefixPoints is how many objects (0..n-1) the first DeletePrefix of a
// writer may remove before the crash, in the "prefix" mode.
const cwPrefixPoints = 4

// cwCommits is the commit history of every live branch.
func cwCommits(t testing.TB, g *graph.Graph) map[string][]string {
	t.Helper()
	ctx := context.Background()
	bs, err := g.Branches(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, b := range bs {
		cs, err := g.Commits(ctx, b.Name, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cs {
			out[b.Name] = append(out[b.Name], c.ID)
		}
	}
	return out
}

// cwReference runs the writer once without faults and returns the before-
// and after-images and the number of storage writes it made.
func cwReference(t *testing.T, be string, w cwWriter) (before, after graphImage, writes int) {
	t.Helper()
	r := newCrashRig(t, be)
	w.seed(t, r)
	before = imageOf(t, r.g)
	r.fault.Reset()
	if err := w.run(context.Background(), r); err != nil {
		t.Fatalf("the writer fails without a fault: %v", err)
	}
	writes = r.fault.Writes()
	g, err := graph.Open(context.Background(), r.fault, graph.OpenOptions{Process: graph.NewProcess()})
	if err != nil {
		t.Fatal(err)
	}
	assertConverged(t, g, r.fault)
	after = imageOf(t, g)
	if before.equal(after) {
		t.Fatalf("the writer changes nothing:\n%s", before)
	}
	return before, after, writes
}

// TestCrashAtEveryWriteOfEveryWriter pins item 18 for the writers beyond
// insert/append: update and cascading-delete mutations, merge and
// overwrite loads, branch delete, and repair --confirm over manufactured
// drift. For every storage write k of the operation it crashes at (the
// write is not applied) and after (applied, answer lost) write k, and part
// way through the writer's first DeletePrefix (if it makes one), drops
// the process (fresh process scope), reopens read-write so the open-time
// sweep runs, and checks: every table's full row content on every live
// branch, and the drift, is exactly the before-image or the after-image;
// an acknowledged success is the after-image; every HEAD equals its pin
// and no sidecar is left; and the next write succeeds.
func TestCrashAtEveryWriteOfEveryWriter(t *testing.T) {
	ctx := context.Background()
	for _, be := range []string{"mem", "local"} {
		for _, w := range cwWriters {
			t.Run(be+"/"+w.name, func(t *testing.T) {
				before, after, writes := cwReference(t, be, w)
				if writes < 2 {
					t.Fatalf("the writer made %d writes", writes)
				}
				landed := map[bool]int{}
				for _, mode := range []string{"at", "after", "prefix"} {
					for k := 1; ; k++ {
						r := newCrashRig(t, be)
						w.seed(t, r)
						if got := imageOf(t, r.g); !got.equal(before) {
							t.Fatalf("the seed is not deterministic:\n%s\nwant\n%s", got, before)
						}
						seedCommits := cwCommits(t, r.g)
						r.fault.Reset()
						switch mode {
						case "at":
							r.fault.CrashAtWrite(k)
						case "after":
							r.fault.CrashAfterWrite(k)
						case "prefix":
							// The first DeletePrefix stops after removing
							// k-1 objects.
							r.fault.CrashDeletePrefixAfter(k - 1)
						}
						err := w.run(ctx, r)
						crashed := r.fault.Crashed()
						r.fault.Heal()
						where := fmt.Sprintf("k=%d %s (op error %v)", k, mode, err)
						if !crashed && err != nil {
							t.Fatalf("%s: the writer failed without a crash", where)
						}
						if crashed && err != nil && !errors.Is(err, backend.ErrUnknown) && !errors.Is(err, graph.ErrRecoveryRequired) {
							t.Errorf("%s: a crash surfaced as an untyped error (want OutcomeUnknown or RecoveryRequired)", where)
						}
						if err != nil {
							assertNoInternalKeys(t, where, err.Error())
						}
						// A restarted process: no intent, gate or handle of
						// the writer survives.
						g, oerr := graph.Open(ctx, r.fault, graph.OpenOptions{Process: graph.NewProcess(), Actor: "tester"})
						if oerr != nil {
							t.Fatalf("%s: read-write reopen: %v", where, oerr)
						}
						got := imageOf(t, g)
						switch {
						case got.equal(after):
							landed[true]++
							if w.name == "repair_confirm" {
								cwCheckRepairAudit(t, g, where, err == nil)
							}
						case got.equal(before):
							landed[false]++
							if err == nil {
								t.Fatalf("%s: an acknowledged write is not visible:\n%s", where, got)
							}
							if w.unfinished != nil {
								w.unfinished(ctx, t, g)
								if again := imageOf(t, g); !again.equal(after) {
									t.Fatalf("%s: after finishing:\n%s\nwant\n%s", where, again, after)
								}
							}
						default:
							t.Fatalf("%s: the graph is neither the before- nor the after-image:\n%s\nbefore\n%s\nafter\n%s", where, got, before, after)
						}
						assertConverged(t, g, r.fault)
						// Acknowledged history is intact on the branches
						// that are still live.
						now := cwCommits(t, g)
						for b, ids := range seedCommits {
							if _, live := now[b]; !live {
								continue
							}
							for _, id := range ids {
								if !containsStr(now[b], id) {
									t.Fatalf("%s: acknowledged commit %s of %s lost", where, id, b)
								}
							}
						}
						// The graph takes writes.
						src := fmt.Sprintf(`mutation m() { insert Person { name: "next-%d" } }`, k)
						if err := runMutate(ctx, g, src, mutate.Options{Branch: "main"}); err != nil {
							t.Fatalf("%s: the next write: %v", where, err)
						}
						s, err := g.Snapshot(ctx, "main")
						if err != nil {
							t.Fatal(err)
						}
						if !containsStr(tableNames(t, s, recPerson), fmt.Sprintf("next-%d", k)) {
							t.Fatalf("%s: the next write is not visible", where)
						}
						if w.next != nil {
							w.next(ctx, t, g, where)
						}
						if mode == "prefix" && crashed && k == cwPrefixPoints {
							t.Logf("prefix: %d crash points part way through the first DeletePrefix", k)
							break
						}
						if !crashed {
							t.Logf("%s: %d crash points (reference run: %d writes)", mode, k-1, writes)
							break
						}
						if k > writes+20 {
							t.Fatalf("the writer never finished (%d writes in the reference run)", writes)
						}
					}
				}
				if landed[true] == 0 || landed[false] == 0 {
					t.Errorf("the harness never saw both outcomes: %v", landed)
				}
			})
		}
	}
}

// internalKeyMarks are pieces of storage keys that no user-facing message may
// contain (issue 11 items 14 and 15: say which branch and version, never the
// key).
var internalKeyMarks = []string{"__manifest/", "/.v/", "__recovery/", "_graph_commit_recoveries/", "tree/", "_versions/"}

func assertNoInternalKeys(t testing.TB, where, msg string) {
	t.Helper()
	for _, m := range internalKeyMarks {
		if strings.Contains(msg, m) {
			t.Errorf("%s: the error names an internal storage key (%q): %s", where, m, msg)
		}
	}
}
