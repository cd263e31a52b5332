#!/usr/bin/env bash
# make bench: benchmarks that print ratios measured in one run against a baseline.
set -euo pipefail
cd "$(dirname "$0")/.."
go test -run '^$' -bench . -benchtime 1x ./... 
# Read path vs DuckDB over the same Parquet files (separate module: cgo DuckDB).
# 2-hop traversal and a filtered aggregate on 100k nodes / 1M edges, generated
# into a temp dir; reports omnigraph-ms, duckdb-ms and the ratio x-duckdb.
(cd bench/query && GOFLAGS=-mod=mod go test -run '^$' -bench . -benchtime 3x .)
# Bulk load vs encoding/json+pqarrow (zstd) on the same generated NDJSON, both
# as child processes: rows/s, their ratio, peak RSS and RSS / input size.
# OMNIGRAPH_BENCH_LOAD_ROWS (default 3M); OMNIGRAPH_BENCH_LOAD_LONG=1 for 30M.
(cd bench/load && GOFLAGS=-mod=mod go test -run '^$' -bench . -benchtime 1x .)
