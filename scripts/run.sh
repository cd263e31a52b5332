#!/usr/bin/env bash
# make run: the quickstart on an embedded local graph in ./demo-graph.
set -euo pipefail
cd "$(dirname "$0")/.."
bin/omnigraph --help
