package iceberg_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/graph/cleanup"
	"github.com/omnigraph-go/omnigraph/graph/iceberg"
	"github.com/omnigraph-go/omnigraph/manifest"
)

// usage is what the _iceberg/ prefix holds.
type usage struct {
	objects, metadataFiles int
	bytes                  int64
	// maxMetadataPerTable is the most v<N>.metadata.json files of one table.
	maxMetadataPerTable int
}

func icebergUsage(t *testing.T, store backend.StorageAdapter) usage {
	t.Helper()
	objs, err := backend.ListAll(context.Background(), store, iceberg.Prefix)
	if err != nil {
		t.Fatal(err)
	}
	var u usage
	perTable := map[string]int{}
	for _, o := range objs {
		u.objects++
		u.bytes += o.Size
		if strings.HasSuffix(o.Key, ".metadata.json") {
			u.metadataFiles++
			dir := o.Key[:strings.LastIndex(o.Key, "/metadata/")]
			perTable[dir]++
			u.maxMetadataPerTable = max(u.maxMetadataPerTable, perTable[dir])
		}
	}
	return u
}

// checkEverySnapshot scans every snapshot each table's metadata still
// lists, with iceberg-go's own scanner: each must read (no file it names
// was collected) and hold the rows its summary counts.
func (r *rig) checkEverySnapshot(step string) {
	r.t.Helper()
	for _, key := range tableKeys {
		tbl := r.loadTable(r.open(), key)
		for _, sn := range tbl.Metadata().Snapshots() {
			rows := icebergRows(r.t, tbl, scanSelector{snapshot: sn.SnapshotID}, []string{"id"})
			want, err := strconv.Atoi(sn.Summary.Properties["total-records"])
			if err != nil {
				r.t.Fatalf("%s: %s snapshot %d has no total-records: %v", step, key, sn.SnapshotID, sn.Summary.Properties)
			}
			if len(rows) != want {
				r.t.Fatalf("%s: %s snapshot %d reads %d rows, its summary says %d", step, key, sn.SnapshotID, len(rows), want)
			}
		}
	}
}

// TestCleanupCollectsIcebergFiles: cleanup deletes the Iceberg files of
// the snapshots it expires and the old metadata files, so the _iceberg/
// prefix after a cleanup is the same size after 60 and after 60 more
// commits (without collection it doubles), while every table still reads
// at both branch heads and at every snapshot the metadata still lists.
func TestCleanupCollectsIcebergFiles(t *testing.T) {
	ctx := context.Background()
	r := newLocalRig(t)
	r.init(testSchema)
	loadData(t, r.g, "main", testSeed)
	if _, err := r.g.CreateBranch(ctx, "feature", "main"); err != nil {
		t.Fatal(err)
	}
	r.sync()
	commits := func(from, n int) {
		for i := from; i < from+n; i++ {
			// A keyed update leaves a deletion vector (a position-delete file).
			mutateQ(t, r.g, "main", fmt.Sprintf(`query q() { update Person set { age: %d } where handle = "ada" }`, i))
			if i%5 == 0 {
				mutateQ(t, r.g, "feature", fmt.Sprintf(`query q() { update Person set { visits: %d } where handle = "bob" }`, i))
				loadData(t, r.g, "main", fmt.Sprintf(`{"type":"Person","data":{"handle":"p%d","name":"P"}}
{"edge":"Knows","from":"p%d","to":"ada"}
`, i, i))
			}
			r.sync()
		}
	}
	clean := func(step string) *cleanup.Result {
		t.Helper()
		res, err := cleanup.Run(ctx, r.g, cleanup.Options{Keep: 2, Confirm: true, Retained: iceberg.CleanupHook(r.loc)})
		if err != nil {
			t.Fatalf("%s: cleanup: %v", step, err)
		}
		r.check(step, "main")
		r.check(step, "feature")
		r.checkEverySnapshot(step)
		return res
	}

	commits(0, 60)
	before := icebergUsage(t, r.store)
	res1 := clean("first cleanup")
	after1 := icebergUsage(t, r.store)
	t.Logf("60 commits: _iceberg/ %d objects (%d metadata files), %d bytes; cleanup removed %d objects, %d bytes; after: %d objects (%d metadata), %d bytes",
		before.objects, before.metadataFiles, before.bytes, res1.Iceberg.Objects, res1.Iceberg.Bytes, after1.objects, after1.metadataFiles, after1.bytes)
	if res1.Iceberg.Objects < before.objects/2 {
		t.Fatalf("cleanup collected %d of %d Iceberg objects; expired snapshots' files should be most of them", res1.Iceberg.Objects, before.objects)
	}
	if after1.maxMetadataPerTable > 11 {
		t.Fatalf("a table keeps %d metadata files after cleanup, want at most 11", after1.maxMetadataPerTable)
	}

	commits(60, 60)
	grown := icebergUsage(t, r.store)
	res2 := clean("second cleanup")
	after2 := icebergUsage(t, r.store)
	t.Logf("60 more commits: _iceberg/ %d objects, %d bytes; cleanup removed %d objects, %d bytes; after: %d objects (%d metadata), %d bytes",
		grown.objects, grown.bytes, res2.Iceberg.Objects, res2.Iceberg.Bytes, after2.objects, after2.metadataFiles, after2.bytes)
	// Flat: the prefix after cleanup follows the retention, not history
	// (the metadata file grows a little with the rows it counts).
	if after2.objects > after1.objects+4 || after2.bytes > after1.bytes*5/4 {
		t.Fatalf("_iceberg/ after cleanup grew with history: %d objects / %d bytes after 60 commits, %d / %d after 120", after1.objects, after1.bytes, after2.objects, after2.bytes)
	}
	if res1.Objects < res1.Iceberg.Objects || res1.Bytes < res1.Iceberg.Bytes {
		t.Fatalf("cleanup's totals (%d objects, %d bytes) leave out its Iceberg files (%+v)", res1.Objects, res1.Bytes, res1.Iceberg)
	}

	// Collect finds nothing more: what it left is what the metadata names.
	again, err := iceberg.Collect(ctx, r.store, iceberg.CollectOptions{Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if again.Objects != 0 {
		t.Fatalf("a second collection found %d more objects", again.Objects)
	}
}

// TestCollectSparesYoungFilesAndKnownKinds: a stray snapshot file and
// position-delete file (what a sync stopped before its publish leaves) are
// collected once older than the grace, never before; files of other kinds
// and the version hint are never touched.
func TestCollectSparesYoungFilesAndKnownKinds(t *testing.T) {
	ctx := context.Background()
	r := newLocalRig(t)
	r.init(testSchema)
	loadData(t, r.g, "main", testSeed)
	r.sync()
	dir := "_iceberg/nodes/Person/"
	strays := []string{dir + "metadata/snap-999999-0123abcd.avro", dir + "metadata/snap-999999-0123abcd-data.avro", dir + "data/0123-4567.parquet"}
	others := []string{dir + "notes.txt", dir + "metadata/version-hint.text"}
	for _, k := range append(strays, others[0]) {
		if _, err := r.store.Put(ctx, k, []byte("staged")); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now()
	young, err := iceberg.Collect(ctx, r.store, iceberg.CollectOptions{Grace: time.Hour, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if young.Objects != 0 {
		t.Fatalf("collected %d files younger than the grace", young.Objects)
	}
	old, err := iceberg.Collect(ctx, r.store, iceberg.CollectOptions{Grace: time.Hour, Now: now.Add(2 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if old.Objects != len(strays) {
		t.Fatalf("collected %d files past the grace, want the %d strays", old.Objects, len(strays))
	}
	for _, k := range strays {
		if ok, _ := r.store.Exists(ctx, k); ok {
			t.Fatalf("stray %s survived", k)
		}
	}
	for _, k := range others {
		if ok, _ := r.store.Exists(ctx, k); !ok {
			t.Fatalf("%s was deleted; only snapshot and position-delete files are collected", k)
		}
	}
	r.check("after collecting strays", "main")
}

// TestCollectCrashAtEveryDelete: a collection stopped before any of its
// deletes leaves every table readable at its heads and every listed
// snapshot, and the next run finishes it.
func TestCollectCrashAtEveryDelete(t *testing.T) {
	ctx := context.Background()
	r := newLocalRig(t)
	r.init(testSchema)
	loadData(t, r.g, "main", testSeed)
	r.sync()
	for i := range 6 {
		mutateQ(t, r.g, "main", fmt.Sprintf(`query q() { update Person set { age: %d } where handle = "bob" }`, i))
		r.sync()
	}
	// Expire every snapshot but the heads (a retention that keeps nothing
	// older), as cleanup's hook does before it collects.
	none := func(string, string, uint64) bool { return false }
	if _, err := iceberg.Sync(ctx, r.g, iceberg.Options{Location: r.loc, Expire: &iceberg.Retention{Kept: none, Entries: map[string]*manifest.Entry{}}}); err != nil {
		t.Fatal(err)
	}
	errCrash := errors.New("crash")
	for k := 1; ; k++ {
		n := 0
		got, err := iceberg.Collect(ctx, r.store, iceberg.CollectOptions{Now: time.Now(), BeforeDelete: func(string) error {
			n++
			if n == k {
				return errCrash
			}
			return nil
		}})
		step := fmt.Sprintf("crash before delete %d", k)
		r.check(step, "main")
		r.checkEverySnapshot(step)
		if err == nil {
			if got.Objects >= k {
				t.Fatalf("run %d collected %d objects without reaching its crash", k, got.Objects)
			}
			again, err := iceberg.Collect(ctx, r.store, iceberg.CollectOptions{Now: time.Now()})
			if err != nil || again.Objects != 0 {
				t.Fatalf("after the run that finished, another collected %d objects (%v)", again.Objects, err)
			}
			if k < 3 {
				t.Fatalf("only %d runs: the expiry left nothing to collect", k)
			}
			return
		}
		if !errors.Is(err, errCrash) {
			t.Fatal(err)
		}
	}
}
