package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/omnigraph-go/omnigraph/api"
	"github.com/omnigraph-go/omnigraph/backend/local"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/load"
)

// socialGraph is a read-write graph of examples/social.pg holding
// examples/social.jsonl: what the document's examples are written against.
func socialGraph(t *testing.T) *graph.Graph {
	t.Helper()
	ctx := context.Background()
	schema, err := os.ReadFile("../examples/social.pg")
	if err != nil {
		t.Fatal(err)
	}
	store, err := local.New(filepath.Join(t.TempDir(), "g"))
	if err != nil {
		t.Fatal(err)
	}
	g, err := graph.Init(ctx, store, string(schema), graph.InitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.Open("../examples/social.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer data.Close()
	if _, err := load.Run(ctx, g, data, load.Options{Mode: load.Append}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g
}

// TestOpenAPIExamplesRunOnTheServer sends every route's documented example
// request to a server holding the example graph and requires 200 and an
// answer of the documented response type (decoded strictly: a member the
// type lacks fails). A route added to the table without an example fails.
func TestOpenAPIExamplesRunOnTheServer(t *testing.T) {
	g := socialGraph(t)
	srv, err := New(Config{Graphs: []Graph{{ID: "default", G: g, Queries: socialQueries(t, g)}}})
	if err != nil {
		t.Fatal(err)
	}
	base := newHTTPServer(t, srv)
	send := func(rt api.Route, path string, body []byte, hdr ...string) []byte {
		t.Helper()
		req, _ := http.NewRequest(rt.Method, base+path, bytes.NewReader(body))
		switch rt.Request {
		case "":
		case "NDJSON":
			req.Header.Set("Content-Type", "application/x-ndjson")
		default:
			req.Header.Set("Content-Type", "application/json")
		}
		if rt.OperationID == "mcp" {
			req.Header.Set("Accept", "application/json, text/event-stream")
		}
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: the documented example answers %d: %s", rt.OperationID, resp.StatusCode, b)
		}
		return b
	}
	head := func() string {
		var sn api.SnapshotOutput
		b := send(api.Route{Method: "GET", OperationID: "getSnapshot"}, "/graphs/default/snapshot", nil)
		if err := json.Unmarshal(b, &sn); err != nil {
			t.Fatal(err)
		}
		return sn.GraphCommitID
	}
	for _, rt := range api.Routes() {
		ex, ok := examples[rt.OperationID]
		if !ok {
			t.Errorf("route %s has no example in server/openapi_examples.go", rt.OperationID)
			continue
		}
		if (ex.Request != nil) != (rt.Request != "") {
			t.Errorf("route %s: example request %v for request schema %q", rt.OperationID, ex.Request, rt.Request)
			continue
		}
		if rt.Response != "OpenAPI" && ex.Response == nil {
			t.Errorf("route %s has no example response", rt.OperationID)
			continue
		}
		if rt.Response == "Blob" {
			// The social graph has no Blob property: TestServerBlob runs
			// these routes (bytes, ranges, validators, 302, 416).
			continue
		}
		var body []byte
		switch r := ex.Request.(type) {
		case nil:
		case string:
			body = []byte(r)
		default:
			body, _ = json.Marshal(r)
		}
		// The path parameters the examples name.
		var hdr []string
		var params []string
		switch rt.OperationID {
		case "mutateIfGraphCommit", "invokeQueryIfGraphCommit":
			hdr = []string{api.HeaderIfGraphCommit, head()}
		case "mergeBranch", "deleteBranch", "previewMerge", "diffRefs":
			// The branch the example names exists (created here when an
			// earlier example did not leave it).
			resp, err := http.Post(base+"/graphs/default/branches", "application/json", strings.NewReader(`{"name":"review"}`))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		}
		switch {
		case rt.OperationID == "invokeQuery":
			params = []string{"default", "city_adults"}
		case rt.OperationID == "invokeQueryIfGraphCommit":
			params = []string{"default", "hire"}
		case strings.Contains(rt.Path, "{commit_id}"):
			params = []string{"default", head()}
		case strings.Contains(rt.Path, "{branch}"):
			params = []string{"default", "review"}
		default:
			params = []string{"default"}
		}
		got := send(rt, rt.Expand(params...), body, hdr...)
		if rt.Response == "StoredQueryOutput" {
			// A stored read answers as POST query does.
			rt.Response = "ReadOutput"
		}
		switch rt.Response {
		case "OpenAPI", "NDJSON", "JSONRPC", "BaselineNDJSON":
			if !json.Valid(got) && rt.Response != "NDJSON" && rt.Response != "BaselineNDJSON" {
				t.Errorf("%s: answer is not JSON: %s", rt.OperationID, got)
			}
			continue
		}
		// The answer decodes strictly into the documented type, and so
		// does the documented example.
		for what, b := range map[string][]byte{"answer": got, "example": mustJSON(t, ex.Response)} {
			v := reflect.New(schemaTypes[rt.Response])
			dec := json.NewDecoder(bytes.NewReader(b))
			dec.DisallowUnknownFields()
			if err := dec.Decode(v.Interface()); err != nil {
				t.Errorf("%s: the %s is not a %s: %v: %s", rt.OperationID, what, rt.Response, err, b)
			}
		}
	}
}

// socialQueries are examples/social.gq as the graph's stored queries.
func socialQueries(t *testing.T, g *graph.Graph) *StoredQueries {
	t.Helper()
	src, err := os.ReadFile("../examples/social.gq")
	if err != nil {
		t.Fatal(err)
	}
	cat, err := g.Schema(context.Background(), "main")
	if err != nil {
		t.Fatal(err)
	}
	set, problems := CompileQueries([]QueryFile{{Name: "examples/social.gq", Source: string(src)}}, cat)
	if set == nil {
		t.Fatal(problems)
	}
	return set
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestOpenAPIShape pins what the lint and portable clients need, for both
// the token and the open-mode document: servers and a licence; security
// on every operation (the open routes say security: [] whatever the mode;
// the others need the bearer token when tokens are on); a 4XX answer on
// every operation and the error envelope on every error answer; closed
// request bodies; no type lists (["null","array"]) anywhere.
func TestOpenAPIShape(t *testing.T) {
	for _, auth := range []bool{true, false} {
		doc := OpenAPI(auth)
		if doc["servers"] == nil || doc["info"].(map[string]any)["license"] == nil {
			t.Fatalf("auth=%v: no servers or licence", auth)
		}
		for _, rt := range api.Routes() {
			op := doc["paths"].(map[string]any)[rt.Path].(map[string]any)[strings.ToLower(rt.Method)].(map[string]any)
			sec, hasSec := op["security"]
			switch {
			case !rt.Auth || !auth:
				if !hasSec || len(sec.([]any)) != 0 {
					t.Errorf("auth=%v %s: security %v, want []", auth, rt.OperationID, sec)
				}
			case hasSec:
				t.Errorf("auth=%v %s: security %v, want the document's bearer", auth, rt.OperationID, sec)
			}
			n4 := 0
			for code, r := range op["responses"].(map[string]any) {
				if code[0] == '4' {
					n4++
				}
				if code == "200" || code == "206" || code[0] == '3' {
					// A success or a redirect: the route's own body, or none.
					continue
				}
				content := r.(map[string]any)["content"].(map[string]any)["application/json"].(map[string]any)
				if !reflect.DeepEqual(content["schema"], ref("ErrorOutput")) || r.(map[string]any)["description"] == "" {
					t.Errorf("auth=%v %s %s: not the described envelope: %v", auth, rt.OperationID, code, r)
				}
			}
			if n4 == 0 {
				t.Errorf("auth=%v %s: no 4XX answer", auth, rt.OperationID)
			}
		}
		schemas := doc["components"].(map[string]any)["schemas"].(map[string]any)
		for name := range closedSchemas {
			if schemas[name].(map[string]any)["additionalProperties"] != false {
				t.Errorf("request schema %s is open", name)
			}
		}
		b := mustJSON(t, doc)
		if bytes.Contains(b, []byte(`"type":[`)) {
			t.Errorf("auth=%v: the document has a type list", auth)
		}
	}
	// Every request schema of the table is closed.
	for _, rt := range api.Routes() {
		if rt.Request != "" && rt.Request != "NDJSON" && rt.Request != "JSONRPC" && !closedSchemas[rt.Request] {
			t.Errorf("route %s: request schema %s is not in closedSchemas", rt.OperationID, rt.Request)
		}
	}
}

// TestMCPInputSchemasHaveNoTypeLists: every tool's input schema gives each
// member one type (graph_load.records was ["null","array"], which
// portable MCP clients warn about), and still closes the object.
func TestMCPInputSchemasHaveNoTypeLists(t *testing.T) {
	for _, tl := range mcpTools() {
		b := mustJSON(t, tl.tool.InputSchema)
		if bytes.Contains(b, []byte(`"type":[`)) {
			t.Errorf("tool %s: input schema has a type list: %s", tl.tool.Name, b)
		}
		if !bytes.HasSuffix(b, []byte(`"additionalProperties":false}`)) {
			t.Errorf("tool %s: input schema is not closed: %s", tl.tool.Name, b)
		}
		if tl.tool.Name == "graph_load" && !bytes.Contains(b, []byte(`"records":{"type":"array"`)) {
			t.Errorf("graph_load: records is not an array: %s", b)
		}
	}
}
