package main

import (
	"encoding/json"
	"errors"
	"io"

	"github.com/spf13/cobra"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/client"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/lang/gq"
	"github.com/omnigraph-go/omnigraph/lang/pg"
	"github.com/omnigraph-go/omnigraph/server"
)

// jsonError is the error object printed on stderr when JSON was asked for.
type jsonError struct {
	Error jsonErrorBody `json:"error"`
}

type jsonErrorBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Hint    string `json:"hint,omitempty"`
}

// wantsJSON reports whether the invocation asked for JSON output: --json, or
// --format json|jsonl. When flag parsing failed before the flag was reached,
// the raw arguments decide.
func wantsJSON(cmd *cobra.Command, args []string) bool {
	if cmd != nil && cmd.Flags().Parsed() {
		if f := cmd.Flags().Lookup("json"); f != nil && f.Value.String() == "true" {
			return true
		}
		if f := cmd.Flags().Lookup("format"); f != nil && (f.Value.String() == "json" || f.Value.String() == "jsonl") {
			return true
		}
	}
	for i, a := range args {
		switch {
		case a == "--":
			return false
		case a == "--json", a == "--json=true", a == "--json=1", a == "--json=t", a == "--json=TRUE", a == "--json=True":
			return true
		case a == "--format=json", a == "--format=jsonl":
			return true
		case a == "--format" && i+1 < len(args) && (args[i+1] == "json" || args[i+1] == "jsonl"):
			return true
		}
	}
	return false
}

func writeJSONError(w io.Writer, err error, exit int) {
	body := jsonErrorBody{Code: errorCode(err, exit), Message: backend.Redact(err.Error())}
	var ue usageError
	var pe *pg.Error
	switch {
	case errors.As(err, &ue):
		body.Message, body.Hint = backend.Redact(ue.msg), ue.hint
	case errors.As(err, &pe):
		body.Hint = pe.Hint
	}
	b, merr := json.Marshal(jsonError{body})
	if merr != nil { // cannot happen: every field is a string
		b = []byte(`{"error":{"code":"error","message":"unprintable error"}}`)
	}
	w.Write(append(b, '\n'))
}

// errorCode is the stable code of err: "usage" for exit 2, a .gq error's own
// code (GQ001...), a graph error's name, or storage_<kind> for a storage
// failure; "error" when nothing more specific is known.
func errorCode(err error, exit int) string {
	if exit == exitUsage {
		return "usage"
	}
	if errors.Is(err, client.ErrUnreachable) {
		return "server_unreachable"
	}
	var se *client.Error
	if errors.As(err, &se) {
		return remoteErrorCode(se)
	}
	var outcome *graph.OutcomeUnknown
	if errors.As(err, &outcome) {
		return "outcome_unknown"
	}
	var qe *gq.Error
	if errors.As(err, &qe) {
		return string(qe.Code)
	}
	var ce checkError
	if errors.As(err, &ce) {
		return ce.code
	}
	if r := server.Reason(err); r != "" {
		return r
	}
	if k := backend.KindOf(err); k != backend.KindNone && k != backend.KindUnknown {
		return "storage_" + k.String()
	}
	var be *backend.Error
	if errors.As(err, &be) {
		return "storage_unknown"
	}
	if exit == exitConflict {
		return "precondition_failed"
	}
	return "error"
}

// checkError is a failed storage check, with its code.
type checkError struct {
	code string
	msg  string
}

func (e checkError) Error() string { return e.msg }
