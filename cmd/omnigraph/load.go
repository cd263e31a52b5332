package main

import (
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/omnigraph-go/omnigraph/client"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/load"
)

func init() {
	register(func(a *app) *cobra.Command {
		var t graphTarget
		var auto autoOptimizeFlag
		var data, mode, branch string
		var replace []string
		var quiet bool
		c := &cobra.Command{
			Use:   "load --data FILE.jsonl --mode append|merge|overwrite [--branch B] [--quiet] [--json] [--wait D] URL",
			Short: "Load strict NDJSON (one node or edge per line) as one commit",
			Long: "Load a file of graph-batch NDJSON into a branch as ONE commit. Each line is\n" +
				"  {\"type\":\"Person\",\"data\":{...}}                       a node\n" +
				"  {\"edge\":\"Knows\",\"from\":\"alice\",\"to\":\"bob\",\"data\":{...}} an edge (from/to are node ids: key values)\n" +
				"Unknown or duplicate fields are refused with their line number. The whole file\n" +
				"is validated before anything is written; a bad line changes nothing.\n" +
				"--mode is required: append (strict insert: an existing id is a key_conflict),\n" +
				"merge (upsert by id), overwrite (replace each type present in the file; --type T\n" +
				"also replaces T, emptying it when the file has no T rows). --data - reads stdin.",
			Args: cobra.MaximumNArgs(1),
			RunE: func(c *cobra.Command, args []string) (err error) {
				ctx := c.Context()
				sg, err := t.serverGraph(c)
				if err != nil {
					return err
				}
				if len(args) == 1 && sg != nil {
					return usagef("give the graph once: --server URL (and --graph ID) goes without a positional URL")
				}
				if len(args) == 1 {
					if t.store != "" && t.store != args[0] {
						return usagef("give the graph location once: either URL or --store URL")
					}
					t.store = args[0]
				}
				if data == "" {
					return usagef("--data FILE.jsonl is required (use --data - to read stdin)")
				}
				if mode == "" {
					return usagef("--mode is required: append (strict insert), merge (upsert by id) or overwrite (replace each type in the file)")
				}
				m, err := load.ParseMode(mode)
				if err != nil {
					return usageError{msg: err.Error()}
				}
				var in io.Reader = a.stdin
				if data != "-" {
					f, err := os.Open(data)
					if err != nil {
						return usagef("open the data file: %v", err)
					}
					defer f.Close()
					in = f
				}
				cr := &countingReader{r: in, size: inputSize(in)}
				var res *load.Result
				var bar *loadProgress
				if sg != nil {
					bar = newProgress(a.stderr, cr, true)
					out, err := sg.Load(ctx, cr, client.LoadOptions{Branch: branch, Mode: string(m)})
					if err != nil {
						return t.remoteErr(err)
					}
					res = loadResult(out)
				} else {
					// err stays the named result: done reports a failed
					// lock release through it.
					var g *graph.Graph
					var done func(*error)
					if g, done, err = t.openWrite(ctx, "load"); err != nil {
						return err
					}
					defer done(&err)
					opts := load.Options{Branch: branch, Mode: m, Replace: replace, CountEffects: true}
					defer loadGC()()
					bar = newProgress(a.stderr, cr, quiet)
					opts.Progress = bar.update
					res, err = load.Run(ctx, g, cr, opts)
					bar.finish()
					if err != nil {
						return err
					}
					// After the result is printed, before the lock is released.
					defer auto.run(ctx, g, res.Commit)
				}
				for _, w := range res.Warnings {
					fmt.Fprintln(a.stderr, "warning:", w)
				}
				elapsed := time.Since(bar.start).Seconds()
				if t.json {
					return writeJSON(a.stdout, loadSummary{Result: res, Bytes: cr.n, Seconds: elapsed,
						RowsPerSecond: float64(res.Nodes+res.Edges) / max(elapsed, 1e-9)})
				}
				if quiet {
					return nil
				}
				if res.Commit == nil {
					if res.Unchanged > 0 {
						fmt.Fprintf(a.stdout, "nothing changed: the %d rows are on the branch already; no commit\n", res.Unchanged)
						return nil
					}
					fmt.Fprintln(a.stdout, "nothing to load; no commit")
					return nil
				}
				if mode == string(load.Merge) {
					// What the merge did, not "loaded" for every row.
					fmt.Fprintf(a.stdout, "merged %d nodes and %d edges (%s) into branch %s: %d inserted, %d updated, %d unchanged; commit %s\n",
						res.Nodes, res.Edges, typeCounts(res.Types), res.Commit.Branch, res.Inserted, res.Updated, res.Unchanged, res.Commit.ID)
					return nil
				}
				fmt.Fprintf(a.stdout, "loaded %d nodes and %d edges (%s) into branch %s: commit %s\n",
					res.Nodes, res.Edges, typeCounts(res.Types), res.Commit.Branch, res.Commit.ID)
				return nil
			},
		}
		t.addStore(c)
		t.addServer(c)
		t.addJSON(c)
		t.addActor(c)
		t.addExternalBlobs(c)
		t.addWait(c)
		auto.add(c)
		c.Flags().StringVar(&data, "data", "", "NDJSON file to load (- for stdin)")
		c.Flags().StringVar(&mode, "mode", "", "append | merge | overwrite (required)")
		c.Flags().StringVar(&branch, "branch", "", "branch to load into (default main)")
		c.Flags().StringArrayVar(&replace, "type", nil, "with --mode overwrite: also replace this type (repeatable)")
		c.Flags().BoolVarP(&quiet, "quiet", "q", false, "no progress line and no summary (errors and warnings still go to stderr; --json still prints)")
		return c
	})
}

func typeCounts(m map[string]int) string {
	var parts []string
	for _, k := range sortedKeys(m) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	if len(parts) == 0 {
		return "no rows"
	}
	return strings.Join(parts, ", ")
}

func sortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && keys[j] < keys[j-1]; j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
	return keys
}

// loadSummary is load's --json output: the load.Result, the input bytes
// read, the wall time and the rate.
type loadSummary struct {
	*load.Result
	Bytes         int64   `json:"bytes"`
	Seconds       float64 `json:"seconds"`
	RowsPerSecond float64 `json:"rows_per_second"`
}

// countingReader counts the bytes read (for progress and the summary).
type countingReader struct {
	r    io.Reader
	n    int64
	size int64 // the input size when known, else 0
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// inputSize is the size of a regular file (a file or a redirected stdin),
// 0 when unknown (a pipe).
func inputSize(r io.Reader) int64 {
	f, ok := r.(*os.File)
	if !ok {
		return 0
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return 0
	}
	return st.Size()
}

// loadGCPercent is the garbage collector's target during a local load: a
// load's heap is mostly long-lived, pointer-free tables (the key sets, the
// interned endpoints), so collecting at 25% growth instead of 100% costs
// little CPU and keeps the peak near the live heap (9M rows: 767 -> 522 MiB
// peak RSS, CPU within noise; docs/dev/performance.md).
const loadGCPercent = 25

// loadGC sets loadGCPercent unless GOGC or GOMEMLIMIT says otherwise, and
// returns what restores the previous setting.
func loadGC() func() {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	prev := debug.SetGCPercent(loadGCPercent)
	return func() { debug.SetGCPercent(prev) }
}

// loadProgress draws a one-line progress indicator on stderr, only when
// stderr is a terminal (never in pipes, files or tests) and not --quiet:
// the phase, lines read, rows/s, the bytes of the input read and, when the
// input size is known, the share read and the time left.
type loadProgress struct {
	w     io.Writer
	in    *countingReader
	on    bool
	start time.Time
	last  time.Time
	drawn bool
}

func newProgress(w io.Writer, in *countingReader, quiet bool) *loadProgress {
	p := &loadProgress{w: w, in: in, start: time.Now()}
	if f, ok := w.(*os.File); ok && !quiet {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			p.on = true
		}
	}
	return p
}

func (p *loadProgress) update(phase string, done int64) {
	if !p.on {
		return
	}
	now := time.Now()
	if phase == "parse" && now.Sub(p.last) < 100*time.Millisecond {
		return
	}
	p.last = now
	fmt.Fprintf(p.w, "\r\033[K%s", progressLine(phase, done, p.in.n, p.in.size, now.Sub(p.start)))
	p.drawn = true
}

// progressLine renders one progress state: lines done after elapsed, with
// read of size bytes consumed (size 0: unknown, no share and no ETA).
func progressLine(phase string, done, read, size int64, elapsed time.Duration) string {
	sec := max(elapsed.Seconds(), 1e-3)
	line := fmt.Sprintf("%-8s %d lines  %.0f lines/s", phase, done, float64(done)/sec)
	if phase == "parse" && read > 0 {
		line += fmt.Sprintf("  %.1f MiB read", float64(read)/(1<<20))
	}
	if size > 0 && phase == "parse" && read > 0 {
		left := time.Duration(float64(size-read) / (float64(read) / sec) * float64(time.Second))
		line += fmt.Sprintf("  %3.0f%%  ETA %s", 100*float64(read)/float64(size), left.Round(time.Second))
	}
	return line
}

func (p *loadProgress) finish() {
	if p.on && p.drawn {
		fmt.Fprint(p.w, "\r\033[K")
	}
}
