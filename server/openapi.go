package server

import (
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/omnigraph-go/omnigraph/api"
)

// schemaTypes are the components.schemas of the document, by name. Every
// Route.Request and Route.Response names one of them (or NDJSON/OpenAPI).
var schemaTypes = map[string]reflect.Type{
	"Health":              reflect.TypeFor[api.Health](),
	"GraphList":           reflect.TypeFor[api.GraphList](),
	"GraphItem":           reflect.TypeFor[api.GraphItem](),
	"QueryRequest":        reflect.TypeFor[api.QueryRequest](),
	"ReadOutput":          reflect.TypeFor[api.ReadOutput](),
	"ReadTarget":          reflect.TypeFor[api.ReadTarget](),
	"MutateRequest":       reflect.TypeFor[api.MutateRequest](),
	"ChangeOutput":        reflect.TypeFor[api.ChangeOutput](),
	"CommitOutput":        reflect.TypeFor[api.CommitOutput](),
	"CommitList":          reflect.TypeFor[api.CommitList](),
	"LoadOutput":          reflect.TypeFor[api.LoadOutput](),
	"LoadRequest":         reflect.TypeFor[api.LoadRequest](),
	"JSONRPC":             reflect.TypeFor[api.JSONRPCMessage](),
	"SnapshotOutput":      reflect.TypeFor[api.SnapshotOutput](),
	"DatasetOutput":       reflect.TypeFor[api.DatasetOutput](),
	"SchemaOutput":        reflect.TypeFor[api.SchemaOutput](),
	"BranchList":          reflect.TypeFor[api.BranchList](),
	"BranchHead":          reflect.TypeFor[api.BranchHead](),
	"BranchCreateRequest": reflect.TypeFor[api.BranchCreateRequest](),
	"BranchCreateOutput":  reflect.TypeFor[api.BranchCreateOutput](),
	"BranchDeleteOutput":  reflect.TypeFor[api.BranchDeleteOutput](),
	"MergeRequest":        reflect.TypeFor[api.MergeRequest](),
	"MergeOutput":         reflect.TypeFor[api.MergeOutput](),
	"ChangesOutput":       reflect.TypeFor[api.ChangesOutput](),
	"Change":              reflect.TypeFor[api.Change](),
	"ErrorOutput":         reflect.TypeFor[api.ErrorOutput](),
	"MergeConflict":       reflect.TypeFor[api.MergeConflict](),
	"ReadSetConflict":     reflect.TypeFor[api.ReadSetConflict](),
	"KeyConflict":         reflect.TypeFor[api.KeyConflict](),
	"ResourceLimit":       reflect.TypeFor[api.ResourceLimit](),
	"RecoveryRequired":    reflect.TypeFor[api.RecoveryRequired](),
	"PreconditionFailure": reflect.TypeFor[api.PreconditionFailure](),
	"OutcomeUnknown":      reflect.TypeFor[api.OutcomeUnknown](),
	"ChangeDiffRefusal":   reflect.TypeFor[api.ChangeDiffRefusal](),
	// The console's routes (api/console.go).
	"StatusOutput":        reflect.TypeFor[api.StatusOutput](),
	"LockOutput":          reflect.TypeFor[api.LockOutput](),
	"RecoveryOutput":      reflect.TypeFor[api.RecoveryOutput](),
	"IntentOutput":        reflect.TypeFor[api.IntentOutput](),
	"AutoOptimizeOutput":  reflect.TypeFor[api.AutoOptimizeOutput](),
	"StatusLimits":        reflect.TypeFor[api.StatusLimits](),
	"CatalogOutput":       reflect.TypeFor[api.CatalogOutput](),
	"CatalogType":         reflect.TypeFor[api.CatalogType](),
	"CatalogProperty":     reflect.TypeFor[api.CatalogProperty](),
	"CheckRequest":        reflect.TypeFor[api.CheckRequest](),
	"CheckOutput":         reflect.TypeFor[api.CheckOutput](),
	"CheckedQuery":        reflect.TypeFor[api.CheckedQuery](),
	"CheckParam":          reflect.TypeFor[api.CheckParam](),
	"CheckColumn":         reflect.TypeFor[api.CheckColumn](),
	"CheckLink":           reflect.TypeFor[api.CheckLink](),
	"CheckError":          reflect.TypeFor[api.CheckError](),
	"BranchHeadsOutput":   reflect.TypeFor[api.BranchHeadsOutput](),
	"BranchStatus":        reflect.TypeFor[api.BranchStatus](),
	"MergePreviewRequest": reflect.TypeFor[api.MergePreviewRequest](),
	"MergePreviewOutput":  reflect.TypeFor[api.MergePreviewOutput](),
	"DiffRequest":         reflect.TypeFor[api.DiffRequest](),
	"DiffOutput":          reflect.TypeFor[api.DiffOutput](),
	"BlobRange":           reflect.TypeFor[api.BlobRange](),
	"ChangeFeedOutput":    reflect.TypeFor[api.ChangeFeedOutput](),
	"ChangeBlock":         reflect.TypeFor[api.ChangeBlock](),
	"ChangeCause":         reflect.TypeFor[api.ChangeCause](),
	"ChangeFeedGap":       reflect.TypeFor[api.ChangeFeedGap](),
	"BaselineRequest":     reflect.TypeFor[api.BaselineRequest](),
	"QueryCatalog":        reflect.TypeFor[api.QueryCatalog](),
	"StoredQuery":         reflect.TypeFor[api.StoredQuery](),
	"QueryParam":          reflect.TypeFor[api.QueryParam](),
	"InvokeRequest":       reflect.TypeFor[api.InvokeRequest](),
}

// closedSchemas are the request bodies: the server refuses a member they
// do not name (400), and the document says so (additionalProperties:
// false). The MCP body is JSON-RPC, open by its own specification.
var closedSchemas = map[string]bool{
	"QueryRequest": true, "MutateRequest": true, "LoadRequest": true,
	"BranchCreateRequest": true, "MergeRequest": true,
	"CheckRequest": true, "MergePreviewRequest": true, "DiffRequest": true,
	"BaselineRequest": true, "InvokeRequest": true,
}

// APIVersion is the version of the API the document describes (its
// info.version); the server's build is in /healthz.
const APIVersion = "1.0.0"

// DefaultServerURL is the document's servers entry: the default listen
// address of omnigraph serve. Clients give their own base URL.
const DefaultServerURL = "http://127.0.0.1:8080"

var pathParamRE = regexp.MustCompile(`\{([a-z_]+)\}`)

var pathParamDocs = map[string]string{
	"graph_id":  "the graph's id (GET /graphs lists them): 1 to 64 letters, digits or '-'",
	"branch":    "the branch; a name holding '/' is sent with each '/' as is or escaped as %2F",
	"commit_id": "a graph commit id",
	"name":      "the stored query's name (GET queries lists them)",
}

// OpenAPI builds the OpenAPI 3.1 document from the route table: the same
// table New mounts, so the document and the server cannot drift. auth
// (the server has tokens) adds the bearer security scheme to the routes
// that need it; the open routes (/healthz, /openapi.json) say security: []
// either way.
func OpenAPI(auth bool) map[string]any {
	paths := map[string]any{}
	for _, rt := range api.Routes() {
		item, _ := paths[rt.Path].(map[string]any)
		if item == nil {
			item = map[string]any{}
			paths[rt.Path] = item
		}
		item[strings.ToLower(rt.Method)] = operation(rt, auth)
	}
	schemas := map[string]any{}
	for name, t := range schemaTypes {
		s := schemaOf(t)
		if closedSchemas[name] {
			s["additionalProperties"] = false
		}
		schemas[name] = s
	}
	components := map[string]any{"schemas": schemas}
	doc := map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{
			"title":       "OmniGraph server",
			"version":     APIVersion,
			"description": "The HTTP API of omnigraph serve: typed property graphs in an object store, with branches and commits. Every error answer is the ErrorOutput envelope; a 500 with outcome_unknown means a write may have landed (check the commit list before sending it again).",
			"license":     map[string]any{"name": "Apache-2.0", "identifier": "Apache-2.0"},
		},
		"servers":    []any{map[string]any{"url": DefaultServerURL, "description": "omnigraph serve on its default listen address"}},
		"paths":      paths,
		"components": components,
	}
	if auth {
		components["securitySchemes"] = map[string]any{"bearer": map[string]any{"type": "http", "scheme": "bearer", "description": "a token made with 'omnigraph token add'"}}
		doc["security"] = []any{map[string]any{"bearer": []any{}}}
	} else {
		doc["security"] = []any{}
	}
	return doc
}

// operation is the document's entry for one route.
func operation(rt api.Route, auth bool) map[string]any {
	ex := examples[rt.OperationID]
	op := map[string]any{"operationId": rt.OperationID, "summary": rt.Summary}
	var params []any
	for _, m := range pathParamRE.FindAllStringSubmatch(rt.Path, -1) {
		params = append(params, map[string]any{"name": m[1], "in": "path", "required": true, "description": pathParamDocs[m[1]], "schema": map[string]any{"type": "string"}})
	}
	for _, q := range rt.Query {
		s := map[string]any{"type": "string"}
		if q.Integer {
			s = map[string]any{"type": "integer", "minimum": 0}
		}
		if q.Boolean {
			s = map[string]any{"type": "boolean"}
		}
		p := map[string]any{"name": q.Name, "in": "query", "required": false, "description": q.Doc, "schema": s}
		if q.Repeat {
			p["schema"] = map[string]any{"type": "array", "items": s}
			p["style"], p["explode"] = "form", true
		}
		params = append(params, p)
	}
	if rt.Header != "" {
		params = append(params, map[string]any{"name": rt.Header, "in": "header", "required": true, "description": "the commit id the branch head must be (one raw id: no '*', quotes, W/ or lists)", "schema": map[string]any{"type": "string"}})
	}
	if len(params) > 0 {
		op["parameters"] = params
	}
	switch rt.Request {
	case "":
	case "NDJSON":
		op["requestBody"] = map[string]any{"required": true, "content": map[string]any{"application/x-ndjson": map[string]any{
			"schema":  map[string]any{"type": "string", "description": "one graph-batch line per line: {\"type\":T,\"data\":{...}} or {\"edge\":E,\"from\":src,\"to\":dst,\"data\":{...}}"},
			"example": ex.Request,
		}}}
	default:
		op["requestBody"] = map[string]any{"required": true, "content": map[string]any{"application/json": map[string]any{"schema": ref(rt.Request), "example": ex.Request}}}
	}
	ok := map[string]any{"description": "OK"}
	switch rt.Response {
	case "OpenAPI":
		ok["content"] = map[string]any{"application/json": map[string]any{"schema": map[string]any{"type": "object", "description": "this document"}}}
	case "NDJSON":
		ok["content"] = map[string]any{"application/x-ndjson": map[string]any{"schema": map[string]any{"type": "string"}, "example": ex.Response}}
		ok["headers"] = map[string]any{
			api.HeaderGraphCommit:    map[string]any{"description": "the commit the export read", "schema": map[string]any{"type": "string"}},
			api.HeaderSchemaIdentity: map[string]any{"description": "the identity of the schema of that commit (GET schema answers it with the source)", "schema": map[string]any{"type": "string"}},
		}
		ok["description"] = "OK: the lines, then the " + api.TrailerExportEntities + " trailer (the line count); a body without the trailer was cut short and must be discarded"
	case "Blob":
		ok["content"] = blobContent()
		ok["headers"] = blobHeaders()
		ok["description"] = "OK: the value's bytes (none for HEAD)"
	case "BaselineNDJSON":
		ok["content"] = map[string]any{"application/x-ndjson": map[string]any{"schema": map[string]any{"type": "string", "description": "graph-batch lines, then the baseline record line"}, "example": ex.Response}}
		ok["headers"] = map[string]any{api.HeaderGraphCommit: map[string]any{"description": "the commit the baseline is", "schema": map[string]any{"type": "string"}}}
		ok["description"] = "OK: the head's entities as graph-batch lines, then the baseline record line {\"baseline\":{snapshot_commit_id, resume_cursor}}; a body without it was cut short and must be discarded"
	case "StoredQueryOutput":
		ok["content"] = map[string]any{"application/json": map[string]any{"schema": map[string]any{"oneOf": []any{ref("ReadOutput"), ref("ChangeOutput")}}, "example": ex.Response}}
		ok["description"] = "OK: a read answers as POST query (ReadOutput), a mutation as POST mutate (ChangeOutput)"
	default:
		ok["content"] = map[string]any{"application/json": map[string]any{"schema": ref(rt.Response), "example": ex.Response}}
	}
	responses := map[string]any{"200": ok}
	has4xx := false
	for _, st := range rt.Statuses {
		has4xx = has4xx || st/100 == 4
		switch st {
		case 206:
			h := blobHeaders()
			h["Content-Range"] = map[string]any{"description": "the range sent: bytes FIRST-LAST/SIZE", "schema": map[string]any{"type": "string"}}
			responses["206"] = map[string]any{"description": statusText(st), "content": blobContent(), "headers": h}
		case 302:
			responses["302"] = map[string]any{"description": statusText(st), "headers": map[string]any{
				"Location":           map[string]any{"description": "the external value's URI", "schema": map[string]any{"type": "string"}},
				api.HeaderSnapshotID: map[string]any{"description": "the graph commit read", "schema": map[string]any{"type": "string"}},
			}}
		case 304:
			responses["304"] = map[string]any{"description": statusText(st), "headers": blobHeaders()}
		default:
			responses[fmt.Sprint(st)] = errorResponse(st)
		}
	}
	if !has4xx {
		// The open routes refuse only what every route refuses: a request
		// the server will not take (a Host or Origin it does not accept).
		responses["4XX"] = map[string]any{"description": "the request was refused (a Host or Origin this server does not accept); the envelope says why", "content": envelope()}
	}
	op["responses"] = responses
	if !rt.Auth || !auth {
		op["security"] = []any{}
	}
	return op
}

// blobContent is the body of a Blob answer: raw bytes.
func blobContent() map[string]any {
	return map[string]any{"application/octet-stream": map[string]any{"schema": map[string]any{"type": "string", "format": "binary"}}}
}

// blobHeaders are the headers of a Blob answer.
func blobHeaders() map[string]any {
	str := map[string]any{"type": "string"}
	return map[string]any{
		"ETag":               map[string]any{"description": "strong: the quoted SHA-256 of the value's bytes (If-Match, If-None-Match and If-Range take it)", "schema": str},
		"Accept-Ranges":      map[string]any{"description": "bytes: one range per request (Range: bytes=a-b, a- or -n)", "schema": str},
		api.HeaderSnapshotID: map[string]any{"description": "the graph commit read", "schema": str},
	}
}

// errorResponse documents one error status with the envelope.
func errorResponse(st int) map[string]any {
	r := map[string]any{"description": statusText(st), "content": envelope()}
	if st == 429 {
		r["headers"] = map[string]any{"Retry-After": map[string]any{"description": "seconds to wait before sending the request again (nothing was done)", "schema": map[string]any{"type": "integer"}}}
	}
	return r
}

func envelope() map[string]any {
	return map[string]any{"application/json": map[string]any{"schema": ref("ErrorOutput")}}
}

func ref(name string) map[string]any { return map[string]any{"$ref": "#/components/schemas/" + name} }

func statusText(st int) string {
	switch st {
	case 206:
		return "partial content: the byte range asked for (Content-Range)"
	case 302:
		return "found: an external Blob value; Location is its URI (never proxied)"
	case 304:
		return "not modified: If-None-Match names the current ETag"
	case 400:
		return "bad_request: the input is invalid (the message says what to change); nothing was done"
	case 401:
		return "unauthorized: missing or invalid bearer token"
	case 403:
		return "forbidden: the policy denies the action, or a read-only replica refuses a write"
	case 404:
		return "not_found: no such graph, branch or commit"
	case 405:
		return "method_not_allowed: the MCP endpoint takes POST only"
	case 409:
		return "conflict: read_set_conflict, key_conflict, merge_conflicts or change_diff_refusal; nothing was written"
	case 410:
		return "change_feed_gap: cleanup removed the history the feed needs; take a baseline (POST changes/baseline) and resume from its cursor"
	case 412:
		return "precondition_failure: the branch head is not the expected commit; nothing was written (a Blob read: If-Match does not name the current ETag)"
	case 413:
		return "resource_limit: the body or the answer exceeds a limit of this route"
	case 415:
		return "unsupported media type: send the Content-Type the route takes"
	case 416:
		return "blob_range: the byte range lies outside the value (Content-Range: bytes */N)"
	case 429:
		return "too_many_requests: the actor or graph has its most writes in flight; nothing was done: retry after Retry-After seconds"
	case 500:
		return "internal, or outcome_unknown: the write may have landed; check outcome_unknown.check before sending it again"
	case 503:
		return "recovery_required {operation_id}, or the server is stopping; nothing new was admitted"
	}
	return "error"
}

var (
	rawMessage = reflect.TypeFor[json.RawMessage]()
	timeType   = reflect.TypeFor[time.Time]()
)

// schemaOf is the JSON Schema (2020-12, as OpenAPI 3.1 uses) of a Go type
// as encoding/json renders it. Named struct types of schemaTypes become
// references. A pointer field without omitempty may be null (anyOf with
// null, never a type list); a slice is never null.
func schemaOf(t reflect.Type) map[string]any {
	switch {
	case t == rawMessage:
		return map[string]any{}
	case t == timeType:
		return map[string]any{"type": "string", "format": "date-time"}
	}
	switch t.Kind() {
	case reflect.Pointer:
		return schemaOf(t.Elem())
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int64, reflect.Int32:
		return map[string]any{"type": "integer"}
	case reflect.Uint64, reflect.Uint32, reflect.Uint:
		return map[string]any{"type": "integer", "minimum": 0}
	case reflect.Float64, reflect.Float32:
		return map[string]any{"type": "number"}
	case reflect.Slice:
		return map[string]any{"type": "array", "items": schemaOrRef(t.Elem())}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": schemaOrRef(t.Elem())}
	case reflect.Interface:
		return map[string]any{}
	case reflect.Struct:
		props := map[string]any{}
		var required []string
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" {
				continue
			}
			if name == "" {
				name = f.Name
			}
			omit := strings.Contains(opts, "omitempty")
			s := schemaOrRef(f.Type)
			if f.Type.Kind() == reflect.Pointer && !omit {
				s = map[string]any{"anyOf": []any{s, map[string]any{"type": "null"}}}
			}
			if doc := f.Tag.Get("jsonschema"); doc != "" {
				if _, isRef := s["$ref"]; isRef {
					s = map[string]any{"allOf": []any{s}}
				}
				s["description"] = doc
			}
			props[name] = s
			if !omit {
				required = append(required, name)
			}
		}
		sort.Strings(required)
		s := map[string]any{"type": "object", "properties": props}
		if len(required) > 0 {
			s["required"] = required
		}
		return s
	}
	return map[string]any{}
}

func schemaOrRef(t reflect.Type) map[string]any {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	for name, st := range schemaTypes {
		if st == t {
			return ref(name)
		}
	}
	return schemaOf(t)
}
