package main

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/omnigraph-go/omnigraph/graph"
)

// exitBudget is the exit code of a query (or a mutation's read phase)
// stopped by its budget: nothing was written.
const exitBudget = 6

// CLI query budgets: generous but finite; each flag raises one (0: no
// limit).
const (
	cliQueryRows      = 20_000_000
	cliQueryMemory    = 4 << 30
	cliQueryTimeout   = 30 * time.Minute
	cliQueryReadBytes = 64 << 30
)

// budgetFlags are the budget flags of query and mutate.
type budgetFlags struct {
	rows      int64
	memory    byteSize
	timeout   time.Duration
	readBytes byteSize
}

// add registers the flags on c with the CLI defaults; what says what the
// budget bounds ("the query", "the read phase").
func (b *budgetFlags) add(c *cobra.Command, what string) {
	b.memory, b.readBytes = cliQueryMemory, cliQueryReadBytes
	c.Flags().Int64Var(&b.rows, "max-rows", cliQueryRows, "rows "+what+" may produce in all before it is stopped (0: no limit)")
	c.Flags().Var(&b.memory, "max-memory", "memory "+what+" may materialise, e.g. 512MiB or 16GiB (0: no limit)")
	c.Flags().DurationVar(&b.timeout, "timeout", cliQueryTimeout, "how long "+what+" may run (0: no limit)")
	c.Flags().Var(&b.readBytes, "max-read-bytes", "bytes "+what+" may read from storage, e.g. 100GiB (0: no limit)")
}

// budget is the graph.Budget of the flags; a negative value is a usage
// error.
func (b *budgetFlags) budget() (graph.Budget, error) {
	if b.rows < 0 || b.timeout < 0 {
		return graph.Budget{}, usagef("--max-rows and --timeout take 0 (no limit) or more")
	}
	return graph.Budget{Rows: b.rows, Memory: int64(b.memory), Time: b.timeout, ReadBytes: int64(b.readBytes)}, nil
}

// localOnly refuses the budget flags (and --explain) with --server: they
// bound a query this process runs; a server applies its own budgets.
func (b *budgetFlags) localOnly(c *cobra.Command, explain bool) error {
	if explain {
		return usagef("--explain estimates a query against the graph's tables: run it with --store, not --server")
	}
	for _, f := range []string{"max-rows", "max-memory", "timeout", "max-read-bytes"} {
		if c.Flags().Changed(f) {
			return usagef("--%s bounds a query this command runs; with --server the server's budgets apply (serve --max-query-rows and friends)", f)
		}
	}
	return nil
}

// cliBudgetFlags name the flag that raises each budget.
var cliBudgetFlags = map[graph.Resource]string{
	graph.ResourceRows:      "--max-rows",
	graph.ResourceMemory:    "--max-memory",
	graph.ResourceTime:      "--timeout",
	graph.ResourceReadBytes: "--max-read-bytes",
}

// budgetExit turns a budget refusal into exit code 6 with what to do.
func budgetExit(err error) error {
	var be *graph.BudgetExceeded
	if !errors.As(err, &be) {
		return err
	}
	return exitCodeError{code: exitBudget, err: fmt.Errorf("%w; %s, or raise it with %s N (0: no limit)", err, be.Resource.Hint(), cliBudgetFlags[be.Resource])}
}

// byteSize is a byte count flag: a number of bytes, or one with a unit
// (KiB, MiB, GiB, TiB; KB, MB, GB, TB are decimal).
type byteSize int64

var sizeUnits = []struct {
	suffix string
	mult   int64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1},
}

// parseSize reads a byte count.
func parseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range sizeUnits {
		if num, ok := strings.CutSuffix(t, u.suffix); ok {
			t, mult = strings.TrimSpace(num), u.mult
			break
		}
	}
	n, err := strconv.ParseFloat(t, 64)
	if err != nil || n < 0 || math.IsNaN(n) || n*float64(mult) > math.MaxInt64 || t == "" {
		return 0, fmt.Errorf("%q is not a size: give bytes, or a number with KiB, MiB, GiB or TiB, as in 512MiB", s)
	}
	return int64(n * float64(mult)), nil
}

func (b *byteSize) Set(s string) error {
	n, err := parseSize(s)
	if err != nil {
		return err
	}
	*b = byteSize(n)
	return nil
}

func (b *byteSize) String() string { return formatSize(int64(*b)) }

func (b *byteSize) Type() string { return "size" }

// formatSize prints a size in the largest binary unit that divides it.
func formatSize(n int64) string {
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n != 0 && n%u.mult == 0 {
			return strconv.FormatInt(n/u.mult, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10)
}
