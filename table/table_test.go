package table

import (
	"context"
	"errors"
	"sort"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/fault"
)

func TestCreateOpen(t *testing.T) {
	ctx := context.Background()
	store := newStore()
	ds := mustCreate(t, store)
	if ds.Version() != 1 || ds.Branch() != MainBranch || ds.RowCount() != 0 {
		t.Fatalf("new dataset: version %d branch %q rows %d", ds.Version(), ds.Branch(), ds.RowCount())
	}
	if tx := ds.Transaction(); tx.ReadVersion != 0 || tx.Operation != OpCreate || tx.UUID == "" {
		t.Fatalf("create transaction = %+v", tx)
	}
	if _, err := Create(ctx, store, testPath, personSchema, "id"); !errors.Is(err, ErrExists) || !errors.Is(err, backend.ErrPrecondition) {
		t.Fatalf("second create: %v, want ErrExists and ErrPrecondition", err)
	}
	got, err := Open(ctx, store, testPath, MainBranch)
	if err != nil {
		t.Fatal(err)
	}
	if got.Version() != 1 || !sameSchema(got.Schema(), personSchema) || got.KeyColumn() != "id" {
		t.Fatalf("open: version %d schema %s", got.Version(), got.Schema())
	}
	if _, err := Open(ctx, store, "nodes/Missing", MainBranch); !errors.Is(err, ErrNotFound) || !errors.Is(err, backend.ErrNotFound) {
		t.Fatalf("open missing: %v", err)
	}
	if ok, err := Exists(ctx, store, testPath); !ok || err != nil {
		t.Fatalf("exists = %v, %v", ok, err)
	}
}

func TestBadInputChangesNothing(t *testing.T) {
	ctx := context.Background()
	store := newStore()
	ds := mustCreate(t, store)
	ds = mustAppend(t, ds, people("p", 0, 3))
	before := keysOf(t, store)

	other := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.BinaryTypes.String}}, nil)
	bad := record(t, people("x", 0, 1))
	defer bad.Release()
	nullKey := record(t, nil)
	defer nullKey.Release()
	cases := []struct {
		name string
		run  func() error
	}{
		{"key column not string", func() error {
			_, err := Create(ctx, store, "nodes/Other", personSchema, "age")
			return err
		}},
		{"key column missing", func() error {
			_, err := Create(ctx, store, "nodes/Other", other, "nope")
			return err
		}},
		{"bad path", func() error {
			_, err := Create(ctx, store, "nodes//x", personSchema, "id")
			return err
		}},
		{"predicate unknown column", func() error {
			_, err := ds.StageDelete(ctx, Eq("nope", 1))
			return err
		}},
		{"predicate bad value", func() error {
			_, err := ds.StageDelete(ctx, Eq("age", []int{1}))
			return err
		}},
		{"In on int column", func() error {
			_, err := ds.StageDelete(ctx, In("age", "1"))
			return err
		}},
		{"scan unknown column", func() error {
			_, err := ds.Scan(ctx, ScanOptions{Columns: []string{"nope"}})
			return err
		}},
		{"index on int column", func() error {
			_, err := ds.StageCreateIndex(ctx, "age")
			return err
		}},
		{"restore to future", func() error {
			_, err := ds.StageRestore(ctx, 99)
			return err
		}},
		{"overwrite schema without key", func() error {
			_, err := ds.StageOverwriteWithSchema(ctx, arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.BinaryTypes.String}}, nil))
			return err
		}},
		{"branch named main", func() error {
			_, err := CreateBranch(ctx, store, testPath, "main", MainBranch, 0)
			return err
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.run(); !errors.Is(err, ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", err)
			}
		})
	}
	t.Run("append wrong schema", func(t *testing.T) {
		b := arrowRecordOther(t, other)
		defer b.Release()
		if _, err := ds.StageAppend(ctx, b); !errors.Is(err, ErrInvalid) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("null key", func(t *testing.T) {
		r := record(t, []person{{id: "a", age: 1}})
		defer r.Release()
		// Forge a null key by slicing a record built with a null id.
		rec := nullKeyRecord(t)
		defer rec.Release()
		if _, err := ds.StageAppend(ctx, rec); !errors.Is(err, ErrInvalid) {
			t.Fatalf("err = %v", err)
		}
	})
	if after := keysOf(t, store); !equalRows(before, after) {
		t.Fatalf("bad input wrote objects: before %v after %v", before, after)
	}
}

func TestAppendScanFilterPushdown(t *testing.T) {
	ctx := context.Background()
	store, cnt := countedStore()
	ds := mustCreate(t, store)
	var all []person
	for i := 0; i < 4; i++ {
		batch := people("p", i*100, 100) // ages i*100 .. i*100+99
		ds = mustAppend(t, ds, batch)
		all = append(all, batch...)
	}
	if got := rowsOf(t, ds); !equalRows(got, render(all)) {
		t.Fatalf("scan returned %d rows, want %d", len(got), len(all))
	}
	cases := []struct {
		name      string
		filter    Predicate
		want      func(p person) bool
		fragsRead int
	}{
		{"eq", Eq("age", 150), func(p person) bool { return p.age == 150 }, 1},
		{"lt", Lt("age", 100), func(p person) bool { return p.age < 100 }, 1},
		{"le", Le("age", 100), func(p person) bool { return p.age <= 100 }, 2},
		{"gt", Gt("age", 299), func(p person) bool { return p.age > 299 }, 1},
		{"ge float", Ge("age", 299.5), func(p person) bool { return p.age >= 300 }, 1},
		{"ne", Ne("age", 5), func(p person) bool { return p.age != 5 }, 4},
		{"in ids", In("id", "p000005", "p000305"), func(p person) bool { return p.id == "p000005" || p.id == "p000305" }, 2},
		{"and", And(Ge("age", 100), Lt("age", 110)), func(p person) bool { return p.age >= 100 && p.age < 110 }, 1},
		{"or", Or(Eq("age", 1), Eq("age", 301)), func(p person) bool { return p.age == 1 || p.age == 301 }, 2},
		{"string range", Ge("name", "name-399"), func(p person) bool { return p.name >= "name-399" }, 2},
		{"none", Gt("age", 10000), func(person) bool { return false }, 0},
		{"is null", IsNull("age"), func(p person) bool { return p.age < 0 }, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cnt.Reset()
			// A fresh cache: fragments are cached across scans otherwise.
			recs, err := ds.WithCache(NewCache(0)).Scan(ctx, ScanOptions{Columns: []string{"age", "id"}, Filter: tc.filter})
			if err != nil {
				t.Fatal(err)
			}
			defer releaseAll(recs)
			var want []string
			for _, p := range all {
				if tc.want(p) {
					want = append(want, itoa(p.age)+"|"+p.id)
				}
			}
			got := renderRecs(recs)
			for _, r := range recs {
				if r.NumCols() != 2 || r.Schema().Field(0).Name != "age" {
					t.Fatalf("projection: schema %s", r.Schema())
				}
			}
			sort.Strings(want)
			if !equalRows(got, want) {
				t.Fatalf("got %d rows %v, want %d", len(got), got, len(want))
			}
			if c := cnt.Snapshot(); c.Get != tc.fragsRead {
				t.Fatalf("fragments read = %d, want %d (statistics pushdown)", c.Get, tc.fragsRead)
			}
		})
	}
}

func TestDelete(t *testing.T) {
	ctx := context.Background()
	store := newStore()
	ds := mustCreate(t, store)
	ds = mustAppend(t, ds, people("a", 0, 10))
	ds = mustAppend(t, ds, people("b", 0, 10))

	st, err := ds.StageDelete(ctx, Lt("age", 3))
	if err != nil {
		t.Fatal(err)
	}
	if st.Empty() || st.Operation != OpDelete || st.ReadVersion != ds.Version() {
		t.Fatalf("staged = %+v", st)
	}
	ds = mustCommit(t, st, nil)
	if ds.RowCount() != 14 {
		t.Fatalf("rows = %d, want 14", ds.RowCount())
	}
	for _, f := range ds.Manifest().Fragments {
		if f.Deletion == nil || f.Deletion.Count != 3 {
			t.Fatalf("fragment %s deletion = %+v", f.ID, f.Deletion)
		}
	}
	want := render(append(people("a", 3, 7), people("b", 3, 7)...))
	if got := rowsOf(t, ds); !equalRows(got, want) {
		t.Fatalf("rows = %v", got)
	}

	// Matching nothing (including already deleted rows) stages nothing.
	for _, p := range []Predicate{Lt("age", 3), Eq("id", "zzz"), In("id")} {
		st, err = ds.StageDelete(ctx, p)
		if err != nil || !st.Empty() {
			t.Fatalf("delete %s: empty=%v err=%v", p, st.Empty(), err)
		}
		if _, err := Commit(ctx, st); !errors.Is(err, ErrNothingStaged) {
			t.Fatalf("commit empty: %v", err)
		}
	}

	// Deleting every remaining row of a fragment drops it.
	ds = mc(t)(ds.StageDelete(ctx, In("id", "a000003", "a000004", "a000005", "a000006", "a000007", "a000008", "a000009")))
	if n := len(ds.Manifest().Fragments); n != 1 {
		t.Fatalf("fragments = %d, want 1", n)
	}
	if got := rowsOf(t, ds); !equalRows(got, render(people("b", 3, 7))) {
		t.Fatalf("rows = %v", got)
	}
	// Zero predicate deletes all.
	ds = mc(t)(ds.StageDelete(ctx, Predicate{}))
	if ds.RowCount() != 0 || len(ds.Manifest().Fragments) != 0 {
		t.Fatalf("delete all left %d rows", ds.RowCount())
	}
}

func TestOverwrite(t *testing.T) {
	ctx := context.Background()
	store := newStore()
	ds := mustCreate(t, store)
	ds = mustAppend(t, ds, people("a", 0, 5))
	ds = mc(t)(ds.StageCreateIndex(ctx, "id"))

	rec := record(t, people("z", 0, 2))
	defer rec.Release()
	ds = mc(t)(ds.StageOverwrite(ctx, rec))
	if got := rowsOf(t, ds); !equalRows(got, render(people("z", 0, 2))) {
		t.Fatalf("rows = %v", got)
	}
	if ds.Transaction().Operation != OpOverwrite || len(ds.Manifest().Indexes) != 0 {
		t.Fatalf("overwrite: %+v indexes %d", ds.Transaction(), len(ds.Manifest().Indexes))
	}
	// Empty zero-fragment overwrite.
	ds = mc(t)(ds.StageOverwrite(ctx))
	if ds.RowCount() != 0 || len(ds.Manifest().Fragments) != 0 {
		t.Fatalf("empty overwrite: rows %d", ds.RowCount())
	}
	// Schema change.
	s2 := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.BinaryTypes.String}, {Name: "score", Type: arrow.PrimitiveTypes.Float64, Nullable: true}}, nil)
	ds = mc(t)(ds.StageOverwriteWithSchema(ctx, s2))
	re, err := Open(ctx, store, testPath, MainBranch)
	if err != nil {
		t.Fatal(err)
	}
	if !sameSchema(re.Schema(), s2) {
		t.Fatalf("schema after overwrite = %s", re.Schema())
	}
}

func TestMergeInsert(t *testing.T) {
	ctx := context.Background()
	store := newStore()
	ds := mustCreate(t, store)
	ds = mustAppend(t, ds, people("p", 0, 5))
	upd := []person{
		{id: "p000001", name: "first", age: 100},
		{id: "new", name: "n", age: 7},
		{id: "p000001", name: "second", age: 101}, // last write wins
	}
	r1 := record(t, upd[:2])
	r2 := record(t, upd[2:])
	defer r1.Release()
	defer r2.Release()
	st, err := ds.StageMergeInsert(ctx, r1, r2)
	if err != nil {
		t.Fatal(err)
	}
	if st.Operation != OpMerge || st.Manifest.Transaction.Operation != OpMerge {
		t.Fatalf("operation = %s", st.Operation)
	}
	ds = mustCommit(t, st, nil)
	want := render([]person{
		{"p000000", "name-0", 0}, {"p000001", "second", 101}, {"p000002", "name-2", 2},
		{"p000003", "name-3", 3}, {"p000004", "name-4", 4}, {"new", "n", 7},
	})
	if got := rowsOf(t, ds); !equalRows(got, want) {
		t.Fatalf("rows = %v\nwant %v", got, want)
	}
	// With a key index the same upsert semantics hold.
	ds = mc(t)(ds.StageCreateIndex(ctx, "id"))
	r3 := record(t, []person{{id: "p000002", name: "x", age: -1}})
	defer r3.Release()
	ds = mc(t)(ds.StageMergeInsert(ctx, r3))
	got, err := ds.Lookup(ctx, "p000002")
	if err != nil {
		t.Fatal(err)
	}
	defer got.Release()
	if rows := renderRecs([]arrow.Record{got}); len(rows) != 1 || rows[0] != "p000002|x|null" {
		t.Fatalf("lookup after upsert = %v", rows)
	}
	if ds.RowCount() != 6 {
		t.Fatalf("rows = %d", ds.RowCount())
	}
}

func TestStageChangesOneVersion(t *testing.T) {
	ctx := context.Background()
	store := newStore()
	ds := mustCreate(t, store)
	ds = mustAppend(t, ds, people("p", 0, 5))
	v := ds.Version()
	up := record(t, []person{{id: "p000003", name: "u", age: 33}, {id: "q", name: "q", age: 1}})
	ap := record(t, []person{{id: "r", name: "r", age: 2}})
	defer up.Release()
	defer ap.Release()
	del := Eq("age", 4)
	st, err := ds.StageChanges(ctx, Changes{DeleteKeys: []string{"p000000"}, Delete: &del, Upsert: []arrow.Record{up}, Append: []arrow.Record{ap}})
	if err != nil {
		t.Fatal(err)
	}
	if st.Operation != OpUpdate {
		t.Fatalf("operation = %s", st.Operation)
	}
	ds = mustCommit(t, st, nil)
	if ds.Version() != v+1 {
		t.Fatalf("version = %d, want %d", ds.Version(), v+1)
	}
	want := render([]person{{"p000001", "name-1", 1}, {"p000002", "name-2", 2}, {"p000003", "u", 33}, {"q", "q", 1}, {"r", "r", 2}})
	if got := rowsOf(t, ds); !equalRows(got, want) {
		t.Fatalf("rows = %v", got)
	}
}

func TestRestore(t *testing.T) {
	ctx := context.Background()
	store := newStore()
	ds := mustCreate(t, store)
	ds = mustAppend(t, ds, people("a", 0, 3))
	v2 := ds.Version()
	want := rowsOf(t, ds)
	ds = mustAppend(t, ds, people("b", 0, 3))
	ds = mc(t)(ds.StageDelete(ctx, Eq("id", "a000001")))
	st, err := ds.StageRestore(ctx, v2)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Files) != 0 {
		t.Fatalf("restore wrote files: %v", st.Files)
	}
	ds = mustCommit(t, st, nil)
	if got := rowsOf(t, ds); !equalRows(got, want) {
		t.Fatalf("restored rows = %v, want %v", got, want)
	}
	tx, err := ds.TransactionAt(ctx, ds.Version())
	if err != nil || tx.Operation != OpRestore || tx.RestoreTarget != v2 || tx.ReadVersion != ds.Version()-1 {
		t.Fatalf("restore transaction = %+v, %v", tx, err)
	}
	// TransactionAt reads any version's exact identity.
	tx1, err := ds.TransactionAt(ctx, 1)
	if err != nil || tx1.Operation != OpCreate {
		t.Fatalf("version 1 transaction = %+v, %v", tx1, err)
	}
}

func TestCommitConflictAndResolve(t *testing.T) {
	ctx := context.Background()
	store := newStore()
	ds := mustCreate(t, store)
	r := record(t, people("a", 0, 2))
	defer r.Release()
	st1, err := ds.StageAppend(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	st2, err := ds.StageAppend(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	if st1.UUID == st2.UUID {
		t.Fatal("two stages share a uuid")
	}
	if _, err := Commit(ctx, st2); err != nil {
		t.Fatal(err)
	}
	_, err = Commit(ctx, st1)
	if !errors.Is(err, ErrConflict) || !errors.Is(err, backend.ErrPrecondition) {
		t.Fatalf("losing commit: %v", err)
	}
	if ok, err := ResolveCommit(ctx, store, st1); ok || err != nil {
		t.Fatalf("resolve loser = %v, %v", ok, err)
	}
	if ok, err := ResolveCommit(ctx, store, st2); !ok || err != nil {
		t.Fatalf("resolve winner = %v, %v", ok, err)
	}
	v, err := LatestVersion(ctx, store, testPath, MainBranch)
	if err != nil || v != 2 {
		t.Fatalf("latest = %d, %v", v, err)
	}
	// SetUUID rebinds to a pre-minted identity.
	ds2, _ := Open(ctx, store, testPath, MainBranch)
	st3, _ := ds2.StageAppend(ctx, r)
	if err := st3.SetUUID("premint-1"); err != nil {
		t.Fatal(err)
	}
	ds3 := mustCommit(t, st3, nil)
	if ds3.Transaction().UUID != "premint-1" {
		t.Fatalf("uuid = %s", ds3.Transaction().UUID)
	}
}

func TestLostCommitAnswerIsUnknown(t *testing.T) {
	ctx := context.Background()
	for _, applied := range []bool{true, false} {
		t.Run(map[bool]string{true: "applied", false: "not applied"}[applied], func(t *testing.T) {
			base := newStore()
			ds := mustCreate(t, base)
			inj := fault.New(base)
			if applied {
				inj.LoseAnswer(fault.CondPut, 1)
			} else {
				inj.FailNth(fault.CondPut, 1, backend.KindUnknown)
			}
			h, err := OpenVersion(ctx, inj, testPath, MainBranch, ds.Version())
			if err != nil {
				t.Fatal(err)
			}
			r := record(t, people("u", 0, 1))
			defer r.Release()
			st, err := h.StageAppend(ctx, r)
			if err != nil {
				t.Fatal(err)
			}
			_, err = Commit(ctx, st)
			if !errors.Is(err, backend.ErrUnknown) || errors.Is(err, ErrConflict) {
				t.Fatalf("commit = %v, want ErrUnknown only", err)
			}
			if w := inj.Writes(); w != 2 {
				t.Fatalf("writes = %d: the commit was retried", w)
			}
			ok, err := ResolveCommit(ctx, base, st)
			if err != nil || ok != applied {
				t.Fatalf("ResolveCommit = %v, %v; want %v", ok, err, applied)
			}
		})
	}
}
