package main

import (
	"context"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/optimize"
)

// envAutoOptimize set to 0, false, off or no disables automatic
// compaction after load and mutate (as --no-auto-optimize does).
const envAutoOptimize = "OMNIGRAPH_AUTO_OPTIMIZE"

// autoOptimizeFlag is the --no-auto-optimize of load and mutate.
type autoOptimizeFlag struct{ off bool }

func (f *autoOptimizeFlag) add(c *cobra.Command) {
	c.Flags().BoolVar(&f.off, "no-auto-optimize", false,
		"do not compact afterwards even when a written table has 32 or more small fragments (also "+envAutoOptimize+"=0)")
}

func (f *autoOptimizeFlag) enabled() bool {
	if f.off {
		return false
	}
	switch strings.ToLower(strings.TrimSpace(os.Getenv(envAutoOptimize))) {
	case "0", "false", "off", "no":
		return false
	}
	return true
}

// run is automatic compaction after the user's write was acknowledged
// (its result printed): one attempt of optimize.Auto on the branch the
// write published to. It never fails the command: a lost race or any
// error is logged (warn) and the next write tries again.
func (f *autoOptimizeFlag) run(ctx context.Context, g *graph.Graph, ci *graph.CommitInfo) {
	if ci == nil || !f.enabled() || ctx.Err() != nil {
		return
	}
	log := loggerFrom(ctx)
	res, err := optimize.Auto(ctx, g, optimize.AutoOptions{Branch: ci.Branch})
	switch {
	case err != nil && graph.IsRetryable(err):
		log.Debug("automatic optimize yielded to a concurrent write", "branch", ci.Branch, "err", err)
	case err != nil:
		log.Warn("automatic optimize failed; the write itself succeeded", "branch", ci.Branch, "err", err)
	case res != nil && res.Commit != nil:
		log.Debug("automatic optimize", "branch", ci.Branch, "commit", res.Commit.ID, "tables", len(res.Tables))
	}
}
