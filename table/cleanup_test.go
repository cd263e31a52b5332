package table

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestCleanup(t *testing.T) {
	ctx := context.Background()
	store := newStore()
	ds := mustCreate(t, store)
	for i := 0; i < 5; i++ {
		ds = mustAppend(t, ds, people("p", i*10, 10))
	}
	ds = mc(t)(ds.StageDelete(ctx, Lt("age", 5)))
	ds = mc(t)(ds.StageCompact(ctx, CompactOptions{}))
	// A branch forked before compaction keeps the old fragments alive.
	if _, err := CreateBranch(ctx, store, testPath, "old", MainBranch, 6); err != nil {
		t.Fatal(err)
	}
	// An in-flight writer's staged (uncommitted) file.
	pending, err := ds.StageAppend(ctx, record(t, people("x", 0, 1)))
	if err != nil {
		t.Fatal(err)
	}
	// A deleted branch leaves files and (simulated residue) a version.
	dead, err := CreateBranch(ctx, store, testPath, "dead", MainBranch, 0)
	if err != nil {
		t.Fatal(err)
	}
	dbr, _ := Open(ctx, store, testPath, "dead")
	dbr = mustAppend(t, dbr, people("d", 0, 1))
	deadFile := testPath + "/" + dbr.Manifest().Fragments[len(dbr.Manifest().Fragments)-1].Path
	if _, err := store.Put(ctx, versionKey(testPath, "dead", 99), []byte("{}")); err != nil {
		t.Fatal(err)
	}
	if err := store.Delete(ctx, refKey(testPath, dead.Name)); err != nil { // crash after ref delete
		t.Fatal(err)
	}

	wantMain := rowsOf(t, ds)
	oldBr, _ := Open(ctx, store, testPath, "old")
	wantOld := rowsOf(t, oldBr)

	// With a long grace, nothing young is touched, but old versions go.
	res, err := Cleanup(ctx, store, testPath, CleanupOptions{RetainVersions: 2, Grace: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if res.FilesDeleted != 0 {
		t.Fatalf("grace violated: %+v", res)
	}
	if res.VersionsDeleted == 0 {
		t.Fatalf("no version deleted: %+v", res)
	}
	if _, err := OpenVersion(ctx, store, testPath, MainBranch, 1); err == nil {
		t.Fatal("version 1 survived retention")
	}
	// Fork point of a live branch is kept.
	if _, err := OpenVersion(ctx, store, testPath, MainBranch, 6); err != nil {
		t.Fatalf("fork point deleted: %v", err)
	}

	// Later (grace elapsed): unreferenced files and dead versions go.
	later := time.Now().Add(2 * time.Hour)
	res, err = Cleanup(ctx, store, testPath, CleanupOptions{RetainVersions: 1, Grace: time.Hour, Now: later})
	if err != nil {
		t.Fatal(err)
	}
	if res.FilesDeleted == 0 {
		t.Fatalf("nothing reclaimed: %+v", res)
	}
	keys := keysOf(t, store)
	for _, k := range keys {
		if k == deadFile || strings.Contains(k, "tree/dead/_versions") || k == pending.Files[0] {
			t.Fatalf("garbage survived: %s", k)
		}
	}
	re, err := Open(ctx, store, testPath, MainBranch)
	if err != nil || !equalRows(rowsOf(t, re), wantMain) {
		t.Fatalf("main damaged by cleanup: %v", err)
	}
	reOld, err := Open(ctx, store, testPath, "old")
	if err != nil || !equalRows(rowsOf(t, reOld), wantOld) {
		t.Fatalf("branch damaged by cleanup: %v", err)
	}
	// Idempotent.
	res, err = Cleanup(ctx, store, testPath, CleanupOptions{Grace: time.Hour, Now: later})
	if err != nil || res.FilesDeleted != 0 || res.VersionsDeleted != 0 {
		t.Fatalf("second cleanup: %+v %v", res, err)
	}
}
