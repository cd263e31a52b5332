package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/omnigraph-go/omnigraph/backend/local"
	"github.com/omnigraph-go/omnigraph/graph"
)

// freeAddr is a loopback address with a port free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func getText(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestServeMetricsProcess: the real binary serves GET /metrics on its
// main listener behind the token, and without one on --metrics-listen,
// which serves nothing else; the numbers include the storage wrapper's,
// the writer lock's and the process collectors.
func TestServeMetricsProcess(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "graph")
	mustCLI(t, "init", "--schema", writeSchema(t), dir)
	tokens := filepath.Join(t.TempDir(), "tokens.json")
	secret := strings.TrimSpace(mustCLI(t, "token", "add", "alice", "--tokens", tokens))
	maddr := freeAddr(t)
	base, cmd, wait := startServe(t, "--store", dir, "--tokens", tokens, "--metrics-listen", maddr)
	if st, m := httpJSON(t, "POST", base+"/graphs/default/mutate", secret, `{"query":"mutation m() { insert Person { name: \"ada\" } }"}`); st != 200 {
		t.Fatalf("mutate: %d %v", st, m)
	}
	if st, _ := getText(t, base+"/metrics", ""); st != 401 {
		t.Fatalf("main listener /metrics without a token: %d, want 401", st)
	}
	st, body := getText(t, base+"/metrics", secret)
	if st != 200 {
		t.Fatalf("main listener /metrics: %d", st)
	}
	for _, want := range []string{
		`omnigraph_http_requests_total{code="200",method="POST",route="mutate"} 1`,
		`omnigraph_commits_published_total 1`,
		`omnigraph_storage_requests_total{op="put_if_absent",outcome="ok"}`,
		`omnigraph_storage_request_duration_seconds_bucket{op="get",outcome="ok"`,
		`omnigraph_cluster_lock_held{graph="default"} 1`,
		`process_resident_memory_bytes`,
		`go_goroutines`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if strings.Contains(body, dir) {
		t.Errorf("/metrics names the storage path")
	}
	checkMetricsText(t, body)
	checkDocsNameMetrics(t, body)
	if st, body := getText(t, "http://"+maddr+"/metrics", ""); st != 200 || !strings.Contains(body, "omnigraph_http_requests_total") {
		t.Fatalf("--metrics-listen /metrics: %d", st)
	}
	if st, _ := getText(t, "http://"+maddr+"/graphs/default/branches", secret); st != 404 {
		t.Fatalf("--metrics-listen serves a graph route: %d, want 404", st)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := wait(); code != 0 {
		t.Fatalf("SIGTERM: exit %d", code)
	}
}

// TestServeMetricsListenOpenModeLoopback: open mode's loopback rule holds
// for the metrics listener too (usage, before the lock is taken).
func TestServeMetricsListenOpenModeLoopback(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "graph")
	mustCLI(t, "init", "--schema", writeSchema(t), dir)
	code, _, errs := cli(t, "serve", "--store", dir, "--metrics-listen", "0.0.0.0:0")
	if code != exitUsage || !strings.Contains(errs, "loopback") {
		t.Fatalf("open mode metrics on 0.0.0.0: exit %d, %s", code, errs)
	}
	if st := lockStatus(t, dir); st.Held {
		t.Fatalf("a refused serve must not take the lock: %+v", st)
	}
}

// checkMetricsText runs promtool check metrics on a scrape when promtool
// is installed (scripts/test.sh installs it in CI).
func checkMetricsText(t *testing.T, body string) {
	t.Helper()
	path, err := exec.LookPath("promtool")
	if err != nil {
		t.Log("promtool not installed: the scrape is linted by promlint in server/ only")
		return
	}
	cmd := exec.Command(path, "check", "metrics")
	cmd.Stdin = strings.NewReader(body)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("promtool check metrics: %v\n%s", err, out.String())
	}
}

// leasedOnly are the metrics a leased lock adds (s3://, gs://), which a
// local graph's scrape lacks.
var leasedOnly = map[string]bool{
	"omnigraph_cluster_lock_heartbeat_age_seconds": true,
	"omnigraph_cluster_lock_lease_seconds":         true,
}

var metricName = regexp.MustCompile(`\bomnigraph_[a-z_]+`)

// checkDocsNameMetrics: every omnigraph_ metric the operations guide, the
// Grafana dashboard and the alert rules name is one the server exports.
func checkDocsNameMetrics(t *testing.T, body string) {
	t.Helper()
	have := map[string]bool{}
	for _, line := range strings.Split(body, "\n") {
		if name, ok := strings.CutPrefix(line, "# TYPE "); ok {
			have[strings.Fields(name)[0]] = true
		}
	}
	for _, f := range []string{"../../docs/operations.md", "../../docs/monitoring/grafana-dashboard.json", "../../docs/monitoring/alerts.yml"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(f, ".json") && !json.Valid(b) {
			t.Errorf("%s is not valid JSON: Grafana would not import it", f)
		}
		for _, n := range metricName.FindAllString(string(b), -1) {
			base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(n, "_bucket"), "_sum"), "_count")
			if !have[n] && !have[base] && !leasedOnly[n] {
				t.Errorf("%s names %s, which the server does not export", f, n)
			}
		}
	}
}

// TestServeLogsAndCountsRecoveries: a write interrupted after its table
// commit is rolled forward by the next server's open, which counts it in
// /metrics; the log has one line for it naming the writer, the outcome
// and the commit kept.
func TestServeLogsAndCountsRecoveries(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "g")
	mustCLI(t, "init", "--schema", writeSchema(t), dir)
	store, err := local.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	g, err := graph.Open(ctx, store, graph.OpenOptions{Actor: "ada"})
	if err != nil {
		t.Fatal(err)
	}
	clear := graph.Failpoints.Set(g.ID(), graph.FailpointPostPhaseB, func() error { return errors.New("stop") })
	w, err := g.BeginWrite(ctx, "main", graph.WriteOptions{Kind: graph.KindMutation})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Stage(ctx, graph.NodeTableKey("Person"), stagePerson("ada")); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Commit(ctx); !errors.Is(err, graph.ErrRecoveryRequired) {
		t.Fatalf("commit: %v", err)
	}
	clear()
	g.Close()

	// The open a server makes, in process, to read its log.
	g2, err := graph.Open(ctx, store, graph.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	recs := g2.OpenRecovered()
	g2.Close()
	if len(recs) != 1 || recs[0].OperationID != w.OperationID() {
		t.Fatalf("recovered at open: %+v", recs)
	}
	var logb bytes.Buffer
	m, err := newServeMetrics()
	if err != nil {
		t.Fatal(err)
	}
	m.recovered(slog.New(slog.NewTextHandler(&logb, nil)), "default", recs)
	lines := strings.Split(strings.TrimSpace(logb.String()), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "recovered an interrupted write") ||
		!strings.Contains(lines[0], "outcome=RolledForward") || !strings.Contains(lines[0], "intent=mutation") ||
		!strings.Contains(lines[0], "commit_id="+w.CommitID()) || strings.Contains(lines[0], dir) {
		t.Fatalf("recovery log:\n%s", logb.String())
	}
	if got := testutil.ToFloat64(m.recoveries.WithLabelValues("RolledForward")); got != 1 {
		t.Fatalf("recoveries counted: %v", got)
	}
}
