package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/omnigraph-go/omnigraph/api"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/cleanup"
)

// feedPage decodes GET changes.
type feedPage struct {
	Branch string `json:"branch"`
	Blocks []struct {
		Cause   api.ChangeCause `json:"cause"`
		Changes []struct {
			Op     string         `json:"op"`
			Type   string         `json:"type_name"`
			ID     string         `json:"id"`
			Before map[string]any `json:"before"`
			After  map[string]any `json:"after"`
		} `json:"changes"`
	} `json:"blocks"`
	Cursor        string `json:"cursor"`
	NextPageToken string `json:"next_page_token"`
	CaughtUp      bool   `json:"caught_up"`
}

func (c *client) poll(query string) (int, feedPage, map[string]any) {
	c.t.Helper()
	st, m, _ := c.do("GET", "/graphs/default/changes?"+query, "", "")
	b, _ := json.Marshal(m)
	var p feedPage
	if st == 200 {
		if err := json.Unmarshal(b, &p); err != nil {
			c.t.Fatal(err)
		}
	}
	return st, p, m
}

func (p feedPage) lines() []string {
	var out []string
	for _, b := range p.Blocks {
		for _, ch := range b.Changes {
			row := ch.After
			if ch.Op == "delete" {
				row = ch.Before
			}
			out = append(out, fmt.Sprintf("%s %s %s age=%v", ch.Op, ch.Type, ch.ID, row["age"]))
		}
	}
	return out
}

// baselineOf posts changes/baseline and splits the answer: entity lines
// and the final baseline record.
func baselineOf(t *testing.T, c *client, body string) (int, []map[string]any, api.BaselineEnd) {
	t.Helper()
	req, _ := http.NewRequest("POST", c.base+"/graphs/default/changes/baseline", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		var m map[string]any
		json.Unmarshal(b, &m)
		return resp.StatusCode, []map[string]any{m}, api.BaselineEnd{}
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/x-ndjson" {
		t.Fatalf("baseline content type %q", ct)
	}
	var lines []map[string]any
	var end api.BaselineEnd
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("baseline line %q: %v", sc.Text(), err)
		}
		if b, ok := m["baseline"]; ok {
			raw, _ := json.Marshal(b)
			json.Unmarshal(raw, &end)
			continue
		}
		if end.ResumeCursor != "" {
			t.Fatal("a line after the baseline record")
		}
		lines = append(lines, m)
	}
	if end.ResumeCursor == "" || end.SnapshotCommitID == "" {
		t.Fatalf("the baseline ended without its record (%d lines)", len(lines))
	}
	return 200, lines, end
}

// TestChangeFeedRoutes drives GET changes and POST changes/baseline over
// real HTTP: blocks with their data, the cursor, caught_up, page tokens,
// strict parameters, 400 for a rejected cursor, 413 for a limit, 403 by
// policy, and after cleanup the 410 gap whose baseline resumes exactly.
func TestChangeFeedRoutes(t *testing.T) {
	g := testGraph(t)
	tokens, secrets := tokensFor(t, "alice", "rita", "ops")
	_, base := newTestServer(t, g, Config{Tokens: tokens, Policy: parseTestPolicy(t)})
	as := func(actor string) *client { return &client{t: t, base: base, token: secrets[actor]} }
	ops := as("ops")
	mutate := func(src string) string {
		t.Helper()
		st, m := ops.json("POST", "/graphs/default/mutate", fmt.Sprintf(`{"query":%q}`, src))
		mustStatus(t, "mutate", st, 200, m)
		return m["commit"].(map[string]any)["graph_commit_id"].(string)
	}
	c1 := mutate(`mutation m() { insert Person { name: "ada", age: 36 } }`)
	c2 := mutate(`mutation m() { update Person set { age: 37 } where name = "ada" }`)

	st, p, m := as("rita").poll("start=beginning")
	mustStatus(t, "poll from the beginning", st, 200, m)
	if len(p.Blocks) != 2 || p.Blocks[0].Cause.GraphCommitID != c1 || p.Blocks[1].Cause.GraphCommitID != c2 || !p.CaughtUp || p.Cursor == "" {
		t.Fatalf("poll: %+v", p)
	}
	if got := strings.Join(p.lines(), "; "); got != "insert Person ada age=36; update Person ada age=37" {
		t.Fatalf("changes: %s", got)
	}
	if p.Blocks[1].Changes[0].Before["age"] != 36.0 {
		t.Fatalf("update before image: %v", p.Blocks[1].Changes[0].Before)
	}
	cursor := p.Cursor
	c3 := mutate(`mutation m() { insert Person { name: "bo" } }`)
	mutate(`mutation m() { insert Person { name: "cy" } }`)
	st, p, m = as("rita").poll("cursor=" + url.QueryEscape(cursor) + "&max_commits=1")
	mustStatus(t, "poll with the cursor", st, 200, m)
	if len(p.Blocks) != 1 || p.Blocks[0].Cause.GraphCommitID != c3 || p.CaughtUp {
		t.Fatalf("one commit a poll: %+v", p)
	}
	if st, _, m := as("rita").poll("cursor=" + url.QueryEscape(p.Cursor) + "&type=Person"); st != 400 || !strings.Contains(m["error"].(string), "another filter") {
		t.Fatalf("the cursor with another filter: %d %v", st, m)
	}
	st, p, m = as("rita").poll("cursor=" + url.QueryEscape(p.Cursor))
	mustStatus(t, "the cursor again", st, 200, m)
	if got := strings.Join(p.lines(), "; "); got != "insert Person cy age=<nil>" || !p.CaughtUp {
		t.Fatalf("the rest: %s", got)
	}
	// Page tokens: one change a page.
	st, p, m = as("rita").poll("start=after:" + c1 + "&limit=1&kind=node")
	mustStatus(t, "limit 1", st, 200, m)
	if len(p.Blocks) != 1 || p.Cursor == "" {
		t.Fatalf("a one-change page: %+v", p)
	}

	bad := []struct {
		query  string
		status int
		want   string
	}{
		{"start=beginning&bogus=1", 400, "unknown query parameter"},
		{"start=now&start=beginning", 400, "given 2 times"},
		{"cursor=ogc1.AAAA", 400, "change cursor rejected: "},
		{"page_token=" + url.QueryEscape(cursor), 400, "change cursor rejected: "},
		{"start=yesterday", 400, "start must be"},
		{"type=Nope", 400, "unknown type"},
		{"op=upsert", 400, "op must be"},
		{"limit=9000", 413, ""},
		{"max_bytes=-1", 400, "positive"},
		{"branch=nope", 404, ""},
		{"start=now&cursor=" + url.QueryEscape(cursor), 400, "one of"},
	}
	for _, b := range bad {
		st, _, m := as("rita").poll(b.query)
		mustStatus(t, b.query, st, b.status, m)
		if msg, _ := m["error"].(string); !strings.Contains(msg, b.want) {
			t.Errorf("%s: %q, want %q", b.query, msg, b.want)
		}
		if b.status == 413 && m["resource_limit"] == nil {
			t.Errorf("%s: no resource_limit in %v", b.query, m)
		}
	}

	// Policy: the feed needs read on the branch, the baseline export.
	if st, _, m := baselineOf(t, as("rita"), `{}`); st != 403 {
		t.Fatalf("rita's baseline: %d %v", st, m)
	}

	// MCP: changes_poll with the SDK client.
	cs, err := mcpConnect(t, base, secrets["rita"])
	if err != nil {
		t.Fatal(err)
	}
	res := callTool(t, cs, "changes_poll", map[string]any{"start": "after:" + c2, "types": []string{"Person"}, "ops": []string{"insert"}, "limit": 1})
	if res.IsError {
		t.Fatalf("changes_poll: %v", structured(t, res))
	}
	out := structured(t, res)
	blocks, _ := out["blocks"].([]any)
	if len(blocks) != 1 || out["cursor"] == nil || blocks[0].(map[string]any)["cause"].(map[string]any)["graph_commit_id"] != c3 {
		t.Fatalf("changes_poll: %v", out)
	}
	res = callTool(t, cs, "changes_poll", map[string]any{"cursor": "nope"})
	if te := structured(t, res); !res.IsError || te["status"] != 400.0 || !strings.HasPrefix(te["error"].(string), "change cursor rejected: ") {
		t.Fatalf("changes_poll with a bad cursor: %v", te)
	}
	// Cleanup removes the history after the old cursor: 410 with the gap.
	for i := 0; i < 4; i++ {
		mutate(fmt.Sprintf(`mutation m() { update Person set { age: %d } where name = "bo" }`, i))
	}
	if _, err := cleanup.Run(context.Background(), g, cleanup.Options{Keep: 2, Confirm: true}); err != nil {
		t.Fatal(err)
	}
	st, _, m = as("rita").poll("cursor=" + url.QueryEscape(cursor))
	mustStatus(t, "poll past cleanup", st, 410, m)
	gap, _ := m["change_feed_gap"].(map[string]any)
	if gap["cursor"] != cursor || gap["first_unreadable_commit_id"] != c3 || m["code"] != nil {
		t.Fatalf("410 body: %v", m)
	}

	// The baseline: every entity of the head, then the cursor after it.
	st, lines, end := baselineOf(t, ops, `{}`)
	if st != 200 {
		t.Fatalf("baseline: %d %v", st, lines)
	}
	replica := map[string]any{}
	for _, l := range lines {
		d := l["data"].(map[string]any)
		replica[d["name"].(string)] = d["age"]
	}
	if fmt.Sprint(replica) != "map[ada:37 bo:3 cy:<nil>]" || end.SnapshotCommitID != headOf(t, g) {
		t.Fatalf("baseline rows %v at %s", replica, end.SnapshotCommitID)
	}
	mutate(`mutation m() { delete Person where name = "ada" }`)
	mutate(`mutation m() { update Person set { age: 9 } where name = "cy" }`)
	st, p, m = as("rita").poll("cursor=" + url.QueryEscape(end.ResumeCursor))
	mustStatus(t, "poll from the baseline", st, 200, m)
	for _, b := range p.Blocks {
		for _, ch := range b.Changes {
			if ch.Op == "delete" {
				delete(replica, ch.ID)
			} else {
				replica[ch.ID] = ch.After["age"]
			}
		}
	}
	if fmt.Sprint(replica) != "map[bo:3 cy:9]" || !p.CaughtUp {
		t.Fatalf("baseline + feed: %v", replica)
	}
	// A filtered baseline: only the types it names, and a cursor bound to
	// that filter.
	_, lines, end = baselineOf(t, ops, `{"types":["Person"],"ops":["delete"]}`)
	if len(lines) != 2 {
		t.Fatalf("filtered baseline: %d lines", len(lines))
	}
	mutate(`mutation m() { insert Person { name: "dee" } }`)
	mutate(`mutation m() { delete Person where name = "dee" }`)
	st, p, m = as("rita").poll("cursor=" + url.QueryEscape(end.ResumeCursor))
	mustStatus(t, "poll the filtered baseline's cursor", st, 200, m)
	if got := strings.Join(p.lines(), "; "); got != "delete Person dee age=<nil>" {
		t.Fatalf("the filtered feed: %s", got)
	}
	if st, body, _ := baselineOf(t, ops, `{"types":["Nope"]}`); st != 400 {
		t.Fatalf("a baseline of an unknown type: %d %v", st, body)
	}

	// The gap through MCP.
	res = callTool(t, cs, "changes_poll", map[string]any{"cursor": cursor})
	if te := structured(t, res); !res.IsError || te["status"] != 410.0 || te["change_feed_gap"] == nil {
		t.Fatalf("changes_poll past cleanup: %v", te)
	}
}

func headOf(t *testing.T, g *graph.Graph) string {
	t.Helper()
	s, err := g.Snapshot(context.Background(), "main")
	if err != nil {
		t.Fatal(err)
	}
	return s.CommitID()
}

// TestFeedTakesAReadSlot: a poll and a baseline are reads that can be
// large, so they take a read slot of their actor as query and commit
// changes do. With alice's one slot held, her poll, baseline and stored
// read are 429 with Retry-After and nothing is streamed; bob's poll runs;
// once the slot is freed alice polls again and sees the graph's changes.
func TestFeedTakesAReadSlot(t *testing.T) {
	g := peopleGraph(t, 20, 1)
	tokens, secrets := tokensFor(t, "alice", "bob")
	cat, err := g.Schema(context.Background(), "main")
	if err != nil {
		t.Fatal(err)
	}
	set, problems := CompileQueries([]QueryFile{{Name: "q.gq", Source: `query people() { match { $p: Person } return { $p.name } }`}}, cat)
	if set == nil {
		t.Fatal(problems)
	}
	s, err := New(Config{Tokens: tokens, Limits: Limits{ReadsPerActor: 1, RetryAfter: 7}, Graphs: []Graph{{ID: "default", G: g, Queries: set}}})
	if err != nil {
		t.Fatal(err)
	}
	base := newHTTPServer(t, s)
	alice := &client{t: t, base: base, token: secrets["alice"]}
	bob := &client{t: t, base: base, token: secrets["bob"]}

	release, f := s.adm.admitRead("alice")
	if f != nil {
		t.Fatal(f)
	}
	for _, rq := range []struct{ method, path, ctype, body string }{
		{"GET", "/graphs/default/changes?start=beginning", "", ""},
		{"POST", "/graphs/default/changes/baseline", "application/json", `{}`},
		{"POST", "/graphs/default/queries/people", "application/json", `{}`},
	} {
		st, m, h := alice.do(rq.method, rq.path, rq.ctype, rq.body)
		mustStatus(t, rq.method+" "+rq.path+" with alice's slot taken", st, 429, m)
		if h.Get("Retry-After") != "7" || m["code"] != "too_many_requests" {
			t.Fatalf("%s %s: Retry-After %q, body %v", rq.method, rq.path, h.Get("Retry-After"), m)
		}
	}
	st, m, _ := bob.do("GET", "/graphs/default/changes?start=beginning", "", "")
	mustStatus(t, "bob's poll", st, 200, m)
	release()
	if n := s.adm.inFlightReads(); n != 0 {
		t.Fatalf("%d reads in flight after the refusals and bob's poll", n)
	}
	st, m, _ = alice.do("GET", "/graphs/default/changes?start=beginning", "", "")
	mustStatus(t, "alice's poll once her slot is free", st, 200, m)
	if m["caught_up"] != true || len(m["blocks"].([]any)) == 0 {
		t.Fatalf("alice's poll from the beginning: %v", m)
	}
}
