#!/usr/bin/env bash
# The test command (make test): vet, start the emulators the cloud-backend
# tests need, run every test once, stop the emulators, and report. With CI
# set, a test on scripts/must-not-skip.txt that skips or does not run fails
# the run.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== go vet"
go vet ./...

if [ -x scripts/emulators.sh ] && [ "${OMNIGRAPH_NO_EMULATORS:-}" = "" ]; then
  echo "== emulators"
  scripts/emulators.sh start
  trap 'scripts/emulators.sh stop' EXIT
  eval "$(scripts/emulators.sh env)"
fi

mkdir -p test-results
echo "== go test"
set +e
go test -count=1 -json -timeout 30m ${GOTESTFLAGS:-} ./... > test-results/go-test.json
set -e
go run ./internal/tools/testreport -must-not-skip scripts/must-not-skip.txt < test-results/go-test.json
