package server

import (
	"net/http"
	"strings"
)

// Route is one entry of the route table: what the server mounts and what
// the OpenAPI document describes.
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
	// Stream: the body is streamed with the load limit.
	Stream bool
	// Rest: the last path parameter takes the rest of the path (branch
	// names may hold '/').
	Rest bool
	// Query lists the query parameters.
	Query []string
	// Request and Response name the schemas of components.schemas; an
	// empty Request means no body.
	Request, Response string
	// Statuses are the non-200 statuses the route documents.
	Statuses []int
	// Header names a required request header.
	Header string

	handle func(*request) (int, any, error)
}

// Pattern is the ServeMux pattern of the route.
func (rt Route) Pattern() string {
	p := rt.Path
	if rt.Rest {
		i := strings.LastIndex(p, "}")
		p = p[:i] + "..." + p[i:]
	}
	return rt.Method + " " + p
}

func (rt Route) bodyResource() string {
	if rt.Stream {
		return "graph_batch_request_bytes"
	}
	return "request_body_bytes"
}

var (
	blobQuery = []string{"entity", "type", "id", "property", "branch", "snapshot"}
	readErrs  = []int{400, 401, 403, 404, 500, 503}
	writeErrs = []int{400, 401, 403, 404, 409, 413, 415, 429, 500, 503}
)

// Routes is the route table.
func Routes() []Route {
	g := "/graphs/{graph_id}"
	return []Route{
		{Method: "GET", Path: "/healthz", OperationID: "health", Summary: "Liveness", Response: "Health", handle: handleHealth},
		{Method: "GET", Path: "/openapi.json", OperationID: "openapi", Summary: "This OpenAPI document", Response: "OpenAPI", handle: handleOpenAPI},
		{Method: "GET", Path: "/graphs", OperationID: "listGraphs", Summary: "List the served graphs", Auth: true, Response: "GraphList", Statuses: []int{401}, handle: handleGraphs},
		{Method: "POST", Path: g + "/query", OperationID: "query", Summary: "Run a read query on one snapshot", Auth: true, Graph: true, Request: "QueryRequest", Response: "ReadOutput", Statuses: readErrs, handle: handleQuery},
		{Method: "POST", Path: g + "/mutate", OperationID: "mutate", Summary: "Run a mutation as one commit", Auth: true, Graph: true, Write: true, Request: "MutateRequest", Response: "ChangeOutput", Statuses: writeErrs, handle: handleMutate},
		{Method: "POST", Path: g + "/mutate/if-graph-commit", OperationID: "mutateIfGraphCommit", Summary: "Run a mutation only while the branch head is the given commit", Auth: true, Graph: true, Write: true, Header: HeaderIfGraphCommit, Request: "MutateRequest", Response: "ChangeOutput", Statuses: append([]int{412}, writeErrs...), handle: handleMutateIf},
		{Method: "POST", Path: g + "/load", OperationID: "load", Summary: "Load a graph batch sent inline in JSON (NDJSON text in data, or line objects in records) as one commit", Auth: true, Graph: true, Write: true, Stream: true, Request: "LoadRequest", Response: "LoadOutput", Statuses: writeErrs, handle: handleLoadJSON},
		{Method: "GET", Path: g + "/export", OperationID: "export", Summary: "Stream a branch head (or a snapshot) as graph-batch NDJSON, the input of load", Auth: true, Graph: true, Query: []string{"branch", "snapshot", "type"}, Response: "NDJSON", Statuses: readErrs, handle: handleExport},
		{Method: "POST", Path: g + "/load/ndjson", OperationID: "loadNdjson", Summary: "Load a graph batch (application/x-ndjson) as one commit", Auth: true, Graph: true, Write: true, Stream: true, Query: []string{"branch", "from", "mode"}, Request: "NDJSON", Response: "LoadOutput", Statuses: writeErrs, handle: handleLoadNDJSON},
		{Method: "POST", Path: g + "/mcp", OperationID: "mcp", Summary: "MCP (Streamable HTTP, stateless, JSON responses): tools mirroring these routes", Auth: true, Graph: true, Stream: true, Request: "JSONRPC", Response: "JSONRPC", Statuses: []int{400, 401, 404, 405, 413}, handle: handleMCP},
		{Method: "GET", Path: g + "/snapshot", OperationID: "getSnapshot", Summary: "A branch head: manifest version and per-table versions and counts", Auth: true, Graph: true, Query: []string{"branch"}, Response: "SnapshotOutput", Statuses: readErrs, handle: handleSnapshot},
		{Method: "GET", Path: g + "/schema", OperationID: "getSchema", Summary: "The accepted .pg schema of a branch", Auth: true, Graph: true, Query: []string{"branch"}, Response: "SchemaOutput", Statuses: readErrs, handle: handleSchema},
		{Method: "GET", Path: g + "/branches", OperationID: "listBranches", Summary: "List the live branches", Auth: true, Graph: true, Response: "BranchList", Statuses: readErrs, handle: handleBranches},
		{Method: "POST", Path: g + "/branches", OperationID: "createBranch", Summary: "Create a branch from the head of another", Auth: true, Graph: true, Write: true, Request: "BranchCreateRequest", Response: "BranchCreateOutput", Statuses: writeErrs, handle: handleBranchCreate},
		{Method: "POST", Path: g + "/branches/merge", OperationID: "mergeBranch", Summary: "Merge a branch into another", Auth: true, Graph: true, Write: true, Request: "MergeRequest", Response: "MergeOutput", Statuses: writeErrs, handle: handleMerge},
		{Method: "DELETE", Path: g + "/branches/{branch}", OperationID: "deleteBranch", Summary: "Delete a branch", Auth: true, Graph: true, Write: true, Rest: true, Response: "BranchDeleteOutput", Statuses: writeErrs, handle: handleBranchDelete},
		{Method: "GET", Path: g + "/commits", OperationID: "listCommits", Summary: "The commits reachable from a branch head, newest first", Auth: true, Graph: true, Query: []string{"branch", "limit"}, Response: "CommitList", Statuses: readErrs, handle: handleCommits},
		{Method: "GET", Path: g + "/commits/{commit_id}", OperationID: "getCommit", Summary: "One commit", Auth: true, Graph: true, Response: "CommitOutput", Statuses: readErrs, handle: handleCommit},
		{Method: "GET", Path: g + "/blob", OperationID: "getBlob", Summary: "The bytes of one Blob value (one byte range with Range), or a redirect to an external one", Auth: true, Graph: true, Query: blobQuery, Response: "Blob", Statuses: append([]int{206, 302, 304, 412, 416}, readErrs...), handle: handleBlob},
		{Method: "HEAD", Path: g + "/blob", OperationID: "headBlob", Summary: "The headers of one Blob value (size, ETag, snapshot), without its bytes", Auth: true, Graph: true, Query: blobQuery, Response: "Blob", Statuses: append([]int{302, 304, 412}, readErrs...), handle: handleBlob},
		{Method: "GET", Path: g + "/commits/{commit_id}/changes", OperationID: "getCommitChanges", Summary: "The entity changes of a commit against its first parent", Auth: true, Graph: true, Query: []string{"type", "op", "limit"}, Response: "ChangesOutput", Statuses: append([]int{409, 413}, readErrs...), handle: handleChanges},
	}
}

// HeaderIfGraphCommit carries the expected head of a conditional mutate.
const HeaderIfGraphCommit = "Omnigraph-If-Graph-Commit"

var _ = http.MethodGet
