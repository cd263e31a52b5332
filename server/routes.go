package server

import (
	"fmt"

	"github.com/omnigraph-go/omnigraph/api"
)

// Route is one entry of the route table (api.Routes) with the handler
// that answers it: what the server mounts and what the OpenAPI document
// describes.
type Route struct {
	api.Route
	handle func(*request) (int, any, error)
}

func (rt Route) bodyResource() string {
	if rt.Stream {
		return "graph_batch_request_bytes"
	}
	return "request_body_bytes"
}

// handlers answer the routes of api.Routes, by operation id.
var handlers = map[string]func(*request) (int, any, error){
	"health":              handleHealth,
	"openapi":             handleOpenAPI,
	"listGraphs":          handleGraphs,
	"query":               handleQuery,
	"mutate":              handleMutate,
	"mutateIfGraphCommit": handleMutateIf,
	"load":                handleLoadJSON,
	"export":              handleExport,
	"loadNdjson":          handleLoadNDJSON,
	"mcp":                 handleMCP,
	"getSnapshot":         handleSnapshot,
	"getSchema":           handleSchema,
	"listBranches":        handleBranches,
	"createBranch":        handleBranchCreate,
	"mergeBranch":         handleMerge,
	"deleteBranch":        handleBranchDelete,
	"listCommits":         handleCommits,
	"getCommit":           handleCommit,
	"getCommitChanges":    handleChanges,
	// The console's routes (console.go).
	"getStatus":       handleStatus,
	"getCatalog":      handleCatalog,
	"checkQuery":      handleCheck,
	"listBranchHeads": handleBranchHeads,
	"previewMerge":    handleMergePreview,
	"diffRefs":        handleDiff,
	"getBlob":         handleBlob,
	"headBlob":        handleBlob,
	// The change feed (feed.go) and stored queries (storedq.go).
	"pollChanges":              handlePollChanges,
	"captureChangeBaseline":    handleBaseline,
	"listQueries":              handleListQueries,
	"invokeQuery":              handleInvokeQuery,
	"invokeQueryIfGraphCommit": handleInvokeQueryIf,
}

// Routes is the route table with its handlers. A route of api.Routes
// without a handler (or a handler without a route) is a programming
// error: the server refuses to build.
func Routes() []Route {
	var out []Route
	for _, rt := range api.Routes() {
		h, ok := handlers[rt.OperationID]
		if !ok {
			panic(fmt.Sprintf("server: route %s %s (%s) has no handler", rt.Method, rt.Path, rt.OperationID))
		}
		if err := checkDeclared(rt); err != nil {
			panic("server: " + err.Error())
		}
		out = append(out, Route{Route: rt, handle: h})
	}
	if len(out) != len(handlers) {
		panic(fmt.Sprintf("server: %d handlers for %d routes", len(handlers), len(out)))
	}
	return out
}

// checkDeclared refuses a route that does not say what the server must
// apply to it (wrap applies what it declares).
func checkDeclared(rt api.Route) error {
	switch rt.Admission {
	case api.AdmitNone, api.AdmitRead, api.AdmitWrite, api.AdmitPerCall:
	default:
		return fmt.Errorf("route %s %s (%s) declares no admission class (api.Admit*)", rt.Method, rt.Path, rt.OperationID)
	}
	switch rt.Answer {
	case api.AnswerJSON, api.AnswerStream, api.AnswerPerCall:
	default:
		return fmt.Errorf("route %s %s (%s) declares no answer bound (api.Answer*)", rt.Method, rt.Path, rt.OperationID)
	}
	if rt.Writes() != (rt.Admission == api.AdmitWrite || rt.Admission == api.AdmitPerCall) && rt.OperationID != "mcp" {
		return fmt.Errorf("route %s %s (%s): a write takes a write slot, a read a read slot", rt.Method, rt.Path, rt.OperationID)
	}
	return nil
}
