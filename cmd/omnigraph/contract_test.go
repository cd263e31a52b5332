package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// visibleCommands returns every non-hidden command of the CLI, root first.
func visibleCommands() []*cobra.Command {
	root := newRootCmd(&app{stdin: strings.NewReader(""), stdout: new(strings.Builder), stderr: new(strings.Builder)})
	var out []*cobra.Command
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden {
			return
		}
		out = append(out, c)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	return out
}

// commandArgs is the argument path of c ("branch create").
func commandArgs(c *cobra.Command) []string {
	return strings.Fields(strings.TrimPrefix(c.CommandPath(), "omnigraph"))
}

// TestEveryBadInvocationExitsUsage pins exit code 2 for every usage error of
// every command: an unknown flag, on every command there is; a group run
// without or with an unknown subcommand; and the usual shapes of a bad
// invocation (missing flag or argument, bad flag value, unknown command).
func TestEveryBadInvocationExitsUsage(t *testing.T) {
	for _, c := range visibleCommands() {
		args := append(commandArgs(c), "--no-such-flag")
		code, _, errs := cli(t, args...)
		if code != exitUsage || !strings.Contains(errs, "unknown flag: --no-such-flag") {
			t.Errorf("omnigraph %s: exit %d (%q), want %d and an unknown flag error", strings.Join(args, " "), code, errs, exitUsage)
		}
		if c.HasParent() && c.HasAvailableSubCommands() {
			for _, args := range [][]string{commandArgs(c), append(commandArgs(c), "no-such-subcommand")} {
				if code, _, errs := cli(t, args...); code != exitUsage {
					t.Errorf("omnigraph %s: exit %d (%q), want %d", strings.Join(args, " "), code, errs, exitUsage)
				}
			}
		}
	}
	for _, args := range [][]string{
		{"no-such-command"},
		{"help", "no-such-command"},
		{"init"}, // missing --schema
		{"load", "--data", "x.jsonl", "--store", "mem://u"},                     // missing --mode
		{"load", "--data", "x.jsonl", "--mode", "upsert", "--store", "mem://u"}, // bad flag value
		{"commit", "list", "--limit", "x", "--store", "mem://u"},                // bad flag value
		{"commit", "list", "--limit"},                                           // flag without its value
		{"commit", "show"},                                                      // missing argument
		{"branch", "create", "a", "b", "c"},                                     // extra argument (b is the store)
		{"schema", "show", "extra", "more"},
		{"schema", "show", "./g", "--store", "./g"}, // the store twice
		{"storage", "check"},
		{"query", "-e", "query q() { match { $p: Person } return { $p } }", "--format", "xml", "--store", "mem://u"},
		{"query", "--store", "mem://u"}, // no query
		{"branch", "list"},              // no --store
	} {
		if code, _, errs := cli(t, args...); code != exitUsage {
			t.Errorf("omnigraph %s: exit %d (%q), want %d", strings.Join(args, " "), code, errs, exitUsage)
		}
	}
}

// TestJSONErrorObject pins the rule that an invocation asking for JSON
// (--json, --format json|jsonl) gets its error as one JSON object on stderr,
// with a stable code and the same exit code as in text mode; text mode keeps
// "error: ...".
func TestJSONErrorObject(t *testing.T) {
	dir := queryGraph(t)
	cases := []struct {
		args     []string
		exit     int
		code     string
		hint     bool
		contains string
	}{
		{[]string{"branch", "delete", "nope", "--store", dir, "--json"}, exitError, "branch_not_found", false, "nope"},
		{[]string{"query", "-e", "query q() { match { $p: Persn } return { $p } }", "--format", "json", "--store", dir}, exitError, "GQ010", false, "Persn"},
		{[]string{"query", "--bogus", "--format", "jsonl"}, exitUsage, "usage", true, "unknown flag: --bogus"},
		{[]string{"branch", "list", "--json"}, exitUsage, "usage", false, "--store"},
		{[]string{"mutate", "-e", `insert Person { name: "zed" }`, "--if-commit", "01AAAAAAAAAAAAAAAAAAAAAAAA", "--store", dir, "--json"}, exitConflict, "precondition_failed", false, ""},
	}
	for _, c := range cases {
		code, out, errs := cli(t, c.args...)
		var got struct {
			Error struct {
				Code    string `json:"code"`
				Message string `json:"message"`
				Hint    string `json:"hint"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(errs), &got); err != nil || strings.Count(errs, "\n") != 1 {
			t.Errorf("omnigraph %s: stderr is not one JSON object: %q (%v)", strings.Join(c.args, " "), errs, err)
			continue
		}
		if code != c.exit || got.Error.Code != c.code || !strings.Contains(got.Error.Message, c.contains) || (got.Error.Hint != "") != c.hint || out != "" {
			t.Errorf("omnigraph %s: exit %d, %+v, stdout %q; want exit %d, code %s, a message containing %q, hint %v",
				strings.Join(c.args, " "), code, got.Error, out, c.exit, c.code, c.contains, c.hint)
		}
	}
	// The same failure in text mode.
	if code, _, errs := cli(t, "branch", "delete", "nope", "--store", dir); code != exitError || !strings.HasPrefix(errs, "error: ") {
		t.Errorf("text mode: exit %d, %q", code, errs)
	}
}

// TestCLIDocsMatchCommands pins docs/cli.md to the CLI: every command has a
// usage line "omnigraph PATH ..." in a code block, every flag of a command
// appears in that command's usage lines, every usage line names a real
// command and only its flags, and every --flag the page mentions exists.
func TestCLIDocsMatchCommands(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "docs", "cli.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	// Usage lines: lines of fenced blocks; a line starting with spaces
	// continues the previous usage line.
	var usage []string
	in := false
	for _, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(line, "```") {
			in = !in
			continue
		}
		switch {
		case !in:
		case strings.HasPrefix(line, "omnigraph"):
			usage = append(usage, line)
		case strings.HasPrefix(line, " ") && len(usage) > 0:
			usage[len(usage)-1] += " " + strings.TrimSpace(line)
		}
	}
	flagRe := regexp.MustCompile(`--[a-z][a-z0-9-]*`)
	cmds := visibleCommands()
	byPath := map[string]*cobra.Command{}
	allFlags := map[string]bool{"--help": true}
	for _, c := range cmds {
		byPath[strings.Join(commandArgs(c), " ")] = c
		c.Flags().VisitAll(func(f *pflag.Flag) { allFlags["--"+f.Name] = true })
	}
	// usagePath is the longest command path a usage line starts with.
	usagePath := func(line string) string {
		words := strings.Fields(strings.TrimPrefix(line, "omnigraph"))
		best := ""
		for i := 1; i <= len(words); i++ {
			if _, ok := byPath[strings.Join(words[:i], " ")]; ok {
				best = strings.Join(words[:i], " ")
			}
		}
		return best
	}
	linesOf := map[string][]string{}
	for _, u := range usage {
		p := usagePath(u)
		if p == "" {
			t.Errorf("docs/cli.md usage line names no command: %q", u)
			continue
		}
		linesOf[p] = append(linesOf[p], u)
		c := byPath[p]
		for _, f := range flagRe.FindAllString(u, -1) {
			if f != "--help" && c.Flags().Lookup(strings.TrimPrefix(f, "--")) == nil {
				t.Errorf("docs/cli.md shows %s on 'omnigraph %s', which has no such flag: %q", f, p, u)
			}
		}
	}
	var missing []string
	for _, c := range cmds {
		p := strings.Join(commandArgs(c), " ")
		if p == "" || c.HasAvailableSubCommands() {
			continue // the root and the groups are documented by their subcommands
		}
		if len(linesOf[p]) == 0 {
			missing = append(missing, "command "+p)
			continue
		}
		text := strings.Join(linesOf[p], " ")
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if f.Name == "help" || f.Hidden {
				return
			}
			long := regexp.MustCompile(`--` + regexp.QuoteMeta(f.Name) + `\b`).MatchString(text)
			short := f.Shorthand != "" && regexp.MustCompile(`(^|[\s(\[])-`+f.Shorthand+`\b`).MatchString(text)
			if !long && !short {
				missing = append(missing, "--"+f.Name+" of "+p)
			}
		})
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("docs/cli.md does not document: %s", strings.Join(missing, "; "))
	}
	for _, f := range flagRe.FindAllString(doc, -1) {
		if !allFlags[f] {
			t.Errorf("docs/cli.md mentions %s, which no command has", f)
		}
	}
	// Every exit code the CLI uses is in the table.
	for _, code := range []int{exitOK, exitError, exitUsage, exitConflict, exitBudget} {
		if !regexp.MustCompile(`(?m)^\| *` + "`" + `?` + string(rune('0'+code)) + "`" + `? *\|`).MatchString(doc) {
			t.Errorf("docs/cli.md's exit code table lacks %d", code)
		}
	}
}
