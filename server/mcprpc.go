package server

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
)

// The MCP endpoint's own checks of a POST, before the SDK sees it, and
// the one shape of its refusals: a JSON-RPC 2.0 error object (with the
// request's id when it has one), never the SDK's or Go's plain text.
// Batches are refused: the current protocol (2025-06-18 on) has none,
// and a batch of N calls would hold N answers until the last.

// JSON-RPC 2.0 error codes.
const (
	rpcParseError     = -32700
	rpcInvalidRequest = -32600
	rpcMethodNotFound = -32601
	rpcInvalidParams  = -32602
	rpcInternalError  = -32603
)

// mcpMethods are the methods the SDK's server answers (tools/call and
// tools/list are the ones this server's tools use).
var mcpMethods = map[string]bool{
	"initialize": true, "ping": true, "tools/list": true, "tools/call": true,
	"prompts/list": true, "prompts/get": true, "resources/list": true, "resources/read": true,
	"resources/templates/list": true, "resources/subscribe": true, "resources/unsubscribe": true,
	"completion/complete": true, "logging/setLevel": true,
	"notifications/initialized": true, "notifications/cancelled": true,
	"notifications/progress": true, "notifications/roots/list_changed": true,
}

// rpcRefusal is a JSON-RPC error answer.
type rpcRefusal struct {
	status  int
	id      json.RawMessage
	code    int
	message string
}

// checkRPC checks that body is one JSON-RPC 2.0 message the server
// answers.
func checkRPC(body []byte) *rpcRefusal {
	b := bytes.TrimSpace(body)
	switch {
	case len(b) == 0:
		return &rpcRefusal{status: http.StatusBadRequest, code: rpcInvalidRequest, message: "the body is empty: POST one JSON-RPC 2.0 message (a JSON object)"}
	case b[0] == '[':
		return &rpcRefusal{status: http.StatusBadRequest, code: rpcInvalidRequest, message: "JSON-RPC batches are not supported (MCP 2025-06-18 and later have none): POST one message per request"}
	case !json.Valid(b):
		return &rpcRefusal{status: http.StatusBadRequest, code: rpcParseError, message: "parse error: the body is not valid JSON; POST one JSON-RPC 2.0 message (a JSON object)"}
	case b[0] != '{':
		return &rpcRefusal{status: http.StatusBadRequest, code: rpcInvalidRequest, message: "the body is not a JSON object: POST one JSON-RPC 2.0 message"}
	}
	var m struct {
		JSONRPC json.RawMessage `json:"jsonrpc"`
		Method  json.RawMessage `json:"method"`
		ID      json.RawMessage `json:"id"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return &rpcRefusal{status: http.StatusBadRequest, code: rpcInvalidRequest, message: "the body is not a JSON-RPC 2.0 message: it needs \"jsonrpc\":\"2.0\" and a method"}
	}
	id := m.ID
	if len(id) > 0 && id[0] != '"' && (id[0] < '0' || id[0] > '9') && id[0] != '-' {
		// Only a string or a number is an id; anything else is echoed as null.
		id = nil
	}
	var version, method string
	if json.Unmarshal(m.JSONRPC, &version) != nil || version != "2.0" {
		return &rpcRefusal{status: http.StatusBadRequest, id: id, code: rpcInvalidRequest, message: "the message needs \"jsonrpc\":\"2.0\""}
	}
	if json.Unmarshal(m.Method, &method) != nil || method == "" {
		return &rpcRefusal{status: http.StatusBadRequest, id: id, code: rpcInvalidRequest, message: "the message needs a method (a string): this endpoint answers requests and notifications, e.g. tools/list and tools/call"}
	}
	if !mcpMethods[method] {
		return &rpcRefusal{status: http.StatusOK, id: id, code: rpcMethodNotFound, message: "method " + quoteText(method) + " not found: this endpoint answers initialize, ping, tools/list and tools/call (and the MCP notifications)"}
	}
	return nil
}

// quoteText quotes s for a message, cut to a readable length.
func quoteText(s string) string {
	if len(s) > 80 {
		s = s[:80] + "..."
	}
	b, _ := json.Marshal(s)
	return string(b)
}

func writeRPCError(w http.ResponseWriter, e *rpcRefusal) {
	id := e.id
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.status)
	_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": e.code, "message": e.message}})
}

// rpcErrorWriter holds the SDK's answer (one JSON document: the
// endpoint answers JSON, never an event stream) until it is complete, and
// turns its refusals into JSON-RPC errors in the server's words: a
// plain-text one (http.Error: a wrong Content-Type or Accept, an
// unsupported protocol version) keeps its status; an error object whose
// message quotes Go's decoder (params the method cannot take) is said
// again without it.
type rpcErrorWriter struct {
	http.ResponseWriter
	id     json.RawMessage
	status int
	body   bytes.Buffer
}

func (w *rpcErrorWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}

func (w *rpcErrorWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.body.Write(b)
}

func (w *rpcErrorWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// finish sends the answer.
func (w *rpcErrorWriter) finish() {
	if w.status == 0 {
		w.status = http.StatusOK // what net/http sends for an empty answer
	}
	h := w.Header()
	if w.status >= 400 && strings.HasPrefix(h.Get("Content-Type"), "text/plain") {
		code, msg := rpcInvalidRequest, strings.TrimSpace(w.body.String())
		switch {
		case w.status >= 500:
			code = rpcInternalError
		case strings.HasPrefix(msg, "malformed payload"):
			msg = "the body is not a JSON-RPC 2.0 message the endpoint can read: POST one request or notification"
		case w.status == http.StatusUnsupportedMediaType:
			msg = "send the message with Content-Type: application/json"
		}
		h.Del("X-Content-Type-Options")
		writeRPCError(w.ResponseWriter, &rpcRefusal{status: w.status, id: w.id, code: code, message: msg})
		return
	}
	var m struct {
		ID    json.RawMessage `json:"id"`
		Error *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if strings.HasPrefix(h.Get("Content-Type"), "application/json") && json.Unmarshal(w.body.Bytes(), &m) == nil && m.Error != nil &&
		(strings.Contains(m.Error.Message, "unmarshal") || strings.Contains(m.Error.Message, "Go value")) {
		id := m.ID
		if len(id) == 0 {
			id = w.id
		}
		h.Del("Content-Length")
		writeRPCError(w.ResponseWriter, &rpcRefusal{status: w.status, id: id, code: m.Error.Code,
			message: "the message's params are not what its method takes: check them against the method's schema (tools/list shows each tool's input schema)"})
		return
	}
	w.ResponseWriter.WriteHeader(w.status)
	_, _ = w.ResponseWriter.Write(w.body.Bytes())
}

// readRPC reads the body of an MCP POST (bounded by the route's body
// limit) and checks it.
func readRPC(r io.Reader) ([]byte, json.RawMessage, *rpcRefusal, error) {
	body, err := io.ReadAll(r)
	if err != nil {
		return nil, nil, nil, err
	}
	if e := checkRPC(body); e != nil {
		return nil, nil, e, nil
	}
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	_ = json.Unmarshal(body, &m)
	return body, m.ID, nil, nil
}
