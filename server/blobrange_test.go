package server

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestBlobRangePast64Bits: byte positions larger than 64 bits saturate
// (RFC 9110 14.1.1): a last position past the end is the end (206,
// clamped), a first position past it is unsatisfiable (416), and the
// range reported back never wraps negative; the same for blob_read.
func TestBlobRangePast64Bits(t *testing.T) {
	g, _, big, _ := blobGraph(t)
	_, base := newTestServer(t, g, Config{})
	size := len(big)
	cases := []struct {
		rng          string
		status       int
		contentRange string
	}{
		{"bytes=0-99999999999999999999", 206, fmt.Sprintf("bytes 0-%d/%d", size-1, size)},
		{"bytes=10-9223372036854775807", 206, fmt.Sprintf("bytes 10-%d/%d", size-1, size)},
		{"bytes=99999999999999999999-", 416, fmt.Sprintf("bytes */%d", size)},
		{"bytes=9223372036854775807-", 416, fmt.Sprintf("bytes */%d", size)},
		{"bytes=99999999999999999999-99999999999999999999", 416, fmt.Sprintf("bytes */%d", size)},
		{"bytes=-99999999999999999999", 200, ""}, // a suffix longer than the value: all of it
	}
	for _, c := range cases {
		st, body, hdr := get(t, "GET", base+sel("big"), "", "Range", c.rng)
		if c.status == 200 && st == 206 && hdr.Get("Content-Range") == fmt.Sprintf("bytes 0-%d/%d", size-1, size) {
			continue // RFC 9110 allows either for a suffix covering it all
		}
		if st != c.status || hdr.Get("Content-Range") != c.contentRange {
			t.Errorf("Range %s: status %d Content-Range %q, want %d %q", c.rng, st, hdr.Get("Content-Range"), c.status, c.contentRange)
			continue
		}
		if st == 416 {
			var e struct {
				BlobRange struct{ Start, End, Length int64 } `json:"blob_range"`
			}
			if err := json.Unmarshal(body, &e); err != nil || e.BlobRange.Start < int64(size) || e.BlobRange.End < e.BlobRange.Start || e.BlobRange.Length != int64(size) {
				t.Errorf("Range %s: blob_range %+v (%v), want a start past the value and an end not before it", c.rng, e.BlobRange, err)
			}
		}
	}
	cs, err := mcpConnect(t, base, "")
	if err != nil {
		t.Fatal(err)
	}
	res := callTool(t, cs, "blob_read", map[string]any{"entity": "node", "type": "Doc", "id": "big", "property": "body", "offset": int64(math.MaxInt64), "length": 10})
	st := structured(t, res)
	br, _ := st["blob_range"].(map[string]any)
	if !res.IsError || st["status"] != 416.0 || br == nil || br["end"].(float64) < br["start"].(float64) {
		t.Errorf("blob_read at offset MaxInt64: %v, want status 416 with an end not before its start", st)
	}
}

// TestWholeNumbersPast64BitsSaturate: a limit written as a whole number
// too large for 64 bits is the largest limit, not "not a whole number":
// commits and a commit's changes answer as with no limit, and a JSON
// number out of float64's range is called out of range, not invalid
// JSON (issue 36, item 9).
func TestWholeNumbersPast64BitsSaturate(t *testing.T) {
	fx := newFixture(t)
	_, base := fx.serve(t, Config{})
	huge := "99999999999999999999"
	for _, path := range []string{"/graphs/default/commits", "/graphs/default/commits/" + fx.first + "/changes"} {
		all := send(t, base, "", "GET", sample{path: path}, nil)
		a := send(t, base, "", "GET", sample{path: path, query: url.Values{"limit": {huge}}}, nil)
		if a.status != 200 || a.raw != all.raw {
			t.Errorf("GET %s?limit=%s: status %d %s, want 200 and the answer without a limit (%s)", path, huge, a.status, a.raw, all.raw)
		}
	}
	a := send(t, base, "", "POST", sample{path: "/graphs/default/diff", ctype: "application/json", body: `{"from":"main","to":"feature","limit":1e400}`}, nil)
	if msg := fmt.Sprint(a.body["error"]); a.status != 400 || strings.Contains(msg, "not valid JSON") || !strings.Contains(msg, `"limit"`) {
		t.Errorf("diff limit 1e400: status %d %q, want 400 saying limit is out of range", a.status, msg)
	}
}

// TestUnknownTypeFilterIs400: a type filter naming no type of the schema
// is refused (as the change feed refuses it), on diff, a commit's changes
// and commit_changes, instead of answering no change.
func TestUnknownTypeFilterIs400(t *testing.T) {
	fx := newFixture(t)
	_, base := fx.serve(t, Config{})
	for what, a := range map[string]answer{
		"diff":    send(t, base, "", "POST", sample{path: "/graphs/default/diff", ctype: "application/json", body: `{"from":"main","to":"feature","type":"person"}`}, nil),
		"changes": send(t, base, "", "GET", sample{path: "/graphs/default/commits/" + fx.first + "/changes", query: url.Values{"type": {"Nope"}}}, nil),
	} {
		if msg := fmt.Sprint(a.body["error"]); a.status != 400 || !strings.Contains(msg, "unknown type") || !strings.Contains(msg, "Person") {
			t.Errorf("%s with an unknown type: status %d %s, want 400 naming the schema's types", what, a.status, a.raw)
		}
	}
	res, isErr, _, a := mcpCall(t, base, "", "commit_changes", map[string]any{"commit_id": fx.first, "type": "Nope"}, nil)
	if !isErr || res["status"] != 400.0 {
		t.Errorf("commit_changes with an unknown type: %s, want an error result with status 400", a.raw)
	}
}

// TestWordingOfRefusals: a merge preview into itself speaks HTTP, not the
// CLI's flags; a denial on the whole graph names it once; an empty
// chunked body invokes a stored query as an empty one does.
func TestWordingOfRefusals(t *testing.T) {
	fx := newFixture(t)
	tokens, secrets := tokensFor(t, "alice")
	_, base := fx.serve(t, Config{Tokens: tokens, Policy: mustPolicy(t, `permit (principal, action, resource) when { action != Omnigraph::Action::"read" };`)})
	_, open := fx.serve(t, Config{})
	a := send(t, open, "", "POST", sample{path: "/graphs/default/branches/merge/preview", ctype: "application/json", body: `{"source":"main","target":"main"}`}, nil)
	if msg := fmt.Sprint(a.body["error"]); a.status != 400 || strings.Contains(msg, "--into") || !strings.Contains(msg, "into itself") {
		t.Errorf("merge preview into itself: status %d %q, want 400 without CLI flags", a.status, msg)
	}
	a = send(t, base, secrets["alice"], "GET", sample{path: "/graphs/default/branches"}, nil)
	if msg := fmt.Sprint(a.body["error"]); a.status != 403 || strings.Contains(msg, "graph of graph") || !strings.Contains(msg, `graph "default"`) {
		t.Errorf("a denied graph read: status %d %q, want 403 naming graph \"default\" once", a.status, msg)
	}
	req, err := http.NewRequest("POST", open+"/graphs/default/queries/people", io.NopCloser(strings.NewReader("")))
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = -1 // chunked, no bytes
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("stored query with an empty chunked body: status %d %s, want 200", resp.StatusCode, b)
	}
}
