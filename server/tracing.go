package server

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// tracerName names the server's tracer (the instrumentation scope).
const tracerName = "github.com/omnigraph-go/omnigraph/server"

// traceContext is the W3C traceparent propagator: a client's trace is
// continued, whatever the process-wide propagator (otel's global) is.
var traceContext propagation.TraceContext

// requestSpan is the span of one request: a recording span when the
// server traces (Config.TracerProvider), or only the remote span context a
// client's traceparent carried, so the log line and the error envelope
// name the client's trace even with tracing off.
type requestSpan struct {
	span    trace.Span
	traceID string
}

// startRequest continues the request's traceparent, if any, and starts its
// span under the route's operation id. The returned request carries the
// span in its context: storage and engine spans become its children.
func (s *Server) startRequest(rt Route, hr *http.Request) (*http.Request, requestSpan) {
	ctx := traceContext.Extract(hr.Context(), propagation.HeaderCarrier(hr.Header))
	if s.tracer == nil {
		sc := trace.SpanContextFromContext(ctx)
		if !sc.IsValid() {
			return hr, requestSpan{}
		}
		return hr.WithContext(ctx), requestSpan{traceID: sc.TraceID().String()}
	}
	ctx, sp := s.tracer.Start(ctx, rt.OperationID, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String("http.route", rt.Path), attribute.String("http.request.method", rt.Method)))
	return hr.WithContext(ctx), requestSpan{span: sp, traceID: sp.SpanContext().TraceID().String()}
}

// end records the request's outcome on its span and ends it. Attributes
// are the route's closed names and the caller's ids (actor, graph,
// branch), never a body, a key or a token.
func (rs requestSpan) end(req *request, w *statusWriter, actor string) {
	if rs.span == nil {
		return
	}
	attrs := []attribute.KeyValue{attribute.Int("http.response.status_code", w.status), attribute.String("omnigraph.actor", actor)}
	if req.graphID != "" {
		attrs = append(attrs, attribute.String("omnigraph.graph", req.graphID))
	}
	if b := requestBranch(req.Request); b != "" {
		attrs = append(attrs, attribute.String("omnigraph.branch", b))
	}
	if w.class != "" {
		attrs = append(attrs, attribute.String("omnigraph.failure_class", w.class))
	}
	rs.span.SetAttributes(attrs...)
	if w.status >= 500 {
		rs.span.SetStatus(codes.Error, w.class)
	}
	rs.span.End()
}

// requestBranch is the branch a request names in its path or query ("":
// none, or only in its body, which the span does not read).
func requestBranch(hr *http.Request) string {
	if b := hr.PathValue("branch"); b != "" {
		return b
	}
	return hr.URL.Query().Get("branch")
}

// phase starts a child span of ctx's span for one engine phase (a query's
// read, a write's stage or publish), on the server's tracer; with tracing
// off it returns ctx and a no-op end.
func (s *Server) phase(ctx context.Context, name string) (context.Context, func(error)) {
	if s.tracer == nil {
		return ctx, func(error) {}
	}
	ctx, sp := s.tracer.Start(ctx, name)
	return ctx, func(err error) {
		if err != nil {
			sp.SetStatus(codes.Error, "failed")
		}
		sp.End()
	}
}
