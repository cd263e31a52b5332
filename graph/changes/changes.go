// Package changes is the change feed: the entity changes of a branch,
// commit by commit along its first-parent chain, for a consumer that
// polls with a cursor (docs/changes.md).
//
// A poll captures the branch head (the cut) and walks forward from the
// caller's position to it, one block per commit: the commit (the cause)
// and its changes against its first parent, through graph/diff. The
// server keeps no consumer state: the position lives in an opaque cursor
// bound to the graph, the branch incarnation and the filter, issued only
// on a terminal page (after whole blocks), so a consumer can never
// checkpoint half a commit. A block too large for one page continues
// with a page token. Delivery is at least once: a consumer that crashes
// before it stores a cursor polls the same commits again.
//
// A poll costs O(commits and changes since the cursor): one List for the
// head, one ranged read of the manifest versions it walks (a List and
// concurrent GETs), and per commit the tables it changed (diff reads the
// fragments the two versions do not share); never the history below the
// cursor. History that cleanup removed is a gap (GapError, HTTP 410): the
// way back is a baseline (an export of a head plus CursorAt of it).
package changes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/diff"
	"github.com/omnigraph-go/omnigraph/manifest"
)

// Page limits (the original's): a page holds at most MaxChanges changes
// and MaxBytes of change JSON, a poll walks at most MaxCommits commits.
const (
	DefaultMaxChanges = 1000
	LimitMaxChanges   = 8192
	DefaultMaxBytes   = 4 << 20
	LimitMaxBytes     = 32 << 20
	DefaultMaxCommits = 128
	LimitMaxCommits   = 512
)

// Start is where a feed without a cursor begins: "now" (the head: only
// later commits), "beginning" (the first commit after the graph's genesis,
// inherited history included on a named branch) or "after:<commit id>"
// (a commit on the branch's first-parent chain).
type Start struct {
	Kind  string // "now", "beginning" or "after"
	After string // the commit id of "after"
}

// ParseStart parses a start position.
func ParseStart(s string) (Start, error) {
	switch {
	case s == "now" || s == "":
		return Start{Kind: "now"}, nil
	case s == "beginning":
		return Start{Kind: "beginning"}, nil
	case strings.HasPrefix(s, "after:") && len(s) > len("after:"):
		return Start{Kind: "after", After: strings.TrimPrefix(s, "after:")}, nil
	}
	return Start{}, invalid("start must be now, beginning or after:COMMIT_ID, not %q", s)
}

// Request is one poll. At most one of Start, Cursor and PageToken is set;
// none is Start "now".
type Request struct {
	// Branch is the branch followed (default: the cursor's, else main).
	Branch    string
	Start     *Start
	Cursor    string
	PageToken string
	// Filter selects changes (a cursor's own filter when empty).
	Filter Filter
	// MaxChanges, MaxBytes and MaxCommits bound the page (0: the default;
	// above the limit: a LimitError).
	MaxChanges int
	MaxBytes   int64
	MaxCommits int
	// Visible, when set, says whether the caller may read what a branch
	// published: a start after a commit it may not is refused exactly as
	// an unknown commit (the server's policy rule for commit ids).
	Visible func(branch string) bool
}

// Cause is the commit a block's changes came from.
type Cause struct {
	CommitID             string `json:"graph_commit_id"`
	ParentCommitID       string `json:"parent_commit_id,omitempty"`
	MergedParentCommitID string `json:"merged_parent_commit_id,omitempty"`
	// Branch is the branch the commit was made on (an ancestor's, for
	// history a named branch inherits).
	Branch          string `json:"authored_branch"`
	ManifestVersion uint64 `json:"graph_manifest_version"`
	Actor           string `json:"actor_id,omitempty"`
	// AuthoredAt is the commit time, microseconds since the Unix epoch.
	AuthoredAt int64 `json:"authored_at"`
}

// Block is one commit's changes against its first parent, in diff order
// (nodes before edges, then type name, then id). A commit none of whose
// changes the filter selects is an empty block.
type Block struct {
	Cause   Cause         `json:"cause"`
	Changes []diff.Change `json:"changes"`
}

// Page is one poll's answer. A terminal page carries Cursor (the position
// after its last block) and CaughtUp (no commit waited beyond it when the
// poll began); a page that ends inside a block carries NextPageToken
// instead, and the next page repeats that block's cause with the rest of
// its changes.
type Page struct {
	Branch        string  `json:"branch"`
	Blocks        []Block `json:"blocks"`
	Cursor        string  `json:"cursor,omitempty"`
	NextPageToken string  `json:"next_page_token,omitempty"`
	CaughtUp      bool    `json:"caught_up"`
	// Head is the head commit the poll walked towards (its cut).
	Head string `json:"head_commit_id"`
}

// GapError: the feed cannot continue from its position because cleanup
// removed the history it needs. Retrying cannot help; take a baseline.
type GapError struct {
	// Cursor is the cursor the poll was given, if any.
	Cursor string
	// FirstUnreadableCommitID is the first commit whose changes are gone.
	FirstUnreadableCommitID string
}

func (e *GapError) Error() string {
	return fmt.Sprintf("change feed gap: the changes of commit %s can no longer be read (cleanup removed that history); take a baseline ('omnigraph changes baseline --out FILE', or POST changes/baseline) and resume from its cursor", e.FirstUnreadableCommitID)
}

// ErrGap matches every *GapError.
var ErrGap = errors.New("change feed gap")

// Is makes errors.Is(err, ErrGap) hold.
func (e *GapError) Is(target error) bool { return target == ErrGap }

// LimitError: a page limit was asked above its ceiling, or one change is
// larger than the page's byte limit.
type LimitError struct {
	Resource string
	Limit    int64
	Actual   int64
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("%s is %d, above the limit %d", e.Resource, e.Actual, e.Limit)
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", graph.ErrInvalidInput, fmt.Sprintf(format, args...))
}

// limits resolves the request's page limits.
func (r Request) limits() (changes int, bytes int64, commits int, err error) {
	changes, bytes, commits = r.MaxChanges, r.MaxBytes, r.MaxCommits
	switch {
	case changes < 0 || bytes < 0 || commits < 0:
		return 0, 0, 0, invalid("page limits are positive (0: the default)")
	case changes > LimitMaxChanges:
		return 0, 0, 0, &LimitError{Resource: "change_page_changes", Limit: LimitMaxChanges, Actual: int64(changes)}
	case bytes > LimitMaxBytes:
		return 0, 0, 0, &LimitError{Resource: "change_page_bytes", Limit: LimitMaxBytes, Actual: bytes}
	case commits > LimitMaxCommits:
		return 0, 0, 0, &LimitError{Resource: "change_feed_commits_per_poll", Limit: LimitMaxCommits, Actual: int64(commits)}
	}
	if changes == 0 {
		changes = DefaultMaxChanges
	}
	if bytes == 0 {
		bytes = DefaultMaxBytes
	}
	if commits == 0 {
		commits = DefaultMaxCommits
	}
	return changes, bytes, commits, nil
}

// CursorAt is the cursor of a feed of snap's branch, with filter f,
// positioned after snap: a baseline exports snap and hands this out, so
// the feed resumes with the first commit after it. snap must be a branch
// head as g.Snapshot returned it.
func CursorAt(ctx context.Context, g *graph.Graph, snap *graph.Snapshot, f Filter) (string, error) {
	cat, err := snap.Catalog(ctx)
	if err != nil {
		return "", err
	}
	if err := f.Validate(cat); err != nil {
		return "", err
	}
	e := snap.Entry()
	t := &token{V: tokenVersion, Graph: g.ID(), Branch: e.Branch, Inc: e.Incarnation, Witness: e.BranchID, Filter: f.normal(),
		At: position{Branch: e.Branch, Inc: e.Incarnation, V: e.Version, Commit: e.Head}}
	return t.encode(), nil
}

// Poll runs one poll of the feed. Its cut is the branch head as g reads
// it when the poll begins: a long-lived handle (a server's, a consumer's)
// should be opened with graph.OpenOptions.AlwaysProbe, or its first poll
// walks to the head Open read, and says caught_up of it.
func Poll(ctx context.Context, g *graph.Graph, req Request) (*Page, error) {
	if _, _, _, err := req.limits(); err != nil {
		return nil, err
	}
	given := 0
	for _, set := range []bool{req.Start != nil, req.Cursor != "", req.PageToken != ""} {
		if set {
			given++
		}
	}
	if given > 1 {
		return nil, invalid("give one of a start, a cursor or a page token")
	}
	var tok *token
	var err error
	switch {
	case req.Cursor != "":
		tok, err = decodeToken(req.Cursor, false)
	case req.PageToken != "":
		tok, err = decodeToken(req.PageToken, true)
	}
	if err != nil {
		return nil, err
	}
	// A page token carries the page limits of the poll it continues, so
	// passing it alone keeps the page size; a limit given with it wins.
	// Tokens issued before they carried limits have none (the defaults).
	if tok != nil && req.PageToken != "" && tok.Limits != nil {
		if req.MaxChanges == 0 {
			req.MaxChanges = tok.Limits.Changes
		}
		if req.MaxBytes == 0 {
			req.MaxBytes = tok.Limits.Bytes
		}
		if req.MaxCommits == 0 {
			req.MaxCommits = tok.Limits.Commits
		}
	}
	maxChanges, maxBytes, maxCommits, err := req.limits()
	if err != nil {
		return nil, err
	}
	branch := req.Branch
	if tok != nil {
		if branch == "" {
			branch = tok.Branch
		} else if branch != tok.Branch {
			return nil, rejected("it was issued for branch %q, not %q", tok.Branch, branch)
		}
	}
	if branch == "" {
		branch = manifest.MainBranch
	}
	snap, err := g.Snapshot(ctx, branch)
	if err != nil {
		return nil, err
	}
	head := snap.Entry()
	filter := req.Filter.normal()
	if tok != nil {
		if tok.Graph != g.ID() {
			return nil, rejected("it was issued for another graph")
		}
		if tok.Inc != head.Incarnation || tok.Witness != head.BranchID {
			return nil, rejected("branch %q was deleted and created again since it was issued; take a baseline of the new branch", branch)
		}
		if !req.Filter.Empty() && !req.Filter.equal(tok.Filter) {
			return nil, rejected("it was issued for another filter; poll with the cursor alone (it carries its filter), or start a new feed for the new filter")
		}
		filter = tok.Filter.normal()
	} else {
		cat, err := snap.Catalog(ctx)
		if err != nil {
			return nil, err
		}
		if err := filter.Validate(cat); err != nil {
			return nil, err
		}
	}
	p := &poller{g: g, m: g.Manifest(), head: head, filter: filter, cursor: req.Cursor,
		budget: budget{changes: maxChanges, bytes: maxBytes, limit: maxBytes}, maxCommits: maxCommits,
		limits: pageLimits{Changes: req.MaxChanges, Bytes: req.MaxBytes, Commits: req.MaxCommits}}
	p.chain = newChain(p.m, head)
	at, cut, resume, err := p.resolve(ctx, req, tok)
	if err != nil {
		return nil, err
	}
	return p.walk(ctx, at, cut, resume)
}

// resolve turns the request's position into a chain position (at), the
// cut (the head version walked to) and, for a page token, where in the
// next block to resume.
func (p *poller) resolve(ctx context.Context, req Request, tok *token) (chainPos, uint64, *resumeKey, error) {
	head := p.head
	cut := head.Version
	switch {
	case tok != nil:
		at, err := p.chain.find(ctx, tok.At.Branch, tok.At.Inc, tok.At.V)
		if err != nil {
			return chainPos{}, 0, nil, err
		}
		if at.seg == noSeg {
			return chainPos{}, 0, nil, rejected("it names a commit that is not on branch %q's first-parent chain", head.Branch)
		}
		at.commit = tok.At.Commit
		if tok.Resume != nil {
			if tok.Cut > head.Version || !p.chain.atOrBefore(at, tok.Cut) {
				return chainPos{}, 0, nil, rejected("the page token's poll no longer fits branch %q; poll again with the cursor", head.Branch)
			}
			cut = tok.Cut
		}
		return at, cut, tok.Resume, nil
	case req.Start == nil || req.Start.Kind == "now":
		return chainPos{seg: p.chain.own, v: head.Version, commit: head.Head}, cut, nil, nil
	case req.Start.Kind == "beginning":
		root, err := p.chain.rootPos(ctx)
		if err != nil {
			return chainPos{}, 0, nil, err
		}
		return root, cut, nil, nil
	case req.Start.Kind == "after":
		e, err := p.m.FindCommitEntry(ctx, req.Start.After)
		if err == nil && req.Visible != nil && !req.Visible(e.Branch) {
			err = manifest.CommitNotFound(req.Start.After)
		}
		if errors.Is(err, manifest.ErrCommitNotFound) {
			return chainPos{}, 0, nil, rejected("start commit %q is not a commit of this graph", req.Start.After)
		}
		if err != nil {
			return chainPos{}, 0, nil, err
		}
		at, err := p.chain.find(ctx, e.Branch, e.Incarnation, e.Version)
		if err != nil {
			return chainPos{}, 0, nil, err
		}
		if at.seg == noSeg {
			return chainPos{}, 0, nil, rejected("start commit %s is not on branch %q's first-parent chain", req.Start.After, head.Branch)
		}
		at.commit = e.Head
		return at, cut, nil, nil
	}
	return chainPos{}, 0, nil, invalid("start must be now, beginning or after:COMMIT_ID")
}

type budget struct {
	changes int
	bytes   int64
	limit   int64
	used    bool // a change is on the page
}

func (b *budget) exhausted() bool { return b.changes <= 0 || b.bytes <= 0 }

type poller struct {
	g          *graph.Graph
	m          *manifest.Store
	head       *manifest.Entry
	chain      *chain
	filter     Filter
	cursor     string
	budget     budget
	maxCommits int
	// limits are the page limits as asked (0: the default), for the page
	// tokens this poll issues.
	limits pageLimits
}

func (p *poller) token(at chainPos) *token {
	return &token{V: tokenVersion, Graph: p.g.ID(), Branch: p.head.Branch, Inc: p.head.Incarnation, Witness: p.head.BranchID,
		Filter: p.filter, At: p.chain.position(at)}
}

func (p *poller) mint(at chainPos) string { return p.token(at).encode() }

// walk sends the blocks of the commits after `at`, up to the cut.
func (p *poller) walk(ctx context.Context, at chainPos, cut uint64, resume *resumeKey) (*Page, error) {
	at = p.chain.normalize(at)
	page := &Page{Branch: p.head.Branch, Blocks: []Block{}, Head: p.head.Head}
	// With commits to walk, the head's schema (theirs, but for a schema
	// change on the way) is read beside the manifest versions instead of
	// after them: one round trip less on a cold handle.
	var catErr chan error
	if at.seg != p.chain.own || at.v < cut {
		catErr = make(chan error, 1)
		go func() {
			_, err := p.g.SnapshotOf(p.head).Catalog(ctx)
			catErr <- err
		}()
	}
	pl, err := p.chain.steps(ctx, at, cut, p.maxCommits)
	if catErr != nil {
		if cerr := <-catErr; err == nil {
			err = cerr
		}
	}
	if err != nil {
		return nil, err
	}
	if at.commit == "" {
		at.commit = pl.parent.Head
	} else if pl.parent.Head != at.commit {
		return nil, rejected("it names version %d of branch %q as commit %s, but that version is commit %s", pl.parent.Version, pl.parent.Branch, at.commit, pl.parent.Head)
	}
	if cut != p.head.Version {
		e, err := p.chain.entryAt(ctx, chainPos{seg: p.chain.own, v: cut})
		if err != nil {
			return nil, err
		}
		page.Head = e.Head
	}
	terminal := func(caughtUp bool) *Page {
		page.Cursor = p.mint(at)
		page.CaughtUp = caughtUp
		return page
	}
	for i, child := range pl.commits {
		if p.budget.exhausted() {
			return terminal(false), nil
		}
		var rk *resumeKey
		if i == 0 {
			rk = resume
		}
		cs, next, err := p.block(ctx, pl.parents[i], child, rk)
		if errors.Is(err, errPageFull) {
			return terminal(false), nil
		}
		if err != nil {
			var gap *GapError
			if errors.As(err, &gap) && i == 0 {
				gap.Cursor = p.cursor
			}
			if len(page.Blocks) > 0 && (errors.Is(err, ErrGap) || errors.Is(err, diff.ErrSchemaBoundary)) {
				// The page ends before the commit that cannot be read;
				// the next poll meets it first.
				return terminal(false), nil
			}
			return nil, err
		}
		page.Blocks = append(page.Blocks, Block{Cause: causeOf(child), Changes: cs})
		if next != nil {
			t := p.token(at)
			t.Cut, t.Resume = cut, next
			if p.limits != (pageLimits{}) {
				l := p.limits
				t.Limits = &l
			}
			page.NextPageToken = t.encode()
			return page, nil
		}
		at = p.chain.normalize(pl.pos[i])
	}
	return terminal(!pl.more && cut == p.head.Version), nil
}

func causeOf(e *manifest.Entry) Cause {
	c := Cause{CommitID: e.Commit.ID, Branch: e.Branch, ManifestVersion: e.Version, Actor: e.Commit.Actor, AuthoredAt: e.Commit.TimeMicros}
	if len(e.Commit.Parents) > 0 {
		c.ParentCommitID = e.Commit.Parents[0]
	}
	if len(e.Commit.Parents) > 1 {
		c.MergedParentCommitID = e.Commit.Parents[1]
	}
	return c
}

// block computes child's changes against parent, from resume on, within
// the page's budget. next is where the page ended inside the block (nil:
// the block is whole).
func (p *poller) block(ctx context.Context, parent, child *manifest.Entry, resume *resumeKey) (cs []diff.Change, next *resumeKey, err error) {
	cs = []diff.Change{}
	if parent.Pruned || child.Pruned {
		return nil, nil, &GapError{FirstUnreadableCommitID: child.Head}
	}
	if parent.SchemaIdentity != child.SchemaIdentity {
		return nil, nil, fmt.Errorf("%w: commit %s changed the schema, so its changes cannot be computed; take a baseline, or start after it (--start after:%s)", diff.ErrSchemaBoundary, child.Head, child.Head)
	}
	a, b := p.g.SnapshotOf(parent), p.g.SnapshotOf(child)
	cat, err := b.Catalog(ctx)
	if err != nil {
		return nil, nil, err
	}
	tables := diff.Tables(cat)
	started := resume == nil
	for _, t := range tables {
		if !started {
			if t.Key != resume.Table {
				continue
			}
			started = true
		}
		if !p.filter.table(t) || diff.Unchanged(a, b, t) {
			continue
		}
		d, err := diff.TableChanges(ctx, a, b, t)
		if err != nil {
			if errors.Is(err, backend.ErrNotFound) {
				return nil, nil, &GapError{FirstUnreadableCommitID: child.Head}
			}
			return nil, nil, err
		}
		for _, id := range diff.SortedIDs(d) {
			if resume != nil && t.Key == resume.Table && id <= resume.ID {
				continue
			}
			c := d[id]
			if !p.filter.op(c.Op) {
				continue
			}
			size, err := changeSize(c)
			if err != nil {
				return nil, nil, err
			}
			if p.budget.changes <= 0 || size > p.budget.bytes {
				if !p.budget.used {
					return nil, nil, &LimitError{Resource: "change_page_bytes", Limit: p.budget.limit, Actual: size}
				}
				if len(cs) == 0 {
					// Nothing of this block is on the page (earlier
					// blocks filled it): end the page at the block
					// boundary instead.
					return nil, nil, errPageFull
				}
				last := cs[len(cs)-1]
				return cs, &resumeKey{Table: keyOf(last), ID: last.ID}, nil
			}
			cs = append(cs, *c)
			p.budget.changes--
			p.budget.bytes -= size
			p.budget.used = true
		}
	}
	if !started {
		return nil, nil, rejected("the page token names a table the commit's schema does not have")
	}
	return cs, nil, nil
}

// errPageFull: the page has no room for any change of the next block.
var errPageFull = errors.New("page full")

func keyOf(c diff.Change) string {
	if c.EntityKind == "edge" {
		return graph.EdgeTableKey(c.TypeName)
	}
	return graph.NodeTableKey(c.TypeName)
}

func changeSize(c *diff.Change) (int64, error) {
	b, err := json.Marshal(c)
	if err != nil {
		return 0, fmt.Errorf("encode the change of %s %q: %w", c.TypeName, c.ID, err)
	}
	return int64(len(b)), nil
}

// BranchOf is the branch a poll reads: the request's, else its cursor's or
// page token's, else main. A token that does not decode is rejected.
func BranchOf(req Request) (string, error) {
	if req.Branch != "" {
		return req.Branch, nil
	}
	var tok *token
	var err error
	switch {
	case req.Cursor != "":
		tok, err = decodeToken(req.Cursor, false)
	case req.PageToken != "":
		tok, err = decodeToken(req.PageToken, true)
	default:
		return manifest.MainBranch, nil
	}
	if err != nil {
		return "", err
	}
	return tok.Branch, nil
}

// BaselineTypes are the node and edge types a baseline of snap with
// filter f exports, in diff order: those the filter's kinds and types
// select (ops select only the resumed feed's changes). The filter is
// checked against snap's schema.
func BaselineTypes(ctx context.Context, snap *graph.Snapshot, f Filter) ([]string, error) {
	cat, err := snap.Catalog(ctx)
	if err != nil {
		return nil, err
	}
	if err := f.Validate(cat); err != nil {
		return nil, err
	}
	var out []string
	for _, t := range diff.Tables(cat) {
		if f.table(t) {
			out = append(out, t.Name)
		}
	}
	return out, nil
}
