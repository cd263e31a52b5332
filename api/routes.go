package api

import (
	"net/url"
	"strings"
)

// Route is one entry of the route table: what the server mounts, what the
// OpenAPI document describes and what the client calls.
type Route struct {
	Method string
	// Path is the OpenAPI path; {name} segments are path parameters.
	Path        string
	OperationID string
	Summary     string
	// Auth: the route needs a bearer token (when tokens are configured).
	Auth bool
	// Graph: the route is under /graphs/{graph_id}/.
	Graph bool
	// Write: a write route (admission, refused on a read-only replica).
	Write bool
	// MayWrite: the route runs what the request names, a read or a write
	// (a stored query by name). A client treats it as a write (never sent
	// twice; a lost answer's outcome is unknown); the server refuses it on
	// a read-only replica only once it knows it writes.
	MayWrite bool
	// Idempotent: sending the request twice has the effect of sending it
	// once (the reads), so a client may send it again after a transport
	// failure or a 503. A write never is.
	Idempotent bool
	// Stream: the body is streamed with the load limit.
	Stream bool
	// Rest: the last path parameter takes the rest of the path (branch
	// names may hold '/').
	Rest bool
	// Query lists the query parameters.
	Query []Param
	// Request and Response name the schemas of components.schemas; an
	// empty Request means no body. "NDJSON" is a graph batch, "OpenAPI"
	// the document itself, "Blob" raw bytes (application/octet-stream).
	Request, Response string
	// Statuses are the non-200 statuses the route documents.
	Statuses []int
	// Header names a required request header.
	Header string

	// What the server applies to every request of the route, from this
	// table and in one place (server.wrap), so no handler can forget one.
	// A route that declares none of Admission and Answer is refused when
	// the server is built.

	// Admission is the slot a request takes (429 past it).
	Admission Admission
	// Budget: the route runs under the query budget's time (413
	// resource_limit past it).
	Budget bool
	// Answer says how the answer is bounded.
	Answer Answer
}

// Admission is the slot class of a route.
type Admission string

const (
	// AdmitNone: no slot (liveness, the document, the graph list).
	AdmitNone Admission = "none"
	// AdmitRead: a read slot of the actor and of the server, taken before
	// the handler runs and held until the answer is sent.
	AdmitRead Admission = "read"
	// AdmitWrite: a write slot of the actor and of the graph, taken once
	// the request is decoded and authorized, before any engine work.
	AdmitWrite Admission = "write"
	// AdmitPerCall: each call the request carries takes its own (MCP:
	// per tool, as the tool's route; a stored query: read or write, as
	// what it runs).
	AdmitPerCall Admission = "per_call"
)

// Answer is how a route's answer is bounded.
type Answer string

const (
	// AnswerJSON: one JSON document, at most the server's answer cap (413
	// resource_limit answer_bytes beyond it), sent within its write
	// timeout.
	AnswerJSON Answer = "json"
	// AnswerStream: streamed; its reader must keep reading (the progress
	// deadline), and its read slot is freed when it is cut.
	AnswerStream Answer = "stream"
	// AnswerPerCall: each call's answer is bounded as its own route's
	// (MCP tools).
	AnswerPerCall Answer = "per_call"
)

// Param is one query parameter.
type Param struct {
	Name string
	Doc  string
	// Integer: the value is a whole number.
	Integer bool
	// Boolean: the value is true or false.
	Boolean bool
	// Repeat: the parameter may be given more than once.
	Repeat bool
}

// Writes reports whether a request of the route may change the graph
// (Write or MayWrite).
func (rt Route) Writes() bool { return rt.Write || rt.MayWrite }

// Pattern is the ServeMux pattern of the route.
func (rt Route) Pattern() string {
	p := rt.Path
	if rt.Rest {
		i := strings.LastIndex(p, "}")
		p = p[:i] + "..." + p[i:]
	}
	return rt.Method + " " + p
}

// Expand fills the route's path parameters, in order, each escaped whole
// ('/' as %2F, as a generated client's encodeURIComponent does): the mux
// hands back the value as it was, and never cleans or redirects the path
// ("x//y" would be).
func (rt Route) Expand(values ...string) string {
	p := rt.Path
	for _, v := range values {
		open := strings.IndexByte(p, '{')
		end := strings.IndexByte(p, '}')
		if open < 0 || end < open {
			break
		}
		p = p[:open] + url.PathEscape(v) + p[end+1:]
	}
	return p
}

// Headers of the API.
const (
	// HeaderIfGraphCommit carries the expected head of a conditional
	// mutate (POST mutate/if-graph-commit).
	HeaderIfGraphCommit = "Omnigraph-If-Graph-Commit"
	// HeaderGraphCommit is the commit an export read.
	HeaderGraphCommit = "Omnigraph-Graph-Commit"
	// HeaderSchemaIdentity is the identity of the schema an export's
	// commit was made under (GET schema answers the same identity).
	HeaderSchemaIdentity = "Omnigraph-Schema-Identity"
	// TrailerExportEntities is set after the last line of a complete
	// export: the number of lines. A body without it was cut short.
	TrailerExportEntities = "Omnigraph-Export-Entities"
	// HeaderSnapshotID is the graph commit a blob answer read.
	HeaderSnapshotID = "Omnigraph-Snapshot-Id"
)

var (
	// Every graph read takes a read slot (429) and has an answer cap (413).
	readErrs  = []int{400, 401, 403, 404, 413, 429, 500, 503}
	writeErrs = []int{400, 401, 403, 404, 409, 413, 415, 429, 500, 503}
)

var (
	branchParam   = Param{Name: "branch", Doc: "the branch (default main)"}
	limitParam    = Param{Name: "limit", Doc: "at most this many (0: all)", Integer: true}
	typeParam     = Param{Name: "type", Doc: "only this node or edge type"}
	snapshotParam = Param{Name: "snapshot", Doc: "a graph commit id to read instead of a branch head"}
	// blobParams select one Blob value and the snapshot to read it at.
	blobParams = []Param{
		{Name: "entity", Doc: "node or edge"},
		{Name: "type", Doc: "the node or edge type"},
		{Name: "id", Doc: "the entity's id (a node's key, an edge's id)"},
		{Name: "property", Doc: "the Blob property"},
		branchParam, snapshotParam,
	}
)

// Routes is the route table, in the order the document lists it.
func Routes() []Route {
	g := "/graphs/{graph_id}"
	return append([]Route{
		{Method: "GET", Path: "/healthz", OperationID: "health", Admission: AdmitNone, Answer: AnswerJSON, Summary: "Liveness", Idempotent: true, Response: "Health", Statuses: []int{503}},
		{Method: "GET", Path: "/openapi.json", OperationID: "openapi", Admission: AdmitNone, Answer: AnswerJSON, Summary: "This OpenAPI document", Idempotent: true, Response: "OpenAPI"},
		{Method: "GET", Path: "/graphs", OperationID: "listGraphs", Admission: AdmitNone, Answer: AnswerJSON, Summary: "List the served graphs", Auth: true, Idempotent: true, Response: "GraphList", Statuses: []int{401, 503}},
		{Method: "POST", Path: g + "/query", OperationID: "query", Admission: AdmitRead, Budget: true, Answer: AnswerJSON, Summary: "Run a read query on one snapshot", Auth: true, Graph: true, Idempotent: true, Request: "QueryRequest", Response: "ReadOutput", Statuses: append([]int{413, 415, 429}, readErrs...)},
		{Method: "POST", Path: g + "/mutate", OperationID: "mutate", Admission: AdmitWrite, Answer: AnswerJSON, Summary: "Run a mutation as one commit", Auth: true, Graph: true, Write: true, Request: "MutateRequest", Response: "ChangeOutput", Statuses: writeErrs},
		{Method: "POST", Path: g + "/mutate/if-graph-commit", OperationID: "mutateIfGraphCommit", Admission: AdmitWrite, Answer: AnswerJSON, Summary: "Run a mutation only while the branch head is the given commit", Auth: true, Graph: true, Write: true, Header: HeaderIfGraphCommit, Request: "MutateRequest", Response: "ChangeOutput", Statuses: append([]int{412}, writeErrs...)},
		{Method: "POST", Path: g + "/load", OperationID: "load", Admission: AdmitWrite, Answer: AnswerJSON, Summary: "Load a graph batch sent inline in JSON (NDJSON text in data, or line objects in records) as one commit", Auth: true, Graph: true, Write: true, Stream: true, Request: "LoadRequest", Response: "LoadOutput", Statuses: writeErrs},
		{Method: "GET", Path: g + "/export", OperationID: "export", Admission: AdmitRead, Answer: AnswerStream, Summary: "Stream a branch head (or a snapshot) as graph-batch NDJSON, the input of load", Auth: true, Graph: true, Idempotent: true, Query: []Param{branchParam, snapshotParam, {Name: "type", Doc: "only these node or edge types (comma-separated, or repeated)", Repeat: true}}, Response: "NDJSON", Statuses: append([]int{429}, readErrs...)},
		{Method: "POST", Path: g + "/load/ndjson", OperationID: "loadNdjson", Admission: AdmitWrite, Answer: AnswerJSON, Summary: "Load a graph batch (application/x-ndjson) as one commit", Auth: true, Graph: true, Write: true, Stream: true, Query: []Param{{Name: "branch", Doc: "the branch to load into (default main); it must exist unless from is given"}, {Name: "from", Doc: "create the branch from this one first when it does not exist"}, {Name: "mode", Doc: "merge (upsert, default), append (strict insert) or overwrite (replace each type in the batch)"}}, Request: "NDJSON", Response: "LoadOutput", Statuses: writeErrs},
		{Method: "POST", Path: g + "/mcp", OperationID: "mcp", Admission: AdmitPerCall, Answer: AnswerPerCall, Summary: "MCP (Streamable HTTP, stateless, JSON responses): tools mirroring these routes", Auth: true, Graph: true, Stream: true, Request: "JSONRPC", Response: "JSONRPC", Statuses: []int{400, 401, 404, 405, 413, 503}},
		{Method: "GET", Path: g + "/snapshot", OperationID: "getSnapshot", Admission: AdmitRead, Answer: AnswerJSON, Summary: "A branch head: manifest version and per-table versions and counts", Auth: true, Graph: true, Idempotent: true, Query: []Param{branchParam}, Response: "SnapshotOutput", Statuses: readErrs},
		{Method: "GET", Path: g + "/schema", OperationID: "getSchema", Admission: AdmitRead, Answer: AnswerJSON, Summary: "The accepted .pg schema of a branch head or of a past commit", Auth: true, Graph: true, Idempotent: true, Query: []Param{branchParam, snapshotParam}, Response: "SchemaOutput", Statuses: readErrs},
		{Method: "GET", Path: g + "/branches", OperationID: "listBranches", Admission: AdmitRead, Answer: AnswerJSON, Summary: "List the live branches", Auth: true, Graph: true, Idempotent: true, Response: "BranchList", Statuses: readErrs},
		{Method: "POST", Path: g + "/branches", OperationID: "createBranch", Admission: AdmitWrite, Answer: AnswerJSON, Summary: "Create a branch from the head of another", Auth: true, Graph: true, Write: true, Request: "BranchCreateRequest", Response: "BranchCreateOutput", Statuses: writeErrs},
		{Method: "POST", Path: g + "/branches/merge", OperationID: "mergeBranch", Admission: AdmitWrite, Answer: AnswerJSON, Summary: "Merge a branch into another", Auth: true, Graph: true, Write: true, Request: "MergeRequest", Response: "MergeOutput", Statuses: writeErrs},
		{Method: "DELETE", Path: g + "/branches/{branch}", OperationID: "deleteBranch", Admission: AdmitWrite, Answer: AnswerJSON, Summary: "Delete a branch", Auth: true, Graph: true, Write: true, Rest: true, Response: "BranchDeleteOutput", Statuses: writeErrs},
		{Method: "GET", Path: g + "/commits", OperationID: "listCommits", Admission: AdmitRead, Answer: AnswerJSON, Summary: "The commits reachable from a branch head, newest first, through both parents of merges (as git log)", Auth: true, Graph: true, Idempotent: true, Query: []Param{branchParam, limitParam, {Name: "first_parent", Doc: "true: follow first parents only (the branch's own line), not the commits merges brought in", Boolean: true}}, Response: "CommitList", Statuses: readErrs},
		{Method: "GET", Path: g + "/commits/{commit_id}", OperationID: "getCommit", Admission: AdmitRead, Answer: AnswerJSON, Summary: "One commit", Auth: true, Graph: true, Idempotent: true, Response: "CommitOutput", Statuses: readErrs},
		{Method: "GET", Path: g + "/blob", OperationID: "getBlob", Admission: AdmitRead, Answer: AnswerStream, Summary: "The bytes of one Blob value (one byte range with Range), or a redirect to an external one", Auth: true, Graph: true, Idempotent: true, Query: blobParams, Response: "Blob", Statuses: append([]int{206, 302, 304, 412, 416, 429}, readErrs...)},
		{Method: "HEAD", Path: g + "/blob", OperationID: "headBlob", Admission: AdmitRead, Answer: AnswerJSON, Summary: "The headers of one Blob value (size, ETag, snapshot), without its bytes", Auth: true, Graph: true, Idempotent: true, Query: blobParams, Response: "Blob", Statuses: append([]int{302, 304, 412, 429}, readErrs...)},
		{Method: "GET", Path: g + "/commits/{commit_id}/changes", OperationID: "getCommitChanges", Admission: AdmitRead, Budget: true, Answer: AnswerJSON, Summary: "The entity changes of a commit against its first parent", Auth: true, Graph: true, Idempotent: true, Query: []Param{typeParam, {Name: "op", Doc: "only insert, update or delete"}, limitParam}, Response: "ChangesOutput", Statuses: append([]int{409, 413, 429}, readErrs...)},
	}, append(append(feedRoutes(g), storedRoutes(g)...), ConsoleRoutes(g)...)...)
}
