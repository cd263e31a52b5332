package ui_test

// The console in a real browser: headless Chromium driven over the
// DevTools protocol (chromedp) against `server.New` serving a real graph
// (examples/social.pg and its data, on a local directory) with bearer
// tokens and a Cedar policy. Every page renders with the graph's data;
// what the pages show is compared with what the HTTP API answers; writes
// made through the console change the graph as the API sees it; a
// read-only token sees no write control and its direct write is 403. Any
// JavaScript exception, console.error or browser error other than an
// expected HTTP status fails the test.
//
// Chromium is the Debian package (scripts/test.sh installs it in CI). The
// test skips only when it is absent outside CI. With
// OMNIGRAPH_CONSOLE_SCREENSHOTS=DIR it writes its screenshots there
// (docs/console/ holds the committed ones); otherwise to a temporary
// directory.

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/omnigraph-go/omnigraph/backend/local"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/load"
	"github.com/omnigraph-go/omnigraph/index/embed"
	"github.com/omnigraph-go/omnigraph/lang/pg"
	"github.com/omnigraph-go/omnigraph/server"
	"github.com/omnigraph-go/omnigraph/server/ui"
)

// chromiumPath finds the browser, or says why the test cannot run.
func chromiumPath(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("chromium is not installed: scripts/test.sh installs it (apt-get install -y chromium); in CI this test must run")
	}
	t.Skip("chromium is not installed (apt-get install -y chromium); skipped outside CI")
	return ""
}

const policy = `
@id("alice-all")
permit (principal == Omnigraph::Actor::"alice", action, resource);
@id("reader-reads")
permit (principal == Omnigraph::Actor::"reader", action in [Omnigraph::Action::"read", Omnigraph::Action::"export"], resource);
`

// fixture is a served graph with two actors.
type fixture struct {
	base    string
	secrets map[string]string
	g       *graph.Graph
	// busy, while above zero, answers that many status requests 429 with
	// Retry-After: 0 (admission full) before they reach the server.
	busy, statusCalls atomic.Int32
}

// newFixture serves the social graph with tokens and a policy, or in
// open mode (no tokens: every request is anonymous and allowed).
func newFixture(t *testing.T, open bool) *fixture {
	t.Helper()
	ctx := context.Background()
	schema, err := os.ReadFile(filepath.Join("..", "..", "examples", "social.pg"))
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join("..", "..", "examples", "social.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	cat, err := pg.Compile(string(schema))
	if err != nil {
		t.Fatal(err)
	}
	spec, err := embed.SpecFromCatalog(cat)
	if err != nil {
		t.Fatal(err)
	}
	var filled bytes.Buffer
	if _, err := embed.FillJSONL(ctx, bytes.NewReader(data), &filled, embed.Job{Spec: spec, Mode: embed.FillMissing}, embed.Builtin{}); err != nil {
		t.Fatal(err)
	}
	store, err := local.New(filepath.Join(t.TempDir(), "g"))
	if err != nil {
		t.Fatal(err)
	}
	g, err := graph.Init(ctx, store, string(schema), graph.InitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := load.Run(ctx, g, &filled, load.Options{Mode: load.Append}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })

	tf := &server.TokensFile{Version: server.TokensFormat}
	secrets := map[string]string{}
	for _, a := range []string{"alice", "reader"} {
		s, err := tf.Add(a, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		secrets[a] = s
	}
	pf, err := server.ParseTokens(tf.Encode())
	if err != nil {
		t.Fatal(err)
	}
	pol, err := server.ParsePolicy("console-test", []byte(policy))
	if err != nil {
		t.Fatal(err)
	}
	cfg := server.Config{
		Graphs:       []server.Graph{{ID: "social", G: g, StorageKind: "file"}},
		Tokens:       server.NewTokens(pf),
		Policy:       pol,
		Version:      "console-test",
		UI:           true,
		AutoOptimize: true,
	}
	if open {
		cfg.Tokens, cfg.Policy = nil, nil
	}
	s, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{secrets: secrets, g: g}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/graphs/social/status" {
			f.statusCalls.Add(1)
			if f.busy.Add(-1) >= 0 {
				w.Header().Set("Retry-After", "0")
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusTooManyRequests)
				io.WriteString(w, `{"error":"too many requests in flight; retry after 0 s","code":"too_many_requests"}`)
				return
			}
			f.busy.Store(0)
		}
		s.Handler().ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		hs.Close()
		s.Close()
	})
	f.base = hs.URL
	return f
}

// api calls the HTTP API as actor and decodes the JSON answer.
func (f *fixture) api(t *testing.T, actor, method, path, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, f.base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+f.secrets[actor])
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s %s: %d %q", method, path, resp.StatusCode, b)
	}
	return resp.StatusCode, m
}

func (f *fixture) mustAPI(t *testing.T, method, path, body string) map[string]any {
	t.Helper()
	st, m := f.api(t, "alice", method, path, body)
	if st != 200 {
		t.Fatalf("%s %s: %d %v", method, path, st, m)
	}
	return m
}

// browser is one headless Chromium with a page, recording every error it
// reports.
type browser struct {
	ctx  context.Context
	base string
	shot string // screenshot directory

	mu       sync.Mutex
	problems []string
	// allowed are expected HTTP statuses the browser logs as errors
	// (a 401 before sign-in, a 403 or 409 the test provokes).
	allowed []string
}

type step = chromedp.Action[chromedp.Void]

func newBrowser(t *testing.T, base string) *browser {
	t.Helper()
	exe := chromiumPath(t)
	shots := os.Getenv("OMNIGRAPH_CONSOLE_SCREENSHOTS")
	if shots == "" {
		shots = t.TempDir()
	} else if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.WindowSize(1280, 800),
	)
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelC := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancelC()
		cancelA()
	})
	// The first run starts the browser; it must not carry a timeout.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	b := &browser{ctx: ctx, base: base, shot: shots}
	msgs := chromedp.Console(ctx)
	go func() {
		for m, err := range msgs {
			if err != nil {
				return
			}
			switch {
			case m.IsException():
				b.problem("exception: " + m.Text)
			case m.Type == chromedp.ConsoleError:
				b.problem(fmt.Sprintf("console error [%s]: %s (%s)", m.Source, m.Text, m.URL))
			}
		}
	}()
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 800)); err != nil {
		t.Fatal(err)
	}
	return b
}

func (b *browser) problem(s string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, a := range b.allowed {
		if strings.Contains(s, a) {
			return
		}
	}
	b.problems = append(b.problems, s)
}

// expect allows browser error lines containing s (an HTTP status the
// step provokes) until the returned function is called.
func (b *browser) expect(s string) func() {
	b.mu.Lock()
	b.allowed = append(b.allowed, s)
	b.mu.Unlock()
	return func() {
		// Console messages arrive on their own goroutine: give the ones
		// of the step a moment before the allowance ends.
		time.Sleep(100 * time.Millisecond)
		b.mu.Lock()
		defer b.mu.Unlock()
		for i, a := range b.allowed {
			if a == s {
				b.allowed = append(b.allowed[:i], b.allowed[i+1:]...)
				return
			}
		}
	}
}

// clean fails the test on any error the browser reported so far.
func (b *browser) clean(t *testing.T, what string) {
	t.Helper()
	b.mu.Lock()
	ps := b.problems
	b.problems = nil
	b.mu.Unlock()
	if len(ps) > 0 {
		t.Fatalf("%s: the browser reported errors:\n  %s", what, strings.Join(ps, "\n  "))
	}
}

func (b *browser) fail(t *testing.T, what string, err error) {
	t.Helper()
	html, _ := chromedp.Run(b.ctx, chromedp.OuterHTML(chromedp.CSS("main")))
	if len(html) > 3000 {
		html = html[:3000] + "…"
	}
	b.clean(t, what)
	t.Fatalf("%s: %v\npage: %s", what, err, html)
}

func (b *browser) run(t *testing.T, what string, steps ...step) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.fail(t, what, err)
	}
	b.clean(t, what)
}

// eval runs JavaScript (awaiting a promise) and decodes its value.
func eval[T any](t *testing.T, b *browser, what, js string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js, chromedp.EvalAwaitPromise))
	if err != nil {
		b.fail(t, what, err)
	}
	b.clean(t, what)
	return v
}

// js runs JavaScript for its effect.
func js(expr string) step {
	return chromedp.Evaluate[chromedp.Void]("void (" + expr + ")")
}

// submit submits a form as a user does (its submit event runs; a
// form's native submission is refused by the console's CSP).
func submit(sel string) step {
	return js(`document.querySelector(` + jsString(sel) + `).requestSubmit()`)
}

// until waits for a JavaScript condition to hold.
func until(expr string) step {
	return chromedp.Poll[chromedp.Void]("!!("+expr+")", chromedp.WithPollingTimeout(20*time.Second))
}

func (b *browser) open(t *testing.T, path, ready string) {
	t.Helper()
	b.run(t, "open "+path, chromedp.Navigate(b.base+path), chromedp.WaitVisible(chromedp.CSS(ready)))
}

// openAt is open on another server.
func (b *browser) openAt(t *testing.T, base, path, ready string) {
	t.Helper()
	b.run(t, "open "+base+path, chromedp.Navigate(base+path), chromedp.WaitVisible(chromedp.CSS(ready)))
}

// screenshot saves the viewport as name.png, scrolled to show the
// element sel at the top when given.
func (b *browser) screenshot(t *testing.T, name string, sel ...string) {
	t.Helper()
	if len(sel) > 0 {
		b.run(t, "scroll to "+sel[0], js(`document.querySelector(`+jsString(sel[0])+`).scrollIntoView({block: 'start'})`))
	}
	b.run(t, "settle", chromedp.Sleep(150*time.Millisecond))
	png, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		b.fail(t, "screenshot "+name, err)
	}
	if err := os.WriteFile(filepath.Join(b.shot, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// accessible checks the page's basics: every visible form control and
// button has an accessible name, the page has one h1, and nothing
// overflows the viewport's width.
func (b *browser) accessible(t *testing.T, page string) {
	t.Helper()
	bad := eval[[]string](t, b, "accessibility of "+page, `(() => {
	  const out = [];
	  const name = (el) => (el.getAttribute('aria-label') || (el.labels && Array.from(el.labels).map(l => l.textContent).join(' ')) || el.textContent || el.title || '').trim();
	  for (const el of document.querySelectorAll('input:not([type=hidden]), select, textarea, button')) {
	    if (el.closest('[hidden]') || el.offsetParent === null) continue;
	    if (!name(el)) out.push(el.outerHTML.slice(0, 120));
	  }
	  if (document.querySelectorAll('h1').length !== 1) out.push('h1 count ' + document.querySelectorAll('h1').length);
	  // Text contrast (WCAG AA: 4.5:1, 3:1 for large text) against the
	  // first opaque background behind it; disabled controls are exempt.
	  const rgb = (c) => { const m = c.match(/[\d.]+/g) || []; return m.map(Number); };
	  const lum = ([r, g, b]) => { const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); }; return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b); };
	  const bg = (el) => { for (let e = el; e; e = e.parentElement) { const c = rgb(getComputedStyle(e).backgroundColor); if (c.length >= 3 && (c.length < 4 || c[3] > 0.9)) return c; } return [255, 255, 255]; };
	  let low = 0;
	  for (const el of document.querySelectorAll('body *')) {
	    if (el.offsetParent === null || el.closest('canvas, .CodeMirror-gutters, [disabled], [aria-hidden=true]')) continue;
	    if (!Array.from(el.childNodes).some(n => n.nodeType === 3 && n.textContent.trim())) continue;
	    const st = getComputedStyle(el);
	    const fg = rgb(st.color);
	    const a = lum(fg), b = lum(bg(el));
	    const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
	    const large = parseFloat(st.fontSize) >= 24 || (parseFloat(st.fontSize) >= 18.66 && parseInt(st.fontWeight) >= 700);
	    if (ratio < (large ? 3 : 4.5) && low++ < 5) out.push('contrast ' + ratio.toFixed(2) + ':1 of "' + el.textContent.trim().slice(0, 40) + '" (' + st.color + ' on ' + bg(el).join(',') + ')');
	  }
	  if (document.documentElement.scrollWidth > window.innerWidth + 1) out.push('page wider than the viewport: ' + document.documentElement.scrollWidth + ' > ' + window.innerWidth);
	  return out;
	})()`)
	if len(bad) > 0 {
		t.Errorf("%s: accessibility basics fail:\n  %s", page, strings.Join(bad, "\n  "))
	}
}

func text(t *testing.T, b *browser, sel string) string {
	t.Helper()
	s := eval[string](t, b, "read "+sel, `(() => { const e = document.querySelector(`+jsString(sel)+`); return e ? e.textContent : '(missing ' + `+jsString(sel)+` + ')' })()`)
	return strings.Join(strings.Fields(s), " ")
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// typeQuery replaces the editor's text by typing src into it: key by
// key, with each line break inserted as text (a typed Enter would also
// auto-indent the next line).
func (b *browser) typeQuery(t *testing.T, src string) {
	t.Helper()
	steps := []step{
		chromedp.WaitVisible(chromedp.CSS(".CodeMirror")),
		js(`document.querySelector('.CodeMirror').CodeMirror.setValue('')`),
		chromedp.Focus(chromedp.ID("gq-input")),
	}
	for i, line := range strings.Split(src, "\n") {
		if i > 0 {
			steps = append(steps, chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
				_, err := chromedp.Call(ctx, input.InsertText, input.InsertTextParams{Text: "\n"})
				return err
			}))
		}
		if line != "" {
			steps = append(steps, chromedp.SendKeys(chromedp.ID("gq-input"), line))
		}
	}
	steps = append(steps, until(`document.querySelector('.CodeMirror').CodeMirror.getValue() === `+jsString(src)))
	b.run(t, "type a query", steps...)
}

// tableRows reads a table's body as cell texts.
func (b *browser) tableRows(t *testing.T, sel string) [][]string {
	t.Helper()
	return eval[[][]string](t, b, "read table "+sel, `Array.from(document.querySelectorAll(`+jsString(sel+" tbody tr")+`)).map(tr => Array.from(tr.children).map(td => td.textContent.trim()))`)
}

// tableValues reads a result table's body as values: a whole-node cell
// by its full JSON (its title), any other cell by its text.
func (b *browser) tableValues(t *testing.T, sel string) [][]string {
	t.Helper()
	return eval[[][]string](t, b, "read table "+sel, `Array.from(document.querySelectorAll(`+jsString(sel+" tbody tr")+`)).map(tr => Array.from(tr.children).map(td => td.classList.contains('node-cell') ? td.title : td.textContent.trim()))`)
}

// rows runs a query through the API and renders its rows as the
// console's table does: strings as they are, numbers and null as JSON,
// objects and lists as compact JSON in the server's key order.
func (f *fixture) rows(t *testing.T, path, body string) [][]string {
	t.Helper()
	req, _ := http.NewRequest("POST", f.base+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+f.secrets["alice"])
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Columns []string                     `json:"columns"`
		Rows    []map[string]json.RawMessage `json:"rows"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != 200 {
		t.Fatalf("query: %d %v", resp.StatusCode, err)
	}
	var rows [][]string
	for _, r := range out.Rows {
		var row []string
		for _, c := range out.Columns {
			raw := r[c]
			var s string
			if json.Unmarshal(raw, &s) == nil {
				row = append(row, s)
				continue
			}
			var buf bytes.Buffer
			json.Compact(&buf, raw)
			row = append(row, buf.String())
		}
		rows = append(rows, row)
	}
	return rows
}

// cell renders an API value as the console's table does.
func cell(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return x
	case map[string]any, []any:
		b, _ := json.Marshal(x)
		return string(b)
	}
	return fmt.Sprint(v)
}

func TestConsoleInBrowser(t *testing.T) {
	f := newFixture(t, false)
	b := newBrowser(t, f.base)
	g := "/graphs/social"

	// Sign in: the first data call is 401 and the login form appears.
	done := b.expect("401")
	b.open(t, "/ui/", "#login-form")
	b.screenshot(t, "login")
	b.run(t, "sign in as alice",
		chromedp.SendKeys(chromedp.ID("login-token"), f.secrets["alice"]),
		submit("#login-form"),
		chromedp.WaitVisible(chromedp.ID("types-table")))
	done()
	tokenStored := eval[string](t, b, "token storage", `sessionStorage.getItem('omnigraph.console.token')`)
	cookies := eval[string](t, b, "cookies", `document.cookie`)
	if tokenStored != f.secrets["alice"] || cookies != "" {
		t.Fatalf("token kept as %q (want the secret in sessionStorage), cookies %q (want none)", tokenStored, cookies)
	}

	t.Run("overview", func(t *testing.T) {
		b.open(t, "/ui/social/", "#types-table")
		b.run(t, "schema graph", until(`document.querySelector('#schema-graph').cy && document.querySelector('#schema-graph').cy.nodes().length > 0`))
		cat := f.mustAPI(t, "GET", g+"/catalog", "")
		want := map[string]string{}
		for _, kind := range []string{"nodes", "edges"} {
			for _, x := range cat[kind].([]any) {
				m := x.(map[string]any)
				want[m["name"].(string)] = cell(m["rows"])
			}
		}
		got := eval[map[string]string](t, b, "type rows", `Object.fromEntries(Array.from(document.querySelectorAll('#types-table tbody tr')).map(tr => [tr.dataset.type, tr.querySelector('td.rows').textContent]))`)
		if fmt.Sprint(got) != fmt.Sprint(want) || len(want) < 8 || want["Person"] == "0" {
			t.Fatalf("types table rows %v, the API's catalog %v", got, want)
		}
		drawn := eval[int](t, b, "schema nodes", `document.querySelector('#schema-graph').cy.nodes().length + document.querySelector('#schema-graph').cy.edges().length`)
		if drawn != len(want) {
			t.Fatalf("the schema graph draws %d types, the catalog has %d", drawn, len(want))
		}
		st := f.mustAPI(t, "GET", g+"/status", "")
		if got := text(t, b, "#storage-kind"); got != "file" || st["storage_kind"] != "file" {
			t.Fatalf("storage kind %q, API %v", got, st["storage_kind"])
		}
		if got := text(t, b, "#recovery-state"); !strings.Contains(got, "Clean") {
			t.Fatalf("recovery state %q", got)
		}
		if got := text(t, b, "#lock-holder"); !strings.Contains(got, "Free") {
			t.Fatalf("lock %q (an in-process test server holds no lock)", got)
		}
		if got := text(t, b, "#compaction-state"); !strings.HasPrefix(got, "On") {
			t.Fatalf("compaction %q", got)
		}
		b.run(t, "hover a type", js(`document.querySelector('#schema-graph').cy.$id('n:Person').emit('mouseover')`),
			chromedp.WaitVisible(chromedp.CSS("#type-detail ul.props")))
		if got := text(t, b, "#type-detail"); !strings.Contains(got, "handle") || !strings.Contains(got, "key") {
			t.Fatalf("type detail %q", got)
		}
		b.accessible(t, "overview")
		b.screenshot(t, "overview")
		// A load from the console: one new topic on main.
		batch := filepath.Join(t.TempDir(), "topics.jsonl")
		if err := os.WriteFile(batch, []byte(`{"type":"Topic","data":{"slug":"consoles","title":"Consoles"}}`+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		b.run(t, "load", chromedp.SetUploadFiles(chromedp.ID("load-file"), []string{batch}), submit("#load-form"),
			until(`document.querySelector('#load-form [role=status]').textContent.includes('Loaded 1 nodes')`))
		if m := f.mustAPI(t, "POST", g+"/query", `{"query":"query q() { match { $t: Topic { slug: \"consoles\" } } return { $t.title } }"}`); fmt.Sprint(m["rows"]) != "[map[t.title:Consoles]]" {
			t.Fatalf("the console's load: %v", m["rows"])
		}
	})

	t.Run("query", func(t *testing.T) {
		src := "query by_city($city: String) {\n  match {\n    $p: Person { city: $city }\n    $p knows $f\n  }\n  return { $p, $f, $p.name as name }\n  order { name }\n}"
		b.open(t, "/ui/social/query", ".CodeMirror")
		b.typeQuery(t, src)
		b.run(t, "checked", until(`document.querySelector('#check-status').textContent.includes('No type errors') && document.querySelector('#param-city')`))
		b.run(t, "run it", chromedp.SendKeys(chromedp.ID("param-city"), "Berlin"), chromedp.Click(chromedp.ID("run")),
			chromedp.WaitVisible(chromedp.CSS("#results table.data")))
		body, _ := json.Marshal(map[string]any{"query": src, "params": map[string]any{"city": "Berlin"}})
		want := f.rows(t, g+"/query", string(body))
		got := b.tableValues(t, "#results")
		if len(want) == 0 || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("the console shows rows\n%v\nthe API answers\n%v", got, want)
		}
		// A whole node reads as its type, its caption (the name) and its
		// properties, not as JSON text.
		res := f.mustAPI(t, "POST", g+"/query", string(body))
		p0 := res["rows"].([]any)[0].(map[string]any)["p"].(map[string]any)
		nodeText := text(t, b, "#results tbody tr:first-child td.node-cell")
		if strings.Contains(nodeText, "{") || !strings.HasPrefix(nodeText, "Person "+p0["name"].(string)+" "+p0["handle"].(string)) || !strings.Contains(nodeText, "city: Berlin") {
			t.Fatalf("the first node cell reads %q; the API's node is %v", nodeText, p0)
		}
		// Sort by name descending: the rows reverse (names are distinct
		// per row pair? sort is stable on the rest).
		b.run(t, "sort", chromedp.Click(chromedp.CSS(`#results th:nth-child(3) button`)), chromedp.Click(chromedp.CSS(`#results th:nth-child(3) button`)))
		sorted := b.tableRows(t, "#results")
		if sorted[0][2] < sorted[len(sorted)-1][2] {
			t.Fatalf("descending sort by name: first %q, last %q", sorted[0][2], sorted[len(sorted)-1][2])
		}
		b.screenshot(t, "query")
		// The graph view, then a neighbour expansion of one node.
		b.run(t, "graph view", chromedp.Click(chromedp.ID("tab-graph")),
			until(`(() => { const c = document.querySelector('#panel-graph .graph-canvas'); return c && c.cy && c.cy.nodes().length > 0 })()`))
		before := eval[int](t, b, "nodes", `document.querySelector('#panel-graph .graph-canvas').cy.nodes().length`)
		// Click a node: the property panel shows every property the API
		// has for it; the node's caption is its name.
		bob := f.mustAPI(t, "POST", g+"/query", `{"query":"query q() { match { $p: Person { handle: \"bob\" } } return { $p } }"}`)["rows"].([]any)[0].(map[string]any)["p"].(map[string]any)
		b.run(t, "select bob", js(`document.querySelector('#panel-graph .graph-canvas').cy.$id('Person:bob').emit('tap')`),
			chromedp.WaitVisible(chromedp.ID("node-props")))
		shown := eval[map[string]string](t, b, "property panel", `Object.fromEntries(Array.from(document.querySelectorAll('#node-props dd')).map(dd => [dd.dataset.prop, dd.title || dd.textContent]))`)
		for k, v := range bob {
			if want := cell(v); shown[k] != want && !(k == "id" && shown[k] == fmt.Sprint(v)) {
				t.Fatalf("the property panel shows %s = %q, the API %q (panel %v)", k, shown[k], want, shown)
			}
		}
		if len(shown) != len(bob) {
			t.Fatalf("the property panel shows %d properties, the API's node has %d: %v", len(shown), len(bob), shown)
		}
		if l := eval[string](t, b, "caption", `document.querySelector('#panel-graph .graph-canvas').cy.$id('Person:bob').data('label')`); l != bob["name"] {
			t.Fatalf("bob is captioned %q, want his name %q", l, bob["name"])
		}
		b.screenshot(t, "query-node-panel", "#results")
		// A caption per type: Person by handle.
		b.run(t, "caption by handle", chromedp.SetValue(chromedp.CSS(`#captions select[data-type="Person"]`), "handle"),
			js(`document.querySelector('#captions select[data-type="Person"]').dispatchEvent(new Event('change'))`))
		if l := eval[string](t, b, "caption", `document.querySelector('#panel-graph .graph-canvas').cy.$id('Person:bob').data('label')`); l != "bob" {
			t.Fatalf("captioned by handle, bob shows %q", l)
		}
		b.run(t, "expand", chromedp.Click(chromedp.ID("node-expand")),
			until(`document.querySelector('#panel-graph p.muted').textContent.includes('bob:')`))
		after := eval[int](t, b, "nodes after", `document.querySelector('#panel-graph .graph-canvas').cy.nodes().length`)
		nb := f.mustAPI(t, "POST", g+"/query", `{"query":"query q() { match { $a: Person { handle: \"bob\" } $a worksAt $c } return { $c } }"}`)
		if after <= before || nb["row_count"].(float64) > 0 && after < before+1 {
			t.Fatalf("expanding bob: %d nodes before, %d after", before, after)
		}
		b.screenshot(t, "query-graph", "#results")
		b.run(t, "plan", chromedp.Click(chromedp.ID("tab-plan")), chromedp.WaitVisible(chromedp.ID("plan")))
		plan := text(t, b, "#plan")
		if !strings.Contains(plan, "query by_city") || !strings.Contains(plan, "read") {
			t.Fatalf("plan %q", plan)
		}
		// Explain shows the same plan without running the query.
		b.run(t, "explain", chromedp.Click(chromedp.ID("explain")), until(`document.querySelector('#plan-title')`))
		if p := text(t, b, "#plan"); p != plan {
			t.Fatalf("explain shows %q, the result's plan is %q", p, plan)
		}
		b.accessible(t, "query")
		// Keyboard: Tab leaves the editor (no trap); Ctrl+Enter runs.
		b.run(t, "tab out of the editor", chromedp.Focus(chromedp.ID("gq-input")), chromedp.KeyEvent("\t"),
			until(`document.activeElement && document.activeElement.id !== 'gq-input'`))
		// Paging, and the CSV download against the API's rows.
		all := "query knows() {\n  match { $a: Person  $a knows $b }\n  return { $a.handle as a, $b.handle as b }\n  order { a, b }\n}"
		b.typeQuery(t, all)
		b.run(t, "run with ctrl+enter", until(`document.querySelector('#check-status').textContent.includes('No type errors')`),
			chromedp.Focus(chromedp.ID("gq-input")), chromedp.KeyEvent("\r", chromedp.KeyModifiers(chromedp.ModifierCtrl)),
			until(`document.querySelector('#results caption') && document.querySelector('#results caption').textContent.includes('of knows')`))
		body, _ = json.Marshal(map[string]any{"query": all})
		allRows := f.rows(t, g+"/query", string(body))
		if len(allRows) <= 50 {
			t.Fatalf("want more than a page of rows, the API has %d", len(allRows))
		}
		if n := len(b.tableRows(t, "#results")); n != 50 {
			t.Fatalf("page 1 shows %d rows", n)
		}
		b.run(t, "next page", chromedp.Click(chromedp.CSS("#results .toolbar button:nth-of-type(2)")),
			until(`document.querySelector('#results .toolbar span').textContent.startsWith('Rows 51')`))
		if rows := b.tableRows(t, "#results"); fmt.Sprint(rows) != fmt.Sprint(allRows[50:min(100, len(allRows))]) {
			t.Fatalf("page 2 shows %v, the API's rows 51.. are %v", rows, allRows[50:])
		}
		dl := t.TempDir()
		b.run(t, "download", chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
			_, err := chromedp.CallBrowser(ctx, cdpbrowser.SetDownloadBehavior, cdpbrowser.SetDownloadBehaviorParams{Behavior: cdpbrowser.SetDownloadBehaviorBehaviorAllow, DownloadPath: dl})
			return err
		}), chromedp.Click(chromedp.CSS(`#results .toolbar button:nth-last-of-type(2)`)))
		var file []byte
		for i := 0; i < 100 && file == nil; i++ {
			if b, err := os.ReadFile(filepath.Join(dl, "knows.csv")); err == nil && len(b) > 0 {
				file = b
			} else {
				time.Sleep(50 * time.Millisecond)
			}
		}
		recs, err := csv.NewReader(bytes.NewReader(file)).ReadAll()
		if err != nil || len(recs) != len(allRows)+1 || fmt.Sprint(recs[0]) != "[a b]" || fmt.Sprint(recs[1:]) != fmt.Sprint(allRows) {
			t.Fatalf("downloaded CSV (%v): %d records; the API has %d rows", err, len(recs), len(allRows))
		}
		// The run is remembered.
		if r := text(t, b, "#recent"); !strings.Contains(r, "by_city") || !strings.Contains(r, "knows") {
			t.Fatalf("recent queries %q", r)
		}
	})

	t.Run("type error at its position", func(t *testing.T) {
		b.open(t, "/ui/social/query", ".CodeMirror")
		b.typeQuery(t, "query q() {\n  match { $p: Person }\n  return { $p.nme }\n}")
		b.run(t, "error shown", until(`document.querySelector('#check-errors li')`), until(`document.querySelector('.CodeMirror-lint-mark-error')`))
		pos := eval[[]string](t, b, "error position", `[document.querySelector('#check-errors li').dataset.line, document.querySelector('#check-errors li').dataset.column, Array.from(document.querySelectorAll('.CodeMirror-lint-mark-error')).map(e => e.textContent).join('')]`)
		// The API's check says where the error is.
		chk := f.mustAPI(t, "POST", g+"/query/check", `{"query":"query q() {\n  match { $p: Person }\n  return { $p.nme }\n}"}`)
		e0 := chk["errors"].([]any)[0].(map[string]any)
		if fmt.Sprint(pos) != fmt.Sprintf("[%v %v $p.nme]", e0["line"], e0["column"]) || e0["line"] != 3.0 || e0["code"] != "GQ011" {
			t.Fatalf("the console marks %v; the check route says %v", pos, e0)
		}
		if li := text(t, b, "#check-errors li"); !strings.Contains(li, "GQ011 at 3:") || !strings.Contains(li, "did you mean name") {
			t.Fatalf("error list %q", li)
		}
		b.screenshot(t, "query-error")
	})

	t.Run("run disabled while errors or required parameters remain", func(t *testing.T) {
		// Three type errors (a filter, and two return items after the
		// failed match): all three listed, Run off with the reason.
		src := "query bad($c: String) {\n  match { $p: Person { city: $c }  $p.age > \"x\" }\n  return { $p.nme, $p.zz }\n}"
		b.open(t, "/ui/social/query", ".CodeMirror")
		b.typeQuery(t, src)
		b.run(t, "errors listed", until(`document.querySelectorAll('#check-errors li.check-error').length >= 3`))
		body, _ := json.Marshal(map[string]string{"query": src})
		chk := f.mustAPI(t, "POST", g+"/query/check", string(body))
		got := eval[[]string](t, b, "errors", `Array.from(document.querySelectorAll('#check-errors li.check-error')).map(li => li.dataset.code + ' ' + li.dataset.line + ':' + li.dataset.column)`)
		var want []string
		for _, e := range chk["errors"].([]any) {
			m := e.(map[string]any)
			want = append(want, fmt.Sprintf("%v %v:%v", m["code"], m["line"], m["column"]))
		}
		if len(want) != 3 || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("the console lists %v; the check route %v (want 3)", got, want)
		}
		if marks := eval[int](t, b, "marks", `document.querySelectorAll('.CodeMirror-lint-marker-error').length`); marks < 2 {
			t.Fatalf("%d gutter markers for 3 errors on 2 lines", marks)
		}
		st := eval[[]any](t, b, "run state", `[document.querySelector('#run').disabled, document.querySelector('#run-note').textContent]`)
		if st[0] != true || !strings.Contains(st[1].(string), "3 type errors") {
			t.Fatalf("with 3 errors Run is %v (disabled?) with note %q", st[0], st[1])
		}
		b.screenshot(t, "query-errors")
		// Ctrl+Enter sends nothing either.
		b.run(t, "ctrl+enter with errors", chromedp.Focus(chromedp.ID("gq-input")), chromedp.KeyEvent("\r", chromedp.KeyModifiers(chromedp.ModifierCtrl)),
			until(`document.querySelector('#results .error')`))
		// A sound query with a required parameter: Run is off until it has a value.
		b.typeQuery(t, "query by_city($city: String, $min: I32?) {\n  match { $p: Person { city: $city } }\n  return { $p.name }\n}")
		b.run(t, "checked", until(`document.querySelector('#check-status').textContent.includes('No type errors') && document.querySelector('#param-city')`))
		st = eval[[]any](t, b, "run state", `[document.querySelector('#run').disabled, document.querySelector('#run-note').textContent]`)
		if st[0] != true || !strings.Contains(st[1].(string), "$city") || strings.Contains(st[1].(string), "$min") {
			t.Fatalf("with $city empty Run is %v (disabled?) with note %q", st[0], st[1])
		}
		b.run(t, "fill the parameter", chromedp.SendKeys(chromedp.ID("param-city"), "Berlin"), until(`!document.querySelector('#run').disabled`),
			chromedp.Click(chromedp.ID("run")), chromedp.WaitVisible(chromedp.CSS("#results table.data")))
		if n := text(t, b, "#run-note"); n != "" {
			t.Fatalf("run note %q once the query can run", n)
		}
	})

	t.Run("lint warning listed, not an error", func(t *testing.T) {
		// A mutation without parameters: omnigraph lint's warning L202.
		src := "mutation wipe() {\n  delete Person where handle = \"nobody\"\n}"
		b.open(t, "/ui/social/query", ".CodeMirror")
		b.typeQuery(t, src)
		b.run(t, "warning shown", until(`document.querySelector('#check-errors li.check-warning')`), until(`document.querySelector('.CodeMirror-lint-mark-warning')`))
		got := eval[[]string](t, b, "warning", `[document.querySelector('#check-status').textContent, ...Array.from(document.querySelectorAll('#check-errors li')).map(li => li.dataset.code + ' ' + li.dataset.line + ':' + li.dataset.column)]`)
		body, _ := json.Marshal(map[string]string{"query": src})
		chk := f.mustAPI(t, "POST", g+"/query/check", string(body))
		w0 := chk["warnings"].([]any)[0].(map[string]any)
		if fmt.Sprint(got) != fmt.Sprintf("[✓ No type errors · 1 warning L202 %v:%v]", w0["line"], w0["column"]) || chk["ok"] != true || len(chk["warnings"].([]any)) != 1 {
			t.Fatalf("the console shows %q; the check route says %v", got, chk)
		}
	})

	t.Run("search", func(t *testing.T) {
		b.open(t, "/ui/social/search", "#search-form")
		b.run(t, "bm25 search", chromedp.SetValue(chromedp.ID("search-mode"), "bm25"),
			js(`document.querySelector('#search-mode').dispatchEvent(new Event('change'))`),
			chromedp.SetValue(chromedp.ID("search-type"), "Post"),
			js(`document.querySelector('#search-type').dispatchEvent(new Event('change'))`),
			chromedp.SendKeys(chromedp.ID("search-text"), "graph"),
			submit("#search-form"),
			chromedp.WaitVisible(chromedp.CSS("#search-results table.data")))
		src := text(t, b, "#search-source")
		body, _ := json.Marshal(map[string]any{"query": src, "params": map[string]any{"q": "graph"}})
		res := f.mustAPI(t, "POST", g+"/query", string(body))
		rows := b.tableRows(t, "#search-results")
		if res["row_count"].(float64) == 0 || len(rows) != int(res["row_count"].(float64)) || !strings.Contains(src, "bm25($n.text, $q)") {
			t.Fatalf("search shows %d rows for %q; the API %v", len(rows), src, res["row_count"])
		}
		if c := text(t, b, "#search-results tbody tr:first-child td.node-cell"); !strings.HasPrefix(c, "Post ") || strings.Contains(c, "{") {
			t.Fatalf("a found post reads %q, want its type, caption and properties", c)
		}
		b.accessible(t, "search")
		b.screenshot(t, "search")
		// nearest, with the text embedded through @embed.
		b.run(t, "nearest", chromedp.SetValue(chromedp.ID("search-mode"), "nearest"),
			js(`document.querySelector('#search-mode').dispatchEvent(new Event('change'))`),
			submit("#search-form"),
			until(`document.querySelector('#search-results caption') && document.querySelector('#search-results caption').textContent.includes('by nearest')`))
		if rows := b.tableRows(t, "#search-results"); len(rows) == 0 {
			t.Fatal("nearest found no post")
		}
		// The other functions: each generated query runs and finds rows.
		for _, mode := range []string{"search", "fuzzy", "rrf"} {
			b.run(t, mode, chromedp.SetValue(chromedp.ID("search-mode"), mode),
				js(`document.querySelector('#search-mode').dispatchEvent(new Event('change'))`),
				submit("#search-form"),
				until(`document.querySelector('#search-results caption') && document.querySelector('#search-results caption').textContent.includes('by `+mode+`')`))
			if rows := b.tableRows(t, "#search-results"); len(rows) == 0 {
				t.Fatalf("%s found no post for %q", mode, "graph")
			}
		}
	})

	t.Run("branch create, write, merge", func(t *testing.T) {
		b.open(t, "/ui/social/branches", "#branch-create")
		b.run(t, "create", chromedp.SendKeys(chromedp.ID("branch-name"), "ui-feature"), submit("#branch-create"),
			chromedp.WaitVisible(chromedp.CSS(`tr[data-branch="ui-feature"]`)))
		if bs := f.mustAPI(t, "GET", g+"/branches", ""); !strings.Contains(fmt.Sprint(bs["branches"]), "ui-feature") {
			t.Fatalf("branches after the console created one: %v", bs)
		}
		// A mutation on the branch, through the editor.
		b.open(t, "/ui/social/query?ref=ui-feature", ".CodeMirror")
		b.typeQuery(t, "mutation add() {\n  insert Person { handle: \"zed\", name: \"Zed Ui\", age: 31, city: \"Lisbon\" }\n}")
		b.run(t, "run the mutation", until(`document.querySelector('#check-status').textContent.includes('No type errors')`),
			chromedp.WaitVisible(chromedp.ID("run")), chromedp.Click(chromedp.ID("run")),
			chromedp.WaitVisible(chromedp.ID("confirm-ok")), chromedp.Click(chromedp.ID("confirm-ok")),
			chromedp.WaitVisible(chromedp.ID("mutation-result")))
		// Ahead of main by one commit.
		b.open(t, "/ui/social/branches", `tr[data-branch="ui-feature"]`)
		if a := text(t, b, `tr[data-branch="ui-feature"] td.ahead`); a != "1" {
			t.Fatalf("ui-feature ahead of main: %q", a)
		}
		b.run(t, "preview", chromedp.Click(chromedp.CSS(`tr[data-branch="ui-feature"] button[data-action="preview"]`)),
			chromedp.WaitVisible(chromedp.ID("merge-counts")))
		if c := text(t, b, "#merge-counts"); !strings.HasPrefix(c, "1 to insert, 0 to update, 0 to delete") {
			t.Fatalf("preview counts %q", c)
		}
		if o := text(t, b, "#merge-outcome"); !strings.Contains(o, "Fast-forward") {
			t.Fatalf("outcome %q", o)
		}
		if ch := text(t, b, "#merge-preview table.changes"); !strings.Contains(ch, "zed") || !strings.Contains(ch, "Zed Ui") {
			t.Fatalf("preview changes %q", ch)
		}
		b.screenshot(t, "branches-preview", "#merge-preview")
		before := f.mustAPI(t, "POST", g+"/query", `{"query":"query q() { match { $p: Person { handle: \"zed\" } } return { $p.name } }"}`)
		if before["row_count"] != 0.0 {
			t.Fatalf("zed on main before the merge: %v", before)
		}
		b.run(t, "merge", chromedp.Click(chromedp.ID("merge-run")), chromedp.WaitVisible(chromedp.ID("confirm-ok")),
			chromedp.Click(chromedp.ID("confirm-ok")), until(`document.querySelector('#merge-result p.good')`))
		after := f.mustAPI(t, "POST", g+"/query", `{"query":"query q() { match { $p: Person { handle: \"zed\" } } return { $p.name } }"}`)
		if fmt.Sprint(after["rows"]) != "[map[p.name:Zed Ui]]" {
			t.Fatalf("zed on main after the console's merge: %v", after)
		}
		b.accessible(t, "branches")
		// A merge into another branch than main: the target picked in the
		// preview; afterwards the ref picker is on the target and the
		// preview is against its new head.
		f.mustAPI(t, "POST", g+"/branches", `{"name":"staging"}`)
		f.mustAPI(t, "POST", g+"/branches", `{"name":"feat-s","from":"staging"}`)
		f.mustAPI(t, "POST", g+"/mutate", `{"query":"mutation m() { insert Person { handle: \"sam\", name: \"Sam Staging\" } }","branch":"feat-s"}`)
		b.open(t, "/ui/social/branches?preview=feat-s", "#merge-target")
		b.run(t, "pick staging", js(`(() => { const s = document.querySelector('#merge-target'); s.value = 'staging'; s.dispatchEvent(new Event('change')) })()`),
			until(`document.querySelector('#merge-counts') && document.querySelector('#merge-counts').textContent.includes('on staging')`))
		if o := text(t, b, "#merge-outcome"); !strings.Contains(o, "Fast-forward: staging") {
			t.Fatalf("outcome into staging %q", o)
		}
		b.screenshot(t, "branches-merge-into", "#merge-preview")
		b.run(t, "merge into staging", chromedp.Click(chromedp.ID("merge-run")), chromedp.WaitVisible(chromedp.ID("confirm-ok")),
			chromedp.Click(chromedp.ID("confirm-ok")),
			until(`location.search.includes('ref=staging') && document.querySelector('#merge-result p.good') && document.querySelector('#merge-outcome[data-outcome="already_up_to_date"]')`))
		samQ := `{"query":"query q() { match { $p: Person { handle: \"sam\" } } return { $p.name } }","branch":"%s"}`
		if m := f.mustAPI(t, "POST", g+"/query", fmt.Sprintf(samQ, "staging")); fmt.Sprint(m["rows"]) != "[map[p.name:Sam Staging]]" {
			t.Fatalf("sam on staging after the console's merge: %v", m["rows"])
		}
		if m := f.mustAPI(t, "POST", g+"/query", fmt.Sprintf(samQ, "main")); m["row_count"] != 0.0 {
			t.Fatalf("a merge into staging wrote main: %v", m["rows"])
		}
		if ref := eval[string](t, b, "ref picker", `document.querySelector('#ref-select').value`); ref != "staging" {
			t.Fatalf("after the merge the ref picker is on %q, want the target staging", ref)
		}
		if r := text(t, b, "#merge-result"); !strings.Contains(r, "Merged feat-s into staging (fast forward)") {
			t.Fatalf("merge result %q", r)
		}
		// Delete a branch, confirming (ui-feature stays: the commit graph
		// draws its merge).
		f.mustAPI(t, "POST", g+"/branches", `{"name":"scratch"}`)
		b.open(t, "/ui/social/branches", `tr[data-branch="scratch"]`)
		b.run(t, "cancel a delete", chromedp.Click(chromedp.CSS(`tr[data-branch="scratch"] button[data-action="delete"]`)),
			chromedp.WaitVisible(chromedp.ID("confirm-cancel")), chromedp.Click(chromedp.ID("confirm-cancel")))
		if bs := f.mustAPI(t, "GET", g+"/branches", ""); !strings.Contains(fmt.Sprint(bs["branches"]), "scratch") {
			t.Fatalf("a cancelled delete deleted: %v", bs)
		}
		b.run(t, "delete", chromedp.Click(chromedp.CSS(`tr[data-branch="scratch"] button[data-action="delete"]`)),
			chromedp.WaitVisible(chromedp.ID("confirm-ok")), chromedp.Click(chromedp.ID("confirm-ok")),
			until(`!document.querySelector('tr[data-branch="scratch"]') && document.querySelector('#branch-table')`))
		if bs := f.mustAPI(t, "GET", g+"/branches", ""); strings.Contains(fmt.Sprint(bs["branches"]), "scratch") {
			t.Fatalf("branches after the console deleted scratch: %v", bs)
		}
	})

	t.Run("merge conflict", func(t *testing.T) {
		f.mustAPI(t, "POST", g+"/branches", `{"name":"rival"}`)
		f.mustAPI(t, "POST", g+"/mutate", `{"query":"mutation m() { update Person set { city: \"Porto\" } where handle = \"alice\" }","branch":"rival"}`)
		f.mustAPI(t, "POST", g+"/mutate", `{"query":"mutation m() { update Person set { city: \"Madrid\" } where handle = \"alice\" }"}`)
		b.open(t, "/ui/social/branches?preview=rival", "#merge-conflicts")
		kinds := text(t, b, "#merge-conflicts")
		if !strings.Contains(kinds, "divergent_update") || !strings.Contains(kinds, "alice") || !strings.Contains(kinds, "Person") {
			t.Fatalf("conflicts shown: %q", kinds)
		}
		disabled := eval[bool](t, b, "merge disabled", `document.querySelector('#merge-run').disabled`)
		if !disabled {
			t.Fatal("the merge button is enabled on a conflicting preview")
		}
		b.screenshot(t, "branches-conflict", "#merge-preview")
		// The way forward: keep main's alice (written on rival), and the
		// preview runs again without the conflict.
		if n := eval[int](t, b, "resolve actions", `document.querySelectorAll('#merge-conflicts button[data-entity="alice"]').length`); n != 2 {
			t.Fatalf("%d actions offered for alice's conflict, want 2 (keep main's, keep rival's)", n)
		}
		b.run(t, "keep main's alice", chromedp.Click(chromedp.CSS(`#merge-conflicts button[data-take="main"][data-entity="alice"]`)),
			chromedp.WaitVisible(chromedp.ID("confirm-ok")), chromedp.Click(chromedp.ID("confirm-ok")),
			until(`document.querySelector('#merge-counts') && !document.querySelector('#merge-conflicts') && !document.querySelector('#merge-run').disabled`))
		aliceQ := `{"query":"query q() { match { $p: Person { handle: \"alice\" } } return { $p } }","branch":"%s"}`
		onMain := f.mustAPI(t, "POST", g+"/query", fmt.Sprintf(aliceQ, "main"))["rows"]
		onRival := f.mustAPI(t, "POST", g+"/query", fmt.Sprintf(aliceQ, "rival"))["rows"]
		if fmt.Sprint(onMain) != fmt.Sprint(onRival) || !strings.Contains(fmt.Sprint(onRival), "Madrid") {
			t.Fatalf("after keeping main's alice: main %v, rival %v", onMain, onRival)
		}
		if pv := f.mustAPI(t, "POST", g+"/branches/merge/preview", `{"source":"rival","target":"main"}`); len(pv["conflicts"].([]any)) != 0 {
			t.Fatalf("the API still previews conflicts: %v", pv["conflicts"])
		}
		// A conflict that appears after the preview: the merge is 409 and
		// the console lists the conflicts from the answer.
		f.mustAPI(t, "POST", g+"/branches", `{"name":"late"}`)
		f.mustAPI(t, "POST", g+"/mutate", `{"query":"mutation m() { update Person set { age: 70 } where handle = \"bob\" }","branch":"late"}`)
		b.open(t, "/ui/social/branches?preview=late", "#merge-run")
		f.mustAPI(t, "POST", g+"/mutate", `{"query":"mutation m() { update Person set { age: 71 } where handle = \"bob\" }"}`)
		done := b.expect("409")
		b.run(t, "merge into a conflict", chromedp.Click(chromedp.ID("merge-run")), chromedp.WaitVisible(chromedp.ID("confirm-ok")),
			chromedp.Click(chromedp.ID("confirm-ok")), chromedp.WaitVisible(chromedp.CSS("#merge-result #merge-conflicts")))
		done()
		if c := text(t, b, "#merge-result #merge-conflicts"); !strings.Contains(c, "divergent_update") || !strings.Contains(c, "bob") {
			t.Fatalf("409 conflicts shown: %q", c)
		}
		if m := f.mustAPI(t, "POST", g+"/query", `{"query":"query q() { match { $p: Person { handle: \"bob\" } } return { $p.age } }"}`); fmt.Sprint(m["rows"]) != "[map[p.age:71]]" {
			t.Fatalf("bob after the refused merge: %v", m["rows"])
		}
	})

	t.Run("commits", func(t *testing.T) {
		b.open(t, "/ui/social/commits", "#commit-table")
		b.run(t, "dag", until(`document.querySelector('#commit-dag') && document.querySelector('#commit-dag').cy`))
		cs := f.mustAPI(t, "GET", g+"/commits?branch=main&limit=60", "")
		rows := b.tableRows(t, "#commit-table")
		if len(rows) != len(cs["commits"].([]any)) {
			t.Fatalf("commit table %d rows, the API %d commits", len(rows), len(cs["commits"].([]any)))
		}
		merges := eval[int](t, b, "merge links", `document.querySelector('#commit-dag').cy.edges('[merge = "yes"]').length`)
		if merges < 1 {
			t.Fatal("the DAG draws no merge link (main has a merge commit)")
		}
		b.accessible(t, "commits")
		b.screenshot(t, "commits")
		// The latest commit of main: the update of bob's age.
		head := cs["commits"].([]any)[0].(map[string]any)["graph_commit_id"].(string)
		b.open(t, "/ui/social/commits/"+head, "#commit-changes table.changes")
		ch := text(t, b, "#commit-changes table.changes")
		if !strings.Contains(ch, "update") || !strings.Contains(ch, "bob") || !strings.Contains(ch, "70") && !strings.Contains(ch, "71") {
			t.Fatalf("commit changes %q", ch)
		}
		ba := eval[[]string](t, b, "before/after", `[document.querySelector('#commit-changes td.before').textContent, document.querySelector('#commit-changes td.after').textContent]`)
		api := f.mustAPI(t, "GET", g+"/commits/"+head+"/changes", "")
		c0 := api["changes"].([]any)[0].(map[string]any)
		if fmt.Sprint(ba) != fmt.Sprintf("[%v %v]", c0["before"].(map[string]any)["age"], c0["after"].(map[string]any)["age"]) {
			t.Fatalf("before/after shown %v, API %v", ba, c0)
		}
		b.accessible(t, "commit")
		b.screenshot(t, "commit")
		// The ref picker: an older commit of main, and the overview reads it.
		oldest := cs["commits"].([]any)[len(cs["commits"].([]any))-1].(map[string]any)["graph_commit_id"].(string)
		b.open(t, "/ui/social/", "#types-table")
		b.run(t, "pick a commit", chromedp.SetValue(chromedp.ID("ref-select"), oldest),
			js(`document.querySelector('#ref-select').dispatchEvent(new Event('change'))`),
			until(`document.querySelector('h1').textContent.includes('at commit') && document.querySelector('#types-table')`))
		at := f.mustAPI(t, "GET", g+"/catalog?snapshot="+oldest, "")
		person := eval[string](t, b, "rows at the commit", `document.querySelector('#types-table tr[data-type="Person"] td.rows').textContent`)
		if want := cell(at["nodes"].([]any)[1].(map[string]any)["rows"]); person != want || !strings.Contains(eval[string](t, b, "url", `location.search`), oldest) {
			t.Fatalf("Person rows at %s: %s, the API's catalog %s", oldest, person, want)
		}
		b.open(t, "/ui/social/diff?from=main&to=rival", "#diff-summary")
		d := f.mustAPI(t, "POST", g+"/diff", `{"from":"main","to":"rival"}`)
		if s := text(t, b, "#diff-summary"); !strings.Contains(s, fmt.Sprintf(": %d changes", len(d["changes"].([]any)))) {
			t.Fatalf("diff summary %q, API %d changes", s, len(d["changes"].([]any)))
		}
		b.accessible(t, "diff")
		b.screenshot(t, "diff")
		// A large diff, a page at a time (50 changes a page).
		all := f.mustAPI(t, "POST", g+"/diff", fmt.Sprintf(`{"from":%q,"to":"main"}`, oldest))["changes"].([]any)
		if len(all) <= 50 {
			t.Fatalf("want a diff of more than a page, the API has %d changes", len(all))
		}
		b.open(t, "/ui/social/diff?from="+oldest+"&to=main", "#diff-next")
		entity := func(c any) string {
			m := c.(map[string]any)
			return fmt.Sprintf("%v %v %v %v", m["op"], m["entity_kind"], m["type_name"], m["id"])
		}
		shownIDs := func() []string {
			return eval[[]string](t, b, "diff entities", `Array.from(document.querySelectorAll('#diff-changes tr.change td:first-child')).map(td => Array.from(td.childNodes).filter(n => n.nodeName !== 'DIV').map(n => n.textContent).join('').replace(/\s+/g, ' ').trim())`)
		}
		var want []string
		for _, c := range all[:50] {
			want = append(want, entity(c))
		}
		if got := shownIDs(); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("diff page 1 shows\n%v\nthe API's first 50\n%v", got, want)
		}
		b.run(t, "next diff page", chromedp.Click(chromedp.ID("diff-next")), until(`document.querySelector('#diff-range') && document.querySelector('#diff-range').textContent.startsWith('Changes 51')`))
		want = nil
		for _, c := range all[50:min(100, len(all))] {
			want = append(want, entity(c))
		}
		if got := shownIDs(); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("diff page 2 shows\n%v\nthe API's changes 51..100\n%v", got, want)
		}
		// Filters: by type, then by kind of change.
		b.run(t, "filter by type", js(`(() => { const s = document.querySelector('#diff-type'); s.value = 'Person'; s.dispatchEvent(new Event('change')) })()`),
			until(`document.querySelector('#diff-summary') && document.querySelector('#diff-summary').textContent.includes('(Person)')`))
		b.run(t, "filter by kind", js(`(() => { const s = document.querySelector('#diff-op'); s.value = 'insert'; s.dispatchEvent(new Event('change')) })()`),
			until(`document.querySelector('#diff-summary') && document.querySelector('#diff-summary').textContent.includes('(Person inserts)')`))
		filtered := f.mustAPI(t, "POST", g+"/diff", fmt.Sprintf(`{"from":%q,"to":"main","type":"Person","op":"insert"}`, oldest))["changes"].([]any)
		want = nil
		for _, c := range filtered[:min(50, len(filtered))] {
			want = append(want, entity(c))
		}
		if got := shownIDs(); len(want) == 0 || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("the Person inserts shown\n%v\nthe API's\n%v", got, want)
		}
		b.screenshot(t, "diff-filtered")
	})

	t.Run("read-only token", func(t *testing.T) {
		done := b.expect("401")
		b.open(t, "/ui/social/", "#types-table")
		b.run(t, "sign out", chromedp.Click(chromedp.CSS(".who button")), chromedp.WaitVisible(chromedp.ID("login-form")),
			chromedp.SendKeys(chromedp.ID("login-token"), f.secrets["reader"]), submit("#login-form"),
			chromedp.WaitVisible(chromedp.ID("types-table")))
		done()
		if who := text(t, b, ".who .muted"); who != "reader" {
			t.Fatalf("signed in as %q", who)
		}
		writes := eval[[]string](t, b, "overview write controls", `Array.from(document.querySelectorAll('#load-form')).map(e => e.id)`)
		b.open(t, "/ui/social/branches", "#branch-table")
		more := eval[[]string](t, b, "branch write controls", `Array.from(document.querySelectorAll('#branch-create, button[data-action="delete"]')).map(e => e.outerHTML.slice(0, 60))`)
		writes = append(writes, more...)
		b.run(t, "preview as reader", chromedp.Click(chromedp.CSS(`tr[data-branch="rival"] button[data-action="preview"]`)), chromedp.WaitVisible(chromedp.ID("merge-counts")))
		b.screenshot(t, "read-only-branches")
		more = eval[[]string](t, b, "merge control", `Array.from(document.querySelectorAll('#merge-run')).map(e => e.id)`)
		writes = append(writes, more...)
		b.open(t, "/ui/social/query", ".CodeMirror")
		b.typeQuery(t, "mutation m() {\n  insert Person { handle: \"eve2\", name: \"E\" }\n}")
		b.run(t, "mutation checked", until(`document.querySelector('#check-status').textContent.includes('No type errors')`))
		runHidden := eval[bool](t, b, "run hidden", `document.querySelector('#run').hidden`)
		if !runHidden {
			writes = append(writes, "#run for a mutation")
		}
		if len(writes) > 0 {
			t.Fatalf("a read-only token sees write controls: %v", writes)
		}
		if n := text(t, b, "#run-note"); !strings.Contains(n, "may not change") {
			t.Fatalf("run note %q", n)
		}
		b.screenshot(t, "read-only")
		// Its direct write, from the page with its own token: 403.
		done = b.expect("403")
		status := eval[int](t, b, "direct write", `fetch('/graphs/social/branches', {method: 'POST', headers: {'Content-Type': 'application/json', Authorization: 'Bearer ' + sessionStorage.getItem('omnigraph.console.token')}, body: JSON.stringify({name: 'sneaky'})}).then(r => r.status)`)
		done()
		if status != 403 {
			t.Fatalf("the read-only token's direct write: %d, want 403", status)
		}
		if bs := f.mustAPI(t, "GET", g+"/branches", ""); strings.Contains(fmt.Sprint(bs["branches"]), "sneaky") {
			t.Fatalf("the refused write created a branch: %v", bs)
		}
	})

	t.Run("retry after 429", func(t *testing.T) {
		// The server's admission refuses twice; the console waits the
		// Retry-After it names and sends again.
		f.busy.Store(2)
		f.statusCalls.Store(0)
		done := b.expect("429")
		id := eval[string](t, b, "status through the console's client", `import('/ui/js/api.js').then(m => new m.Graph('social').status()).then(s => s.graph_id)`)
		done()
		if id != "social" || f.statusCalls.Load() != 3 {
			t.Fatalf("status after two 429s: %q in %d requests (want 3)", id, f.statusCalls.Load())
		}
	})

	t.Run("1920x1080", func(t *testing.T) {
		b.run(t, "resize", chromedp.EmulateViewport(1920, 1080))
		for _, p := range []struct{ path, ready string }{
			{"/ui/social/", "#types-table"}, {"/ui/social/query", ".CodeMirror"}, {"/ui/social/search", "#search-form"},
			{"/ui/social/branches", "#branch-table"}, {"/ui/social/commits", "#commit-table"},
		} {
			b.open(t, p.path, p.ready)
			b.accessible(t, p.path+" at 1920x1080")
		}
		b.open(t, "/ui/social/", "#types-table")
		b.run(t, "schema drawn", until(`document.querySelector('#schema-graph').cy && document.querySelector('#schema-graph').cy.nodes().length > 0`))
		b.screenshot(t, "overview-1920")
		b.run(t, "resize back", chromedp.EmulateViewport(1280, 800))
	})

	t.Run("open mode", func(t *testing.T) {
		// No tokens: no sign-in, the actor is anonymous, every page reads.
		of := newFixture(t, true)
		b.openAt(t, of.base, "/ui/", "#types-table")
		if who := text(t, b, ".who .muted"); who != "anonymous" {
			t.Fatalf("open mode actor %q", who)
		}
		if n := eval[int](t, b, "sign-out buttons", `document.querySelectorAll('.who button').length`); n != 0 {
			t.Fatalf("open mode shows %d sign-out buttons", n)
		}
		b.openAt(t, of.base, "/ui/social/branches", "#branch-create") // every write is offered
	})

	t.Run("first render and payload", func(t *testing.T) {
		// A fresh load of the overview (cache bypassed): the time to the
		// rendered overview and the bytes that crossed the wire, logged
		// (timings are never asserted); the bytes have a budget.
		b.run(t, "reload", chromedp.Navigate("about:blank"), chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
			_, err := chromedp.Call(ctx, network.ClearBrowserCache, cdp.Empty{})
			return err
		}), chromedp.Navigate(f.base+"/ui/social/"), chromedp.WaitVisible(chromedp.ID("types-table")),
			until(`document.querySelector('#schema-graph').cy && document.querySelector('#schema-graph').cy.nodes().length > 0`))
		type measure struct {
			Rendered float64 `json:"rendered"`
			Drawn    float64 `json:"drawn"`
			Bytes    float64 `json:"bytes"`
			Files    int     `json:"files"`
		}
		m := eval[measure](t, b, "timing", `(() => {
		  const nav = performance.getEntriesByType('navigation')[0];
		  const res = performance.getEntriesByType('resource').filter(r => r.name.includes('/ui/'));
		  const marks = performance.getEntriesByName('og-rendered');
		  const drawn = performance.getEntriesByName('og-schema-drawn');
		  return { rendered: marks.length ? marks[0].startTime : -1, drawn: drawn.length ? drawn[0].startTime : -1, bytes: nav.transferSize + res.reduce((s, r) => s + r.transferSize, 0), files: res.length + 1 };
		})()`)
		t.Logf("first render of the overview (status, types and row counts): %.0f ms after navigation start; schema drawn at %.0f ms; %d files, %.0f KB transferred", m.Rendered, m.Drawn, m.Files, m.Bytes/1024)
		if m.Rendered < 0 || m.Drawn < 0 || m.Bytes <= 0 {
			t.Fatalf("no measurement: %+v", m)
		}
		const budget = 400 << 10
		if m.Bytes > budget {
			t.Fatalf("the overview transfers %.0f KB, over the %d KB budget", m.Bytes/1024, budget>>10)
		}
	})
	b.clean(t, "end")
}

// TestConsolePayload reports the embedded files and their compressed
// sizes, and holds the budget of what a first visit can transfer.
func TestConsolePayload(t *testing.T) {
	h, err := ui.New()
	if err != nil {
		t.Fatal(err)
	}
	var raw, gz int
	files := h.Files()
	sort.Slice(files, func(i, j int) bool { return files[i].Gzipped > files[j].Gzipped })
	for _, f := range files {
		if strings.HasSuffix(f.Path, "LICENSE") {
			continue
		}
		raw += f.Bytes
		gz += f.Gzipped
		t.Logf("%-60s %8d bytes %8d gzipped", f.Path, f.Bytes, f.Gzipped)
	}
	t.Logf("all files: %d KB, %d KB gzipped", raw>>10, gz>>10)
	if gz > 400<<10 {
		t.Fatalf("the console's files are %d KB gzipped, over the 400 KB budget", gz>>10)
	}
}
