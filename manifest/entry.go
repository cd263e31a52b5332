package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
)

// StampCurrent is the one on-disk internal-schema version this binary reads
// and writes. There is no in-place migration: a graph stamped lower is rebuilt
// through export/import, a graph stamped higher needs a newer omnigraph.
const StampCurrent = 1

// Kind says what a manifest version records.
type Kind string

const (
	// KindCommit: a graph commit (the initial commit of main included).
	KindCommit Kind = "commit"
	// KindFork: the genesis of a named branch, forked from another branch's
	// version. It records no commit: the branch shows its parent's head.
	KindFork Kind = "fork"
)

// TablePin pins one table of the graph to an exact version of one of its
// branches.
type TablePin struct {
	// Key names the table in the catalog: "node:<Type>" or "edge:<Type>".
	Key string `json:"key"`
	// Path is the table's key prefix in the store ("nodes/<Type>").
	Path string `json:"path"`
	// Branch is the table branch holding Version: "main" until the graph
	// branch first writes the table (lazy fork), then the graph branch name.
	Branch string `json:"branch"`
	// Version is the table version this graph version reads.
	Version uint64 `json:"version"`
}

// Commit is one graph commit: a ULID id, its parents (none for the initial
// commit, one for a linear commit, two for a merge: target head first), the
// actor who made it and when, in microseconds since the Unix epoch.
type Commit struct {
	ID         string   `json:"id"`
	Parents    []string `json:"parents"`
	Actor      string   `json:"actor"`
	TimeMicros int64    `json:"time_us"`
	// Maintenance marks a commit that changed no row and no schema
	// (optimize, index builds): a write prepared before it may prepare
	// again over it, whatever it read. Absent (false) in commits of
	// earlier builds, which are then treated as data commits.
	Maintenance bool `json:"maintenance,omitempty"`
}

// ForkPoint is where a named branch was forked from.
type ForkPoint struct {
	Branch      string `json:"branch"`
	Incarnation uint64 `json:"incarnation"`
	Version     uint64 `json:"version"`
	// Head is the commit the parent showed at that version.
	Head string `json:"head"`
}

// Entry is one version of one branch of __manifest: one graph commit or one
// branch fork point.
type Entry struct {
	// Stamp is the internal-schema version the writer used (StampCurrent).
	Stamp int  `json:"stamp"`
	Kind  Kind `json:"kind"`
	// GraphID is a ULID minted by init and copied into every version of
	// every branch: it names the graph (process-local gates key on it).
	GraphID string `json:"graph_id"`
	// Branch and Incarnation identify the branch life this version belongs
	// to; BranchID is a ULID minted when the incarnation was created (shown
	// to users; Incarnation is what the keys use).
	Branch      string `json:"branch"`
	Incarnation uint64 `json:"incarnation"`
	BranchID    string `json:"branch_id"`
	// Version is the graph head this entry makes: 1 for the genesis, then
	// one more per commit on this incarnation.
	Version uint64 `json:"version"`
	// SchemaIdentity is the accepted schema's identity hash; its source is
	// stored at SchemaKey(SchemaIdentity).
	SchemaIdentity string `json:"schema_identity"`
	// Tables pins every table of the graph, sorted by Key.
	Tables []TablePin `json:"tables"`
	// Head is the commit the branch shows at this version: Commit.ID for a
	// commit, the parent's head for a fork point.
	Head string `json:"head"`
	// Commit is set for KindCommit.
	Commit *Commit `json:"commit,omitempty"`
	// Fork is set for KindFork.
	Fork *ForkPoint `json:"fork,omitempty"`
	// Merged, on a merge commit, is where its second parent (the merged
	// source head, Head) was published, so walks of the commit graph
	// (commit list, merge bases, cleanup, branch delete) read it with one
	// GET instead of searching the manifest for the id, which costs the
	// whole history when its branch was deleted since. Merges of earlier
	// builds lack it; they are found by id.
	Merged *ForkPoint `json:"merged,omitempty"`
	// Pruned marks a version cleanup pruned, as History lists it from
	// the archive: only its commit is known (no tables, schema or ids).
	// Never stored.
	Pruned bool `json:"-"`
}

// Pin returns the pin of the table with the given key.
func (e *Entry) Pin(key string) (TablePin, bool) {
	i := sort.Search(len(e.Tables), func(i int) bool { return e.Tables[i].Key >= key })
	if i < len(e.Tables) && e.Tables[i].Key == key {
		return e.Tables[i], true
	}
	return TablePin{}, false
}

// Key returns the object key this entry is stored at.
func (e *Entry) Key() string { return VersionKey(e.Branch, e.Incarnation, e.Version) }

// Clone returns a deep copy, so a cached entry is never mutated.
func (e *Entry) Clone() *Entry {
	c := *e
	c.Tables = append([]TablePin(nil), e.Tables...)
	if e.Commit != nil {
		cm := *e.Commit
		cm.Parents = append([]string(nil), e.Commit.Parents...)
		c.Commit = &cm
	}
	if e.Fork != nil {
		f := *e.Fork
		c.Fork = &f
	}
	if e.Merged != nil {
		m := *e.Merged
		c.Merged = &m
	}
	return &c
}

// Successor returns the commit version that follows e with commit c: e's
// tables and schema, the next version number, c as its commit and head;
// no fork point and no merged location (a merge sets its own). Every
// writer builds its next version here, so no field of e that describes e
// alone is carried over.
func (e *Entry) Successor(c Commit) *Entry {
	next := e.Clone()
	next.Kind = KindCommit
	next.Version = e.Version + 1
	next.Fork = nil
	next.Merged = nil
	next.Pruned = false
	c.Parents = append([]string(nil), c.Parents...)
	next.Commit = &c
	next.Head = c.ID
	return next
}

// ErrCorrupt: a stored manifest version cannot be decoded or is
// inconsistent with its key. Nothing repairs it silently.
var ErrCorrupt = errors.New("manifest: corrupt version")

// Encode validates e and returns its stored bytes (tables sorted by key).
func Encode(e *Entry) ([]byte, error) {
	if err := e.validate(); err != nil {
		return nil, err
	}
	c := e.Clone()
	sort.Slice(c.Tables, func(i, j int) bool { return c.Tables[i].Key < c.Tables[j].Key })
	return json.Marshal(c)
}

// StampError: a manifest version was written with another internal-schema
// version than StampCurrent. Nothing else of it is decoded.
type StampError struct {
	Key   string
	Found int
}

func (e *StampError) Error() string {
	if e.Found < StampCurrent {
		return fmt.Sprintf("graph storage version %d is older than the version %d this omnigraph reads; rebuild the graph: "+
			"with the omnigraph that wrote it run 'omnigraph export --out graph.jsonl --store OLD_URL' (it also writes graph.pg), "+
			"then with this one run 'omnigraph init --schema graph.pg NEW_URL' and 'omnigraph load --data graph.jsonl --mode overwrite NEW_URL'", e.Found, StampCurrent)
	}
	return fmt.Sprintf("graph storage version %d is newer than the version %d this omnigraph reads; upgrade omnigraph", e.Found, StampCurrent)
}

// ErrStamp matches every *StampError.
var ErrStamp = errors.New("unsupported graph storage version")

// Is makes errors.Is(err, ErrStamp) hold.
func (e *StampError) Is(target error) bool { return target == ErrStamp }

// Decode parses stored bytes of the object at key. The stamp is checked
// first (*StampError). A decoded entry whose branch, incarnation or version
// disagrees with its key is ErrCorrupt.
func Decode(key string, data []byte) (*Entry, error) {
	var stamp struct {
		Stamp int `json:"stamp"`
	}
	if err := json.Unmarshal(data, &stamp); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, Describe(key), err)
	}
	if stamp.Stamp != StampCurrent {
		return nil, &StampError{Key: key, Found: stamp.Stamp}
	}
	var e Entry
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&e); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, Describe(key), err)
	}
	if err := e.validate(); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, Describe(key), err)
	}
	if e.Key() != key {
		return nil, fmt.Errorf("%w: %s holds version %d of %q incarnation %d", ErrCorrupt, Describe(key), e.Version, e.Branch, e.Incarnation)
	}
	return &e, nil
}

func (e *Entry) validate() error {
	if err := ValidateBranchName(e.Branch); err != nil {
		return err
	}
	switch {
	case e.Incarnation == 0 || e.Version == 0:
		return fmt.Errorf("manifest entry needs incarnation and version >= 1")
	case e.Stamp != StampCurrent:
		return fmt.Errorf("manifest entry stamp %d, want %d", e.Stamp, StampCurrent)
	case e.GraphID == "":
		return fmt.Errorf("manifest entry has no graph id")
	case e.SchemaIdentity == "":
		return fmt.Errorf("manifest entry has no schema identity")
	case e.Kind == KindCommit && (e.Commit == nil || e.Commit.ID == "" || e.Head != e.Commit.ID):
		return fmt.Errorf("commit entry must carry its commit, and Head must be the commit id")
	case e.Kind == KindFork && (e.Fork == nil || e.Version != 1):
		return fmt.Errorf("fork entry must be version 1 and carry its fork point")
	case e.Kind != KindCommit && e.Kind != KindFork:
		return fmt.Errorf("unknown manifest entry kind %q", e.Kind)
	case e.Merged != nil && (e.Commit == nil || len(e.Commit.Parents) != 2 || e.Commit.Parents[1] != e.Merged.Head || e.Merged.Version == 0):
		return fmt.Errorf("merged location must name the commit's second parent")
	}
	seen := map[string]bool{}
	for _, t := range e.Tables {
		if t.Key == "" || t.Path == "" || t.Branch == "" || t.Version == 0 {
			return fmt.Errorf("table pin %+v is incomplete", t)
		}
		if seen[t.Key] {
			return fmt.Errorf("table %q pinned twice", t.Key)
		}
		seen[t.Key] = true
	}
	return nil
}
