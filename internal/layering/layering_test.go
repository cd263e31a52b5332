// Package layering holds the test that keeps the tree's import direction:
// the layers below are listed once, from the bottom, and a package imports
// only from layers below its own (or, inside a family, from its own
// folder). Cloud SDKs stay in backend/, and only backend/local and the CLI
// touch the filesystem.
package layering

import (
	"fmt"
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

// layer is one level of the tree. A package belongs to the first layer with
// a pattern that matches it (exact, or a folder ending in "/..." that
// matches the folder itself and everything under it).
type layer struct {
	name string
	pkgs []string
	// family: the layer's packages build on each other (an adapter on the
	// backend contract, the vector index on the full-text one's row scan).
	// Without it, packages of one layer never import each other: the graph
	// operations meet only through the core below them.
	family bool
}

// layers is the tree from the bottom. Each package may import any package
// of a lower layer and, in a family, of its own; never one above.
var layers = []layer{
	{name: "leaves (import nothing of the project)", pkgs: []string{"internal/plant", "internal/logtest", "internal/buildinfo", "internal/procinfo", "internal/tools/...", "api"}},
	{name: "storage contract and adapters", pkgs: []string{"backend/..."}, family: true},
	{name: "conformance suite", pkgs: []string{"conformance/..."}, family: true},
	{name: "tables", pkgs: []string{"table"}},
	{name: "graph manifest", pkgs: []string{"manifest"}},
	{name: "recovery and the cluster lock", pkgs: []string{"recovery", "clusterlock"}},
	{name: "test environment", pkgs: []string{"internal/testenv"}},
	{name: "text analysis", pkgs: []string{"text"}},
	{name: "languages", pkgs: []string{"lang/..."}, family: true},
	{name: "search indexes and embedders", pkgs: []string{"index/..."}, family: true},
	{name: "graph core", pkgs: []string{"graph"}},
	{name: "change set", pkgs: []string{"graph/change"}},
	{name: "entity diff", pkgs: []string{"graph/diff"}},
	{name: "graph operations", pkgs: []string{"graph/..."}},
	{name: "server", pkgs: []string{"server/..."}, family: true},
	{name: "Go client of the HTTP API (imports only api)", pkgs: []string{"client/..."}, family: true},
	{name: "CLI", pkgs: []string{"cmd/..."}},
	{name: "simulation (tests only)", pkgs: []string{"sim"}},
}

// layerOf returns the index of pkg's layer, or -1 when no layer holds it.
func layerOf(pkg string) int {
	for i, l := range layers {
		for _, p := range l.pkgs {
			if matches(p, pkg) {
				return i
			}
		}
	}
	return -1
}

func matches(pattern, pkg string) bool {
	if dir, ok := strings.CutSuffix(pattern, "/..."); ok {
		return pkg == dir || strings.HasPrefix(pkg, dir+"/")
	}
	return pattern == pkg
}

// verdict says why pkg may not import imp, or "" when it may.
func verdict(pkg, imp string) string {
	from, to := layerOf(pkg), layerOf(imp)
	switch {
	case from < 0:
		return fmt.Sprintf("%s is in no layer: add it to layers in internal/layering", pkg)
	case to < 0:
		return fmt.Sprintf("%s is in no layer: add it to layers in internal/layering", imp)
	case to > from:
		return fmt.Sprintf("runs up: %s (%s) is above %s (%s)", imp, layers[to].name, pkg, layers[from].name)
	case to == from && !layers[from].family:
		return fmt.Sprintf("runs sideways: %s and %s are both %s, which meet only through a lower layer", pkg, imp, layers[from].name)
	}
	return ""
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

// violations checks every project import of files against the layers and
// names the file of each one that breaks them.
func violations(files []file) []string {
	var out []string
	for _, f := range files {
		for _, imp := range imports(f.ast) {
			ours, ok := strings.CutPrefix(imp, module+"/")
			if !ok {
				continue
			}
			if why := verdict(f.pkg, ours); why != "" {
				out = append(out, fmt.Sprintf("%s imports %s: %s", f.path, ours, why))
			}
		}
	}
	return out
}

// importGraph is the direct project imports of each package.
func importGraph(files []file) map[string]map[string]bool {
	g := map[string]map[string]bool{}
	for _, f := range files {
		if g[f.pkg] == nil {
			g[f.pkg] = map[string]bool{}
		}
		for _, imp := range imports(f.ast) {
			if ours, ok := strings.CutPrefix(imp, module+"/"); ok {
				g[f.pkg][ours] = true
			}
		}
	}
	return g
}

// TestImportsRunDownward pins the rule: every import of a package runs to a
// lower layer (or inside a family), never up or sideways.
func TestImportsRunDownward(t *testing.T) {
	files := sources(t)
	for _, v := range violations(files) {
		t.Error(v)
	}
	var lines []string
	for p, imps := range importGraph(files) {
		var l []string
		for i := range imps {
			l = append(l, i)
		}
		sort.Strings(l)
		lines = append(lines, fmt.Sprintf("[%d] %s -> %s", layerOf(p), p, strings.Join(l, " ")))
	}
	sort.Strings(lines)
	t.Logf("import graph:\n%s", strings.Join(lines, "\n"))
}

// TestLowerLayersNeverReachGraph: what the storage, table, recovery, lock
// and index layers depend on, transitively, holds nothing under graph/; the
// manifest and the languages reach nothing under graph/, server/ or cmd/.
func TestLowerLayersNeverReachGraph(t *testing.T) {
	g := importGraph(sources(t))
	deps := func(root string) map[string]bool {
		seen := map[string]bool{}
		stack := []string{root}
		for len(stack) > 0 {
			p := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			for q := range g[p] {
				if !seen[q] {
					seen[q] = true
					stack = append(stack, q)
				}
			}
		}
		return seen
	}
	cases := []struct {
		roots     []string
		forbidden []string
	}{
		{[]string{"recovery", "index/...", "table", "backend/...", "clusterlock"}, []string{"graph/..."}},
		{[]string{"manifest", "lang/..."}, []string{"graph/...", "server/...", "cmd/..."}},
		// A program that only talks to a server pulls in no engine code.
		{[]string{"client/...", "api"}, []string{"backend/...", "table", "manifest", "recovery", "clusterlock", "text", "lang/...", "index/...", "graph/...", "server/...", "cmd/..."}},
	}
	for _, c := range cases {
		n := 0
		for p := range g {
			root := false
			for _, r := range c.roots {
				root = root || matches(r, p)
			}
			if !root {
				continue
			}
			n++
			for d := range deps(p) {
				for _, f := range c.forbidden {
					if matches(f, d) {
						t.Errorf("%s depends on %s (under %s)", p, d, f)
					}
				}
			}
		}
		if n < len(c.roots) {
			t.Errorf("only %d packages match %v: the walk is wrong", n, c.roots)
		}
	}
}

// TestEveryPackageHasALayer: a new package must be placed in the list, not
// fall through a default.
func TestEveryPackageHasALayer(t *testing.T) {
	for p := range importGraph(sources(t)) {
		if layerOf(p) < 0 {
			t.Errorf("%s is in no layer: add it to layers in internal/layering", p)
		}
	}
}

// TestPlantedSwitchesAreSetOnlyByTests: production code only reads the
// planted-bug switches (plant.On); turning one on (plant.Set) happens in
// _test.go files alone, so a built binary has every switch off.
func TestPlantedSwitchesAreSetOnlyByTests(t *testing.T) {
	for _, f := range sources(t) {
		name := ""
		for _, s := range f.ast.Imports {
			if p, _ := strconv.Unquote(s.Path.Value); p == module+"/internal/plant" {
				name = "plant"
				if s.Name != nil {
					name = s.Name.Name
				}
			}
		}
		if name == "" || f.pkg == "internal/plant" {
			continue
		}
		ast.Inspect(f.ast, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				if id, ok := sel.X.(*ast.Ident); ok && id.Name == name && sel.Sel.Name == "Set" {
					t.Errorf("%s calls plant.Set: only tests may plant a bug", f.path)
				}
			}
			return true
		})
	}
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

// TestRulesCatchViolations proves the check can fail: a planted file in
// each position that breaks the layers is reported, with its path named,
// and the same imports in the right direction are not.
func TestRulesCatchViolations(t *testing.T) {
	bad := []struct{ pkg, imp string }{
		{"table", "graph"},
		{"backend/s3", "table"},
		{"recovery", "graph"},
		{"recovery", "clusterlock"},
		{"manifest", "recovery"},
		{"index/fulltext", "graph/query"},
		{"index/declared", "graph"},
		{"lang/pg", "index/embed"},
		{"index/embed", "graph/query"},
		{"cmd/omnigraph", "sim"},
		{"lang/gq", "index/fulltext"},
		{"text", "lang/pg"},
		{"conformance", "table"},
		{"graph", "graph/change"},
		{"graph", "graph/query"},
		{"graph/change", "graph/load"},
		{"graph/load", "graph/query"},
		{"graph/query", "graph/load"},
		{"graph/merge", "server"},
		{"graph/diff", "graph/merge"},
		{"graph/changes", "graph/merge"},
		{"graph/changes", "graph/export"},
		{"server", "cmd/omnigraph"},
		{"internal/plant", "backend"},
		{"newpkg", "backend"},
	}
	for _, c := range bad {
		f := planted(t, c.pkg, c.imp)
		v := violations([]file{f})
		if len(v) != 1 || !strings.HasPrefix(v[0], f.path+" imports "+c.imp) {
			t.Errorf("planted %s -> %s: got %q, want one violation naming %s", c.pkg, c.imp, v, f.path)
		}
	}
	good := []struct{ pkg, imp string }{
		{"graph", "table"},
		{"graph/query", "graph/change"},
		{"graph/query", "index/fulltext"},
		{"index/vector", "index/fulltext"},
		{"index/declared", "lang/pg"},
		{"lang/gq", "lang/pg"},
		{"lang/pg", "text"},
		{"recovery", "manifest"},
		{"manifest", "internal/plant"},
		{"backend/s3", "backend/internal/cloud"},
		{"server", "graph/query"},
		{"graph/merge", "graph/diff"},
		{"graph/changes", "graph/diff"},
	}
	for _, c := range good {
		if v := violations([]file{planted(t, c.pkg, c.imp)}); len(v) != 0 {
			t.Errorf("%s -> %s runs down, but: %q", c.pkg, c.imp, v)
		}
	}
	if fileIOAllowed("graph") || fileIOAllowed("table") || fileIOAllowed("recovery") || fileIOAllowed("manifest") {
		t.Error("file I/O rule admits an engine package")
	}
}

// planted parses a one-import file of package pkg.
func planted(t *testing.T, pkg, imp string) file {
	t.Helper()
	src := fmt.Sprintf("package p\n\nimport _ %q\n", module+"/"+imp)
	path := pkg + "/planted.go"
	f, err := parser.ParseFile(token.NewFileSet(), path, src, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	return file{pkg: pkg, path: path, ast: f}
}
