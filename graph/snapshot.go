package graph

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/omnigraph-go/omnigraph/lang/pg"
	"github.com/omnigraph-go/omnigraph/manifest"
)

// Table keys name tables in the manifest: "node:<Type>" and "edge:<Type>".
const (
	nodeKeyPrefix = "node:"
	edgeKeyPrefix = "edge:"
)

// NodeTableKey is the manifest key of a node type's table.
func NodeTableKey(typeName string) string { return nodeKeyPrefix + typeName }

// EdgeTableKey is the manifest key of an edge type's table.
func EdgeTableKey(typeName string) string { return edgeKeyPrefix + typeName }

// The directories of the graph root that hold the tables.
const (
	nodesDir = "nodes"
	edgesDir = "edges"
)

// TableDirs are the directories (with a trailing slash) that hold the
// tables, one directory per type.
func TableDirs() []string { return []string{nodesDir + "/", edgesDir + "/"} }

// NodeTablePath is where a node type's table lives in the store.
func NodeTablePath(typeName string) string { return nodesDir + "/" + typeName }

// EdgeTablePath is where an edge type's table lives in the store.
func EdgeTablePath(typeName string) string { return edgesDir + "/" + typeName }

// Snapshot is one immutable state of the graph: one manifest version (the
// pinned version of every table) and its accepted schema. Reads pinned to a
// snapshot never see later commits.
type Snapshot struct {
	g     *Graph
	entry *manifest.Entry
}

// Snapshot returns the current head of branch. On a warm handle an
// unchanged branch costs one List and no GET; right after Open, the opened
// branch's first snapshot costs nothing more.
func (g *Graph) Snapshot(ctx context.Context, branch string) (*Snapshot, error) {
	if branch == "" {
		branch = g.current
	}
	if err := manifest.ValidateBranchName(branch); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidBranch, err)
	}
	e, err := g.head(ctx, branch)
	if err != nil {
		return nil, err
	}
	return &Snapshot{g: g, entry: e}, nil
}

// SnapshotAt returns the graph as of a commit (time travel): the manifest
// version that recorded commitID, on whichever branch made it. Finding a
// commit by id scans the manifest; it is not a hot path.
func (g *Graph) SnapshotAt(ctx context.Context, commitID string) (*Snapshot, error) {
	if err := manifest.ValidateCommitID(commitID); err != nil {
		return nil, err
	}
	e, err := g.man.FindCommit(ctx, commitID)
	if err != nil {
		return nil, err
	}
	return &Snapshot{g: g, entry: e}, nil
}

// SnapshotOfRef reads a ref: the head of the branch of that name, or else
// the commit of that id. A branch wins over a commit id of the same
// spelling. This is the one rule of every command and route that takes
// "a branch or a commit" (diff).
func (g *Graph) SnapshotOfRef(ctx context.Context, ref string) (*Snapshot, error) {
	s, err := g.Snapshot(ctx, ref)
	if err == nil {
		return s, nil
	}
	if !errors.Is(err, manifest.ErrBranchNotFound) && !errors.Is(err, ErrInvalidBranch) {
		return nil, err
	}
	if manifest.ValidateCommitID(ref) != nil {
		// Not a commit id either: the branch's answer (no such branch).
		return nil, fmt.Errorf("%q is neither a branch nor a commit: %w", ref, err)
	}
	s, cerr := g.SnapshotAt(ctx, ref)
	if cerr != nil {
		return nil, NotARef(ref, cerr)
	}
	return s, nil
}

// NotARef is SnapshotOfRef's error for a ref that names no branch and no
// commit it can read (err says why the commit could not be read).
func NotARef(ref string, err error) error {
	return fmt.Errorf("%q is neither a branch nor a commit: %w", ref, err)
}

// SnapshotAtVersion returns version v of the live incarnation of branch:
// one List (to learn the incarnation, skipped for a cached one) and one GET.
func (g *Graph) SnapshotAtVersion(ctx context.Context, branch string, v uint64) (*Snapshot, error) {
	head, err := g.head(ctx, branch)
	if err != nil {
		return nil, err
	}
	if v == head.Version {
		return &Snapshot{g: g, entry: head}, nil
	}
	if v == 0 || v > head.Version {
		return nil, fmt.Errorf("branch %q has versions 1..%d; version %d does not exist", branch, head.Version, v)
	}
	e, err := g.man.ReadVersion(ctx, branch, head.Incarnation, v)
	if err != nil {
		return nil, err
	}
	return &Snapshot{g: g, entry: e}, nil
}

// SnapshotOf wraps a manifest version read through this handle's manifest
// store (Manifest().ReadVersion, History) as a read-only snapshot: the
// merge reads its base this way. The entry is copied.
func (g *Graph) SnapshotOf(e *manifest.Entry) *Snapshot { return &Snapshot{g: g, entry: e.Clone()} }

// Graph returns the handle the snapshot was read through.
func (s *Snapshot) Graph() *Graph { return s.g }

// Entry returns the manifest version the snapshot reads (a copy).
func (s *Snapshot) Entry() *manifest.Entry { return s.entry.Clone() }

// Branch is the branch the snapshot's manifest version belongs to.
func (s *Snapshot) Branch() string { return s.entry.Branch }

// Version is the snapshot's graph head version on its branch incarnation.
func (s *Snapshot) Version() uint64 { return s.entry.Version }

// CommitID is the commit the snapshot shows (for a branch that has not
// committed since its fork, the parent's commit it was forked at).
func (s *Snapshot) CommitID() string { return s.entry.Head }

// SameRowsAs reports whether this snapshot holds exactly the rows and
// schema of commit id: it is that commit, or follows it on its branch by
// maintenance commits only (optimize, index builds), looking back at most
// a few versions (more is treated as a change). A conditional write
// ("only while the branch is at commit id") holds across the server's own
// compaction this way.
func (s *Snapshot) SameRowsAs(ctx context.Context, id string) (bool, error) {
	e := s.entry
	for range maxMaintenanceLookback {
		if e.Head == id {
			return true, nil
		}
		if e.Kind != manifest.KindCommit || e.Commit == nil || !e.Commit.Maintenance || e.Version <= 1 {
			return false, nil
		}
		prev, err := s.g.man.ReadVersion(ctx, e.Branch, e.Incarnation, e.Version-1)
		if errors.Is(err, manifest.ErrCleanedUp) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if prev.SchemaIdentity != e.SchemaIdentity {
			return false, nil
		}
		e = prev
	}
	return e.Head == id, nil
}

// Stamp is the internal-schema version of the snapshot's manifest version.
func (s *Snapshot) Stamp() int { return s.entry.Stamp }

// SchemaIdentity is the accepted schema's identity hash.
func (s *Snapshot) SchemaIdentity() string { return s.entry.SchemaIdentity }

// Token is the branch-authority token of this snapshot.
func (s *Snapshot) Token() Token { return tokenOf(s.entry) }

// Tables returns the pinned tables, sorted by key.
func (s *Snapshot) Tables() []manifest.TablePin {
	return append([]manifest.TablePin(nil), s.entry.Tables...)
}

// Pin returns one table's pin by manifest key (see NodeTableKey).
func (s *Snapshot) Pin(key string) (manifest.TablePin, bool) { return s.entry.Pin(key) }

// Catalog returns the snapshot's accepted schema. It is cached per handle by
// identity; the first use costs one GET.
func (s *Snapshot) Catalog(ctx context.Context) (*pg.Catalog, error) {
	return s.g.catalog(ctx, s.entry.SchemaIdentity)
}

// Commit returns the commit the snapshot shows, read from the manifest when
// the snapshot is a fork point.
func (s *Snapshot) Commit(ctx context.Context) (CommitInfo, error) {
	if s.entry.Commit != nil {
		return commitInfo(s.entry), nil
	}
	return s.g.Commit(ctx, s.entry.Head)
}

// CommitInfo is one graph commit as users see it.
type CommitInfo struct {
	ID      string    `json:"id"`
	Parents []string  `json:"parents"`
	Actor   string    `json:"actor"`
	Time    time.Time `json:"time"`
	// Micros is the creation time in microseconds since the Unix epoch.
	Micros int64 `json:"time_us"`
	// Branch and ManifestVersion say where the commit was published.
	Branch          string `json:"branch"`
	ManifestVersion uint64 `json:"manifest_version"`
	// CleanedUp: cleanup pruned the commit's manifest version; the commit
	// is still listed, but its data can no longer be read.
	CleanedUp bool `json:"cleaned_up,omitempty"`
}

func commitInfo(e *manifest.Entry) CommitInfo {
	c := e.Commit
	return CommitInfo{
		ID:              c.ID,
		Parents:         append([]string{}, c.Parents...),
		Actor:           c.Actor,
		Time:            time.UnixMicro(c.TimeMicros).UTC(),
		Micros:          c.TimeMicros,
		Branch:          e.Branch,
		ManifestVersion: e.Version,
		CleanedUp:       e.Pruned,
	}
}

// Commits lists the commits reachable from branch's head by first parents,
// newest first: its own, then those it inherited through its fork point.
// limit <= 0 means all. It costs the head's List plus about limit version
// reads (a List and concurrent GETs per incarnation crossed), whatever the
// depth.
func (g *Graph) Commits(ctx context.Context, branch string, limit int) ([]CommitInfo, error) {
	if branch == "" {
		branch = g.current
	}
	head, err := g.head(ctx, branch)
	if err != nil {
		return nil, err
	}
	var out []CommitInfo
	err = g.man.HistoryN(ctx, head, limit, func(e *manifest.Entry) (bool, error) {
		out = append(out, commitInfo(e))
		return true, nil
	})
	return out, err
}

// Commit returns one commit by id: a binary search of each live branch by
// the id's timestamp (manifest.(*Store).FindCommit), O(log depth) reads.
func (g *Graph) Commit(ctx context.Context, id string) (CommitInfo, error) {
	if err := manifest.ValidateCommitID(id); err != nil {
		return CommitInfo{}, err
	}
	e, err := g.man.FindCommitEntry(ctx, id)
	if err != nil {
		return CommitInfo{}, err
	}
	return commitInfo(e), nil
}
