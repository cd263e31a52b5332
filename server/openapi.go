package server

import (
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/omnigraph-go/omnigraph/graph/merge"
)

// schemaTypes are the components.schemas of the document, by name. Every
// Route.Request and Route.Response names one of them (or NDJSON/OpenAPI).
var schemaTypes = map[string]reflect.Type{
	"Health":              reflect.TypeFor[Health](),
	"GraphList":           reflect.TypeFor[GraphList](),
	"QueryRequest":        reflect.TypeFor[QueryRequest](),
	"ReadOutput":          reflect.TypeFor[ReadOutput](),
	"MutateRequest":       reflect.TypeFor[MutateRequest](),
	"ChangeOutput":        reflect.TypeFor[ChangeOutput](),
	"CommitOutput":        reflect.TypeFor[CommitOutput](),
	"CommitList":          reflect.TypeFor[CommitList](),
	"LoadOutput":          reflect.TypeFor[LoadOutput](),
	"LoadRequest":         reflect.TypeFor[LoadRequest](),
	"JSONRPC":             reflect.TypeFor[JSONRPCMessage](),
	"SnapshotOutput":      reflect.TypeFor[SnapshotOutput](),
	"SchemaOutput":        reflect.TypeFor[SchemaOutput](),
	"BranchList":          reflect.TypeFor[BranchList](),
	"BranchCreateRequest": reflect.TypeFor[BranchCreateRequest](),
	"BranchCreateOutput":  reflect.TypeFor[BranchCreateOutput](),
	"BranchDeleteOutput":  reflect.TypeFor[BranchDeleteOutput](),
	"MergeRequest":        reflect.TypeFor[MergeRequest](),
	"MergeOutput":         reflect.TypeFor[MergeOutput](),
	"ChangesOutput":       reflect.TypeFor[ChangesOutput](),
	"ErrorOutput":         reflect.TypeFor[ErrorOutput](),
	"Change":              reflect.TypeFor[merge.Change](),
	"BlobRange":           reflect.TypeFor[BlobRange](),
}

var pathParamRE = regexp.MustCompile(`\{([a-z_]+)\}`)

// OpenAPI builds the OpenAPI 3.1 document from the route table: the same
// table New mounts, so the document and the server cannot drift. auth
// adds the bearer security scheme.
func OpenAPI(version string, auth bool) map[string]any {
	if version == "" {
		version = "(devel)"
	}
	paths := map[string]any{}
	for _, rt := range Routes() {
		item, _ := paths[rt.Path].(map[string]any)
		if item == nil {
			item = map[string]any{}
			paths[rt.Path] = item
		}
		op := map[string]any{"operationId": rt.OperationID, "summary": rt.Summary}
		var params []any
		for _, m := range pathParamRE.FindAllStringSubmatch(rt.Path, -1) {
			params = append(params, map[string]any{"name": m[1], "in": "path", "required": true, "schema": map[string]any{"type": "string"}})
		}
		for _, q := range rt.Query {
			params = append(params, map[string]any{"name": q, "in": "query", "required": false, "schema": map[string]any{"type": "string"}})
		}
		if rt.Header != "" {
			params = append(params, map[string]any{"name": rt.Header, "in": "header", "required": true, "schema": map[string]any{"type": "string"}})
		}
		if len(params) > 0 {
			op["parameters"] = params
		}
		switch rt.Request {
		case "":
		case "NDJSON":
			op["requestBody"] = map[string]any{"required": true, "content": map[string]any{"application/x-ndjson": map[string]any{"schema": map[string]any{"type": "string"}}}}
		default:
			op["requestBody"] = map[string]any{"required": true, "content": map[string]any{"application/json": map[string]any{"schema": ref(rt.Request)}}}
		}
		respType, respSchema := "application/json", map[string]any{"type": "object"}
		switch rt.Response {
		case "OpenAPI":
		case "NDJSON":
			respType, respSchema = "application/x-ndjson", map[string]any{"type": "string"}
		case "Blob":
			respType, respSchema = "application/octet-stream", map[string]any{"type": "string", "format": "binary"}
		default:
			respSchema = ref(rt.Response)
		}
		responses := map[string]any{"200": map[string]any{"description": "OK", "content": map[string]any{respType: map[string]any{"schema": respSchema}}}}
		for _, st := range rt.Statuses {
			switch {
			case st == 206:
				responses["206"] = map[string]any{"description": statusText(st), "content": map[string]any{respType: map[string]any{"schema": respSchema}}}
			case st == 302 || st == 304:
				responses[fmt.Sprint(st)] = map[string]any{"description": statusText(st)}
			default:
				responses[fmt.Sprint(st)] = map[string]any{"description": statusText(st), "content": map[string]any{"application/json": map[string]any{"schema": ref("ErrorOutput")}}}
			}
		}
		op["responses"] = responses
		if rt.Auth && auth {
			op["security"] = []any{map[string]any{"bearer": []any{}}}
		}
		item[strings.ToLower(rt.Method)] = op
	}
	schemas := map[string]any{}
	for name, t := range schemaTypes {
		schemas[name] = schemaOf(t)
	}
	components := map[string]any{"schemas": schemas}
	if auth {
		components["securitySchemes"] = map[string]any{"bearer": map[string]any{"type": "http", "scheme": "bearer"}}
	}
	return map[string]any{
		"openapi":    "3.1.0",
		"info":       map[string]any{"title": "OmniGraph server", "version": version},
		"paths":      paths,
		"components": components,
	}
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
		return "bad_request"
	case 401:
		return "unauthorized: missing or invalid bearer token"
	case 403:
		return "forbidden: the policy denies the action, or a read-only replica refuses a write"
	case 404:
		return "not_found: no such graph, branch or commit"
	case 409:
		return "conflict: read_set_conflict, key_conflict or merge_conflicts"
	case 412:
		return "precondition_failure: the branch head is not the expected commit (a Blob read: If-Match does not name the current ETag)"
	case 413:
		return "resource_limit"
	case 415:
		return "unsupported media type"
	case 416:
		return "blob_range: the byte range lies outside the value (Content-Range: bytes */N)"
	case 429:
		return "too_many_requests (Retry-After)"
	case 500:
		return "internal, or outcome_unknown (the write may have landed: check the commit list)"
	case 503:
		return "recovery_required {operation_id}, or the server is stopping"
	}
	return "error"
}

var (
	rawMessage = reflect.TypeFor[json.RawMessage]()
	timeType   = reflect.TypeFor[time.Time]()
)

// schemaOf is the JSON Schema (2020-12, as OpenAPI 3.1 uses) of a Go type
// as encoding/json renders it. Named struct types of schemaTypes become
// references.
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
	case reflect.Int, reflect.Int64, reflect.Int32, reflect.Uint64, reflect.Uint32, reflect.Uint:
		return map[string]any{"type": "integer"}
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
			props[name] = schemaOrRef(f.Type)
			if !strings.Contains(opts, "omitempty") && f.Type.Kind() != reflect.Pointer {
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
