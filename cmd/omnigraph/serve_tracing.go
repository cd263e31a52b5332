package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/omnigraph-go/omnigraph/recovery"
)

// tracingWanted says whether the standard OpenTelemetry environment asks
// for traces: OTEL_TRACES_EXPORTER=otlp, or an OTLP endpoint set (and the
// exporter not "none"). Off otherwise: serve makes no spans.
func tracingWanted(getenv func(string) string) (bool, error) {
	switch e := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); e {
	case "otlp":
		return true, nil
	case "none":
		return false, nil
	case "":
		return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "", nil
	default:
		return false, fmt.Errorf("OTEL_TRACES_EXPORTER=%q: serve exports traces over OTLP/HTTP only; set it to otlp or none, or unset it", e)
	}
}

// newTracerProvider builds the process's tracer provider from the
// standard environment (the OTLP/HTTP exporter reads its own
// OTEL_EXPORTER_OTLP_* variables; the resource reads OTEL_SERVICE_NAME and
// OTEL_RESOURCE_ATTRIBUTES), or nil when tracing is off. Its shutdown
// flushes the spans still batched.
func newTracerProvider(ctx context.Context, version string) (*sdktrace.TracerProvider, error) {
	on, err := tracingWanted(os.Getenv)
	if err != nil || !on {
		return nil, err
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("tracing: the OTLP/HTTP exporter: %w", err)
	}
	// Defaults first, then the environment's OTEL_SERVICE_NAME and
	// OTEL_RESOURCE_ATTRIBUTES over them.
	res, err := resource.Merge(
		resource.NewSchemaless(attribute.String("service.name", "omnigraph"), attribute.String("service.version", version)),
		resource.Environment())
	if err != nil {
		return nil, fmt.Errorf("tracing: the resource: %w", err)
	}
	return sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res)), nil
}

// tracerProvider is o.tracer, or an untyped nil when tracing is off (a
// typed nil in an interface would read as on).
func (o serveOptions) tracerProvider() trace.TracerProvider {
	if o.tracer == nil {
		return nil
	}
	return o.tracer
}

// openSpan starts the span of opening one served graph, which runs the
// recovery of interrupted writes: its end records how many were
// recovered, by what they did (the records themselves are log lines).
func (o serveOptions) openSpan(ctx context.Context, graphID string) (context.Context, func([]recovery.Record, error)) {
	if o.tracer == nil {
		return ctx, func([]recovery.Record, error) {}
	}
	ctx, sp := o.tracer.Tracer("github.com/omnigraph-go/omnigraph/cmd/omnigraph").Start(ctx, "graph.open_recover",
		trace.WithAttributes(attribute.String("omnigraph.graph", graphID)))
	return ctx, func(recs []recovery.Record, err error) {
		kinds := map[string]int{}
		for _, r := range recs {
			kinds[string(r.RecoveryKind)]++
		}
		sp.SetAttributes(attribute.Int("omnigraph.recoveries", len(recs)))
		for k, n := range kinds {
			sp.SetAttributes(attribute.Int("omnigraph.recoveries."+k, n))
		}
		if err != nil {
			sp.SetStatus(codes.Error, "open failed")
		}
		sp.End()
	}
}
