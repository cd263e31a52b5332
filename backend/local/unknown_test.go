package local_test

import (
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/local"
)

// TestErrorAfterRenameIsUnknown pins the rule that a filesystem error after
// the rename, link or unlink (the directory fsync) may mean the write took
// effect: it is Unknown, never a plain failure, and the write is visible.
func TestErrorAfterRenameIsUnknown(t *testing.T) {
	ctx := context.Background()
	ops := []struct {
		name  string
		write func(s *local.Store) error
		check func(t *testing.T, s *local.Store)
	}{
		{"put", func(s *local.Store) error { _, err := s.Put(ctx, "k", []byte("new")); return err }, wantBytes("new")},
		{"put-if-absent", func(s *local.Store) error { _, err := s.PutIfAbsent(ctx, "fresh", []byte("new")); return err }, func(t *testing.T, s *local.Store) {
			if got, _, err := s.Get(ctx, "fresh"); err != nil || string(got) != "new" {
				t.Fatalf("Get = %q, %v; the create took effect", got, err)
			}
		}},
		{"put-if-match", func(s *local.Store) error {
			a, err := s.Stat(ctx, "k")
			if err != nil {
				return err
			}
			_, err = s.PutIfMatch(ctx, "k", []byte("new"), a.Version)
			return err
		}, wantBytes("new")},
		{"delete", func(s *local.Store) error { return s.Delete(ctx, "k") }, func(t *testing.T, s *local.Store) {
			if _, _, err := s.Get(ctx, "k"); !backend.IsNotFound(err) {
				t.Fatalf("Get after delete = %v; the delete took effect", err)
			}
		}},
	}
	for _, op := range ops {
		t.Run(op.name, func(t *testing.T) {
			s, dir := open(t)
			if _, err := s.Put(ctx, "k", []byte("old")); err != nil {
				t.Fatal(err)
			}
			local.SetSyncDirHook(func(string) error { return syscall.EIO })
			err := op.write(s)
			local.SetSyncDirHook(nil)
			if backend.KindOf(err) != backend.KindUnknown || !errors.Is(err, backend.ErrUnknown) {
				t.Fatalf("%s with a failed directory fsync = %v (kind %s), want Unknown", op.name, err, backend.KindOf(err))
			}
			if strings.Contains(err.Error(), dir) {
				t.Fatalf("error names the storage path: %v", err)
			}
			op.check(t, s)
		})
	}
}

func wantBytes(want string) func(t *testing.T, s *local.Store) {
	return func(t *testing.T, s *local.Store) {
		t.Helper()
		if got, _, err := s.Get(context.Background(), "k"); err != nil || string(got) != want {
			t.Fatalf("Get = %q, %v; want %q (the write took effect)", got, err, want)
		}
	}
}
