#!/usr/bin/env bash
# make bench: benchmarks that print ratios measured in one run against a baseline.
set -euo pipefail
cd "$(dirname "$0")/.."
# The emulators, as for make test: benchmarks that measure through a cloud
# store (BenchmarkCostAtDepthS3: versitygw behind the latency proxy) skip
# without them. OMNIGRAPH_NO_EMULATORS=1 runs without.
if [ -x scripts/emulators.sh ] && [ "${OMNIGRAPH_NO_EMULATORS:-}" = "" ]; then
  echo "== emulators"
  scripts/emulators.sh start
  trap 'scripts/emulators.sh stop' EXIT
  eval "$(scripts/emulators.sh env)"
fi
# BenchmarkCostAtDepth (graph/optimize) builds 10,000 one-row commits
# (OMNIGRAPH_BENCH_DEPTH) on the in-memory store, its S3 variant 1,000
# (OMNIGRAPH_BENCH_S3_DEPTH), and prints insert and cold-read ratios at
# 20 ms per request.
# BenchmarkConcurrentWriters (server) prints issue 42's table: 1, 4 and 16 HTTP
# clients inserting or updating one row each on a local graph (commits/s,
# errors, p50/p99, the ratio to one client); BenchmarkConcurrentWritersS3 the
# same inserts on versitygw behind the wire proxy (+20 ms), with commits per
# manifest round trip.
# BenchmarkPointReadsUnderHostileQueries (server) prints point reads' p50 and
# p99 with and without 8 clients of over-budget queries, and their ratio
# (issue 27; target p99 <= 3x).
go test -run '^$' -bench . -benchtime 1x -timeout 60m ./...
# Read path vs DuckDB over the same Parquet files (separate module: cgo DuckDB).
# 2-hop traversal and a filtered aggregate on 100k nodes / 1M edges, generated
# into a temp dir; reports omnigraph-ms, duckdb-ms and the ratio x-duckdb.
(cd bench/query && GOFLAGS=-mod=mod go test -run '^$' -bench . -benchtime 3x .)
# Bulk load vs encoding/json+pqarrow (zstd) on the same generated NDJSON, both
# as child processes: rows/s, their ratio, peak RSS and RSS / input size.
# OMNIGRAPH_BENCH_LOAD_ROWS (default 3M); OMNIGRAPH_BENCH_LOAD_LONG=1 for 30M.
(cd bench/load && GOFLAGS=-mod=mod go test -run '^$' -bench . -benchtime 1x .)
