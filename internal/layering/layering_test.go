// Package layering holds the test that keeps the tree's import direction:
// each layer imports only the layers below it, cloud SDKs stay in backend/,
// and only backend/local and the CLI touch the filesystem.
package layering

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/omnigraph-go/omnigraph"

// core are the graph packages every engine package may build on: the handle
// and write pipeline (graph) and the schema, query language and manifest
// below it. shared is the tier above the core that every writer builds on:
// the change set and its constraint evaluator (graph/change). Any other
// package under graph/ is an operation package (one concern: load,
// mutation, query, and soon merge and schema apply), which imports the core
// and the shared tier and never another operation.
var core = map[string]bool{"graph": true, "graph/pg": true, "graph/gq": true, "graph/manifest": true, "graph/text": true, "graph/embed": true}

const shared = "graph/change"

// plant is the leaf package of the planted-bug switches (the simulation's
// meta-test): the engine packages that hold a seam may import it.
const plant = "internal/plant"

// allowed says which project packages a package (non-test files) may import.
// A rule names packages exactly, or a prefix ending in "/...".
func allowed(pkg string) []string {
	switch {
	case pkg == "backend":
		return nil
	case strings.HasPrefix(pkg, "backend/"):
		return []string{"backend", "backend/..."}
	case pkg == "conformance", pkg == "clusterlock":
		return []string{"backend"}
	case pkg == "conformance/wire":
		return []string{"backend"}
	case pkg == "table":
		return []string{"backend"}
	case pkg == "graph/text":
		// A leaf: text analysis, edit distance and scoring.
		return nil
	case pkg == "graph/pg":
		// The schema language; its typo hints use text's edit distance.
		return []string{"graph/text"}
	case pkg == "graph/embed": // embedders (and @embed specs of a schema)
		return []string{"graph/pg"}
	case pkg == "graph/gq":
		return []string{"graph/pg", "graph/text"}
	case pkg == "graph/manifest":
		return []string{"backend", plant}
	case pkg == "recovery":
		return []string{"backend", "graph/manifest", "table", plant}
	case pkg == "graph":
		return []string{"backend", "table", "recovery", "graph/pg", "graph/gq", "graph/manifest", plant}
	case pkg == shared:
		return []string{"backend", "table", "recovery", "graph", "graph/pg", "graph/gq", "graph/manifest", plant}
	case strings.HasPrefix(pkg, "graph/"): // an operation package
		return []string{"backend", "table", "recovery", "graph", "graph/pg", "graph/gq", "graph/manifest", shared, "graph/text", "graph/embed", "index/...", plant}
	case pkg == "internal/testenv":
		// The wire-level re-issue driver publishes through the manifest
		// store and scans its logs.
		return []string{"backend", "backend/...", "conformance", "conformance/wire", "graph/manifest", "internal/logtest"}
	case strings.HasPrefix(pkg, "internal/"):
		return []string{"backend", "backend/...", "conformance"}
	default: // cmd/..., server/...: the top, may import anything
		return []string{"..."}
	}
}

// cloudSDKs are import prefixes only backend/ may use.
var cloudSDKs = []string{
	"github.com/aws/", "cloud.google.com/go/storage", "google.golang.org/api/",
	"github.com/Azure/", "gocloud.dev/",
}

// fileIO are the os functions that read or write files; outside backend/local
// (data) and the CLI (user input files) the engine reaches storage only
// through a StorageAdapter.
var fileIO = map[string]bool{
	"Create": true, "CreateTemp": true, "Open": true, "OpenFile": true, "ReadFile": true,
	"WriteFile": true, "Mkdir": true, "MkdirAll": true, "MkdirTemp": true, "Remove": true,
	"RemoveAll": true, "Rename": true, "Link": true, "ReadDir": true, "Truncate": true,
}

func fileIOAllowed(pkg string) bool {
	return pkg == "backend/local" || strings.HasPrefix(pkg, "cmd/") || strings.HasPrefix(pkg, "internal/") ||
		pkg == "conformance" // the meta-test's child processes
}

func matches(rule, pkg string) bool {
	if rule == "..." {
		return true
	}
	if p, ok := strings.CutSuffix(rule, "/..."); ok {
		return strings.HasPrefix(pkg, p+"/")
	}
	return rule == pkg
}

// operation reports whether pkg is an operation package under graph/.
func operation(pkg string) bool {
	return strings.HasPrefix(pkg, "graph/") && !core[pkg] && pkg != shared
}

type file struct {
	pkg  string
	path string
	ast  *ast.File
}

// sources parses every non-test Go file of the module (the bench module and
// testdata excluded).
func sources(t *testing.T) []file {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var out []file
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "bin") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil && rel != "." {
				return filepath.SkipDir // another module (bench/query)
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		out = append(out, file{pkg: filepath.ToSlash(filepath.Dir(rel)), path: filepath.ToSlash(rel), ast: f})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 50 {
		t.Fatalf("found only %d source files under %s: the walk is wrong", len(out), root)
	}
	return out
}

func imports(f *ast.File) []string {
	var out []string
	for _, s := range f.Imports {
		p, _ := strconv.Unquote(s.Path.Value)
		out = append(out, p)
	}
	return out
}

// TestImportsRunDownward pins the rule: a package imports only the layers
// its allowed() rule names, and operation packages under graph/ never import
// each other (they meet through graph and graph/change).
func TestImportsRunDownward(t *testing.T) {
	graph := map[string]map[string]bool{}
	for _, f := range sources(t) {
		if graph[f.pkg] == nil {
			graph[f.pkg] = map[string]bool{}
		}
		for _, imp := range imports(f.ast) {
			ours, ok := strings.CutPrefix(imp, module+"/")
			if !ok {
				continue
			}
			graph[f.pkg][ours] = true
			ok = false
			for _, r := range allowed(f.pkg) {
				ok = ok || matches(r, ours)
			}
			if !ok {
				t.Errorf("%s imports %s: %s may import only %v", f.path, ours, f.pkg, allowed(f.pkg))
			}
			if operation(f.pkg) && operation(ours) {
				t.Errorf("%s imports %s: operation packages under graph/ meet only through graph", f.path, ours)
			}
		}
	}
	var lines []string
	for p, imps := range graph {
		var l []string
		for i := range imps {
			l = append(l, i)
		}
		sort.Strings(l)
		lines = append(lines, p+" -> "+strings.Join(l, " "))
	}
	sort.Strings(lines)
	t.Logf("import graph:\n%s", strings.Join(lines, "\n"))
}

// TestCloudSDKsOnlyInBackend pins the rule: only backend/ packages import a
// cloud SDK; everything else sees a store through backend.StorageAdapter.
func TestCloudSDKsOnlyInBackend(t *testing.T) {
	for _, f := range sources(t) {
		if f.pkg == "backend" || strings.HasPrefix(f.pkg, "backend/") {
			continue
		}
		for _, imp := range imports(f.ast) {
			for _, sdk := range cloudSDKs {
				if strings.HasPrefix(imp, sdk) {
					t.Errorf("%s imports the cloud SDK %s: only backend/ may", f.path, imp)
				}
			}
		}
	}
}

// TestNoFileIOOutsideBackend pins the rule: the engine (table, recovery,
// graph/...) calls no os file functions; data reaches storage only through
// a StorageAdapter.
func TestNoFileIOOutsideBackend(t *testing.T) {
	for _, f := range sources(t) {
		if fileIOAllowed(f.pkg) {
			continue
		}
		osName := ""
		for _, s := range f.ast.Imports {
			if p, _ := strconv.Unquote(s.Path.Value); p == "os" {
				osName = "os"
				if s.Name != nil {
					osName = s.Name.Name
				}
			}
		}
		if osName == "" {
			continue
		}
		ast.Inspect(f.ast, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if id, ok := sel.X.(*ast.Ident); ok && id.Name == osName && fileIO[sel.Sel.Name] {
				t.Errorf("%s calls os.%s: only backend/local and the CLI touch files", f.path, sel.Sel.Name)
			}
			return true
		})
	}
}

// TestRulesCatchViolations proves the checks can fail: each rule rejects a
// made-up import that breaks it.
func TestRulesCatchViolations(t *testing.T) {
	cases := []struct{ pkg, imp string }{
		{"table", "graph"},
		{"backend/s3", "table"},
		{"recovery", "graph"},
		{"graph", "graph/write"},
		{"graph/pg", "backend"},
		{"conformance", "table"},
		{"graph/load", "graph/query"},
		{"graph/mutate", "graph/query"},
		{"graph/query", "graph/load"},
		{"graph/change", "graph/load"},
		{"graph/change", "graph/mutate"},
		{"graph", "graph/change"},
		{"graph", "graph/query"},
	}
	for _, c := range cases {
		ok := false
		for _, r := range allowed(c.pkg) {
			ok = ok || matches(r, c.imp)
		}
		if ok {
			t.Errorf("allowed(%q) accepts %q; the rule cannot fail", c.pkg, c.imp)
		}
	}
	if !operation("graph/load") || !operation("graph/merge") || operation("graph/change") || operation("graph/gq") {
		t.Error("operation() misclassifies a graph package")
	}
	if fileIOAllowed("graph") || fileIOAllowed("table") || fileIOAllowed("recovery") {
		t.Error("file I/O rule admits an engine package")
	}
}
