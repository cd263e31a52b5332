#!/usr/bin/env bash
# make bench: benchmarks that print ratios measured in one run against a baseline.
set -euo pipefail
cd "$(dirname "$0")/.."
go test -run '^$' -bench . -benchtime 1x ./... 
