package server

import (
	"io"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// seriesCount is the number of series the registry holds under the
// omnigraph_ prefix (the runtime collectors' are fixed either way).
func seriesCount(t *testing.T, s *Server) int {
	t.Helper()
	mfs, err := s.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, mf := range mfs {
		if strings.HasPrefix(mf.GetName(), "omnigraph_") {
			n += len(mf.GetMetric())
		}
	}
	return n
}

// TestMetricsSeriesBounded: 1,000 requests with random branch names,
// commit ids, graph ids and paths add no series beyond the ones a fixed
// warm-up made: every label is the route table's name, a method, a code.
func TestMetricsSeriesBounded(t *testing.T) {
	g := testGraph(t)
	s, base := newTestServer(t, g, Config{})
	c := &client{t: t, base: base}
	seed := rand.Int63()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	word := func() string {
		const abc = "abcdefghijklmnopqrstuvwxyz0123456789-"
		b := make([]byte, 4+rng.Intn(20))
		for i := range b {
			b[i] = abc[rng.Intn(len(abc))]
		}
		return string(b)
	}
	shapes := []func() (string, string){
		func() (string, string) { return "GET", "/graphs/default/snapshot?branch=" + word() },
		func() (string, string) { return "GET", "/graphs/default/commits/" + word() },
		func() (string, string) { return "GET", "/graphs/" + word() + "/branches" },
		func() (string, string) { return "GET", "/" + word() + "/" + word() },
		func() (string, string) { return "DELETE", "/graphs/default/branches/" + word() },
		func() (string, string) { return "BREW" + strings.ToUpper(word()), "/graphs/default/branches" },
	}
	send := func(method, path string) {
		req, err := http.NewRequest(method, base+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	c.json("GET", "/graphs", "")
	before := seriesCount(t, s)
	for i := 0; i < 1000; i++ {
		send(shapes[rng.Intn(len(shapes))]())
	}
	// Each shape may meet a few codes (400 for a malformed id, 404 for a
	// well-formed unknown one): a handful of series each, never one per
	// request.
	if got := seriesCount(t, s); got > before+3*len(shapes) {
		t.Fatalf("after 1,000 random requests the registry holds %d omnigraph series, %d before: a label takes request data", got, before)
	}
	routes := map[string]bool{routeUnmatched: true, metricsRoute.OperationID: true}
	for _, rt := range Routes() {
		routes[rt.OperationID] = true
	}
	mfs, err := s.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				v := l.GetValue()
				ok := true
				switch l.GetName() {
				case "route":
					ok = routes[v]
				case "method":
					ok = httpMethods[v] || v == methodOther
				case "code":
					ok = len(v) == 3 && v[0] >= '1' && v[0] <= '5'
				}
				if !ok {
					t.Errorf("%s: label %s=%q is not from its closed set", mf.GetName(), l.GetName(), v)
				}
			}
		}
	}
	problems, err := testutil.GatherAndLint(s.Registry())
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) > 0 {
		t.Fatalf("promlint: %v", problems)
	}
}

// TestMetricsEndpoint: GET /metrics needs a token in token mode and serves
// the text format with the request counts by route name;
// MetricsHandler serves it without one and nothing else.
func TestMetricsEndpoint(t *testing.T) {
	g := testGraph(t)
	tokens, secrets := tokensFor(t, "alice")
	s, base := newTestServer(t, g, Config{Tokens: tokens})
	anon := &client{t: t, base: base}
	st, m := anon.json("GET", "/metrics", "")
	mustStatus(t, "metrics without a token", st, 401, m)
	alice := &client{t: t, base: base, token: secrets["alice"]}
	for i := 0; i < 3; i++ {
		st, m = alice.json("GET", "/graphs/default/branches", "")
		mustStatus(t, "branches", st, 200, m)
	}
	st, m = alice.json("POST", "/graphs/default/mutate", `{"query":"mutation m() { insert Person { name: \"x\" } }"}`)
	mustStatus(t, "mutate", st, 200, m)
	req, _ := http.NewRequest("GET", base+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+secrets["alice"])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("metrics: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	for _, want := range []string{
		`omnigraph_http_requests_total{code="200",method="GET",route="listBranches"} 3`,
		`omnigraph_http_requests_total{code="401",method="GET",route="metrics"} 1`,
		`omnigraph_commits_published_total 1`,
		`go_goroutines `,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if testutil.ToFloat64(s.metrics.commits) != 1 {
		t.Fatalf("commits: %v", testutil.ToFloat64(s.metrics.commits))
	}
	ms := httptest.NewServer(s.MetricsHandler())
	defer ms.Close()
	for _, tc := range []struct {
		path   string
		status int
	}{{"/metrics", 200}, {"/graphs", 404}, {"/graphs/default/branches", 404}} {
		resp, err := http.Get(ms.URL + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.status {
			t.Fatalf("metrics listener %s: %d, want %d", tc.path, resp.StatusCode, tc.status)
		}
	}
}
