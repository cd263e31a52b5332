package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The process test of issue 27: one query must never take the server
// down. The real binary serves a graph holding the 30-member
// table, a dense generated acquaintance graph (3,000 people, 60,000
// edges) and 100,000 documents with text and vectors (no search index).
// Hostile queries (five- and six-way cross products, a 6-hop chain and a
// 1..6-hop reach over the dense graph, fuzzy over 100k strings, nearest
// without an index) are each refused (413) or finish within their budget,
// while /healthz and a normal point query answer throughout; a client that
// disconnects mid-query frees its read slot; the server's peak RSS stays
// under governanceRSSBound (VmHWM from /proc).

// governanceRSSBound is the stated bound of the server's peak RSS (about
// three times what it measures here). The issue measured 5.57 GB for the
// five-way cross product alone.
const governanceRSSBound = 512 << 20

const governanceSchema = `
node Member { handle: String @key }
node Person { handle: String @key }
node Doc {
  slug: String @key
  text: String
  embedding: Vector(8)
}
edge Knows: Person -> Person
`

var govWords = []string{"graph", "store", "query", "budget", "server", "object", "branch", "commit", "merge", "index",
	"vector", "token", "policy", "table", "fragment", "manifest", "schema", "traversal", "estimate", "memory"}

// writeGovernanceData writes the NDJSON of the test graph.
func writeGovernanceData(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	rng := rand.New(rand.NewSource(27))
	for i := 0; i < 30; i++ {
		fmt.Fprintf(w, `{"type":"Member","data":{"handle":"m%02d"}}`+"\n", i)
	}
	const people, degree = 3000, 20
	for i := 0; i < people; i++ {
		fmt.Fprintf(w, `{"type":"Person","data":{"handle":"p%05d"}}`+"\n", i)
	}
	for i := 0; i < people; i++ {
		seen := map[int]bool{i: true}
		for len(seen) <= degree {
			j := rng.Intn(people)
			if !seen[j] {
				seen[j] = true
				fmt.Fprintf(w, `{"edge":"Knows","from":"p%05d","to":"p%05d"}`+"\n", i, j)
			}
		}
	}
	for i := 0; i < 100_000; i++ {
		words := make([]string, 6)
		for k := range words {
			words[k] = govWords[rng.Intn(len(govWords))]
		}
		vec := make([]string, 8)
		for k := range vec {
			vec[k] = strconv.FormatFloat(rng.Float64(), 'f', 4, 64)
		}
		fmt.Fprintf(w, `{"type":"Doc","data":{"slug":"d%06d","text":"%s","embedding":[%s]}}`+"\n", i, strings.Join(words, " "), strings.Join(vec, ","))
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// post sends a query and returns its status and decoded body.
func post(ctx context.Context, base, token, src string) (int, map[string]any, error) {
	body, _ := json.Marshal(map[string]string{"query": src})
	req, err := http.NewRequestWithContext(ctx, "POST", base+"/graphs/g/query", bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	var m map[string]any
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &m); err != nil {
		return resp.StatusCode, nil, fmt.Errorf("status %d, body %.200q: %w", resp.StatusCode, b, err)
	}
	return resp.StatusCode, m, nil
}

// peakRSS reads a process's peak resident set (VmHWM) from /proc.
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("read the server's /proc status: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("VmHWM %q: %v", v, err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc status")
	return 0
}

func TestServeGovernanceProcess(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Fatalf("this test reads the server's peak RSS from /proc: %v", err)
	}
	root := t.TempDir()
	dir := filepath.Join(root, "g")
	schema := filepath.Join(root, "schema.pg")
	data := filepath.Join(root, "data.jsonl")
	if err := os.WriteFile(schema, []byte(governanceSchema), 0o600); err != nil {
		t.Fatal(err)
	}
	writeGovernanceData(t, data)
	mustCLI(t, "init", "--schema", schema, dir)
	mustCLI(t, "load", "--data", data, "--mode", "append", dir)
	tokens := filepath.Join(root, "tokens.json")
	secret := map[string]string{}
	for _, a := range []string{"hostile", "normal", "leaver"} {
		secret[a] = strings.TrimSpace(mustCLI(t, "token", "add", a, "--tokens", tokens))
	}
	// The leaver may hold one read; its budget is raised far enough that
	// its query runs until it disconnects.
	cfg := filepath.Join(root, "serve.json")
	if err := os.WriteFile(cfg, []byte(`{
  "version": 1,
  "tokens": "tokens.json",
  "limits": {"max_query_memory": "256MiB", "query_timeout": "20s", "max_heavy_reads": 1},
  "graphs": {"g": {"store": "g", "limits": {"max_query_rows": 10000000}}},
  "actors": {"leaver": {"max_reads": 1, "max_query_memory": "1GiB", "query_timeout": "2m"}}
}`), 0o600); err != nil {
		t.Fatal(err)
	}
	base, cmd, wait := startServe(t, "--config", cfg)

	// The watchdog: /healthz and a normal point query, all the time.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failures []string
	var lat []time.Duration
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			resp, err := http.Get(base + "/healthz")
			if err == nil {
				resp.Body.Close()
			}
			if err != nil || resp.StatusCode != 200 {
				mu.Lock()
				failures = append(failures, fmt.Sprintf("healthz: %v", err))
				mu.Unlock()
			}
			start := time.Now()
			st, m, err := post(context.Background(), base, secret["normal"], fmt.Sprintf(`query q() { match { $p: Person { handle: "p%05d" } } return { $p.handle } }`, i%3000))
			d := time.Since(start)
			mu.Lock()
			lat = append(lat, d)
			if err != nil || st != 200 || fmt.Sprint(m["row_count"]) != "1" {
				failures = append(failures, fmt.Sprintf("point query: %d %v %v", st, m, err))
			}
			mu.Unlock()
		}
	}()

	// Hostile queries, each refused or within its budget. want is the
	// statuses allowed; estimated, when refused, whether the estimate did.
	hostile := []struct {
		name      string
		src       string
		want      []int
		estimated bool
	}{
		{"five-way cross product", `query q() { match { $a: Member  $b: Member  $c: Member  $d: Member  $e: Member } return { count($a) as n } }`, []int{413}, true},
		{"six-way cross product", `query q() { match { $a: Member  $b: Member  $c: Member  $d: Member  $e: Member  $f: Member } return { count($a) as n } }`, []int{413}, true},
		{"6-hop chain", `query q() { match { $a: Person  $a knows $b  $b knows $c  $c knows $d  $d knows $e  $e knows $f  $f knows $g } return { count($g) as n } }`, []int{413}, true},
		{"1..6-hop reach", `query q() { match { $a: Person  $a knows{1,6} $b } return { count($b) as n } }`, []int{200, 413}, false},
		{"fuzzy over 100k strings", `query q() { match { $d: Doc  fuzzy($d.text, "grahp bugdet", 2) } return { count($d) as n } }`, []int{200, 413}, false},
		// Filters that keep every row make the estimate (1/3 each) miss:
		// stopped as it runs, before the 9M rows exist.
		{"a cross product the estimate misses", `query q() { match { $a: Person  $b: Person  $a.handle >= "p"  $b.handle >= "p" } return { count($a) as n } }`, []int{413}, false},
		{"nearest without an index", `query q() { match { $d: Doc } return { $d.slug } order { nearest($d.embedding, [0.5,0.5,0.5,0.5,0.5,0.5,0.5,0.5]) } limit 10 }`, []int{200}, false},
	}
	var hwg sync.WaitGroup
	results := make([]string, len(hostile))
	for i, h := range hostile {
		hwg.Add(1)
		go func() {
			defer hwg.Done()
			start := time.Now()
			st, m, err := post(context.Background(), base, secret["hostile"], h.src)
			d := time.Since(start)
			rl, _ := m["resource_limit"].(map[string]any)
			switch {
			case err != nil:
				results[i] = fmt.Sprintf("%s: %v", h.name, err)
			case !slices.Contains(h.want, st):
				results[i] = fmt.Sprintf("%s: status %d, want one of %v: %v", h.name, st, h.want, m)
			case st == 413 && h.estimated && rl["estimated"] != true:
				results[i] = fmt.Sprintf("%s: refused while it ran, want on its estimate: %v", h.name, m)
			case st == 413 && !h.estimated && len(h.want) == 1 && rl["estimated"] != nil:
				results[i] = fmt.Sprintf("%s: refused on its estimate, want while it ran: %v", h.name, m)
			case st == 413 && (rl == nil || m["code"] != "bad_request"):
				results[i] = fmt.Sprintf("%s: 413 without resource_limit: %v", h.name, m)
			}
			t.Logf("%s: %d in %s %v", h.name, st, d.Round(time.Millisecond), rl)
		}()
	}
	hwg.Wait()
	for _, r := range results {
		if r != "" {
			t.Error(r)
		}
	}

	// The CLI through the server: a budget refusal exits 6, as locally;
	// the local budget flags do not go with --server.
	five := hostile[0].src
	code, _, errs := cli(t, "query", "-e", five, "--server", base, "--token", secret["hostile"], "--graph", "g", "--format", "json")
	if code != exitBudget || !strings.Contains(errs, `"code":"budget_exceeded"`) {
		t.Errorf("CLI --server over budget: exit %d, %s", code, errs)
	}
	if code, _, errs := cli(t, "query", "-e", five, "--server", base, "--token", secret["hostile"], "--graph", "g", "--max-rows", "0"); code != exitUsage {
		t.Errorf("CLI --server --max-rows: exit %d, %s", code, errs)
	}

	// A client that disconnects mid-query frees its slot. The leaver's
	// query checks 300,000 pairs by a 1..6-hop search each (about a minute
	// of work; little memory); while it runs, a second read of the leaver
	// is 429.
	leaving := `query q() { match { $a: Person  $b: Person  $b.handle starts_with "p000"  not { $a knows{1,6} $b } } return { count($a) as n } }`
	//
	// The leaving query and a probe race for the one slot: a leaving query
	// that arrives while a probe holds it is refused (429), and is sent
	// again, so the probe's 429 means the leaving query holds the slot.
	probe := `query q() { match { $m: Member { handle: "m01" } } return { $m.handle } }`
	var (
		disconnect context.CancelFunc
		gone       chan struct{}
		leftWith   string // the leaving query's answer once it ended
	)
	leave := func() {
		var ctx context.Context
		ctx, disconnect = context.WithCancel(context.Background())
		gone = make(chan struct{})
		go func(done chan struct{}) {
			defer close(done)
			st, m, err := post(ctx, base, secret["leaver"], leaving)
			leftWith = fmt.Sprintf("%d %v %v", st, m, err)
		}(gone)
	}
	leave()
	deadline := time.Now().Add(60 * time.Second)
	for refused := 0; ; {
		st, m, err := post(context.Background(), base, secret["leaver"], probe)
		if err != nil {
			t.Fatal(err)
		}
		if st == 429 {
			break // the leaving query holds the leaver's slot
		}
		select {
		case <-gone:
			if !strings.HasPrefix(leftWith, "429 ") {
				t.Fatalf("the leaving query ended before the disconnect: %s", leftWith)
			}
			refused++
			t.Logf("the leaving query met a probe in the slot (%d); sending it again", refused)
			disconnect()
			leave()
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the leaver's query never held its slot: last probe %d %v", st, m)
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // let it run
	cut := time.Now()
	disconnect()
	<-gone
	for {
		st, m, err := post(context.Background(), base, secret["leaver"], probe)
		if err != nil {
			t.Fatal(err)
		}
		if st == 200 {
			break
		}
		if st != 429 || time.Since(cut) > time.Minute {
			t.Fatalf("after the disconnect: %d %v", st, m)
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Logf("the disconnected query's slot was free %s after the disconnect", time.Since(cut).Round(time.Millisecond))

	close(stop)
	wg.Wait()
	mu.Lock()
	if len(failures) > 0 {
		t.Errorf("%d watchdog failures, first: %s", len(failures), failures[0])
	}
	slices.Sort(lat)
	if len(lat) > 0 {
		t.Logf("normal point queries during the hostile ones: %d, p50 %s, p99 %s, max %s", len(lat),
			lat[len(lat)/2].Round(time.Microsecond), lat[len(lat)*99/100].Round(time.Microsecond), lat[len(lat)-1].Round(time.Microsecond))
	}
	mu.Unlock()
	if len(lat) < 5 {
		t.Errorf("only %d normal queries ran alongside the hostile ones", len(lat))
	}

	rss := peakRSS(t, cmd.Process.Pid)
	t.Logf("server peak RSS %d MiB (bound %d MiB)", rss>>20, governanceRSSBound>>20)
	if rss > governanceRSSBound {
		t.Errorf("server peak RSS %d MiB, over the stated bound of %d MiB", rss>>20, governanceRSSBound>>20)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := wait(); code != 0 {
		t.Fatalf("SIGTERM: exit %d", code)
	}
}
