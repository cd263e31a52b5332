package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/server"
)

// serveConfigVersion is the version of the serve --config file.
const serveConfigVersion = 1

// serveConfig is the serve --config file: several graphs and the
// server's settings. Relative paths (tokens, policy, graph directories)
// are relative to the file's directory.
type serveConfig struct {
	Version      int                 `json:"version"`
	Listen       string              `json:"listen,omitempty"`
	Tokens       string              `json:"tokens,omitempty"`
	Policy       string              `json:"policy,omitempty"`
	Groups       map[string][]string `json:"groups,omitempty"`
	ReadOnly     bool                `json:"read_only,omitempty"`
	NoUI         bool                `json:"no_ui,omitempty"`
	DrainTimeout string              `json:"drain_timeout,omitempty"`
	Limits       struct {
		WritesPerActor int   `json:"max_writes_per_actor,omitempty"`
		WritesPerGraph int   `json:"max_writes_per_graph,omitempty"`
		BodyBytes      int64 `json:"max_body_bytes,omitempty"`
		LoadBytes      int64 `json:"max_load_bytes,omitempty"`
		ReadsPerActor  int   `json:"max_reads_per_actor,omitempty"`
		Reads          int   `json:"max_reads,omitempty"`
		HeavyReads     int   `json:"max_heavy_reads,omitempty"`
		queryLimits
	} `json:"limits"`
	// ExternalBlobBases allow Blob values that are URIs under these
	// locations, on every graph (--external-blob-base).
	ExternalBlobBases []string `json:"external_blob_bases,omitempty"`
	// Graphs maps graph ids to a storage URL, or to {"store": URL,
	// "queries": PATH, "limits": {query budgets}} (PATH: the graph's stored
	// queries).
	Graphs map[string]graphEntry `json:"graphs"`
	// Actors override the limits of some actors: the query budgets and
	// max_reads (their in-flight reads).
	Actors map[string]actorEntry `json:"actors,omitempty"`

	dir          string
	drainTimeout time.Duration
}

// queryLimits are the query budgets of the config file (server-wide, per
// graph, per actor); a set field must be positive.
type queryLimits struct {
	Rows      int64    `json:"max_query_rows,omitempty"`
	Memory    jsonSize `json:"max_query_memory,omitempty"`
	Timeout   string   `json:"query_timeout,omitempty"`
	ReadBytes jsonSize `json:"max_query_read_bytes,omitempty"`
}

// budget checks the limits and returns them as a graph.Budget (zero
// fields inherit).
func (q queryLimits) budget(where string) (graph.Budget, error) {
	b := graph.Budget{Rows: q.Rows, Memory: int64(q.Memory), ReadBytes: int64(q.ReadBytes)}
	if q.Rows < 0 || q.Memory < 0 || q.ReadBytes < 0 {
		return b, fmt.Errorf("%s: query budgets are positive (a server budget can be raised, not switched off)", where)
	}
	if q.Timeout != "" {
		d, err := time.ParseDuration(q.Timeout)
		if err != nil || d <= 0 {
			return b, fmt.Errorf("%s: query_timeout %q: give a duration such as \"30s\"", where, q.Timeout)
		}
		b.Time = d
	}
	return b, nil
}

// graphEntry is one graph of the config: a storage URL, or an object with
// the URL, the graph's stored queries and its query budgets.
type graphEntry struct {
	Store   string      `json:"store"`
	Queries string      `json:"queries,omitempty"`
	Limits  queryLimits `json:"limits"`
}

func (e *graphEntry) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		return json.Unmarshal(b, &e.Store)
	}
	type plain graphEntry
	var p plain
	if err := server.DecodeJSON(b, &p, "a graph given as an object"); err != nil {
		return fmt.Errorf("a graph is a storage URL or {\"store\": URL, \"queries\": PATH, \"limits\": {...}}; %w", err)
	}
	*e = graphEntry(p)
	return nil
}

// actorEntry overrides one actor's limits.
type actorEntry struct {
	Reads int `json:"max_reads,omitempty"`
	queryLimits
}

// jsonSize is a byte count in the config: a number, or a string with a
// unit ("1GiB").
type jsonSize int64

func (s *jsonSize) UnmarshalJSON(b []byte) error {
	var str string
	if err := json.Unmarshal(b, &str); err == nil {
		n, err := parseSize(str)
		*s = jsonSize(n)
		return err
	}
	var n int64
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("a size is a number of bytes or a string such as \"512MiB\"")
	}
	*s = jsonSize(n)
	return nil
}

// readServeConfig reads and checks a config file: known version and
// fields, at least one graph, a valid drain timeout.
func readServeConfig(path string) (*serveConfig, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read the config file: %w", err)
	}
	var c serveConfig
	if err := server.DecodeJSON(b, &c, "config file "+path); err != nil {
		return nil, usagef("%v", err)
	}
	if c.Version != serveConfigVersion {
		return nil, usagef("config file %s: version %d, this omnigraph reads version %d", path, c.Version, serveConfigVersion)
	}
	if len(c.Graphs) == 0 {
		return nil, usagef("config file %s: no graphs: give \"graphs\": {\"ID\": \"STORAGE URL\"}", path)
	}
	if _, err := c.Limits.budget("limits"); err != nil {
		return nil, usagef("config file %s: %v", path, err)
	}
	for id, g := range c.Graphs {
		if g.Store == "" {
			return nil, usagef("config file %s: graph %q has no store URL", path, id)
		}
		if _, err := g.Limits.budget("graph " + strconv.Quote(id)); err != nil {
			return nil, usagef("config file %s: %v", path, err)
		}
	}
	for actor, a := range c.Actors {
		if err := server.ValidActor(actor); err != nil && actor != "anonymous" {
			return nil, usagef("config file %s: actors: %v", path, err)
		}
		if _, err := a.budget("actor " + strconv.Quote(actor)); err != nil || a.Reads < 0 {
			return nil, usagef("config file %s: actor %q: limits are positive", path, actor)
		}
	}
	if c.Limits.ReadsPerActor < 0 || c.Limits.Reads < 0 || c.Limits.HeavyReads < 0 {
		return nil, usagef("config file %s: max_reads_per_actor, max_reads and max_heavy_reads are positive", path)
	}
	if c.DrainTimeout != "" {
		d, err := time.ParseDuration(c.DrainTimeout)
		if err != nil || d <= 0 {
			return nil, usagef("config file %s: drain_timeout %q: give a duration such as \"25s\"", path, c.DrainTimeout)
		}
		c.drainTimeout = d
	}
	c.dir = filepath.Dir(path)
	return &c, nil
}

// rel resolves a path of the file against its directory.
func (c *serveConfig) rel(p string) string {
	if p == "" || filepath.IsAbs(p) || strings.Contains(p, "://") {
		return p
	}
	return filepath.Join(c.dir, p)
}

// apply puts the file's settings into o where the command line did not
// give them, and returns the graphs (in id order) and the groups.
func (c *serveConfig) apply(o *serveOptions) ([]servedGraph, map[string][]string) {
	if c.Listen != "" && !o.set("listen") {
		o.listen = c.Listen
	}
	if c.Tokens != "" && !o.set("tokens") {
		o.tokens = c.rel(c.Tokens)
	}
	if c.Policy != "" && !o.set("policy") {
		o.policy = c.rel(c.Policy)
	}
	if c.ReadOnly && !o.set("read-only") {
		o.readOnly = true
	}
	if c.NoUI && !o.set("no-ui") {
		o.noUI = true
	}
	if c.drainTimeout > 0 && !o.set("drain-timeout") {
		o.drainTimeout = c.drainTimeout
	}
	if c.Limits.WritesPerActor > 0 && !o.set("max-writes-per-actor") {
		o.limits.WritesPerActor = c.Limits.WritesPerActor
	}
	if c.Limits.WritesPerGraph > 0 && !o.set("max-writes-per-graph") {
		o.limits.WritesPerGraph = c.Limits.WritesPerGraph
	}
	if c.Limits.BodyBytes > 0 && !o.set("max-body-bytes") {
		o.limits.BodyBytes = c.Limits.BodyBytes
	}
	if len(c.ExternalBlobBases) > 0 && !o.set("external-blob-base") {
		o.t.blobBases = c.ExternalBlobBases
	}
	if c.Limits.LoadBytes > 0 && !o.set("max-load-bytes") {
		o.limits.LoadBytes = c.Limits.LoadBytes
	}
	if c.Limits.ReadsPerActor > 0 && !o.set("max-reads-per-actor") {
		o.limits.ReadsPerActor = c.Limits.ReadsPerActor
	}
	if c.Limits.Reads > 0 && !o.set("max-reads") {
		o.limits.Reads = c.Limits.Reads
	}
	if c.Limits.HeavyReads > 0 && !o.set("max-heavy-reads") {
		o.limits.HeavyReads = c.Limits.HeavyReads
	}
	qb, _ := c.Limits.budget("limits") // checked by readServeConfig
	if qb.Rows > 0 && !o.set("max-query-rows") {
		o.queryRows = qb.Rows
	}
	if qb.Memory > 0 && !o.set("max-query-memory") {
		o.queryMemory = byteSize(qb.Memory)
	}
	if qb.Time > 0 && !o.set("query-timeout") {
		o.queryTimeout = qb.Time
	}
	if qb.ReadBytes > 0 && !o.set("max-query-read-bytes") {
		o.queryReadBytes = byteSize(qb.ReadBytes)
	}
	if len(c.Actors) > 0 {
		o.actors = map[string]server.ActorLimits{}
		for actor, a := range c.Actors {
			b, _ := a.budget("")
			o.actors[actor] = server.ActorLimits{Budget: b, Reads: a.Reads}
		}
	}
	ids := make([]string, 0, len(c.Graphs))
	for id := range c.Graphs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	graphs := make([]servedGraph, len(ids))
	for i, id := range ids {
		b, _ := c.Graphs[id].Limits.budget("")
		graphs[i] = servedGraph{id: id, url: c.rel(c.Graphs[id].Store), queries: c.rel(c.Graphs[id].Queries), budget: b}
	}
	return graphs, c.Groups
}
