package gq

import (
	"errors"
	"fmt"
	"strings"
)

// ErrInvalidQuery classifies every error this package returns for bad query
// text or bad parameters: errors.Is(err, ErrInvalidQuery) holds for all of
// them. Use errors.As with *Error (or ErrorList) to read the code and position.
var ErrInvalidQuery = errors.New("invalid query")

// Code is a stable error code. Codes never change meaning; new ones are added
// at the end. Each maps to the original system's type-check code in brackets.
type Code string

// Error codes, stable across releases.
const (
	CodeSyntax          Code = "GQ001" // [Q000] syntax error
	CodeMixedMutation   Code = "GQ002" // [D₂] inserts/updates mixed with deletes in one query
	CodeQueryName       Code = "GQ003" // query selection: name missing, unknown or ambiguous
	CodeDuplicateQuery  Code = "GQ004" // two queries with one name
	CodeParam           Code = "GQ005" // bad parameter declaration (duplicate, reserved, unknown type)
	CodeUnknownType     Code = "GQ010" // [T1/T10] unknown node or edge type
	CodeUnknownProperty Code = "GQ011" // [T2/T11] unknown property
	CodeUnbound         Code = "GQ012" // [T6/T14] unbound variable or undeclared parameter
	CodeBlob            Code = "GQ013" // [T3/T24] Blob used as a read value
	CodeUnknownEdge     Code = "GQ014" // [T4] unknown edge
	CodeEndpoint        Code = "GQ015" // [T5] endpoint type mismatch
	CodeTypeMismatch    Code = "GQ016" // [T7] operand/assignment type mismatch
	CodeAggregateArg    Code = "GQ017" // [T8] aggregate argument type
	CodeAggregateMix    Code = "GQ018" // [T9] aggregate misuse / mixing with non-group items
	CodeHops            Code = "GQ019" // [T15] bad hop bounds
	CodeUndirected      Code = "GQ020" // [T22] undirected traversal on an asymmetric edge
	CodeEdgeBinding     Code = "GQ021" // [T23] edge-binding misuse
	CodeRebind          Code = "GQ022" // variable declared twice with different types, or a param used as a variable
	CodeNegation        Code = "GQ023" // not { } with no variable bound outside
	CodeMissingRequired Code = "GQ024" // [T12] insert misses a required property or endpoint
	CodeDuplicateAssign Code = "GQ025" // [T13] property assigned twice
	CodeKeyAssign       Code = "GQ026" // update assigns a key property
	CodeUpdateEdge      Code = "GQ027" // [T16] update on an edge type
	CodeColumn          Code = "GQ028" // duplicate output column name / unknown order alias
	CodeLimit           Code = "GQ029" // limit not a non-negative integer
	CodeNull            Code = "GQ030" // null where a value is required
	CodeBadValue        Code = "GQ031" // a literal or parameter value that is not valid for its type
	CodeMissingParam    Code = "GQ032" // Bind: a required parameter has no value, or an unknown one was passed
	CodeUnsupported     Code = "GQ033" // a construct of the original system not supported yet
	CodeRRF             Code = "GQ034" // [T21] rrf() shape or k
)

// Error is one diagnostic with a stable code and the 1-based position of the
// offending text. Its message says what to write instead.
type Error struct {
	Code Code
	// Query names the query declaration the error is about; it is empty
	// only for errors about the file as a whole (no query declared yet,
	// selecting a query by name).
	Query string
	Pos   Pos // zero for errors not tied to query text (e.g. Bind)
	Msg   string
}

// Error renders `CODE in query "x" at L:C: message`, dropping the parts
// that are unknown.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(string(e.Code))
	if e.Query != "" {
		fmt.Fprintf(&b, " in query %q", e.Query)
	}
	if e.Pos.Line != 0 {
		fmt.Fprintf(&b, " at %d:%d", e.Pos.Line, e.Pos.Col)
	}
	b.WriteString(": ")
	b.WriteString(e.Msg)
	return b.String()
}

// Is reports ErrInvalidQuery as the class of every *Error.
func (e *Error) Is(target error) bool { return target == ErrInvalidQuery }

func errorf(code Code, pos Pos, format string, args ...any) *Error {
	return &Error{Code: code, Pos: pos, Msg: fmt.Sprintf(format, args...)}
}

// inQuery names query q on err (an *Error or ErrorList) where it does not
// name one yet, and returns err.
func inQuery(err error, q string) error {
	switch e := err.(type) {
	case *Error:
		if e.Query == "" {
			e.Query = q
		}
	case ErrorList:
		for _, x := range e {
			if x.Query == "" {
				x.Query = q
			}
		}
	}
	return err
}

// ErrorList holds every error the type checker found, in source order.
type ErrorList []*Error

func (l ErrorList) Error() string {
	parts := make([]string, len(l))
	for i, e := range l {
		parts[i] = e.Error()
	}
	return strings.Join(parts, "\n")
}

// Is reports ErrInvalidQuery as the class of every ErrorList.
func (l ErrorList) Is(target error) bool { return target == ErrInvalidQuery }

// As lets errors.As(err, &e) with e *Error find the first error of the list.
func (l ErrorList) As(target any) bool {
	if p, ok := target.(**Error); ok && len(l) > 0 {
		*p = l[0]
		return true
	}
	return false
}
