package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMergeLoadReportsEffects: a merge load says how many rows it
// inserted, updated and left unchanged (not "loaded" for all), the same
// through --server, in text and JSON; a merge that changes nothing says 0 inserted, 0 updated.
func TestMergeLoadReportsEffects(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	first := write("first.jsonl", `{"type":"Person","data":{"name":"ada","age":36}}
{"type":"Person","data":{"name":"bob","age":40}}
{"type":"Company","data":{"name":"acme"}}
`)
	// ada changes, bob and acme are the same, cyd is new.
	second := write("second.jsonl", `{"type":"Person","data":{"name":"ada","age":37}}
{"type":"Person","data":{"name":"bob","age":40}}
{"type":"Company","data":{"name":"acme"}}
{"type":"Person","data":{"name":"cyd"}}
`)
	local := filepath.Join(dir, "local")
	served := filepath.Join(dir, "served")
	for _, g := range []string{local, served} {
		mustCLI(t, "init", "--schema", writeSchema(t), g)
		mustCLI(t, "load", "--data", first, "--mode", "append", g)
	}
	tokens := filepath.Join(dir, "tokens.json")
	token := strings.TrimSpace(mustCLI(t, "token", "add", "anonymous", "--tokens", tokens))
	base, _, _ := startServe(t, "--store", served, "--tokens", tokens)
	t.Setenv(envToken, token)

	for _, where := range [][]string{{local}, {"--server", base}} {
		out := mustCLI(t, append([]string{"load", "--data", second, "--mode", "merge"}, where...)...)
		if !strings.Contains(out, "1 inserted, 1 updated, 2 unchanged") || strings.Contains(out, "loaded") {
			t.Errorf("%v: a merge load printed %q; want 1 inserted, 1 updated, 2 unchanged", where, out)
		}
		out = mustCLI(t, append([]string{"load", "--data", second, "--mode", "merge"}, where...)...)
		if !strings.Contains(out, "0 inserted, 0 updated, 4 unchanged") {
			t.Errorf("%v: the same merge again printed %q", where, out)
		}
		var res struct {
			Inserted, Updated, Unchanged int
		}
		js := mustCLI(t, append([]string{"load", "--data", first, "--mode", "merge", "--json"}, where...)...)
		if err := json.Unmarshal([]byte(js), &res); err != nil || res.Inserted != 0 || res.Updated != 1 || res.Unchanged != 2 {
			t.Errorf("%v: merge --json %+v (%v), want 0 inserted, 1 updated, 2 unchanged:\n%s", where, res, err, js)
		}
	}
}
