package recovery

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/oklog/ulid/v2"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/fault"
	"github.com/omnigraph-go/omnigraph/backend/mem"
	"github.com/omnigraph-go/omnigraph/manifest"
	"github.com/omnigraph-go/omnigraph/table"
)

var rowSchema = arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.BinaryTypes.String}}, nil)

func rec(t testing.TB, ids ...string) arrow.Record {
	t.Helper()
	b := array.NewRecordBuilder(memory.DefaultAllocator, rowSchema)
	defer b.Release()
	for _, id := range ids {
		b.Field(0).(*array.StringBuilder).Append(id)
	}
	return b.NewRecordBatch()
}

func newID() string { return ulid.Make().String() }

// world is a tiny graph built directly on the manifest and table packages:
// two tables (node:A, node:B) pinned by main@1.
type world struct {
	mem   *mem.Store
	fault *fault.Injector
	man   *manifest.Store
}

var keys = []string{"node:A", "node:B"}

func pathOf(key string) string { return "nodes/" + strings.TrimPrefix(key, "node:") }

func newWorld(t *testing.T) *world {
	t.Helper()
	ctx := context.Background()
	w := &world{mem: mem.New()}
	w.fault = fault.New(w.mem)
	w.man = manifest.New(w.fault)
	var pins []manifest.TablePin
	for _, k := range keys {
		ds, err := table.Create(ctx, w.fault, pathOf(k), rowSchema, "id")
		if err != nil {
			t.Fatal(err)
		}
		pins = append(pins, manifest.TablePin{Key: k, Path: pathOf(k), Branch: table.MainBranch, Version: ds.Version()})
	}
	c := &manifest.Commit{ID: newID(), Parents: []string{}, Actor: "init", TimeMicros: 1}
	e := &manifest.Entry{Stamp: manifest.StampCurrent, Kind: manifest.KindCommit, GraphID: newID(), Branch: "main", Incarnation: 1,
		BranchID: newID(), Version: 1, SchemaIdentity: "schema1", Tables: pins, Head: c.ID, Commit: c}
	if err := w.man.Publish(ctx, e); err != nil {
		t.Fatal(err)
	}
	return w
}

func (w *world) head(t testing.TB, branch string) *manifest.Entry {
	t.Helper()
	e, err := w.man.Head(context.Background(), branch)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// fork creates graph branch name from main's head (a fork entry; tables
// stay pinned on main until first touched).
func (w *world) fork(t testing.TB, name string) {
	t.Helper()
	h := w.head(t, "main")
	e := h.Clone()
	e.Kind, e.Branch, e.Incarnation, e.BranchID, e.Version, e.Commit = manifest.KindFork, name, 1, newID(), 1, nil
	e.Fork = &manifest.ForkPoint{Branch: "main", Incarnation: h.Incarnation, Version: h.Version, Head: h.Head}
	if err := w.man.Publish(context.Background(), e); err != nil {
		t.Fatal(err)
	}
}

// pointerCommit publishes a commit on branch that changes no table (another
// writer moving the authority).
func (w *world) pointerCommit(t testing.TB, branch string, mutate func(*manifest.Entry)) *manifest.Entry {
	t.Helper()
	h := w.head(t, branch)
	e := h.Clone()
	e.Kind, e.Version, e.Fork = manifest.KindCommit, h.Version+1, nil
	e.Commit = &manifest.Commit{ID: newID(), Parents: []string{h.Head}, Actor: "other", TimeMicros: 2}
	e.Head = e.Commit.ID
	if mutate != nil {
		mutate(e)
	}
	if err := w.man.Publish(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	return e
}

// pending is one prepared write: its sidecar and staged transactions.
type pending struct {
	sc     *Sidecar
	staged map[string]*table.Staged
}

// prepare stages one appended row per key on branch and arms the sidecar,
// as the write pipeline does (first-touch tables are forked in commit).
func (w *world) prepare(t testing.TB, branch string, ks ...string) *pending {
	t.Helper()
	ctx := context.Background()
	h := w.head(t, branch)
	tb := table.MainBranch
	if branch != "main" {
		tb = fmt.Sprintf("%s@%d", branch, h.Incarnation)
	}
	next := h.Clone()
	next.Kind, next.Version, next.Fork = manifest.KindCommit, h.Version+1, nil
	next.Commit = &manifest.Commit{ID: newID(), Parents: []string{h.Head}, Actor: "alice", TimeMicros: 3}
	next.Head = next.Commit.ID
	in := &manifest.Intent{OperationID: newID(), Kind: "mutation", Actor: "alice", Token: manifest.TokenOf(h), Entry: next}
	p := &pending{staged: map[string]*table.Staged{}}
	for _, k := range ks {
		pin, _ := h.Pin(k)
		it := manifest.IntentTable{Key: k, Path: pin.Path, Branch: tb, ExpectedVersion: pin.Version, TxnUUID: strings.ToLower(newID())}
		if pin.Branch != tb {
			it.FirstTouch, it.ForkBranch, it.ForkVersion = true, pin.Branch, pin.Version
		}
		it.PlannedVersion = readVersionOf(it) + 1
		if !it.FirstTouch {
			ds, err := table.OpenVersion(ctx, w.fault, pin.Path, pin.Branch, pin.Version)
			if err != nil {
				t.Fatal(err)
			}
			st, err := ds.StageAppend(ctx, rec(t, "row-"+in.OperationID))
			if err != nil {
				t.Fatal(err)
			}
			if err := st.SetUUID(it.TxnUUID); err != nil {
				t.Fatal(err)
			}
			p.staged[k] = st
		}
		in.Tables = append(in.Tables, it)
		for i, q := range next.Tables {
			if q.Key == k {
				next.Tables[i] = manifest.TablePin{Key: k, Path: q.Path, Branch: tb, Version: it.PlannedVersion}
			}
		}
	}
	p.sc = New(in, newID(), time.Now())
	if err := Arm(ctx, w.fault, p.sc); err != nil {
		t.Fatalf("Arm: %v", err)
	}
	return p
}

// commit runs Phase B for one table (forking a first touch first).
func (w *world) commit(t testing.TB, p *pending, key string) {
	t.Helper()
	ctx := context.Background()
	for _, it := range p.sc.Intent.Tables {
		if it.Key != key {
			continue
		}
		st := p.staged[key]
		if it.FirstTouch {
			w.forkOnly(t, it)
			ds, err := table.Open(ctx, w.fault, it.Path, it.Branch)
			if err != nil {
				t.Fatal(err)
			}
			if st, err = ds.StageAppend(ctx, rec(t, "row-"+p.sc.Intent.OperationID)); err != nil {
				t.Fatal(err)
			}
			if err := st.SetUUID(it.TxnUUID); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := table.Commit(ctx, st); err != nil {
			t.Fatalf("commit %s: %v", key, err)
		}
		return
	}
	t.Fatalf("no table %s in the intent", key)
}

func (w *world) forkOnly(t testing.TB, it manifest.IntentTable) {
	t.Helper()
	if _, err := table.CreateBranch(context.Background(), w.fault, it.Path, it.Branch, it.ForkBranch, it.ForkVersion); err != nil {
		t.Fatal(err)
	}
}

func (w *world) opts(mode Mode) Options { return Options{Mode: mode, Manifests: w.man} }

func (w *world) sidecars(t testing.TB) int {
	t.Helper()
	ks, err := Pending(context.Background(), w.mem)
	if err != nil {
		t.Fatal(err)
	}
	return len(ks)
}

func (w *world) audits(t testing.TB) []Record {
	t.Helper()
	rs, err := Audits(context.Background(), w.mem)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// converged asserts every pinned table's HEAD equals its manifest pin.
func (w *world) converged(t testing.TB, branch string) {
	t.Helper()
	h := w.head(t, branch)
	for _, p := range h.Tables {
		v, err := table.LatestVersion(context.Background(), w.mem, p.Path, p.Branch)
		if err != nil {
			t.Fatal(err)
		}
		if v != p.Version {
			t.Errorf("%s: HEAD %d on %q, manifest pins %d", p.Key, v, p.Branch, p.Version)
		}
	}
}

func rowCount(t testing.TB, w *world, e *manifest.Entry, key string) int64 {
	t.Helper()
	p, _ := e.Pin(key)
	ds, err := table.OpenVersion(context.Background(), w.mem, p.Path, p.Branch, p.Version)
	if err != nil {
		t.Fatal(err)
	}
	return ds.RowCount()
}

func TestSweepOutcomes(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name string
		// setup prepares the interrupted write and returns it.
		setup     func(t *testing.T, w *world) *pending
		branch    string
		wantClass Classification
		wantKind  Kind
		// wantRows is the live row count of each key after recovery.
		wantRows  map[string]int64
		wantActor string
		// wantNewCommit: recovery published a commit (original id when
		// rolling forward).
		wantNewCommit bool
	}{
		{
			name: "every effect landed: roll forward with the original commit and actor",
			setup: func(t *testing.T, w *world) *pending {
				p := w.prepare(t, "main", keys...)
				w.commit(t, p, "node:A")
				w.commit(t, p, "node:B")
				return p
			},
			branch: "main", wantClass: ClassRolledPastExpected, wantKind: RolledForward,
			wantRows: map[string]int64{"node:A": 1, "node:B": 1}, wantActor: "alice", wantNewCommit: true,
		},
		{
			name: "one of two effects landed: restore it and publish as omnigraph:recovery",
			setup: func(t *testing.T, w *world) *pending {
				p := w.prepare(t, "main", keys...)
				w.commit(t, p, "node:A")
				return p
			},
			branch: "main", wantClass: ClassIncompletePhaseB, wantKind: RolledBack,
			wantRows: map[string]int64{"node:A": 0, "node:B": 0}, wantActor: RecoveryActor, wantNewCommit: true,
		},
		{
			name: "nothing landed: discard without a commit",
			setup: func(t *testing.T, w *world) *pending {
				return w.prepare(t, "main", keys...)
			},
			branch: "main", wantClass: ClassNoMovement, wantKind: Discarded,
			wantRows: map[string]int64{"node:A": 0, "node:B": 0},
		},
		{
			name: "published, sidecar left (Phase D failed): retire it as rolled forward",
			setup: func(t *testing.T, w *world) *pending {
				p := w.prepare(t, "main", "node:A")
				w.commit(t, p, "node:A")
				if err := w.man.Publish(ctx, p.sc.Intent.Entry); err != nil {
					t.Fatal(err)
				}
				return p
			},
			branch: "main", wantClass: ClassPublished, wantKind: RolledForward,
			wantRows: map[string]int64{"node:A": 1, "node:B": 0}, wantActor: "alice",
		},
		{
			name: "authority moved after every effect landed: rollback only",
			setup: func(t *testing.T, w *world) *pending {
				p := w.prepare(t, "main", "node:A")
				w.commit(t, p, "node:A")
				w.pointerCommit(t, "main", nil)
				return p
			},
			branch: "main", wantClass: ClassRolledPastExpected, wantKind: RolledBack,
			wantRows: map[string]int64{"node:A": 0, "node:B": 0}, wantActor: RecoveryActor, wantNewCommit: true,
		},
		{
			name: "first touch on a named branch, landed: roll forward",
			setup: func(t *testing.T, w *world) *pending {
				w.fork(t, "feat")
				p := w.prepare(t, "feat", "node:A")
				w.commit(t, p, "node:A")
				return p
			},
			branch: "feat", wantClass: ClassRolledPastExpected, wantKind: RolledForward,
			wantRows: map[string]int64{"node:A": 1, "node:B": 0}, wantActor: "alice", wantNewCommit: true,
		},
		{
			name: "first touch forked but not written: the untouched ref is removed",
			setup: func(t *testing.T, w *world) *pending {
				w.fork(t, "feat")
				p := w.prepare(t, "feat", "node:A")
				w.forkOnly(t, p.sc.Intent.Tables[0])
				return p
			},
			branch: "feat", wantClass: ClassNoMovement, wantKind: Discarded,
			wantRows: map[string]int64{"node:A": 0, "node:B": 0},
		},
		{
			name: "first touch landed, existing-table effect missing: the fork is deleted",
			setup: func(t *testing.T, w *world) *pending {
				w.fork(t, "feat")
				p := w.prepare(t, "feat", keys...)
				w.commit(t, p, "node:A")
				return p
			},
			branch: "feat", wantClass: ClassIncompletePhaseB, wantKind: RolledBack,
			wantRows: map[string]int64{"node:A": 0, "node:B": 0},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			p := tc.setup(t, w)
			before := w.head(t, tc.branch)
			rep, err := Sweep(ctx, w.fault, w.opts(Full))
			if err != nil {
				t.Fatalf("Sweep: %v", err)
			}
			if len(rep.Outcomes) != 1 || rep.Outcomes[0].Class != tc.wantClass {
				t.Fatalf("outcomes %+v; want one %s", rep.Outcomes, tc.wantClass)
			}
			if n := w.sidecars(t); n != 0 {
				t.Errorf("%d sidecars left", n)
			}
			rs := w.audits(t)
			if len(rs) != 1 || rs[0].RecoveryKind != tc.wantKind || rs[0].OperationID != p.sc.Intent.OperationID || rs[0].RecoveryForActor != "alice" {
				t.Fatalf("audit %+v; want one %s row for alice's operation", rs, tc.wantKind)
			}
			after := w.head(t, tc.branch)
			switch {
			case tc.wantNewCommit && after.Version != before.Version+1:
				t.Errorf("head %d -> %d; want one new commit", before.Version, after.Version)
			case !tc.wantNewCommit && after.Version != before.Version:
				t.Errorf("head %d -> %d; want no commit", before.Version, after.Version)
			}
			if tc.wantNewCommit {
				if after.Commit.Actor != tc.wantActor {
					t.Errorf("commit actor %q, want %q", after.Commit.Actor, tc.wantActor)
				}
				if tc.wantKind == RolledForward && after.Commit.ID != p.sc.Intent.Entry.Commit.ID {
					t.Errorf("roll-forward published commit %s, want the pre-minted %s", after.Commit.ID, p.sc.Intent.Entry.Commit.ID)
				}
				if tc.wantKind == RolledBack && after.Commit.ID != p.sc.RollbackCommitID {
					t.Errorf("rollback published commit %s, want the pre-minted %s", after.Commit.ID, p.sc.RollbackCommitID)
				}
			}
			for k, n := range tc.wantRows {
				if got := rowCount(t, w, after, k); got != n {
					t.Errorf("%s has %d rows, want %d", k, got, n)
				}
			}
			w.converged(t, tc.branch)
			// A first-touch fork that recovery removed is gone.
			if tc.wantKind != RolledForward {
				for _, it := range p.sc.Intent.Tables {
					if it.FirstTouch {
						if _, err := table.ReadRef(ctx, w.mem, it.Path, it.Branch); !errors.Is(err, table.ErrNotFound) {
							t.Errorf("fork %s of %s still exists (%v)", it.Branch, it.Key, err)
						}
					}
				}
			}
			// A second sweep finds nothing and changes nothing.
			if rep, err := Sweep(ctx, w.fault, w.opts(Full)); err != nil || len(rep.Outcomes) != 0 {
				t.Fatalf("second sweep: %+v %v", rep, err)
			}
			if len(w.audits(t)) != 1 {
				t.Fatal("a second sweep added an audit row")
			}
		})
	}
}

func TestSweepFailsClosed(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name  string
		setup func(t *testing.T, w *world)
		want  error
		class Classification
	}{
		{
			name: "foreign commit at the planned version",
			setup: func(t *testing.T, w *world) {
				w.prepare(t, "main", "node:A")
				ds, err := table.Open(ctx, w.fault, "nodes/A", "main")
				if err != nil {
					t.Fatal(err)
				}
				st, _ := ds.StageAppend(ctx, rec(t, "foreign"))
				if _, err := table.Commit(ctx, st); err != nil {
					t.Fatal(err)
				}
			},
			want: ErrForeign, class: ClassUnexpectedAtP1,
		},
		{
			name: "own effect buried under a foreign commit",
			setup: func(t *testing.T, w *world) {
				p := w.prepare(t, "main", "node:A")
				w.commit(t, p, "node:A")
				ds, err := table.Open(ctx, w.fault, "nodes/A", "main")
				if err != nil {
					t.Fatal(err)
				}
				st, _ := ds.StageAppend(ctx, rec(t, "foreign"))
				if _, err := table.Commit(ctx, st); err != nil {
					t.Fatal(err)
				}
			},
			want: ErrForeign, class: ClassUnexpectedMultistep,
		},
		{
			// A schema apply replaced node:A's table (a new path under the
			// same key) after this write's effect landed on the old one:
			// restoring through the new pin would point it at a version
			// the new table does not have.
			name: "table replaced under its key",
			setup: func(t *testing.T, w *world) {
				p := w.prepare(t, "main", "node:A")
				w.commit(t, p, "node:A")
				ds, err := table.Create(ctx, w.fault, "nodes/A.x", rowSchema, "id")
				if err != nil {
					t.Fatal(err)
				}
				w.pointerCommit(t, "main", func(e *manifest.Entry) {
					e.Tables[0] = manifest.TablePin{Key: "node:A", Path: "nodes/A.x", Branch: table.MainBranch, Version: ds.Version()}
				})
			},
			want: ErrForeign, class: ClassUnexpectedMultistep,
		},
		{
			name: "HEAD behind the manifest pin",
			setup: func(t *testing.T, w *world) {
				w.prepare(t, "main", "node:A")
				w.pointerCommit(t, "main", func(e *manifest.Entry) { e.Tables[0].Version = 7 })
			},
			want: ErrInvariantViolation, class: ClassInvariantViolation,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			tc.setup(t, w)
			before := w.head(t, "main")
			rep, err := Sweep(ctx, w.fault, w.opts(Full))
			if !errors.Is(err, tc.want) {
				t.Fatalf("Sweep error %v; want %v", err, tc.want)
			}
			if len(rep.Outcomes) != 1 || rep.Outcomes[0].Class != tc.class {
				t.Fatalf("outcomes %+v, want %s", rep.Outcomes, tc.class)
			}
			if w.sidecars(t) != 1 || len(w.audits(t)) != 0 {
				t.Fatal("a fail-closed recovery must keep the sidecar and record nothing")
			}
			if after := w.head(t, "main"); after.Version != before.Version {
				t.Fatal("a fail-closed recovery published")
			}
		})
	}
}

func TestRollForwardOnlyDefersRollback(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t)
	p := w.prepare(t, "main", keys...)
	w.commit(t, p, "node:A")
	rep, err := Sweep(ctx, w.fault, w.opts(RollForwardOnly))
	if err != nil {
		t.Fatalf("heal: %v", err)
	}
	if d := rep.Deferred(); len(d) != 1 || d[0].OperationID != p.sc.Intent.OperationID {
		t.Fatalf("deferred %+v", d)
	}
	if w.sidecars(t) != 1 || len(w.audits(t)) != 0 || w.head(t, "main").Version != 1 {
		t.Fatal("a deferred sidecar must change nothing")
	}
	// The read-write open completes it.
	if _, err := Sweep(ctx, w.fault, w.opts(Full)); err != nil {
		t.Fatal(err)
	}
	if rs := w.audits(t); len(rs) != 1 || rs[0].RecoveryKind != RolledBack {
		t.Fatalf("audit %+v", rs)
	}
	w.converged(t, "main")

	// Roll-forward is allowed in-process.
	p = w.prepare(t, "main", "node:B")
	w.commit(t, p, "node:B")
	if _, err := Sweep(ctx, w.fault, w.opts(RollForwardOnly)); err != nil {
		t.Fatal(err)
	}
	if h := w.head(t, "main"); h.Head != p.sc.Intent.Entry.Commit.ID {
		t.Fatalf("heal did not roll forward: head %s", h.Head)
	}
}

// TestRecoveryInterruptedResumes crashes the recovery itself at each of its
// phase boundaries; the next sweep finishes it with exactly one publish and
// one audit row.
func TestRecoveryInterruptedResumes(t *testing.T) {
	ctx := context.Background()
	for _, point := range []string{"recovery.post_restore", "recovery.post_publish", "recovery.post_audit"} {
		for _, partial := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/partial=%v", point, partial), func(t *testing.T) {
				w := newWorld(t)
				p := w.prepare(t, "main", keys...)
				w.commit(t, p, "node:A")
				if !partial {
					w.commit(t, p, "node:B")
				}
				o := w.opts(Full)
				crash := errors.New("crash")
				o.Failpoint = func(name string) error {
					if name == point {
						return crash
					}
					return nil
				}
				_, err := Sweep(ctx, w.fault, o)
				hit := err != nil
				if hit && !errors.Is(err, crash) {
					t.Fatal(err)
				}
				if hit && w.sidecars(t) != 1 {
					t.Fatal("an interrupted recovery lost its sidecar")
				}
				mid := w.head(t, "main").Version
				if _, err := Sweep(ctx, w.fault, w.opts(Full)); err != nil {
					t.Fatalf("resume: %v", err)
				}
				h := w.head(t, "main")
				if h.Version != 2 || (hit && mid > h.Version) {
					t.Fatalf("head version %d; want exactly one recovery publish", h.Version)
				}
				rs := w.audits(t)
				want := RolledBack
				if !partial {
					want = RolledForward
				}
				if len(rs) != 1 || rs[0].RecoveryKind != want {
					t.Fatalf("audit %+v; want one %s", rs, want)
				}
				if w.sidecars(t) != 0 {
					t.Fatal("sidecar left")
				}
				w.converged(t, "main")
			})
		}
	}
}

func TestSidecarIOFailures(t *testing.T) {
	ctx := context.Background()
	t.Run("Phase A put fails: nothing armed", func(t *testing.T) {
		w := newWorld(t)
		w.fault.FailNth(fault.CondPut, 1, backend.KindTransient)
		h := w.head(t, "main")
		in := &manifest.Intent{OperationID: newID(), Kind: "mutation", Actor: "a", Token: manifest.TokenOf(h)}
		e := h.Clone()
		e.Version, e.Commit = 2, &manifest.Commit{ID: newID(), Parents: []string{h.Head}, Actor: "a"}
		e.Head = e.Commit.ID
		in.Entry = e
		err := Arm(ctx, w.fault, New(in, newID(), time.Now()))
		if !errors.Is(err, ErrArm) || w.sidecars(t) != 0 {
			t.Fatalf("Arm: %v, %d sidecars", err, w.sidecars(t))
		}
	})
	t.Run("Phase A answer lost: read back as armed", func(t *testing.T) {
		w := newWorld(t)
		w.fault.LoseAnswer(fault.CondPut, 1)
		h := w.head(t, "main")
		e := h.Clone()
		e.Version, e.Commit = 2, &manifest.Commit{ID: newID(), Parents: []string{h.Head}, Actor: "a"}
		e.Head = e.Commit.ID
		in := &manifest.Intent{OperationID: newID(), Kind: "mutation", Actor: "a", Token: manifest.TokenOf(h), Entry: e}
		if err := Arm(ctx, w.fault, New(in, newID(), time.Now())); err != nil || w.sidecars(t) != 1 {
			t.Fatalf("Arm: %v, %d sidecars", err, w.sidecars(t))
		}
	})
	t.Run("list fails: the sweep fails", func(t *testing.T) {
		w := newWorld(t)
		w.fault.FailNth(fault.List, 1, backend.KindTransient)
		if _, err := Sweep(ctx, w.fault, w.opts(Full)); !errors.Is(err, ErrList) {
			t.Fatalf("Sweep: %v; want ErrList", err)
		}
	})
	t.Run("corrupt sidecar: refused, kept", func(t *testing.T) {
		w := newWorld(t)
		key := Key(newID())
		if _, err := w.mem.Put(ctx, key, []byte("{not json")); err != nil {
			t.Fatal(err)
		}
		for _, mode := range []Mode{Full, RollForwardOnly} {
			if _, err := Sweep(ctx, w.fault, w.opts(mode)); !errors.Is(err, ErrCorruptSidecar) {
				t.Fatalf("mode %d: %v; want ErrCorruptSidecar", mode, err)
			}
		}
		if ok, _ := w.mem.Exists(ctx, key); !ok {
			t.Fatal("the corrupt sidecar was removed")
		}
	})
	t.Run("audit append fails after the roll-forward publish", func(t *testing.T) {
		w := newWorld(t)
		p := w.prepare(t, "main", "node:A")
		w.commit(t, p, "node:A")
		// Writes of the sweep: the manifest publish (CondPut 1), then the
		// audit row (CondPut 2).
		w.fault.FailNth(fault.CondPut, 2, backend.KindTransient)
		if _, err := Sweep(ctx, w.fault, w.opts(Full)); err == nil {
			t.Fatal("the sweep hid a failed audit append")
		}
		if w.sidecars(t) != 1 || w.head(t, "main").Head != p.sc.Intent.Entry.Commit.ID {
			t.Fatal("want the write published and its sidecar kept")
		}
		if _, err := Sweep(ctx, w.fault, w.opts(Full)); err != nil {
			t.Fatal(err)
		}
		if rs := w.audits(t); len(rs) != 1 || rs[0].RecoveryKind != RolledForward || rs[0].Classification != ClassPublished {
			t.Fatalf("audit %+v", rs)
		}
		if w.sidecars(t) != 0 {
			t.Fatal("sidecar left")
		}
	})
	t.Run("sidecar delete fails after recovery: a warning", func(t *testing.T) {
		w := newWorld(t)
		p := w.prepare(t, "main", "node:A")
		w.commit(t, p, "node:A")
		w.fault.FailNth(fault.Delete, 1, backend.KindTransient)
		rep, err := Sweep(ctx, w.fault, w.opts(Full))
		if err != nil || len(rep.Outcomes) != 1 || rep.Outcomes[0].Warning == "" {
			t.Fatalf("sweep %+v %v; want a warning", rep, err)
		}
		if _, err := Sweep(ctx, w.fault, w.opts(Full)); err != nil {
			t.Fatal(err)
		}
		if len(w.audits(t)) != 1 || w.sidecars(t) != 0 {
			t.Fatal("want exactly one audit row and no sidecar")
		}
	})
}

func TestLockAndVanishedSidecar(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t)
	p := w.prepare(t, "main", "node:A")
	o := w.opts(Full)
	locked := 0
	o.Lock = func(ctx context.Context, sc *Sidecar) (func(), error) {
		locked++
		// The live writer finishes while the sweep waits for its gates.
		if err := Disarm(ctx, w.fault, sc.Intent.OperationID); err != nil {
			return nil, err
		}
		return func() {}, nil
	}
	rep, err := Sweep(ctx, w.fault, o)
	if err != nil || locked != 1 || len(rep.Outcomes) != 1 || !rep.Outcomes[0].Skipped {
		t.Fatalf("sweep %+v %v (locked %d); want the vanished sidecar skipped", rep, err, locked)
	}
	if len(w.audits(t)) != 0 {
		t.Fatal("a skipped sidecar was audited")
	}
	_ = p
}

func TestSidecarRoundTrip(t *testing.T) {
	w := newWorld(t)
	p := w.prepare(t, "main", keys...)
	sc, err := Read(context.Background(), w.mem, Key(p.sc.Intent.OperationID))
	if err != nil {
		t.Fatal(err)
	}
	if sc.Intent.OperationID != p.sc.Intent.OperationID || len(sc.Intent.Tables) != 2 || sc.Intent.Tables[0].TxnUUID == "" ||
		sc.Intent.Entry.Commit.ID != p.sc.Intent.Entry.Commit.ID || sc.RollbackCommitID != p.sc.RollbackCommitID {
		t.Fatalf("round trip lost data: %+v", sc)
	}
	bad := *sc
	bad.Intent.Tables = append([]manifest.IntentTable(nil), sc.Intent.Tables...)
	bad.Intent.Tables[0].PlannedVersion = 9
	if _, err := Encode(&bad); err == nil {
		t.Fatal("Encode accepted a plan the manifest delta does not match")
	}
}

// TestOrphanedIntent: the branch incarnation a pending write targeted was
// deleted, so its effects are unreachable; recovery retires the sidecar
// with an OrphanDiscarded row and publishes nothing.
func TestOrphanedIntent(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t)
	w.fork(t, "feat")
	p := w.prepare(t, "feat", "node:A")
	w.commit(t, p, "node:A")
	ref, err := w.man.Probe(ctx, "feat")
	if err != nil {
		t.Fatal(err)
	}
	if err := w.man.Tombstone(ctx, ref); err != nil {
		t.Fatal(err)
	}
	mainBefore := w.head(t, "main").Version
	rep, err := Sweep(ctx, w.fault, w.opts(RollForwardOnly))
	if err != nil || len(rep.Outcomes) != 1 || rep.Outcomes[0].Class != ClassOrphaned {
		t.Fatalf("sweep %+v %v", rep, err)
	}
	if rs := w.audits(t); len(rs) != 1 || rs[0].RecoveryKind != OrphanDiscarded || rs[0].CommitID != "" {
		t.Fatalf("audit %+v", rs)
	}
	if w.sidecars(t) != 0 || w.head(t, "main").Version != mainBefore {
		t.Fatal("want the sidecar retired and nothing published")
	}
}

func TestRequireNonePending(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t)
	if err := RequireNonePending(ctx, w.fault); err != nil {
		t.Fatal(err)
	}
	p := w.prepare(t, "main", "node:A")
	if err := RequireNonePending(ctx, w.fault); !errors.Is(err, ErrPending) || !strings.Contains(err.Error(), p.sc.Intent.OperationID) {
		t.Fatalf("got %v, want ErrPending naming the operation", err)
	}
	w.fault.FailNth(fault.List, 1, backend.KindTransient)
	if err := RequireNonePending(ctx, w.fault); !errors.Is(err, ErrList) {
		t.Fatalf("got %v, want ErrList", err)
	}
}

func TestFindDriftAndRepair(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t)
	w.fork(t, "feat") // inherits main's pins: never drift of its own
	if d, err := FindDrift(ctx, w.fault, w.man); err != nil || len(d) != 0 {
		t.Fatalf("drift on a fresh graph: %+v %v", d, err)
	}
	// A commit no sidecar covers.
	ds, err := table.Open(ctx, w.fault, "nodes/A", "main")
	if err != nil {
		t.Fatal(err)
	}
	st, _ := ds.StageAppend(ctx, rec(t, "stray"))
	if _, err := table.Commit(ctx, st); err != nil {
		t.Fatal(err)
	}
	d, err := FindDrift(ctx, w.fault, w.man)
	if err != nil || len(d) != 1 || d[0].Key != "node:A" || d[0].Branch != "main" || d[0].Pin != 1 || d[0].Head != 2 {
		t.Fatalf("drift %+v %v", d, err)
	}
	r, err := RepairBranch(ctx, w.fault, w.man, d, newID(), newID(), time.Now())
	if err != nil || r.RecoveryKind != Repaired {
		t.Fatalf("repair %+v %v", r, err)
	}
	w.converged(t, "main")
	h := w.head(t, "main")
	if h.Commit.Actor != RecoveryActor || rowCount(t, w, h, "node:A") != 0 {
		t.Fatalf("after repair: actor %q, %d rows", h.Commit.Actor, rowCount(t, w, h, "node:A"))
	}
	if d, _ := FindDrift(ctx, w.fault, w.man); len(d) != 0 {
		t.Fatalf("drift left: %+v", d)
	}
	if rs := w.audits(t); len(rs) != 1 || rs[0].RecoveryKind != Repaired {
		t.Fatalf("audit %+v", rs)
	}
}
