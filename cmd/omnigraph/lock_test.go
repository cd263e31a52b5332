package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/clusterlock"
)

// lockedGraph is a local graph with one Person and a branch "old", whose
// cluster lock this test process holds (operation "load").
func lockedGraph(t *testing.T) (url string, store backend.StorageAdapter, l *clusterlock.Lock) {
	t.Helper()
	url = filepath.Join(t.TempDir(), "g")
	mustCLI(t, "init", "--schema", writeSchema(t), url)
	mustCLI(t, "mutate", "-e", `insert Person {name: "ada"}`, "--store", url)
	mustCLI(t, "branch", "create", "old", "--store", url)
	ctx := context.Background()
	store, err := backend.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	l, err = clusterlock.Acquire(ctx, store, clusterlock.Options{Operation: "load"})
	if err != nil {
		t.Fatal(err)
	}
	return url, store, l
}

func rawLock(t *testing.T, store backend.StorageAdapter) string {
	t.Helper()
	b, _, err := store.Get(context.Background(), clusterlock.LockKey)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestLockStatusAndUnlock pins `lock status` (text and JSON: holder, age,
// leased, holder gone, unlock command; "not held" when free) and `lock
// unlock --id`: a wrong id exits 1 with lock_wrong_id and changes nothing,
// the exact id releases, and a free lock is lock_not_held.
func TestLockStatusAndUnlock(t *testing.T) {
	url, store, l := lockedGraph(t)
	host, _ := os.Hostname()

	text := mustCLI(t, "lock", "status", "--store", url)
	for _, want := range []string{"held", "lock id:", l.ID(), "operation:", "load", "host " + host, "pid " + itoa(os.Getpid()), "leased:", "no", "omnigraph lock unlock --id " + l.ID() + " --store " + url} {
		if !strings.Contains(text, want) {
			t.Errorf("lock status text lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "holder gone") {
		t.Errorf("lock status says a live holder is gone:\n%s", text)
	}
	st := lockStatus(t, url)
	if !st.Held || st.LockID != l.ID() || st.Operation != "load" || st.Owner == nil || st.Owner.PID != os.Getpid() || st.Owner.Host != host ||
		st.Leased || st.HolderGone || st.CreatedAt == nil || st.UnlockCommand != "omnigraph lock unlock --id "+l.ID()+" --store "+url {
		t.Fatalf("lock status --json = %+v", st)
	}

	before := rawLock(t, store)
	code, out, errs := cli(t, "lock", "unlock", "--id", clusterlock.NewLockID(), "--store", url, "--json")
	var je jsonError
	if code != exitError || out != "" || json.Unmarshal([]byte(errs), &je) != nil || je.Error.Code != "lock_wrong_id" || !strings.Contains(je.Error.Message, "nothing was changed") {
		t.Fatalf("unlock with a wrong id: exit %d, out %q, err %q; want exit 1, lock_wrong_id", code, out, errs)
	}
	if after := rawLock(t, store); after != before {
		t.Fatalf("a wrong-id unlock changed the lock record:\n%s\n->\n%s", before, after)
	}
	if code, _, _ := cli(t, "lock", "unlock", "--store", url); code != exitUsage {
		t.Fatalf("unlock without --id: exit %d, want 2", code)
	}

	var un map[string]any
	if err := json.Unmarshal([]byte(mustCLI(t, "lock", "unlock", "--id", l.ID(), "--store", url, "--json")), &un); err != nil || un["lock_id"] != l.ID() || un["unlocked"] != true {
		t.Fatalf("unlock --json = %v (%v)", un, err)
	}
	if text := mustCLI(t, "lock", "status", "--store", url); strings.TrimSpace(text) != "cluster lock: not held" {
		t.Fatalf("lock status after unlock = %q", text)
	}
	if st := lockStatus(t, url); st.Held || st.LockID != "" || st.Owner != nil {
		t.Fatalf("lock status --json after unlock = %+v", st)
	}
	if code, _, errs := cli(t, "lock", "unlock", "--id", l.ID(), "--store", url, "--json"); code != exitError || !strings.Contains(errs, `"lock_not_held"`) {
		t.Fatalf("second unlock: exit %d, %q; want exit 1, lock_not_held", code, errs)
	}
	// The holder of an unlocked lock finds it gone at release.
	if err := l.Release(context.Background()); err == nil {
		t.Fatal("releasing an unlocked lock succeeded")
	}
	// A fresh location: status reads nothing and creates nothing.
	empty := filepath.Join(t.TempDir(), "none")
	if text := mustCLI(t, "lock", "status", "--store", empty); strings.TrimSpace(text) != "cluster lock: not held" {
		t.Fatalf("lock status of an empty location = %q", text)
	}
	if _, err := os.Stat(empty); !os.IsNotExist(err) {
		t.Fatalf("lock status created the location: %v", err)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// TestReadsDoNotTakeTheLock pins "reads never take the lock": every read
// command succeeds while another process holds it and leaves the record as
// it was, while every write and maintenance command is refused at once with
// exit 3 / state_lock_held and writes nothing.
func TestReadsDoNotTakeTheLock(t *testing.T) {
	url, store, l := lockedGraph(t)
	before := rawLock(t, store)
	commits := mustCLI(t, "commit", "list", "--store", url, "--json")
	for _, args := range [][]string{
		{"query", "-e", `query q() { match { $p: Person } return { $p.name } }`, "--store", url},
		{"snapshot", "--store", url},
		{"commit", "list", "--store", url},
		{"recovery", "list", "--store", url},
		{"branch", "list", "--store", url},
		{"schema", "show", "--store", url},
		{"lock", "status", "--store", url},
	} {
		mustCLI(t, args...)
		if after := rawLock(t, store); after != before {
			t.Fatalf("omnigraph %s changed the lock record", strings.Join(args, " "))
		}
	}
	data := filepath.Join(t.TempDir(), "d.jsonl")
	if err := os.WriteFile(data, []byte(`{"type":"Person","data":{"name":"bo"}}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"mutate", "-e", `insert Person {name: "bo"}`, "--store", url},
		{"load", "--data", data, "--mode", "append", "--store", url},
		{"branch", "create", "feature", "--store", url},
		{"branch", "delete", "old", "--store", url},
		{"repair", "--store", url},
		{"repair", "--confirm", "--store", url},
	} {
		code, out, errs := cli(t, append(args, "--json")...)
		var je jsonError
		if code != exitLockHeld || out != "" || json.Unmarshal([]byte(errs), &je) != nil || je.Error.Code != "state_lock_held" ||
			!strings.Contains(je.Error.Message, l.ID()) || !strings.Contains(je.Error.Message, "omnigraph lock unlock --id "+l.ID()+" --store "+url) {
			t.Errorf("omnigraph %s while locked: exit %d, out %q, err %q; want exit 3 state_lock_held naming the lock", strings.Join(args, " "), code, out, errs)
		}
		if code, _, errs := cli(t, args...); code != exitLockHeld || !strings.HasPrefix(errs, "error: state_lock_held") {
			t.Errorf("omnigraph %s while locked (text): exit %d, %q", strings.Join(args, " "), code, errs)
		}
	}
	if after := mustCLI(t, "commit", "list", "--store", url, "--json"); after != commits {
		t.Fatalf("refused writes changed the commits:\n%s\n->\n%s", commits, after)
	}
	if after := rawLock(t, store); after != before {
		t.Fatal("refused writes changed the lock record")
	}
	if got := personNames(t, url); len(got) != 1 || got["ada"] != 1 {
		t.Fatalf("persons after refused writes: %v", got)
	}
	// Released, the same write goes through.
	if err := l.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	mustCLI(t, "mutate", "-e", `insert Person {name: "bo"}`, "--store", url)
	if got := personNames(t, url); got["bo"] != 1 {
		t.Fatalf("persons after the lock was released: %v", got)
	}
}

// TestWaitNeverWaitsForAServer pins "--wait still refuses at once when the
// holder is a server": with a leased record in place, a write with --wait
// 1h is refused with state_lock_held, not left polling until its context
// ends.
func TestWaitNeverWaitsForAServer(t *testing.T) {
	url := filepath.Join(t.TempDir(), "g")
	mustCLI(t, "init", "--schema", writeSchema(t), url)
	ctx := context.Background()
	store, err := backend.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	rec := clusterlock.Record{FormatVersion: clusterlock.FormatLeased, LockID: clusterlock.NewLockID(), Operation: "serve",
		Owner: clusterlock.Owner{Host: "server-1", PID: 1}, CreatedAt: time.Now().UTC(), LeaseSeconds: 30}
	b, _ := json.Marshal(rec)
	if _, err := store.PutIfAbsent(ctx, clusterlock.LockKey, b); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	var out, errb strings.Builder
	code := run(wctx, []string{"mutate", "-e", `insert Person {name: "x"}`, "--wait", "1h", "--store", url}, strings.NewReader(""), &out, &errb)
	if code != exitLockHeld || !strings.Contains(errb.String(), "state_lock_held") || !strings.Contains(errb.String(), "server") || wctx.Err() != nil {
		t.Fatalf("write with --wait against a server's lock: exit %d, %q (context %v); want exit 3 at once", code, errb.String(), wctx.Err())
	}
	st := lockStatus(t, url)
	if !st.Held || !st.Leased || st.LeaseSeconds != 30 || st.LockID != rec.LockID {
		t.Fatalf("lock status of a server's lock = %+v", st)
	}
	if text := mustCLI(t, "lock", "status", "--store", url); !strings.Contains(text, "leased:") || !strings.Contains(text, "lease 30 s") || !strings.Contains(text, "last heartbeat:") {
		t.Fatalf("lock status text of a server's lock:\n%s", text)
	}
}

// TestFailedWriteOnEmptyLocationLeavesNoLock pins that the lock is taken
// only on a graph: a write to a location without one fails with no_graph
// as before and creates nothing (so a later init there is not refused as
// "not empty").
func TestFailedWriteOnEmptyLocationLeavesNoLock(t *testing.T) {
	dir := t.TempDir()
	if code, _, errs := cli(t, "mutate", "-e", `insert Person {name: "x"}`, "--store", dir, "--json"); code != exitError || !strings.Contains(errs, `"no_graph"`) {
		t.Fatalf("write to an empty location: exit %d, %q", code, errs)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("a failed write left %v", ents)
	}
	mustCLI(t, "init", "--schema", writeSchema(t), dir)
	mustCLI(t, "mutate", "-e", `insert Person {name: "x"}`, "--store", dir)
	// init over a graph whose lock record exists still says "graph exists".
	if code, _, errs := cli(t, "init", "--schema", writeSchema(t), dir, "--json"); code != exitError || !strings.Contains(errs, `"graph_exists"`) {
		t.Fatalf("init over a locked-before graph: exit %d, %q", code, errs)
	}
}
