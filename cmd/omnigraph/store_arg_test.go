package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// storeOnlyFlag are the commands that take --store but not the store as an
// argument, and why.
var storeOnlyFlag = map[string]string{
	"omnigraph query":  "its argument is a stored query's NAME",
	"omnigraph mutate": "its argument is a stored query's NAME",
}

// TestStoreAsArgumentEverywhere is generated from the command tree: every
// command that takes --store also takes the store as its last argument
// (one more than its own), except storeOnlyFlag; and a few commands give
// the same output either way, and refuse both at once.
func TestStoreAsArgumentEverywhere(t *testing.T) {
	root := newRootCmd(&app{})
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, s := range c.Commands() {
			walk(s)
		}
		if c.Flags().Lookup("store") == nil {
			return
		}
		path := c.CommandPath()
		if _, ok := storeOnlyFlag[path]; ok {
			return
		}
		accepts := func(n int) bool { return c.Args(c, make([]string, n)) == nil }
		n := -1
		for k := 0; k <= 6; k++ {
			if accepts(k) {
				n = k
				break
			}
		}
		if n < 0 || !accepts(n+1) {
			t.Errorf("%s takes --store but not the store as its last argument (it accepts %d arguments, not %d): accept both, or list it in storeOnlyFlag with the reason", path, n, n+1)
		}
	}
	walk(root)

	url := filepath.Join(t.TempDir(), "g")
	mustCLI(t, "init", "--schema", writeSchema(t), url)
	mustCLI(t, "branch", "create", "side", url)
	for _, args := range [][]string{
		{"snapshot"},
		{"branch", "list"},
		{"commit", "list"},
		{"schema", "show"},
		{"diff", "main", "side"},
		{"export", "--branch", "side"},
	} {
		byFlag := mustCLI(t, append(args, "--store", url)...)
		byArg := mustCLI(t, append(args, url)...)
		if byFlag != byArg {
			t.Errorf("%s: the store as argument printed\n%s\nand as --store\n%s", strings.Join(args, " "), byArg, byFlag)
		}
		if code, _, errs := cli(t, append(args, url, "--store", url)...); code != exitUsage || !strings.Contains(errs, "once") {
			t.Errorf("%s with both: exit %d %s, want a usage error", strings.Join(args, " "), code, errs)
		}
	}
}
