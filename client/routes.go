package client

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/omnigraph-go/omnigraph/api"
)

// The methods below are one per route of api.Routes; TestEveryRouteHasAMethod
// fails for a route without one.

// Health is GET /healthz (operation health).
func (c *Client) Health(ctx context.Context) (*api.Health, error) {
	var out api.Health
	return &out, c.do(ctx, call{op: "health"}, &out)
}

// OpenAPI is GET /openapi.json (operation openapi): the document.
func (c *Client) OpenAPI(ctx context.Context) (json.RawMessage, error) {
	var out json.RawMessage
	return out, c.do(ctx, call{op: "openapi"}, &out)
}

// Graphs is GET /graphs (operation listGraphs): the graphs the actor may
// read.
func (c *Client) Graphs(ctx context.Context) (*api.GraphList, error) {
	var out api.GraphList
	return &out, c.do(ctx, call{op: "listGraphs"}, &out)
}

// Graph is the routes of one served graph (GET /graphs lists the ids; a
// server of one graph calls it "default").
func (c *Client) Graph(id string) *Graph { return &Graph{c: c, id: id} }

// Graph calls the routes under /graphs/{graph_id}.
type Graph struct {
	c  *Client
	id string
}

// ID is the graph's id.
func (g *Graph) ID() string { return g.id }

func (g *Graph) call(op string, params ...string) call {
	return call{op: op, graph: g.id, params: append([]string{g.id}, params...)}
}

func (g *Graph) json(op string, in any) call {
	c := g.call(op)
	c.in, c.contentType = in, "application/json"
	return c
}

// Query is POST query: a read query on one snapshot (a branch head, or
// the commit in Snapshot).
func (g *Graph) Query(ctx context.Context, q api.QueryRequest) (*api.ReadOutput, error) {
	var out api.ReadOutput
	return &out, g.c.do(ctx, g.json("query", q), &out)
}

// WriteOption changes how a write is sent.
type WriteOption func(*writeOptions)

type writeOptions struct{ ifCommit string }

// IfGraphCommit makes a mutation conditional: it writes only while the
// branch head is commit (POST mutate/if-graph-commit with the
// Omnigraph-If-Graph-Commit header); otherwise nothing is written and the
// error matches ErrPrecondition, with the actual head in
// Details.PreconditionFailure.
func IfGraphCommit(commit string) WriteOption {
	return func(o *writeOptions) { o.ifCommit = commit }
}

// Mutate is POST mutate (or mutate/if-graph-commit with IfGraphCommit): a
// mutation as one commit. Commit is nil in the answer when nothing
// matched.
func (g *Graph) Mutate(ctx context.Context, m api.MutateRequest, opts ...WriteOption) (*api.ChangeOutput, error) {
	var o writeOptions
	for _, f := range opts {
		f(&o)
	}
	c := g.json("mutate", m)
	if o.ifCommit != "" {
		c.op = "mutateIfGraphCommit"
		c.header = http.Header{api.HeaderIfGraphCommit: {o.ifCommit}}
	}
	c.branch = m.Branch
	var out api.ChangeOutput
	return &out, g.c.do(ctx, c, &out)
}

// LoadInline is POST load: a small graph batch sent inside JSON (NDJSON
// text in Data or line objects in Records) as one commit. Load streams a
// file instead.
func (g *Graph) LoadInline(ctx context.Context, in api.LoadRequest) (*api.LoadOutput, error) {
	c := g.json("load", in)
	c.branch = in.Branch
	var out api.LoadOutput
	return &out, g.c.do(ctx, c, &out)
}

// LoadOptions are the parameters of a streamed load.
type LoadOptions struct {
	// Branch to load into (default main); it must exist unless From is
	// given.
	Branch string
	// From creates Branch from this branch first when it does not exist.
	From string
	// Mode is merge (upsert, the default), append (strict insert) or
	// overwrite (replace each type in the batch).
	Mode string
}

// Load is POST load/ndjson: the graph batch read from r (NDJSON, one node
// or edge per line) streamed to the server as one commit; the client holds
// no more of it than a buffer. r is sent again on a 429 only when nothing
// of it was sent yet or it can seek back.
func (g *Graph) Load(ctx context.Context, r io.Reader, opts LoadOptions) (*api.LoadOutput, error) {
	c := g.call("loadNdjson")
	c.stream, c.contentType, c.branch = r, "application/x-ndjson", opts.Branch
	c.query = url.Values{}
	for k, v := range map[string]string{"branch": opts.Branch, "from": opts.From, "mode": opts.Mode} {
		if v != "" {
			c.query.Set(k, v)
		}
	}
	var out api.LoadOutput
	return &out, g.c.do(ctx, c, &out)
}

// MCP is POST mcp: one JSON-RPC message to the graph's MCP endpoint
// (stateless, JSON answers), and its answer. It is never retried: a
// tools/call may write.
func (g *Graph) MCP(ctx context.Context, msg json.RawMessage) (json.RawMessage, error) {
	c := g.call("mcp")
	c.in, c.contentType = msg, "application/json"
	c.header = http.Header{"Accept": {"application/json, text/event-stream"}}
	var out json.RawMessage
	return out, g.c.do(ctx, c, &out)
}

func branchQuery(branch string) url.Values {
	if branch == "" {
		return nil
	}
	return url.Values{"branch": {branch}}
}

// Snapshot is GET snapshot: a branch head (default main) with its tables'
// versions and counts.
func (g *Graph) Snapshot(ctx context.Context, branch string) (*api.SnapshotOutput, error) {
	c := g.call("getSnapshot")
	c.query = branchQuery(branch)
	var out api.SnapshotOutput
	return &out, g.c.do(ctx, c, &out)
}

// Schema is GET schema: the accepted .pg schema of a branch (default
// main).
func (g *Graph) Schema(ctx context.Context, branch string) (*api.SchemaOutput, error) {
	c := g.call("getSchema")
	c.query = branchQuery(branch)
	var out api.SchemaOutput
	return &out, g.c.do(ctx, c, &out)
}

// SchemaAt is GET schema of a past commit: the schema accepted when it
// was made (the schema an export of that commit loads into).
func (g *Graph) SchemaAt(ctx context.Context, commit string) (*api.SchemaOutput, error) {
	c := g.call("getSchema")
	c.query = url.Values{"snapshot": {commit}}
	var out api.SchemaOutput
	return &out, g.c.do(ctx, c, &out)
}

// Branches is GET branches: the live branches and their heads.
func (g *Graph) Branches(ctx context.Context) (*api.BranchList, error) {
	var out api.BranchList
	return &out, g.c.do(ctx, g.call("listBranches"), &out)
}

// CreateBranch is POST branches: a branch from the head of another
// (default main).
func (g *Graph) CreateBranch(ctx context.Context, b api.BranchCreateRequest) (*api.BranchCreateOutput, error) {
	c := g.json("createBranch", b)
	c.branch = b.Name
	var out api.BranchCreateOutput
	return &out, g.c.do(ctx, c, &out)
}

// Merge is POST branches/merge. Conflicts are an *Error matching
// ErrConflict with Details.MergeConflicts; nothing is written then.
func (g *Graph) Merge(ctx context.Context, m api.MergeRequest) (*api.MergeOutput, error) {
	c := g.json("mergeBranch", m)
	c.branch = m.Target
	var out api.MergeOutput
	return &out, g.c.do(ctx, c, &out)
}

// DeleteBranch is DELETE branches/{branch}.
func (g *Graph) DeleteBranch(ctx context.Context, name string) (*api.BranchDeleteOutput, error) {
	c := g.call("deleteBranch", name)
	c.branch = name
	var out api.BranchDeleteOutput
	return &out, g.c.do(ctx, c, &out)
}

// Commits is GET commits: the commits reachable from a branch head
// (default main), newest first, through both parents of merges (as git
// log); limit 0 lists all.
func (g *Graph) Commits(ctx context.Context, branch string, limit int) (*api.CommitList, error) {
	return g.commits(ctx, branch, limit, false)
}

// FirstParentCommits is GET commits?first_parent=true: the branch's own
// line only (and what it inherited through its fork point).
func (g *Graph) FirstParentCommits(ctx context.Context, branch string, limit int) (*api.CommitList, error) {
	return g.commits(ctx, branch, limit, true)
}

func (g *Graph) commits(ctx context.Context, branch string, limit int, firstParent bool) (*api.CommitList, error) {
	c := g.call("listCommits")
	c.query = url.Values{}
	if branch != "" {
		c.query.Set("branch", branch)
	}
	if limit > 0 {
		c.query.Set("limit", strconv.Itoa(limit))
	}
	if firstParent {
		c.query.Set("first_parent", "true")
	}
	var out api.CommitList
	return &out, g.c.do(ctx, c, &out)
}

// Commit is GET commits/{commit_id}.
func (g *Graph) Commit(ctx context.Context, id string) (*api.CommitOutput, error) {
	var out api.CommitOutput
	return &out, g.c.do(ctx, g.call("getCommit", id), &out)
}

// ChangesOptions filter a commit's changes; zero fields select all.
type ChangesOptions struct {
	Type  string // only this node or edge type
	Op    string // only insert, update or delete
	Limit int    // at most this many (0: all)
}

// CommitChanges is GET commits/{commit_id}/changes: the entity changes of
// a commit against its first parent.
func (g *Graph) CommitChanges(ctx context.Context, id string, opts ChangesOptions) (*api.ChangesOutput, error) {
	c := g.call("getCommitChanges", id)
	c.query = url.Values{}
	if opts.Type != "" {
		c.query.Set("type", opts.Type)
	}
	if opts.Op != "" {
		c.query.Set("op", opts.Op)
	}
	if opts.Limit > 0 {
		c.query.Set("limit", strconv.Itoa(opts.Limit))
	}
	var out api.ChangesOutput
	return &out, g.c.do(ctx, c, &out)
}
