package main

import (
	"sort"
	"testing"

	"github.com/spf13/cobra"
)

// noServerMode lists the commands that open a graph (they take --store) and
// have no --server, each with why. Every other such command must take
// --server (TestEveryGraphCommandTakesServer).
var noServerMode = map[string]string{
	"omnigraph init":             "creates a graph in a store; a server serves a graph that exists",
	"omnigraph serve":            "is the server",
	"omnigraph lock status":      "reads the store's cluster lock record itself: it is how to see which server (or CLI writer) holds a graph",
	"omnigraph lock unlock":      "releases a lock whose holder is gone; a live server releases its own",
	"omnigraph recovery list":    "lists the store's recovery sidecars: an operator's look at the store, the server sweeps them itself when it opens the graph",
	"omnigraph repair":           "repairs drift in the store with the graph stopped (it takes the writer lock a server holds)",
	"omnigraph optimize":         "a server runs its own compaction (serve's automatic optimize)",
	"omnigraph cleanup":          "maintenance with the writer lock: stop the server, or let its retention run; the HTTP API has no cleanup route",
	"omnigraph ensure-indices":   "maintenance with the writer lock; a server builds declared indexes itself; the HTTP API has no route for it",
	"omnigraph iceberg sync":     "a server runs its own Iceberg sync (serve --iceberg) and serves the catalog",
	"omnigraph schema plan":      "the HTTP API has no schema evolution route: plan and apply run against the store, with the server stopped",
	"omnigraph schema apply":     "the HTTP API has no schema evolution route: plan and apply run against the store, with the server stopped",
	"omnigraph queries validate": "checks stored-query files against a schema before serve loads them; 'queries list --server' shows what a server loaded",
}

// TestEveryGraphCommandTakesServer is generated from the command tree: a
// command that reads or writes a graph (it takes --store) takes --server
// too, or is on noServerMode with its reason; an entry of noServerMode
// names a command that exists and still has no --server.
func TestEveryGraphCommandTakesServer(t *testing.T) {
	root := newRootCmd(&app{})
	seen := map[string]bool{}
	var missing []string
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, s := range c.Commands() {
			walk(s)
		}
		if c.Flags().Lookup("store") == nil {
			return
		}
		path := c.CommandPath()
		seen[path] = true
		_, excluded := noServerMode[path]
		switch hasServer := c.Flags().Lookup("server") != nil; {
		case hasServer && excluded:
			t.Errorf("%s takes --server now: remove it from noServerMode", path)
		case !hasServer && !excluded:
			missing = append(missing, path)
		}
	}
	walk(root)
	sort.Strings(missing)
	for _, p := range missing {
		t.Errorf("%s opens a graph (--store) but has no --server: add it (t.addServer, through client/), or put it on noServerMode with the reason", p)
	}
	for p, why := range noServerMode {
		if !seen[p] {
			t.Errorf("noServerMode names %s, which is no command with --store (%s)", p, why)
		}
		if why == "" {
			t.Errorf("noServerMode: %s has no reason", p)
		}
	}
}
