package server

import (
	"net/http"
	"strings"
	"testing"
)

// TestMCPTransportErrorsAreJSONRPC: a batch (whatever the protocol
// version header says), a body that is not JSON, a message without
// jsonrpc or method, an unknown method, params the method cannot take and
// a wrong Content-Type are each answered with a JSON-RPC 2.0 error object
// (the request's id when it has one), never plain text, and a refused
// batch runs none of its calls.
func TestMCPTransportErrorsAreJSONRPC(t *testing.T) {
	fx := newFixture(t)
	_, base := fx.serve(t, Config{})
	call := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"commit_list","arguments":{}}}`
	batch := "[" + strings.Repeat(call+",", 50) + call + "]"
	cases := []struct {
		name, body, ctype, version string
		status, code               int
		id                         any
		says                       string
	}{
		{name: "batch without a version", body: batch, status: 400, code: rpcInvalidRequest, says: "batches are not supported"},
		{name: "batch with an old version", body: batch, version: "2025-03-26", status: 400, code: rpcInvalidRequest, says: "batches are not supported"},
		{name: "batch of one", body: "[" + call + "]", status: 400, code: rpcInvalidRequest, says: "batches are not supported"},
		{name: "not JSON", body: `{"jsonrpc":"2.0",`, status: 400, code: rpcParseError, says: "not valid JSON"},
		{name: "empty", body: ` `, status: 400, code: rpcInvalidRequest, says: "empty"},
		{name: "a number", body: `5`, status: 400, code: rpcInvalidRequest, says: "not a JSON object"},
		{name: "no jsonrpc", body: `{"id":3,"method":"tools/list"}`, status: 400, code: rpcInvalidRequest, id: 3.0, says: `"jsonrpc":"2.0"`},
		{name: "no method", body: `{"jsonrpc":"2.0","id":3}`, status: 400, code: rpcInvalidRequest, id: 3.0, says: "needs a method"},
		{name: "unknown method", body: `{"jsonrpc":"2.0","id":"a","method":"tools/frobnicate"}`, status: 200, code: rpcMethodNotFound, id: "a", says: `"tools/frobnicate" not found`},
		{name: "params of the wrong shape", body: `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":5}`, status: 200, code: rpcInvalidParams, id: 4.0, says: "params"},
		{name: "wrong content type", body: call, ctype: "text/plain", status: 415, code: rpcInvalidRequest, id: 7.0, says: "Content-Type: application/json"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctype := c.ctype
			if ctype == "" {
				ctype = "application/json"
			}
			hdr := http.Header{"Accept": {"application/json, text/event-stream"}}
			if c.version != "" {
				hdr.Set("Mcp-Protocol-Version", c.version)
			}
			fx.store.Reset()
			a := send(t, base, "", "POST", sample{path: "/graphs/default/mcp", ctype: ctype, body: c.body, header: hdr}, nil)
			e, _ := a.body["error"].(map[string]any)
			if a.status != c.status || a.body["jsonrpc"] != "2.0" || e == nil || e["code"] != float64(c.code) {
				t.Fatalf("status %d %s, want %d and a JSON-RPC error %d", a.status, a.raw, c.status, c.code)
			}
			if a.body["id"] != c.id {
				t.Errorf("id %v, want %v", a.body["id"], c.id)
			}
			if msg, _ := e["message"].(string); !strings.Contains(msg, c.says) {
				t.Errorf("message %q does not say %q", msg, c.says)
			}
			checkNoGoInternals(t, c.name, a.raw)
			if n := fx.store.Snapshot().Total; n != 0 {
				t.Errorf("%d storage requests for a refused message, want 0", n)
			}
		})
	}
}
