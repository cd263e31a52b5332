package table

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/fault"
	"github.com/omnigraph-go/omnigraph/backend/mem"
)

// crashOp stages and commits one operation against ds (opened through the
// fault injector) and returns the staged transaction, if staging finished.
type crashOp struct {
	name string
	run  func(ctx context.Context, t *testing.T, ds *Dataset) (*Staged, error)
}

func crashOps() []crashOp {
	recs := func(t *testing.T, p []person) []arrow.Record { return []arrow.Record{record(t, p)} }
	stageThen := func(f func(ctx context.Context, t *testing.T, ds *Dataset) (*Staged, error)) func(context.Context, *testing.T, *Dataset) (*Staged, error) {
		return func(ctx context.Context, t *testing.T, ds *Dataset) (*Staged, error) {
			st, err := f(ctx, t, ds)
			if err != nil {
				return nil, err
			}
			_, err = Commit(ctx, st)
			return st, err
		}
	}
	return []crashOp{
		{"append", stageThen(func(ctx context.Context, t *testing.T, ds *Dataset) (*Staged, error) {
			return ds.StageAppend(ctx, recs(t, people("n", 0, 3))...)
		})},
		{"delete", stageThen(func(ctx context.Context, t *testing.T, ds *Dataset) (*Staged, error) {
			return ds.StageDelete(ctx, Or(Eq("age", 1), Eq("id", "b000002")))
		})},
		{"overwrite", stageThen(func(ctx context.Context, t *testing.T, ds *Dataset) (*Staged, error) {
			return ds.StageOverwrite(ctx, recs(t, people("o", 0, 2))...)
		})},
		{"empty overwrite", stageThen(func(ctx context.Context, t *testing.T, ds *Dataset) (*Staged, error) {
			return ds.StageOverwrite(ctx)
		})},
		{"merge insert", stageThen(func(ctx context.Context, t *testing.T, ds *Dataset) (*Staged, error) {
			return ds.StageMergeInsert(ctx, recs(t, []person{{"a000001", "up", 9}, {"z", "z", 1}})...)
		})},
		{"changes", stageThen(func(ctx context.Context, t *testing.T, ds *Dataset) (*Staged, error) {
			return ds.StageChanges(ctx, Changes{DeleteKeys: []string{"a000000", "b000001"}, Upsert: recs(t, []person{{"q", "q", 1}})})
		})},
		{"restore", stageThen(func(ctx context.Context, t *testing.T, ds *Dataset) (*Staged, error) {
			return ds.StageRestore(ctx, 2)
		})},
		{"create index", stageThen(func(ctx context.Context, t *testing.T, ds *Dataset) (*Staged, error) {
			return ds.StageCreateIndex(ctx, "name")
		})},
		{"compact", stageThen(func(ctx context.Context, t *testing.T, ds *Dataset) (*Staged, error) {
			return ds.StageCompact(ctx, CompactOptions{})
		})},
	}
}

// crashBase builds the dataset every crash iteration starts from.
func crashBase(t *testing.T) (backend.StorageAdapter, uint64) {
	ctx := context.Background()
	store := mem.New()
	ds := mustCreate(t, store)
	ds = mustAppend(t, ds, people("a", 0, 4))
	ds = mustAppend(t, ds, people("b", 0, 4))
	ds = mc(t)(ds.StageDelete(ctx, Eq("id", "a000003")))
	ds = mc(t)(ds.StageCreateIndex(ctx, "id"))
	return store, ds.Version()
}

// TestCrashAtEveryWrite crashes the store at (and right after) every write
// of each stage+commit and checks the dataset then opens at the last
// committed version with exactly its rows.
func TestCrashAtEveryWrite(t *testing.T) {
	ctx := context.Background()
	for _, op := range crashOps() {
		t.Run(op.name, func(t *testing.T) {
			// Reference run without faults.
			ref, v0 := crashBase(t)
			before := rowsOf(t, must(t)(OpenVersion(ctx, ref, testPath, MainBranch, v0)))
			if _, err := op.run(ctx, t, must(t)(OpenVersion(ctx, ref, testPath, MainBranch, v0))); err != nil {
				t.Fatalf("reference run: %v", err)
			}
			after := rowsOf(t, must(t)(Open(ctx, ref, testPath, MainBranch)))
			for _, mode := range []string{"at", "after"} {
				outcomes := map[bool]int{}
				for k := 1; ; k++ {
					base, _ := crashBase(t)
					inj := fault.New(base)
					if mode == "at" {
						inj.CrashAtWrite(k)
					} else {
						inj.CrashAfterWrite(k)
					}
					ds, err := OpenVersion(ctx, inj, testPath, MainBranch, v0)
					if err != nil {
						t.Fatal(err)
					}
					st, err := op.run(ctx, t, ds)
					writes := inj.Writes()
					crashed := inj.Crashed()
					if crashed && err == nil {
						t.Fatalf("%s %d: crash not reported", mode, k)
					}
					if crashed && !errors.Is(err, backend.ErrUnknown) {
						t.Fatalf("%s %d: crash surfaced as %v, want ErrUnknown", mode, k, err)
					}
					// "Restart": read the store directly.
					got, oerr := Open(ctx, base, testPath, MainBranch)
					if oerr != nil {
						t.Fatalf("%s %d: reopen: %v", mode, k, oerr)
					}
					rows := rowsOf(t, got)
					switch got.Version() {
					case v0:
						if !equalRows(rows, before) {
							t.Fatalf("%s %d: version %d rows %v, want %v", mode, k, v0, rows, before)
						}
					case v0 + 1:
						if !equalRows(rows, after) {
							t.Fatalf("%s %d: version %d rows %v, want %v", mode, k, v0+1, rows, after)
						}
					default:
						t.Fatalf("%s %d: opened at version %d", mode, k, got.Version())
					}
					committed := got.Version() == v0+1
					if !crashed && !committed {
						t.Fatalf("%s %d: no crash but not committed (%v)", mode, k, err)
					}
					if st != nil {
						ok, rerr := ResolveCommit(ctx, base, st)
						if rerr != nil || ok != committed {
							t.Fatalf("%s %d: ResolveCommit = %v, %v; committed = %v", mode, k, ok, rerr, committed)
						}
					}
					outcomes[committed]++
					if writes < k {
						break // the operation finished before write k
					}
				}
				// Both outcomes must have been exercised: crashing at the
				// commit write loses it, crashing after it keeps it.
				if outcomes[true] == 0 || (mode == "at" && outcomes[false] == 0) {
					t.Fatalf("%s: outcomes %v: the loop did not reach both sides of the commit", mode, outcomes)
				}
			}
		})
	}
}

// TestCrashDuringCreate: StageCreate+Commit under a crash at every write
// leaves either no dataset or version 1 with exactly its rows.
func TestCrashDuringCreate(t *testing.T) {
	ctx := context.Background()
	rows := people("c", 0, 3)
	for _, mode := range []string{"at", "after"} {
		for k := 1; ; k++ {
			base := mem.New()
			inj := fault.New(base)
			if mode == "at" {
				inj.CrashAtWrite(k)
			} else {
				inj.CrashAfterWrite(k)
			}
			st, err := StageCreate(ctx, inj, testPath, personSchema, "id", record(t, rows))
			if err == nil {
				_, err = Commit(ctx, st)
			}
			if inj.Crashed() != (err != nil) {
				t.Fatalf("%s %d: crashed=%v err=%v", mode, k, inj.Crashed(), err)
			}
			ds, oerr := Open(ctx, base, testPath, MainBranch)
			switch {
			case errors.Is(oerr, ErrNotFound):
				if err == nil {
					t.Fatalf("%s %d: acknowledged create lost", mode, k)
				}
			case oerr != nil:
				t.Fatal(oerr)
			default:
				if ds.Version() != 1 || !equalRows(rowsOf(t, ds), render(rows)) {
					t.Fatalf("%s %d: created dataset differs", mode, k)
				}
			}
			if inj.Writes() < k {
				break
			}
		}
	}
}

func must(t testing.TB) func(*Dataset, error) *Dataset {
	return func(ds *Dataset, err error) *Dataset {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return ds
	}
}

// TestCrashDuringBranchCreate: a crash at any write of CreateBranch leaves
// main intact and the branch either absent or opening at the fork point.
func TestCrashDuringBranchCreate(t *testing.T) {
	ctx := context.Background()
	for _, mode := range []string{"at", "after"} {
		for k := 1; ; k++ {
			base, v0 := crashBase(t)
			want := rowsOf(t, must(t)(Open(ctx, base, testPath, MainBranch)))
			inj := fault.New(base)
			if mode == "at" {
				inj.CrashAtWrite(k)
			} else {
				inj.CrashAfterWrite(k)
			}
			_, err := CreateBranch(ctx, inj, testPath, "dev", MainBranch, v0)
			if inj.Crashed() && !errors.Is(err, backend.ErrUnknown) {
				t.Fatalf("%s %d: %v", mode, k, err)
			}
			if m := must(t)(Open(ctx, base, testPath, MainBranch)); m.Version() != v0 || !equalRows(rowsOf(t, m), want) {
				t.Fatalf("%s %d: main changed", mode, k)
			}
			br, err := Open(ctx, base, testPath, "dev")
			switch {
			case errors.Is(err, ErrNotFound):
			case err != nil:
				t.Fatalf("%s %d: open branch: %v", mode, k, err)
			default:
				if br.Version() != v0 || !equalRows(rowsOf(t, br), want) {
					t.Fatalf("%s %d: branch at %d", mode, k, br.Version())
				}
				// And it accepts a commit.
				mustAppend(t, br, people("d", 0, 1))
			}
			if inj.Writes() < k {
				break
			}
		}
	}
	_ = fmt.Sprint
}
