package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/omnigraph-go/omnigraph/api"
)

// Queries is GET queries: the stored queries the caller may invoke.
func (g *Graph) Queries(ctx context.Context) (*api.QueryCatalog, error) {
	var out api.QueryCatalog
	return &out, g.c.do(ctx, g.call("listQueries"), &out)
}

// InvokeResult is a stored query's answer: Read for a read query,
// Mutation for a mutation (the other is nil).
type InvokeResult struct {
	Read     *api.ReadOutput
	Mutation *api.ChangeOutput
}

// InvokeQuery is POST queries/{name} (or queries/{name}/if-graph-commit
// with IfGraphCommit): a stored query run by name. A query the caller may
// not invoke is an *Error matching ErrNotFound, as a missing one.
func (g *Graph) InvokeQuery(ctx context.Context, name string, in api.InvokeRequest, opts ...WriteOption) (*InvokeResult, error) {
	var o writeOptions
	for _, f := range opts {
		f(&o)
	}
	c := g.call("invokeQuery", name)
	c.in, c.contentType, c.branch = in, "application/json", in.Branch
	if o.ifCommit != "" {
		c.op = "invokeQueryIfGraphCommit"
		c.header = http.Header{api.HeaderIfGraphCommit: {o.ifCommit}}
	}
	var raw json.RawMessage
	if err := g.c.do(ctx, c, &raw); err != nil {
		return nil, err
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(raw, &probe); err != nil {
		return nil, fmt.Errorf("omnigraph %s: read the answer: %w", c.op, err)
	}
	var res InvokeResult
	var target any = &res.Mutation
	if _, isRead := probe["rows"]; isRead {
		target = &res.Read
	}
	if err := json.Unmarshal(raw, target); err != nil {
		return nil, fmt.Errorf("omnigraph %s: read the answer: %w", c.op, err)
	}
	return &res, nil
}
