package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/omnigraph-go/omnigraph/server"
)

// stepLog records the durable steps of every atomicFile.Commit while a test
// runs, calling the real ones, and can fail one step as a crash there would.
type stepLog struct {
	mu    sync.Mutex
	steps []string // "sync <target>", "rename <target>", "sync-dir <dir>"
	// tmp maps a temporary file to the target it belongs to.
	tmp map[string]string
	// fail, when set, is the step (e.g. "rename") that fails instead of
	// running.
	fail string
}

var errCrash = errors.New("injected crash")

// recordSteps swaps durableSteps for the test's recorder.
func recordSteps(t *testing.T) *stepLog {
	t.Helper()
	l := &stepLog{tmp: map[string]string{}}
	real := durableSteps
	t.Cleanup(func() { durableSteps = real })
	target := func(tmp string) string {
		// createAtomic names the file ".<target>.<random>" beside the target.
		base := strings.TrimPrefix(filepath.Base(tmp), ".")
		return filepath.Join(filepath.Dir(tmp), base[:strings.LastIndexByte(base, '.')])
	}
	durableSteps = fileSteps{
		sync: func(f *os.File) error {
			l.note("sync " + target(f.Name()))
			if l.fail == "sync" {
				return errCrash
			}
			return real.sync(f)
		},
		rename: func(from, to string) error {
			if target(from) != to {
				t.Errorf("renamed %s over %s, which is not its target", from, to)
			}
			l.note("rename " + to)
			if l.fail == "rename" {
				return errCrash
			}
			return real.rename(from, to)
		},
		syncDir: func(dir string) error {
			l.note("sync-dir " + dir)
			if l.fail == "sync-dir" {
				return errCrash
			}
			return real.syncDir(dir)
		},
	}
	return l
}

func (l *stepLog) note(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.steps = append(l.steps, s)
}

// wantDurable checks that every write of target was sync, rename, sync of
// its directory, in that order, and that there was at least one.
func (l *stepLog) wantDurable(t *testing.T, target string) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var got []string
	for i, s := range l.steps {
		switch s {
		case "sync " + target, "rename " + target:
			got = append(got, strings.Fields(s)[0])
		case "sync-dir " + filepath.Dir(target):
			// The directory sync that follows this target's rename.
			if i > 0 && l.steps[i-1] == "rename "+target {
				got = append(got, "sync-dir")
			}
		}
	}
	order := []string{"sync", "rename", "sync-dir"}
	ok := len(got) > 0 && len(got)%len(order) == 0
	for i, s := range got {
		ok = ok && s == order[i%len(order)]
	}
	if !ok {
		t.Errorf("%s was replaced with steps %v, want [sync rename sync-dir] per write (data fsynced before the rename, the directory after)\nall steps: %v",
			filepath.Base(target), got, l.steps)
	}
}

// noTemps fails when dir holds a leftover temporary file.
func noTemps(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("a temporary file was left behind: %s", e.Name())
		}
	}
}

// TestReplacedFilesAreDurable: every file the CLI puts in place (the
// tokens file of 'token add', the NDJSON and schema of 'export --out', the
// output of 'embed') is fsynced before its rename and its directory after,
// so a crash can never leave one of them empty or short. The real fsyncs
// run; the recorder only sees them (dropping the fsync from the helper, or
// a command writing its file another way, fails this test).
func TestReplacedFilesAreDurable(t *testing.T) {
	dir := t.TempDir()
	steps := recordSteps(t)

	tokens := filepath.Join(dir, "tokens.json")
	mustCLI(t, "token", "add", "alice", "--tokens", tokens)
	mustCLI(t, "token", "add", "bob", "--tokens", tokens)
	steps.wantDurable(t, tokens)
	raw, err := os.ReadFile(tokens)
	if err != nil {
		t.Fatal(err)
	}
	f, err := server.ParseTokens(raw)
	if err != nil || len(f.Tokens) != 2 {
		t.Fatalf("tokens file after two adds: %v, %+v", err, f)
	}
	if fi, err := os.Stat(tokens); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("tokens file mode %v (%v), want 0600", fi.Mode().Perm(), err)
	}

	g := filepath.Join(dir, "g")
	mustCLI(t, "init", "--schema", "../../examples/social.pg", g)
	mustCLI(t, "load", "--data", "../../examples/social.jsonl", "--mode", "append", g)
	out := filepath.Join(dir, "graph.jsonl")
	mustCLI(t, "export", "--out", out, "--store", g)
	steps.wantDurable(t, out)
	steps.wantDurable(t, filepath.Join(dir, "graph.pg"))
	if b, err := os.ReadFile(out); err != nil || !strings.Contains(string(b), `"type":"Person"`) {
		t.Fatalf("export file: %v\n%s", err, b)
	}

	t.Setenv("OMNIGRAPH_EMBEDDINGS_MOCK", "")
	t.Setenv("OMNIGRAPH_EMBED_PROVIDER", "")
	schema := filepath.Join(dir, "s.pg")
	os.WriteFile(schema, []byte("node Doc {\n  slug: String @key\n  title: String\n  v: Vector(8)? @embed(\"title\")\n}\n"), 0o644)
	in := filepath.Join(dir, "in.jsonl")
	os.WriteFile(in, []byte(`{"type":"Doc","data":{"slug":"a","title":"alpha guide"}}`+"\n"), 0o644)
	embedded := filepath.Join(dir, "embedded.jsonl")
	mustCLI(t, "embed", "--input", in, "--output", embedded, "--schema", schema)
	steps.wantDurable(t, embedded)
	if b, err := os.ReadFile(embedded); err != nil || !strings.Contains(string(b), `"v":[`) {
		t.Fatalf("embed output: %v\n%s", err, b)
	}
	noTemps(t, dir)
}

// TestTokenAddCrashKeepsWholeFile: 'token add' interrupted at each durable
// step leaves the tokens file whole: the old one (with the old actor only)
// when it stops before the rename, the new one when it stops after; never
// an empty or partial file, and no temporary file.
func TestTokenAddCrashKeepsWholeFile(t *testing.T) {
	for _, c := range []struct {
		step string
		want []string
	}{
		{"sync", []string{"alice"}},
		{"rename", []string{"alice"}},
		{"sync-dir", []string{"alice", "bob"}},
	} {
		t.Run(c.step, func(t *testing.T) {
			dir := t.TempDir()
			tokens := filepath.Join(dir, "tokens.json")
			mustCLI(t, "token", "add", "alice", "--tokens", tokens)
			steps := recordSteps(t)
			steps.fail = c.step
			code, _, errs := cli(t, "token", "add", "bob", "--tokens", tokens)
			if code == exitOK || !strings.Contains(errs, "store the tokens file") {
				t.Fatalf("token add with a failed %s: exit %d, %s", c.step, code, errs)
			}
			raw, err := os.ReadFile(tokens)
			if err != nil {
				t.Fatal(err)
			}
			f, err := server.ParseTokens(raw)
			if err != nil {
				t.Fatalf("tokens file after a failed %s does not parse (%v):\n%s", c.step, err, raw)
			}
			var actors []string
			for _, e := range f.Tokens {
				actors = append(actors, e.Actor)
			}
			if fmt.Sprint(actors) != fmt.Sprint(c.want) {
				t.Fatalf("tokens file after a failed %s holds %v, want %v", c.step, actors, c.want)
			}
			noTemps(t, dir)
		})
	}
}
