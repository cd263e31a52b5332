package tracing_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/mem"
	"github.com/omnigraph-go/omnigraph/backend/tracing"
	"github.com/omnigraph-go/omnigraph/conformance"
)

func TestConformance(t *testing.T) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(tracetest.NewSpanRecorder()))
	conformance.Run(t, func(t *testing.T) backend.StorageAdapter { return tracing.Wrap(mem.New(), tp) })
}

// flaky answers every Stat with a lost answer whose message names the key.
type flaky struct{ backend.StorageAdapter }

func (flaky) Stat(ctx context.Context, key string) (backend.Attrs, error) {
	return backend.Attrs{}, backend.NewError("stat", key, backend.KindUnknown, errors.New("connection reset"))
}

// TestSpanOpAndOutcome: a span per request, named by op, with the outcome
// class; a failure is an error status naming its class, never the key.
func TestSpanOpAndOutcome(t *testing.T) {
	ctx := context.Background()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	s := tracing.Wrap(flaky{mem.New()}, tp)
	const key = "secret-tenant/nodes/Person/0001"
	if _, err := s.Put(ctx, key, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Stat(ctx, key); err == nil {
		t.Fatal("flaky Stat succeeded")
	}
	if _, _, err := s.Get(ctx, "missing"); !backend.IsNotFound(err) {
		t.Fatalf("get missing: %v", err)
	}
	type want struct {
		name, outcome string
		failed        bool
	}
	wants := []want{{"storage.put", "ok", false}, {"storage.head", "unknown", true}, {"storage.get", "not_found", false}}
	spans := rec.Ended()
	if len(spans) != len(wants) {
		t.Fatalf("%d spans, want %d", len(spans), len(wants))
	}
	for i, w := range wants {
		sp := spans[i]
		var outcome string
		for _, a := range sp.Attributes() {
			if strings.Contains(a.Value.Emit(), "secret-tenant") {
				t.Errorf("span %s names the key in %s", sp.Name(), a.Key)
			}
			if a.Key == "storage.outcome" {
				outcome = a.Value.AsString()
			}
		}
		if strings.Contains(sp.Status().Description, "secret-tenant") {
			t.Errorf("span %s status names the key", sp.Name())
		}
		if sp.Name() != w.name || outcome != w.outcome || (sp.Status().Code == codes.Error) != w.failed {
			t.Errorf("span %d: %s outcome %q status %v, want %s %q failed %v", i, sp.Name(), outcome, sp.Status(), w.name, w.outcome, w.failed)
		}
	}
}

// TestNilProviderIsIdentity: tracing off adds no wrapper.
func TestNilProviderIsIdentity(t *testing.T) {
	m := mem.New()
	if got := tracing.Wrap(m, nil); got != backend.StorageAdapter(m) {
		t.Fatalf("Wrap(nil provider) = %T, want the store itself", got)
	}
}
