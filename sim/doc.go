// Package sim is test tooling only: the deterministic simulation test of the
// engine. Every file but this one is a _test.go file; `go test ./sim -run
// TestSimulation` runs it and docs/dev/simulation.md describes it (the
// workload, the faults, the oracle and how to replay a failing seed).
//
// Nothing imports this package.
package sim
