package testenv

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/logging"
	"github.com/omnigraph-go/omnigraph/internal/logtest"
	"github.com/omnigraph-go/omnigraph/manifest"
)

// ReissueWire describes a cloud adapter for RunReissue.
type ReissueWire struct {
	// Open returns a store at a fresh, empty prefix whose requests all pass
	// through the returned proxy, with each request bounded by timeout.
	Open func(t *testing.T, timeout time.Duration) (backend.StorageAdapter, *Proxy)
	// IsWrite matches the request that carries an object's bytes; IsRead an
	// object download.
	IsWrite, IsRead func(Request) bool
	// Throttle is the store's own "slow down" refusal.
	Throttle Rule
}

// RunReissue checks the manifest re-issue rule on the wire: a manifest
// create whose answer is lost on the first k attempts (k = 1..5), throttled
// or timed out is re-issued unchanged; the store ends with exactly one
// object for the version (or none when nothing landed), the outcome is
// success, or OutcomeUnknown when no re-issue settles it, and the proxy saw
// exactly the expected requests. Every log line (the manifest's events and
// the adapter's failure logs) is scanned for keys, paths and credentials.
func RunReissue(t *testing.T, w ReissueWire) {
	type tc struct {
		name    string
		rule    Rule
		timeout time.Duration
		writes  int // creates that reached the proxy
		reads   int // read-backs
		unknown bool
		landed  bool
	}
	var cases []tc
	for k := 1; k <= 5; k++ {
		c := tc{name: fmt.Sprintf("answer lost on the first %d", k), rule: Rule{Match: w.IsWrite, Forward: true, Times: k},
			writes: k + 1, reads: 1, landed: true}
		if k == 5 {
			c.writes, c.reads, c.unknown = 5, 0, true
		}
		cases = append(cases, c)
	}
	th := func(times int) Rule { r := w.Throttle; r.Match, r.Times = w.IsWrite, times; return r }
	cases = append(cases,
		tc{name: "throttled once", rule: th(1), writes: 2, landed: true},
		tc{name: "throttled four times", rule: th(4), writes: 5, landed: true},
		tc{name: "throttled every time", rule: th(5), writes: 5, unknown: true},
		tc{name: "timed out after taking effect", rule: Rule{Match: w.IsWrite, Forward: true, Status: 200, Delay: 5 * time.Second},
			timeout: 300 * time.Millisecond, writes: 2, reads: 1, landed: true},
	)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			timeout := c.timeout
			if timeout == 0 {
				timeout = 20 * time.Second
			}
			raw, p := w.Open(t, timeout)
			head := &manifest.Entry{
				Stamp: manifest.StampCurrent, Kind: manifest.KindCommit, GraphID: "G", Branch: "main", Incarnation: 1, BranchID: "B",
				Version: 1, SchemaIdentity: "S", Head: "C1", Commit: &manifest.Commit{ID: "C1", Parents: []string{}, Actor: "t"},
			}
			mine := head.Clone()
			mine.Version, mine.Head = 2, "C2-"+Prefix(t)
			mine.Commit = &manifest.Commit{ID: mine.Head, Parents: []string{"C1"}, Actor: "t"}
			log, logs := logtest.New(t, mine.Key(), head.Key())
			m := manifest.New(logging.Wrap(raw, log))
			m.SetLogger(log)
			var pauses []time.Duration
			m.SetSleeper(func(ctx context.Context, d time.Duration) error { pauses = append(pauses, d); return ctx.Err() })
			if err := m.Publish(ctx, head); err != nil {
				t.Fatal(err)
			}
			p.Reset()
			p.Arm(c.rule)
			err := m.Publish(ctx, mine)
			switch {
			case c.unknown && (!errors.Is(err, manifest.ErrOutcomeUnknown) || !errors.Is(err, backend.ErrUnknown)):
				t.Fatalf("Publish = %v, want OutcomeUnknown", err)
			case !c.unknown && err != nil:
				t.Fatalf("Publish = %v, want success", err)
			}
			if n := p.Count(w.IsWrite); n != c.writes {
				t.Fatalf("%d creates went over the wire, want %d", n, c.writes)
			}
			if n := p.Count(w.IsRead); n != c.reads {
				t.Fatalf("%d reads went over the wire, want %d", n, c.reads)
			}
			if len(pauses) != c.writes-1 {
				t.Fatalf("%d pauses for %d creates", len(pauses), c.writes)
			}
			if n := logs.Count(t, "manifest request outcome unknown; re-issuing the identical conditional request"); n != c.writes-1 {
				t.Fatalf("%d re-issue events, want %d:\n%s", n, c.writes-1, logs)
			}
			if c.unknown && logs.Count(t, "manifest request outcome unknown after every re-issue") != 1 {
				t.Fatalf("no final unknown event:\n%s", logs)
			}
			// Exactly one publish: the version exists once with our commit,
			// or not at all.
			p.Reset()
			all, lerr := backend.ListAll(ctx, raw, manifest.IncarnationPrefix("main", 1))
			if lerr != nil {
				t.Fatal(lerr)
			}
			want := 1
			if c.landed {
				want = 2
			}
			if len(all) != want {
				t.Fatalf("the branch holds %d versions, want %d", len(all), want)
			}
			if c.landed {
				got, rerr := m.ReadVersion(ctx, "main", 1, 2)
				if rerr != nil || got.Commit.ID != mine.Commit.ID {
					t.Fatalf("version 2 = %+v, %v; want commit %s", got, rerr, mine.Commit.ID)
				}
			}
		})
	}
}
