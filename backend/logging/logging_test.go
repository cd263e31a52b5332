package logging_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/fault"
	"github.com/omnigraph-go/omnigraph/backend/logging"
	"github.com/omnigraph-go/omnigraph/backend/mem"
	"github.com/omnigraph-go/omnigraph/conformance"
	"github.com/omnigraph-go/omnigraph/internal/logtest"
)

func TestConformanceLogging(t *testing.T) {
	log, _ := logtest.New(t)
	conformance.Run(t, func(t *testing.T) backend.StorageAdapter { return logging.Wrap(mem.New(), log) })
}

// TestStorageFailureLogs pins the log rule: every failed storage request is
// one line with its operation, failure class, the status the store answered
// (only when it answered one: the injected failures below never reached a
// store, the last one did and said 404), whether the uncertainty is scoped
// to its keys, and never the error's message, the key or a credential
// (logtest scans every line).
func TestStorageFailureLogs(t *testing.T) {
	ctx := context.Background()
	const key = "__manifest/branches/main/.v/secret-key"
	log, logs := logtest.New(t, key, "branches/main")
	f := fault.New(mem.New())
	s := logging.Wrap(f, log)
	noBucket := logging.Wrap(missingBucket{f}, log)
	if _, err := s.Put(ctx, key, []byte("x")); err != nil {
		t.Fatal(err)
	}
	type call struct {
		op   string
		arm  func()
		do   func() error
		kind backend.Kind
	}
	calls := []call{
		{"get", func() { f.FailNth(fault.Get, 1, backend.KindTransient) }, func() error { _, _, err := s.Get(ctx, key); return err }, backend.KindTransient},
		{"get_range", func() { f.FailNth(fault.Get, 1, backend.KindPermanent) }, func() error { _, err := s.GetRange(ctx, key, 0, 1); return err }, backend.KindPermanent},
		{"stat", func() { f.FailNth(fault.Head, 1, backend.KindConfiguration) }, func() error { _, err := s.Stat(ctx, key); return err }, backend.KindConfiguration},
		{"put", func() { f.LoseAnswer(fault.Put, 1) }, func() error { _, err := s.Put(ctx, key, []byte("y")); return err }, backend.KindUnknown},
		{"put_if_absent", func() {}, func() error { _, err := s.PutIfAbsent(ctx, key, []byte("z")); return err }, backend.KindPrecondition},
		{"put_if_match", func() { f.Throttle(fault.CondPut, 1) }, func() error { _, err := s.PutIfMatch(ctx, key, []byte("z"), "v"); return err }, backend.KindTransient},
		{"list", func() { f.FailNth(fault.List, 1, backend.KindUnknown) }, func() error { _, err := s.List(ctx, "__manifest/", backend.ListOptions{}); return err }, backend.KindUnknown},
		{"exists", func() { f.FailNth(fault.Head, 1, backend.KindTransient) }, func() error { _, err := s.Exists(ctx, key); return err }, backend.KindTransient},
		{"delete", func() { f.LoseAnswer(fault.Delete, 1) }, func() error { return s.Delete(ctx, key) }, backend.KindUnknown},
		{"delete_prefix", func() { f.FailNth(fault.Delete, 1, backend.KindPermanent) }, func() error { return s.DeletePrefix(ctx, "__manifest/") }, backend.KindPermanent},
		{"get", func() {}, func() error { _, _, err := s.Get(ctx, "missing/"+key); return err }, backend.KindNotFound},
		{"list", func() {}, func() error { _, err := noBucket.List(ctx, "", backend.ListOptions{}); return err }, backend.KindConfiguration},
	}
	for _, c := range calls {
		c.arm()
		if err := c.do(); backend.KindOf(err) != c.kind {
			t.Fatalf("%s: %v, want kind %s", c.op, err, c.kind)
		}
	}
	lines := logs.Lines(t)
	if len(lines) != len(calls) {
		t.Fatalf("%d log lines for %d failures:\n%s", len(lines), len(calls), logs)
	}
	for i, l := range lines {
		c := calls[i]
		if l["msg"] != "storage request failed" || l["op"] != c.op || l["failure_class"] != c.kind.String() ||
			l["scoped"] != true || l["definite"] != (c.kind != backend.KindUnknown) {
			t.Fatalf("line %d = %v; want op %s class %s", i, l, c.op, c.kind)
		}
		// Only the store's own answer is a status; the class never makes one up.
		if want, has := any(float64(404)), l["status"] != nil; (i == len(lines)-1) != has || (has && l["status"] != want) {
			t.Fatalf("line %d = %v; want a status only on the missing bucket's line, and 404 there", i, l)
		}
		if want := map[backend.Kind]string{backend.KindUnknown: "ERROR", backend.KindNotFound: "DEBUG", backend.KindPrecondition: "DEBUG"}[c.kind]; want != "" && l["level"] != want {
			t.Fatalf("line %d level %v, want %s", i, l["level"], want)
		}
	}
	// Success is silent.
	if _, _, err := s.Get(ctx, key); err != nil && !backend.IsNotFound(err) {
		t.Fatal(err)
	}
}

// TestFromEnv: OMNIGRAPH_LOG_FORMAT picks json or text, OMNIGRAPH_LOG_LEVEL
// the level; anything else is refused.
func TestFromEnv(t *testing.T) {
	for _, tt := range []struct {
		format, level string
		json          bool
		debug         bool
		bad           bool
	}{
		{"", "", false, false, false},
		{"json", "debug", true, true, false},
		{"TEXT", "warn", false, false, false},
		{"xml", "", false, false, true},
		{"json", "loud", false, false, true},
	} {
		t.Setenv(logging.EnvFormat, tt.format)
		t.Setenv(logging.EnvLevel, tt.level)
		var buf bytes.Buffer
		log, err := logging.FromEnv(&buf)
		if tt.bad {
			if err == nil {
				t.Fatalf("%q/%q accepted", tt.format, tt.level)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%q/%q: %v", tt.format, tt.level, err)
		}
		log.Debug("d")
		log.Error("e", "failure_class", "unknown")
		out := strings.TrimSpace(buf.String())
		lines := strings.Split(out, "\n")
		if (len(lines) == 2) != tt.debug {
			t.Fatalf("%q/%q: debug lines shown = %v:\n%s", tt.format, tt.level, len(lines) == 2, out)
		}
		var m map[string]any
		if isJSON := json.Unmarshal([]byte(lines[len(lines)-1]), &m) == nil; isJSON != tt.json {
			t.Fatalf("%q: JSON = %v:\n%s", tt.format, isJSON, out)
		}
	}
}

// missingBucket answers List as an S3 store with no such bucket does: a
// configuration failure carrying the store's 404.
type missingBucket struct{ backend.StorageAdapter }

type answered struct{ status int }

func (a answered) Error() string    { return "store answered NoSuchBucket" }
func (a answered) StoreStatus() int { return a.status }

func (missingBucket) List(context.Context, string, backend.ListOptions) (backend.ListPage, error) {
	return backend.ListPage{}, backend.NewError("list", "", backend.KindConfiguration, answered{404})
}
