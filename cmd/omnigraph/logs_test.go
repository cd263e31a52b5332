package main

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/logging"
	"github.com/omnigraph-go/omnigraph/backend/mem"
	"github.com/omnigraph-go/omnigraph/backend/poison"
)

// TestLogSettingsAreChecked pins the rule: an unknown log format or level is
// a usage error that names the variable, before anything is opened.
func TestLogSettingsAreChecked(t *testing.T) {
	for _, tc := range []struct{ env, val string }{
		{logging.EnvLevel, "loud"},
		{logging.EnvFormat, "xml"},
	} {
		t.Run(tc.env, func(t *testing.T) {
			t.Setenv(tc.env, tc.val)
			dir := t.TempDir() + "/never"
			code, _, errs := cli(t, "query", "--store", dir, "-e", "query q() { match { $p: Person } return { $p.name } }", "q")
			if code != exitUsage || !strings.Contains(errs, tc.env) {
				t.Fatalf("exit %d, stderr %q; want exit %d naming %s", code, errs, exitUsage, tc.env)
			}
		})
	}
}

// TestCLIStoresArePoisonedAndLogged pins the rule: a store the CLI opens
// refuses writes to a key whose earlier write had an unknown outcome, and
// logs each failed request by class only.
func TestCLIStoresArePoisonedAndLogged(t *testing.T) {
	var buf strings.Builder
	log, err := logging.New(&buf, "json", "debug")
	if err != nil {
		t.Fatal(err)
	}
	ctx := withLogger(context.Background(), log)
	inner := mem.New()
	s := wrapStore(ctx, unknownPuts{inner})
	if _, err := s.Put(ctx, "dir/reused.json", []byte("1")); !errors.Is(err, backend.ErrUnknown) {
		t.Fatalf("first put = %v, want unknown", err)
	}
	if _, err := s.Put(ctx, "dir/reused.json", []byte("2")); !errors.Is(err, poison.ErrPoisoned) {
		t.Fatalf("second put to the same key = %v, want poisoned", err)
	}
	out := buf.String()
	if !strings.Contains(out, `"failure_class":"unknown"`) {
		t.Fatalf("no class in the log: %s", out)
	}
	if strings.Contains(out, "reused") || strings.Contains(out, "dir/") {
		t.Fatalf("the log names the key: %s", out)
	}
}

// unknownPuts answers every Put with an unknown outcome.
type unknownPuts struct{ backend.StorageAdapter }

func (u unknownPuts) Put(ctx context.Context, key string, data []byte) (backend.Attrs, error) {
	return backend.Attrs{}, backend.NewError("put", key, backend.KindUnknown, errors.New("answer lost"))
}
