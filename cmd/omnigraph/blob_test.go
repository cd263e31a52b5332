package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/omnigraph-go/omnigraph/internal/testenv"
	"github.com/omnigraph-go/omnigraph/table"
)

const blobCLISchema = `node Doc {
  slug: String @key
  body: Blob?
}
edge Cites: Doc -> Doc {
  note: Blob?
}
`

// chunkOf is chunk i (1 MiB) of the deterministic payload of seed.
func chunkOf(seed uint64, i int) []byte {
	r := rand.New(rand.NewPCG(seed, uint64(i)))
	b := make([]byte, 1<<20)
	for j := 0; j < len(b); j += 8 {
		v := r.Uint64()
		for k := 0; k < 8; k++ {
			b[j+k] = byte(v >> (8 * k))
		}
	}
	return b
}

// payloadRange returns bytes [off, off+n) of the payload of seed.
func payloadRange(seed uint64, off, n int64) []byte {
	out := make([]byte, 0, n)
	for pos := off; pos < off+n; {
		c := chunkOf(seed, int(pos>>20))
		k := pos & (1<<20 - 1)
		take := min(int64(len(c))-k, off+n-pos)
		out = append(out, c[k:k+take]...)
		pos += take
	}
	return out
}

// writeBlobLine writes a Doc line whose body is the size-byte payload of
// seed, base64-encoded as the data streams (the test never holds it), and
// returns the payload's digest.
func writeBlobLine(t *testing.T, w io.Writer, slug string, seed uint64, size int) string {
	t.Helper()
	fmt.Fprintf(w, `{"type":"Doc","data":{"slug":%q,"body":"base64:`, slug)
	h := sha256.New()
	enc := base64.NewEncoder(base64.StdEncoding, w)
	for i := 0; i*(1<<20) < size; i++ {
		c := chunkOf(seed, i)[:min(1<<20, size-i*(1<<20))]
		h.Write(c)
		enc.Write(c)
	}
	enc.Close()
	fmt.Fprint(w, "\"}}\n")
	return hex.EncodeToString(h.Sum(nil))
}

func sha256File(t *testing.T, path string) (string, int64) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil)), n
}

func blobSchemaFile(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "docs.pg")
	if err := os.WriteFile(p, []byte(blobCLISchema), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCLIBlob drives 'blob get' and 'blob stat' in process on a local
// graph: whole values and ranges to stdout and --out, edges, snapshots,
// external references (refused on load without --external-blob-base),
// and every refusal with its exit code and JSON error code.
func TestCLIBlob(t *testing.T) {
	dir := t.TempDir()
	url := filepath.Join(dir, "g")
	mustCLI(t, "init", "--schema", blobSchemaFile(t), url)
	data := filepath.Join(dir, "data.jsonl")
	f, _ := os.Create(data)
	bigSum := writeBlobLine(t, f, "big", 1, table.BlobPieceSize+321)
	fmt.Fprintf(f, `{"type":"Doc","data":{"slug":"small","body":"base64:%s"}}`+"\n", base64.StdEncoding.EncodeToString([]byte("hello")))
	fmt.Fprintln(f, `{"type":"Doc","data":{"slug":"none"}}`)
	fmt.Fprintln(f, `{"edge":"Cites","from":"big","to":"small","data":{"id":"c1","note":"base64:bm90ZQ=="}}`)
	f.Close()
	mustCLI(t, "load", "--data", data, "--mode", "merge", "--store", url)
	bigLen := int64(table.BlobPieceSize + 321)

	out := mustCLI(t, "blob", "get", "node", "Doc", "big", "body", "--store", url)
	if sum := sha256.Sum256([]byte(out)); hex.EncodeToString(sum[:]) != bigSum || int64(len(out)) != bigLen {
		t.Fatalf("blob get: %d bytes, digest mismatch", len(out))
	}
	for _, r := range [][3]int64{{0, 7, 7}, {table.BlobPieceSize - 3, 6, 6}, {bigLen - 4, 100, 4}} {
		out := mustCLI(t, "blob", "get", "node", "Doc", "big", "body", "--offset", fmt.Sprint(r[0]), "--length", fmt.Sprint(r[1]), "--store", url)
		if !bytes.Equal([]byte(out), payloadRange(1, r[0], r[2])) {
			t.Fatalf("range %v: %d bytes, wrong", r, len(out))
		}
	}
	if out := mustCLI(t, "blob", "get", "node", "Doc", "big", "body", "--offset", fmt.Sprint(bigLen-2), "--store", url); !bytes.Equal([]byte(out), payloadRange(1, bigLen-2, 2)) {
		t.Fatalf("--offset to the end: %q", out)
	}
	if out := mustCLI(t, "blob", "get", "edge", "Cites", "c1", "note", "--store", url); out != "note" {
		t.Fatalf("edge value: %q", out)
	}
	outFile := filepath.Join(dir, "big.bin")
	mustCLI(t, "blob", "get", "node", "Doc", "big", "body", "--out", outFile, "--store", url)
	if sum, n := sha256File(t, outFile); sum != bigSum || n != bigLen {
		t.Fatalf("--out: %d bytes, digest %s", n, sum)
	}

	var st struct {
		Entity, Type, ID, Property, Kind, SHA256, ETag, Branch, Snapshot string
		Size                                                             int64
	}
	if err := json.Unmarshal([]byte(mustCLI(t, "blob", "stat", "node", "Doc", "big", "body", "--json", "--store", url)), &st); err != nil {
		t.Fatal(err)
	}
	if st.Kind != "managed" || st.Size != bigLen || st.SHA256 != bigSum || st.ETag != `"`+bigSum+`"` || st.Branch != "main" || st.Snapshot == "" || st.Entity != "node" || st.ID != "big" {
		t.Fatalf("stat --json: %+v", st)
	}
	if text := mustCLI(t, "blob", "stat", "node", "Doc", "small", "body", "--store", url); !strings.Contains(text, "size:     5 bytes") || !strings.Contains(text, "kind:     managed") {
		t.Fatalf("stat: %s", text)
	}
	first := st.Snapshot

	// An update: the head has the new bytes, the old commit the old ones.
	mustCLI(t, "mutate", "-e", `query up($b: Blob) { update Doc set { body: $b } where slug = "small" }`, "--params", `{"b":"base64:bmV3"}`, "--store", url)
	if out := mustCLI(t, "blob", "get", "node", "Doc", "small", "body", "--store", url); out != "new" {
		t.Fatalf("after the update: %q", out)
	}
	if out := mustCLI(t, "blob", "get", "node", "Doc", "small", "body", "--snapshot", first, "--store", url); out != "hello" {
		t.Fatalf("at the first commit: %q", out)
	}

	// External references: refused by default, allowed under a base.
	ext := filepath.Join(dir, "ext.jsonl")
	os.WriteFile(ext, []byte(`{"type":"Doc","data":{"slug":"ext","body":"s3://media/a.png"}}`+"\n"), 0o644)
	if code, _, errs := cli(t, "load", "--data", ext, "--mode", "merge", "--store", url, "--json"); code != 1 || !strings.Contains(errs, `"code":"invalid_input"`) || !strings.Contains(errs, "--external-blob-base") {
		t.Fatalf("external value without a base: exit %d %s", code, errs)
	}
	if code, _, errs := cli(t, "load", "--data", ext, "--mode", "merge", "--store", url, "--external-blob-base", "file:///etc/"); code != 2 {
		t.Fatalf("a file:// base: exit %d %s", code, errs)
	}
	mustCLI(t, "load", "--data", ext, "--mode", "merge", "--store", url, "--external-blob-base", "s3://media/")
	if text := mustCLI(t, "blob", "stat", "node", "Doc", "ext", "body", "--store", url); !strings.Contains(text, "uri:      s3://media/a.png") {
		t.Fatalf("stat external: %s", text)
	}
	if code, out, errs := cli(t, "blob", "get", "node", "Doc", "ext", "body", "--store", url); code != 1 || out != "" || !strings.Contains(errs, "s3://media/a.png") || !strings.Contains(errs, "blob stat") {
		t.Fatalf("get external: exit %d %q %s", code, out, errs)
	}

	// Refusals.
	for _, tc := range []struct {
		args []string
		code int
		json string
	}{
		{[]string{"get", "node", "Doc", "none", "body"}, 1, "blob_not_found"},
		{[]string{"get", "node", "Doc", "nobody", "body"}, 1, "blob_not_found"},
		{[]string{"stat", "node", "Nope", "big", "body", "--json"}, 1, "invalid_input"},
		{[]string{"stat", "node", "Doc", "big", "slug", "--json"}, 1, "invalid_input"},
		{[]string{"stat", "node", "Doc", "none", "body", "--json"}, 1, "blob_not_found"},
		{[]string{"stat", "node", "Doc", "big", "body", "--branch", "nope", "--json"}, 1, "branch_not_found"},
		{[]string{"stat", "vertex", "Doc", "big", "body", "--json"}, 2, "usage"},
		{[]string{"stat", "node", "Doc", "big", "--json"}, 2, "usage"},
		{[]string{"get", "node", "Doc", "big", "body", "--offset", fmt.Sprint(bigLen)}, 1, "blob_range"},
		{[]string{"get", "node", "Doc", "big", "body", "--length", "0"}, 2, "usage"},
		{[]string{"get", "node", "Doc", "big", "body", "--offset", "-1"}, 2, "usage"},
		{[]string{"get", "node", "Doc", "big", "body", "--branch", "main", "--snapshot", first}, 2, "usage"},
	} {
		args := append(append([]string{"blob"}, tc.args...), "--store", url)
		code, out, errs := cli(t, args...)
		if code != tc.code || out != "" {
			t.Fatalf("%v: exit %d (want %d), stdout %q, stderr %s", tc.args, code, tc.code, out, errs)
		}
		if strings.Contains(strings.Join(tc.args, " "), "--json") && !strings.Contains(errs, `"code":"`+tc.json+`"`) {
			t.Fatalf("%v: %s, want code %s", tc.args, errs, tc.json)
		}
	}

	// A failed read leaves an existing --out file as it was.
	pieces, _ := filepath.Glob(filepath.Join(url, "nodes", "Doc", "_blobs", "*", "*"))
	for _, p := range pieces {
		os.Remove(p)
	}
	os.WriteFile(outFile, []byte("keep me"), 0o644)
	if code, _, errs := cli(t, "blob", "get", "node", "Doc", "big", "body", "--out", outFile, "--store", url); code != 1 || !strings.Contains(errs, "damaged or missing") {
		t.Fatalf("read of a damaged value: exit %d %s", code, errs)
	}
	if b, _ := os.ReadFile(outFile); string(b) != "keep me" {
		t.Fatalf("the failed read changed --out: %q", b)
	}
}

// cliPeakEnv names a file a CLI child writes its peak RSS (VmHWM, MiB)
// to as it exits (recordChildPeak, from TestMain). The kernel's rusage of
// a child is no use here: the child starts as a vfork of this test
// process and inherits its resident set until exec.
const cliPeakEnv = "OMNIGRAPH_CLI_CHILD_PEAK"

func recordChildPeak() {
	path := os.Getenv(cliPeakEnv)
	if path == "" {
		return
	}
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		os.WriteFile(path, []byte(fmt.Sprint(hwmOf(b))), 0o644)
	}
}

// hwmOf reads VmHWM (MiB) from a /proc status file.
func hwmOf(status []byte) float64 {
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}

// measured runs one CLI child and returns its stdout and peak RSS (MiB).
func measured(t *testing.T, args ...string) (string, float64) {
	t.Helper()
	peak := filepath.Join(t.TempDir(), "peak")
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), cliChildEnv+"=1", cliPeakEnv+"="+peak, memLimitEnv)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("omnigraph %s: %v\n%s", strings.Join(args, " "), err, errb.String())
	}
	b, err := os.ReadFile(peak)
	mib, perr := strconv.ParseFloat(string(b), 64)
	if err != nil || perr != nil || mib <= 0 {
		t.Fatalf("omnigraph %s: no peak RSS recorded (%v %v)", strings.Join(args, " "), err, perr)
	}
	return out.String(), mib
}

// memLimitEnv bounds the Go heap of a measured child well below the value's
// size. Without it the peak is mostly uncollected garbage and swings with
// how much CPU the collector got (a busy CI machine saw +50 MiB where an
// idle one sees +25): the limit makes the collector run before the heap
// grows, so the peak is what the process keeps live. A process that held
// the 64 MiB value would still show it: a limit is a target, not a cap.
const memLimitEnv = "GOMEMLIMIT=24MiB"

// vmHWM is a live process's peak resident set, in MiB.
func vmHWM(t *testing.T, pid int) float64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	v := hwmOf(b)
	if v <= 0 {
		t.Fatal("no VmHWM")
	}
	return v
}

// TestCLIBlob64MiB: a 64 MiB value loads (as one NDJSON line of 85 MiB,
// beyond the line limit: it streams into the blob area), reads back whole
// and by ranges through 'blob get' and HTTP (serve), and exports and
// loads again (export also through the server, to the same bytes), each
// process in memory that does not hold the value: its
// peak RSS stays below baseline + 48 MiB (the value is 64 MiB). The peaks
// are printed (go test -v).
func TestCLIBlob64MiB(t *testing.T) {
	t.Run("local", func(t *testing.T) { run64MiB(t, filepath.Join(t.TempDir(), "g")) })
	t.Run("s3", func(t *testing.T) { run64MiB(t, testenv.S3(t)) })
}

func run64MiB(t *testing.T, url string) {
	const size = 64 << 20
	const slack = 48 // MiB above the baseline a process may use
	dir := t.TempDir()
	mustCLI(t, "init", "--schema", blobSchemaFile(t), url)
	data := filepath.Join(dir, "big.jsonl")
	f, _ := os.Create(data)
	w := bufio.NewWriterSize(f, 1<<20)
	sum := writeBlobLine(t, w, "big", 7, size)
	w.Flush()
	f.Close()
	_, base := measured(t, "blob", "stat", "node", "Doc", "nobody", "--help")
	peaks := map[string]float64{}
	_, peaks["load"] = measured(t, "load", "--data", data, "--mode", "merge", "--store", url, "--no-auto-optimize")
	os.Remove(data)

	out := filepath.Join(dir, "out.bin")
	_, peaks["blob get (whole, --out)"] = measured(t, "blob", "get", "node", "Doc", "big", "body", "--out", out, "--store", url)
	if got, n := sha256File(t, out); got != sum || n != size {
		t.Fatalf("blob get: %d bytes, digest %s, want %s", n, got, sum)
	}
	os.Remove(out)
	var rng string
	off := int64(table.BlobPieceSize*7 - 1000)
	rng, peaks["blob get (range)"] = measured(t, "blob", "get", "node", "Doc", "big", "body", "--offset", fmt.Sprint(off), "--length", "3000000", "--store", url)
	if !bytes.Equal([]byte(rng), payloadRange(7, off, 3000000)) {
		t.Fatalf("blob get range: %d bytes, wrong", len(rng))
	}
	stat, _ := measured(t, "blob", "stat", "node", "Doc", "big", "body", "--json", "--store", url)
	if !strings.Contains(stat, sum) || !strings.Contains(stat, fmt.Sprintf(`"size": %d`, size)) {
		t.Fatalf("stat: %s", stat)
	}

	// HTTP: the whole value and a range from 'omnigraph serve'.
	srv, cmd, wait := startServeEnv(t, []string{memLimitEnv}, "--store", url)
	u := srv + "/graphs/default/blob?entity=node&type=Doc&id=big&property=body"
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	n, err := io.Copy(h, resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 || n != size || hex.EncodeToString(h.Sum(nil)) != sum {
		t.Fatalf("GET: %d, %d bytes, %v", resp.StatusCode, n, err)
	}
	req, _ := http.NewRequest("GET", u, nil)
	req.Header.Set("Range", fmt.Sprintf("bytes=%d-%d", off, off+999))
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 206 || !bytes.Equal(b, payloadRange(7, off, 1000)) {
		t.Fatalf("GET range: %d, %d bytes", resp.StatusCode, len(b))
	}
	// The CLI's export through the server streams the value's line.
	expSrv := filepath.Join(dir, "export-server.jsonl")
	_, peaks["export --server"] = measured(t, "export", "--out", expSrv, "--server", srv)
	peaks["serve (GET whole + range)"] = vmHWM(t, cmd.Process.Pid)
	cmd.Process.Signal(syscall.SIGTERM)
	if code := wait(); code != 0 {
		t.Fatalf("serve exit %d", code)
	}

	// Export streams the value into its line; loading the export into a
	// new graph streams it back.
	exp := filepath.Join(dir, "export.jsonl")
	_, peaks["export"] = measured(t, "export", "--out", exp, "--store", url)
	a, na := sha256File(t, exp)
	if b, nb := sha256File(t, expSrv); a != b || na != nb || na < size {
		t.Fatalf("export --server wrote %d bytes, export --store %d (they differ)", nb, na)
	}
	os.Remove(expSrv)
	url2 := filepath.Join(dir, "g2")
	mustCLI(t, "init", "--schema", strings.TrimSuffix(exp, ".jsonl")+".pg", url2)
	_, peaks["load of the export"] = measured(t, "load", "--data", exp, "--mode", "overwrite", "--store", url2, "--no-auto-optimize")
	os.Remove(exp)
	stat2, _ := measured(t, "blob", "stat", "node", "Doc", "big", "body", "--json", "--store", url2)
	if !strings.Contains(stat2, sum) {
		t.Fatalf("the rebuilt graph's value: %s", stat2)
	}

	t.Logf("peak RSS (MiB) with a %d MiB Blob value; baseline process %.1f", size>>20, base)
	for _, k := range []string{"load", "blob get (whole, --out)", "blob get (range)", "serve (GET whole + range)", "export --server", "export", "load of the export"} {
		t.Logf("  %-28s %6.1f  (+%.1f over the baseline)", k, peaks[k], peaks[k]-base)
		if peaks[k]-base > slack {
			t.Errorf("%s: peak RSS %.1f MiB is %.1f over the baseline, more than %d: the value is held in memory", k, peaks[k], peaks[k]-base, slack)
		}
	}
}

// TestBlobServerModeMatchesLocal runs every 'blob get' and 'blob stat'
// form once with --store and once through 'omnigraph serve' (a real child
// process) with --server, and requires the same exit code, the same
// output and, for --json refusals, the same error code: whole values and
// ranges, edges, --out, a past commit, an external value, and refusals.
func TestBlobServerModeMatchesLocal(t *testing.T) {
	dir := t.TempDir()
	url := filepath.Join(dir, "g")
	mustCLI(t, "init", "--schema", blobSchemaFile(t), url)
	data := filepath.Join(dir, "data.jsonl")
	f, _ := os.Create(data)
	writeBlobLine(t, f, "big", 3, table.BlobPieceSize+777)
	fmt.Fprintf(f, `{"type":"Doc","data":{"slug":"small","body":"base64:%s"}}`+"\n", base64.StdEncoding.EncodeToString([]byte("hello")))
	fmt.Fprintln(f, `{"type":"Doc","data":{"slug":"none"}}`)
	fmt.Fprintln(f, `{"type":"Doc","data":{"slug":"ext","body":"s3://media/a.png"}}`)
	fmt.Fprintln(f, `{"edge":"Cites","from":"big","to":"small","data":{"id":"c1","note":"base64:bm90ZQ=="}}`)
	f.Close()
	mustCLI(t, "load", "--data", data, "--mode", "merge", "--store", url, "--external-blob-base", "s3://media/")
	first := strings.TrimSpace(mustCLI(t, "blob", "stat", "node", "Doc", "small", "body", "--json", "--store", url))
	var st struct{ Snapshot string }
	if err := json.Unmarshal([]byte(first), &st); err != nil || st.Snapshot == "" {
		t.Fatalf("stat: %v %s", err, first)
	}
	mustCLI(t, "branch", "create", "side", "--store", url)
	mustCLI(t, "mutate", "-e", `query up($b: Blob) { update Doc set { body: $b } where slug = "small" }`, "--params", `{"b":"base64:bmV3"}`, "--branch", "side", "--store", url)
	base, _, _ := startServe(t, "--store", url)

	size := int64(table.BlobPieceSize + 777)
	cases := [][]string{
		{"get", "node", "Doc", "big", "body"},
		{"get", "node", "Doc", "big", "body", "--offset", fmt.Sprint(table.BlobPieceSize - 5), "--length", "10"},
		{"get", "node", "Doc", "big", "body", "--offset", fmt.Sprint(size - 3)},
		{"get", "node", "Doc", "big", "body", "--length", fmt.Sprint(size + 100)},
		{"get", "node", "Doc", "small", "body"},
		{"get", "node", "Doc", "small", "body", "--branch", "side"},
		{"get", "node", "Doc", "small", "body", "--snapshot", st.Snapshot},
		{"get", "edge", "Cites", "c1", "note"},
		{"stat", "node", "Doc", "big", "body"},
		{"stat", "node", "Doc", "big", "body", "--json"},
		{"stat", "node", "Doc", "small", "body", "--branch", "side", "--json"},
		{"stat", "node", "Doc", "small", "body", "--snapshot", st.Snapshot},
		{"stat", "node", "Doc", "ext", "body", "--json"},
		{"stat", "edge", "Cites", "c1", "note", "--json"},
		// Refusals: the same exit code and, with --json, the same code.
		{"get", "node", "Doc", "ext", "body"},
		{"get", "node", "Doc", "none", "body"},
		{"get", "node", "Doc", "nobody", "body"},
		{"get", "node", "Doc", "big", "body", "--offset", fmt.Sprint(size)},
		{"stat", "node", "Doc", "none", "body", "--json"},
		{"stat", "node", "Nope", "big", "body", "--json"},
		{"stat", "node", "Doc", "big", "slug", "--json"},
		{"stat", "node", "Doc", "big", "body", "--branch", "nope", "--json"},
		{"stat", "node", "Doc", "big", "body", "--snapshot", "feedface", "--json"},
		{"stat", "vertex", "Doc", "big", "body", "--json"},
		{"get", "node", "Doc", "big", "body", "--length", "0"},
		{"get", "node", "Doc", "big", "body", "--branch", "main", "--snapshot", st.Snapshot},
	}
	code := regexp.MustCompile(`"code":"[a-z_]+"`)
	for _, c := range cases {
		args := append([]string{"blob"}, c...)
		lc, lout, lerr := cli(t, append(args, "--store", url)...)
		sc, sout, serr := cli(t, append(args, "--server", base)...)
		if lc != sc || lout != sout {
			t.Errorf("%s: --store exit %d, %d bytes out; --server exit %d, %d bytes out\n--store:  %.300s%s\n--server: %.300s%s",
				strings.Join(c, " "), lc, len(lout), sc, len(sout), lout, lerr, sout, serr)
			continue
		}
		if lc != exitOK && (code.FindString(lerr) != code.FindString(serr) || lerr == "" || serr == "") {
			t.Errorf("%s: --store %s, --server %s", strings.Join(c, " "), lerr, serr)
		}
		if lc != exitOK && strings.Contains(strings.Join(c, " "), "--json") && code.FindString(lerr) == "" {
			t.Errorf("%s: no JSON error code: %s", strings.Join(c, " "), lerr)
		}
	}

	// --out through the server: the whole value, and a failed read leaves
	// an existing file as it was.
	outFile := filepath.Join(dir, "big.bin")
	mustCLI(t, "blob", "get", "node", "Doc", "big", "body", "--out", outFile, "--server", base)
	if got, n := sha256File(t, outFile); n != size || got != hex.EncodeToString(sha256Of(payloadRange(3, 0, size))) {
		t.Fatalf("--out through the server: %d bytes, digest %s", n, got)
	}
	os.WriteFile(outFile, []byte("keep me"), 0o644)
	if code, _, errs := cli(t, "blob", "get", "node", "Doc", "none", "body", "--out", outFile, "--server", base); code != exitError {
		t.Fatalf("a refused read: exit %d %s", code, errs)
	}
	if b, _ := os.ReadFile(outFile); string(b) != "keep me" {
		t.Fatalf("the refused read changed --out: %q", b)
	}
	if code, _, errs := cli(t, "blob", "stat", "node", "Doc", "big", "body", "--server", base, "--store", url); code != exitUsage {
		t.Fatalf("--server with --store: exit %d %s", code, errs)
	}
}

func sha256Of(b []byte) []byte {
	s := sha256.Sum256(b)
	return s[:]
}
