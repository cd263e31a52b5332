package local_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/local"
)

func open(t *testing.T) (*local.Store, string) {
	t.Helper()
	dir := t.TempDir()
	s, err := local.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	return s, dir
}

func keys(t *testing.T, s backend.StorageAdapter, prefix string) []string {
	t.Helper()
	all, err := backend.ListAll(t.Context(), s, prefix)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, a := range all {
		out = append(out, a.Key)
	}
	return out
}

// Crash residue (temp files) and the lock files stay invisible: not listed,
// not making a directory exist, not blocking deletes.
func TestResidueAndLocksAreInvisible(t *testing.T) {
	ctx := t.Context()
	s, dir := open(t)
	if _, err := s.Put(ctx, "g/real", []byte("r")); err != nil {
		t.Fatal(err)
	}
	a, err := s.Put(ctx, "g/cas", []byte("1"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutIfMatch(ctx, "g/cas", []byte("2"), a.Version); err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, "residue", "deep"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "residue", "deep", "obj#123"), []byte("half"), 0o644))
	must(os.WriteFile(filepath.Join(dir, "g", "real#9"), []byte("half"), 0o644))

	if got := strings.Join(keys(t, s, ""), ","); got != "g/cas,g/real" {
		t.Fatalf("List = %s", got)
	}
	ents, _ := os.ReadDir(dir)
	var locks int
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".omnigraph-lock#") {
			locks++
		}
	}
	if locks == 0 {
		t.Fatal("no lock file was created by PutIfMatch")
	}
	for _, key := range []string{"residue", "residue/deep"} {
		if ok, err := s.Exists(ctx, key); err != nil || ok {
			t.Fatalf("Exists(%q) over residue only = %v, %v", key, ok, err)
		}
	}
	if _, _, err := s.Get(ctx, "g/real#9"); !errors.Is(err, backend.ErrPermanent) {
		t.Fatalf("Get of a temp name = %v, want Permanent", err)
	}
	// Residue does keep its directory on disk, so a file cannot take the
	// directory's name until a cleanup sweeps it; the error says why.
	_, err = s.Put(ctx, "residue", []byte("x"))
	if !errors.Is(err, backend.ErrPrecondition) || !strings.Contains(err.Error(), "cannot be an object too") {
		t.Fatalf("Put over a residue directory = %v", err)
	}
}

func TestKeyAndChildConflictIsClear(t *testing.T) {
	ctx := t.Context()
	s, _ := open(t)
	if _, err := s.Put(ctx, "k", []byte("file")); err != nil {
		t.Fatal(err)
	}
	_, err := s.Put(ctx, "k/child/grandchild", []byte("x"))
	if !errors.Is(err, backend.ErrPrecondition) || !strings.Contains(err.Error(), `"k" is an object`) {
		t.Fatalf("Put below an object = %v", err)
	}
	if _, err := s.Put(ctx, "d/child", []byte("x")); err != nil {
		t.Fatal(err)
	}
	for name, put := range map[string]func() error{
		"Put":         func() error { _, err := s.Put(ctx, "d", []byte("x")); return err },
		"PutIfAbsent": func() error { _, err := s.PutIfAbsent(ctx, "d", []byte("x")); return err },
	} {
		err := put()
		if !errors.Is(err, backend.ErrPrecondition) || !strings.Contains(err.Error(), "keys exist below") {
			t.Fatalf("%s over a prefix = %v", name, err)
		}
	}
	// After the child goes, its directory goes with it and the name is free.
	if err := s.Delete(ctx, "d/child"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutIfAbsent(ctx, "d", []byte("now a file")); err != nil {
		t.Fatalf("PutIfAbsent after the prefix emptied: %v", err)
	}
}

func TestDeleteRemovesEmptyParents(t *testing.T) {
	ctx := t.Context()
	s, dir := open(t)
	for _, k := range []string{"a/b/c/d", "a/x"} {
		if _, err := s.Put(ctx, k, []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Delete(ctx, "a/b/c/d"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "a", "b")); !os.IsNotExist(err) {
		t.Fatalf("a/b should be gone: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "a", "x")); err != nil {
		t.Fatalf("a/x should stay: %v", err)
	}
	if err := s.DeletePrefix(ctx, "a/"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "a")); !os.IsNotExist(err) {
		t.Fatalf("a should be gone: %v", err)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("the root must stay: %v", err)
	}
}

func TestErrorsCarryNoPath(t *testing.T) {
	ctx := t.Context()
	s, dir := open(t)
	// A 300-byte segment is over every common filesystem's name limit, so
	// the kernel refuses it whoever runs the test.
	long := strings.Repeat("n", 300)
	_, err := s.Put(ctx, "x/"+long, []byte("v"))
	checkNoPath(t, dir, "Put in a directory", err)
	_, err = s.Put(ctx, long, []byte("v"))
	checkNoPath(t, dir, "Put", err)
	_, err = s.PutIfAbsent(ctx, long, []byte("v"))
	checkNoPath(t, dir, "PutIfAbsent", err)
	_, _, err = s.Get(ctx, long)
	checkNoPath(t, dir, "Get", err)
	_, err = s.Stat(ctx, long)
	checkNoPath(t, dir, "Stat", err)
}

func checkNoPath(t *testing.T, dir, name string, err error) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s of an over-long name succeeded", name)
	}
	if strings.Contains(err.Error(), dir) {
		t.Fatalf("%s error leaks the storage path: %v", name, err)
	}
	if backend.KindOf(err) != backend.KindConfiguration {
		t.Fatalf("%s error kind = %s, want configuration: %v", name, backend.KindOf(err), err)
	}
}

func TestOpenURLs(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cases := []struct {
		name    string
		url     string
		wantErr string
	}{
		{name: "plain absolute path", url: dir},
		{name: "file URL", url: "file://" + dir},
		{name: "file URL with localhost", url: "file://localhost" + dir},
		{name: "unknown parameter", url: "file://" + dir + "?fsync=off", wantErr: `unknown parameter "fsync"`},
		{name: "remote host", url: "file://server" + dir, wantErr: "host"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := backend.Open(ctx, c.url)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) || !errors.Is(err, backend.ErrConfiguration) {
					t.Fatalf("Open(%q) = %v, want a Configuration error mentioning %q", c.url, err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Open(%q): %v", c.url, err)
			}
			ls, ok := s.(*local.Store)
			if !ok || ls.Root() != dir {
				t.Fatalf("Open(%q) = %T rooted elsewhere", c.url, s)
			}
		})
	}
	// A file where the root should be is refused.
	f := filepath.Join(dir, "afile")
	os.WriteFile(f, nil, 0o644)
	if _, err := local.New(f); !errors.Is(err, backend.ErrConfiguration) {
		t.Fatalf("New(file) = %v, want Configuration", err)
	}
}

// TestOpenAndReadsCreateNothing pins "nothing is created by a command that
// only reads": opening a missing directory, and every read and no-op
// delete on it, leave the filesystem untouched; the first write creates
// the directory with its parents.
func TestOpenAndReadsCreateNothing(t *testing.T) {
	ctx := t.Context()
	parent := t.TempDir()
	root := filepath.Join(parent, "typo", "graph")
	s, err := local.New(root)
	if err != nil {
		t.Fatalf("New(missing dir) = %v", err)
	}
	if s.RootExists() {
		t.Fatal("RootExists on a missing directory")
	}
	if _, _, err := s.Get(ctx, "a/b"); !errors.Is(err, backend.ErrNotFound) {
		t.Fatalf("Get = %v, want NotFound", err)
	}
	if _, err := s.Stat(ctx, "a"); !errors.Is(err, backend.ErrNotFound) {
		t.Fatalf("Stat = %v, want NotFound", err)
	}
	if ok, err := s.Exists(ctx, "a"); ok || err != nil {
		t.Fatalf("Exists = %v, %v", ok, err)
	}
	if page, err := s.List(ctx, "", backend.ListOptions{}); err != nil || len(page.Objects) != 0 {
		t.Fatalf("List = %+v, %v", page, err)
	}
	if err := s.Delete(ctx, "a/b"); err != nil {
		t.Fatalf("Delete of a missing key = %v", err)
	}
	if err := s.DeletePrefix(ctx, "a/"); err != nil {
		t.Fatalf("DeletePrefix = %v", err)
	}
	if _, err := s.PutIfMatch(ctx, "a", []byte("x"), "v"); !errors.Is(err, backend.ErrNotFound) {
		t.Fatalf("PutIfMatch = %v, want NotFound", err)
	}
	if ents, _ := os.ReadDir(parent); len(ents) != 0 {
		t.Fatalf("reads created %v", ents)
	}
	if _, err := s.PutIfAbsent(ctx, "a/b", []byte("x")); err != nil {
		t.Fatalf("first write: %v", err)
	}
	if got, _, err := s.Get(ctx, "a/b"); err != nil || string(got) != "x" {
		t.Fatalf("Get after the first write = %q, %v", got, err)
	}
	if !s.RootExists() {
		t.Fatal("the first write did not create the directory")
	}
	// A fresh store's first Put takes the lock, whose file lives in the root.
	s2, _ := local.New(filepath.Join(parent, "second"))
	if _, err := s2.Put(ctx, "k", []byte("v")); err != nil {
		t.Fatalf("Put into a missing directory: %v", err)
	}
}
