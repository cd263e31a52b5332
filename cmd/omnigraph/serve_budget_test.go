package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/server"
)

// TestServeConfigBudgets: the config file's query budgets and read limits,
// server-wide, per graph ({"store", "limits"} beside plain URLs) and per
// actor, reach the server's options; flags given beside the file win;
// bad budgets refuse the start (usage).
func TestServeConfigBudgets(t *testing.T) {
	dir := t.TempDir()
	write := func(body string) string {
		p := filepath.Join(dir, "serve.json")
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cfg, err := readServeConfig(write(`{
  "version": 1,
  "limits": {"max_query_rows": 5000, "max_query_memory": "256MiB", "query_timeout": "5s", "max_query_read_bytes": 1048576,
             "max_reads_per_actor": 3, "max_reads": 9, "max_heavy_reads": 2},
  "graphs": {"a": "/data/a", "b": {"store": "/data/b", "limits": {"max_query_rows": 77, "query_timeout": "1m"}}},
  "actors": {"etl": {"max_reads": 1, "max_query_memory": 2147483648}}
}`))
	if err != nil {
		t.Fatal(err)
	}
	o := serveOptions{set: func(f string) bool { return f == "max-query-rows" }, queryRows: 123}
	graphs, _ := cfg.apply(&o)
	if o.queryRows != 123 || o.queryMemory != 256<<20 || o.queryTimeout != 5*time.Second || o.queryReadBytes != 1<<20 {
		t.Fatalf("server budget: rows %d (the flag wins) memory %d timeout %s read %d", o.queryRows, o.queryMemory, o.queryTimeout, o.queryReadBytes)
	}
	if o.limits.ReadsPerActor != 3 || o.limits.Reads != 9 || o.limits.HeavyReads != 2 {
		t.Fatalf("read limits %+v", o.limits)
	}
	if len(graphs) != 2 || graphs[0].url != "/data/a" || graphs[0].budget != (graph.Budget{}) ||
		graphs[1].url != "/data/b" || graphs[1].budget != (graph.Budget{Rows: 77, Time: time.Minute}) {
		t.Fatalf("graphs %+v", graphs)
	}
	if o.actors["etl"] != (server.ActorLimits{Reads: 1, Budget: graph.Budget{Memory: 2 << 30}}) {
		t.Fatalf("actors %+v", o.actors)
	}
	for _, c := range []struct{ name, body, want string }{
		{"negative rows", `{"version":1,"limits":{"max_query_rows":-1},"graphs":{"a":"a"}}`, "positive"},
		{"bad size", `{"version":1,"limits":{"max_query_memory":"lots"},"graphs":{"a":"a"}}`, "not a size"},
		{"bad timeout", `{"version":1,"graphs":{"a":{"store":"a","limits":{"query_timeout":"soon"}}}}`, "query_timeout"},
		{"unknown graph field", `{"version":1,"graphs":{"a":{"store":"a","limit":{}}}}`, "limit"},
		{"graph without store", `{"version":1,"graphs":{"a":{"limits":{}}}}`, "no store"},
		{"bad actor", `{"version":1,"graphs":{"a":"a"},"actors":{"bad actor!":{"max_reads":1}}}`, "actor"},
		{"negative reads", `{"version":1,"graphs":{"a":"a"},"actors":{"etl":{"max_reads":-2}}}`, "positive"},
	} {
		_, err := readServeConfig(write(c.body))
		var ue usageError
		if err == nil || !strings.Contains(err.Error(), c.want) || !asUsage(err, &ue) {
			t.Errorf("%s: %v, want a usage error naming %q", c.name, err, c.want)
		}
	}
	// Flags: a budget of 0 cannot switch the server's off.
	for _, flags := range [][]string{{"--max-query-rows", "0"}, {"--query-timeout", "0s"}, {"--max-reads", "0"}} {
		args := append([]string{"serve", "--store", dir}, flags...)
		if code, _, errs := cli(t, args...); code != exitUsage || !strings.Contains(errs, "positive") {
			t.Errorf("%v: exit %d, %s", flags, code, errs)
		}
	}
}

func asUsage(err error, ue *usageError) bool {
	u, ok := err.(usageError)
	if ok {
		*ue = u
	}
	return ok
}
