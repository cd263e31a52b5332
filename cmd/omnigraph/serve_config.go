package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
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
	DrainTimeout string              `json:"drain_timeout,omitempty"`
	Limits       struct {
		WritesPerActor int   `json:"max_writes_per_actor,omitempty"`
		WritesPerGraph int   `json:"max_writes_per_graph,omitempty"`
		BodyBytes      int64 `json:"max_body_bytes,omitempty"`
		LoadBytes      int64 `json:"max_load_bytes,omitempty"`
	} `json:"limits"`
	// ExternalBlobBases allow Blob values that are URIs under these
	// locations, on every graph (--external-blob-base).
	ExternalBlobBases []string `json:"external_blob_bases,omitempty"`
	// Graphs maps graph ids to storage URLs.
	Graphs map[string]string `json:"graphs"`

	dir          string
	drainTimeout time.Duration
}

// readServeConfig reads and checks a config file: known version and
// fields, at least one graph, a valid drain timeout.
func readServeConfig(path string) (*serveConfig, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read the config file: %w", err)
	}
	var c serveConfig
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return nil, usagef("config file %s: %v", path, err)
	}
	if c.Version != serveConfigVersion {
		return nil, usagef("config file %s: version %d, this omnigraph reads version %d", path, c.Version, serveConfigVersion)
	}
	if len(c.Graphs) == 0 {
		return nil, usagef("config file %s: no graphs: give \"graphs\": {\"ID\": \"STORAGE URL\"}", path)
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
	ids := make([]string, 0, len(c.Graphs))
	for id := range c.Graphs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	graphs := make([]servedGraph, len(ids))
	for i, id := range ids {
		graphs[i] = servedGraph{id: id, url: c.rel(c.Graphs[id])}
	}
	return graphs, c.Groups
}
