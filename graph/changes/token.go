package changes

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/omnigraph-go/omnigraph/graph/diff"
	"github.com/omnigraph-go/omnigraph/lang/pg"
	"github.com/omnigraph-go/omnigraph/manifest"
)

// ErrCursorRejected: a cursor, page token or start position does not fit
// the feed asked for (another graph, branch incarnation or filter; a
// position off the branch's first-parent chain; a token that does not
// decode). Messages start with "change cursor rejected:".
var ErrCursorRejected = errors.New("change cursor rejected")

func rejected(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrCursorRejected, fmt.Sprintf(format, args...))
}

// Filter selects the changes of a feed; an empty list selects every
// value. A cursor carries its filter: a poll with a cursor uses it, and a
// poll that passes another filter with it is rejected.
type Filter struct {
	// Kinds are "node" and/or "edge".
	Kinds []string `json:"kinds,omitempty"`
	// Types are node or edge type names.
	Types []string `json:"types,omitempty"`
	// Ops are insert, update and/or delete.
	Ops []diff.Op `json:"ops,omitempty"`
}

// Empty reports whether the filter selects everything.
func (f Filter) Empty() bool { return len(f.Kinds) == 0 && len(f.Types) == 0 && len(f.Ops) == 0 }

// normal sorts and deduplicates the lists, so equal filters compare equal.
func (f Filter) normal() Filter {
	norm := func(s []string) []string {
		out := slices.Clone(s)
		slices.Sort(out)
		return slices.Compact(out)
	}
	ops := make([]string, len(f.Ops))
	for i, o := range f.Ops {
		ops[i] = string(o)
	}
	var out Filter
	out.Kinds = norm(f.Kinds)
	out.Types = norm(f.Types)
	for _, o := range norm(ops) {
		out.Ops = append(out.Ops, diff.Op(o))
	}
	if len(out.Kinds) == 0 {
		out.Kinds = nil
	}
	if len(out.Types) == 0 {
		out.Types = nil
	}
	return out
}

func (f Filter) equal(g Filter) bool {
	a, b := f.normal(), g.normal()
	return slices.Equal(a.Kinds, b.Kinds) && slices.Equal(a.Types, b.Types) && slices.Equal(a.Ops, b.Ops)
}

// Validate checks the filter's values: kinds node or edge, ops insert,
// update or delete, types of the schema.
func (f Filter) Validate(cat *pg.Catalog) error {
	for _, k := range f.Kinds {
		if k != "node" && k != "edge" {
			return invalid("kind must be node or edge, not %q", k)
		}
	}
	for _, o := range f.Ops {
		switch o {
		case diff.OpInsert, diff.OpUpdate, diff.OpDelete:
		default:
			return invalid("op must be insert, update or delete, not %q", o)
		}
	}
	for _, t := range f.Types {
		_, isN := cat.Node(t)
		_, isE := cat.Edge(t)
		if !isN && !isE {
			return invalid("unknown type %q: the schema's node and edge types are %s", t, typeNames(cat))
		}
	}
	return nil
}

func typeNames(cat *pg.Catalog) string {
	var names []string
	for _, t := range diff.Tables(cat) {
		names = append(names, t.Name)
	}
	return strings.Join(names, ", ")
}

// table reports whether the filter reads table t at all.
func (f Filter) table(t diff.Table) bool {
	return (len(f.Kinds) == 0 || slices.Contains(f.Kinds, t.Kind)) && (len(f.Types) == 0 || slices.Contains(f.Types, t.Name))
}

func (f Filter) op(o diff.Op) bool { return len(f.Ops) == 0 || slices.Contains(f.Ops, o) }

// position is a commit on the feed's first-parent chain: version V of
// one incarnation of a branch (the feed's own, or one it inherits through
// its fork points), whose head is Commit.
type position struct {
	Branch string `json:"b"`
	Inc    uint64 `json:"i"`
	V      uint64 `json:"v"`
	Commit string `json:"c"`
}

// resumeKey is where a page ended inside a commit's block: the last change
// sent was the entity ID of table Table.
type resumeKey struct {
	Table string `json:"t"`
	ID    string `json:"id"`
}

// token is a cursor or a page token. Both bind the graph, the branch
// incarnation (its number and its id, which a recreated branch never
// shares) and the filter; At is the last commit whose block was sent
// whole. A page token also holds the poll's cut (the head version it
// walks to) and where in the next commit's block the page ended.
type token struct {
	V       int      `json:"v"`
	Graph   string   `json:"g"`
	Branch  string   `json:"b"`
	Inc     uint64   `json:"i"`
	Witness string   `json:"w"`
	Filter  Filter   `json:"f"`
	At      position `json:"p"`
	// Page tokens only.
	Cut    uint64     `json:"cut,omitempty"`
	Resume *resumeKey `json:"r,omitempty"`
	// Limits are the page limits of the poll the token continues (absent
	// when all were the defaults, and in tokens issued before this field).
	Limits *pageLimits `json:"l,omitempty"`
}

// pageLimits are a poll's page limits as asked (0: the default).
type pageLimits struct {
	Changes int   `json:"n,omitempty"`
	Bytes   int64 `json:"b,omitempty"`
	Commits int   `json:"c,omitempty"`
}

const (
	tokenVersion = 1
	cursorPrefix = "ogc1."
	pagePrefix   = "ogp1."
	// maxTokenLen bounds what is decoded: a filter of many long type
	// names fits; an attacker's megabyte does not.
	maxTokenLen = 16 << 10
)

func (t *token) encode() string {
	b, err := json.Marshal(t)
	if err != nil {
		panic(err) // strings and numbers only
	}
	prefix := cursorPrefix
	if t.Resume != nil {
		prefix = pagePrefix
	}
	return prefix + base64.RawURLEncoding.EncodeToString(b)
}

// decodeToken decodes a cursor (page false) or a page token (page true).
func decodeToken(s string, page bool) (*token, error) {
	what, prefix, other := "cursor", cursorPrefix, pagePrefix
	if page {
		what, prefix, other = "page token", pagePrefix, cursorPrefix
	}
	if len(s) > maxTokenLen {
		return nil, rejected("the %s is %d bytes, longer than any this server issues", what, len(s))
	}
	body, ok := strings.CutPrefix(s, prefix)
	if !ok {
		if strings.HasPrefix(s, other) {
			if page {
				return nil, rejected("a cursor was given as a page token; pass it as the cursor")
			}
			return nil, rejected("a page token was given as a cursor; a page token continues one poll only: pass it as the page token, and keep the cursor of the poll's last page")
		}
		return nil, rejected("this is not a %s this server issued (pass the value of a poll's %q field unchanged)", what, map[bool]string{false: "cursor", true: "next_page_token"}[page])
	}
	raw, err := base64.RawURLEncoding.DecodeString(body)
	if err != nil {
		return nil, rejected("the %s is damaged (not base64url); pass it unchanged", what)
	}
	var t token
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&t); err != nil || dec.More() {
		return nil, rejected("the %s is damaged; pass it unchanged", what)
	}
	switch {
	case t.V != tokenVersion:
		return nil, rejected("the %s has version %d; this server reads version %d", what, t.V, tokenVersion)
	case t.Graph == "" || t.Branch == "" || t.Inc == 0 || t.Witness == "" || t.At.Branch == "" || t.At.Inc == 0 || t.At.V == 0 || t.At.Commit == "":
		return nil, rejected("the %s is incomplete; pass it unchanged", what)
	case page != (t.Resume != nil):
		return nil, rejected("the %s is damaged; pass it unchanged", what)
	case page && (t.Cut == 0 || t.Resume.Table == "" || t.Resume.ID == ""):
		return nil, rejected("the page token is incomplete; pass it unchanged")
	case manifest.ValidateBranchName(t.Branch) != nil || manifest.ValidateBranchName(t.At.Branch) != nil:
		return nil, rejected("the %s is damaged; pass it unchanged", what)
	}
	return &t, nil
}
