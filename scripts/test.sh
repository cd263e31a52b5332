#!/usr/bin/env bash
# The test command (make test): vet, start the emulators the cloud-backend
# tests need, run every test once, stop the emulators, and report. With CI
# set, a test on scripts/must-not-skip.txt that skips or does not run fails
# the run. The example out-of-tree backend (examples/backend-bolt, its own Go
# module) is vetted and tested from its own directory; any failure or skip
# there fails the run. scripts/sdk.sh ci lints the OpenAPI document
# (redocly, pinned), checks the TypeScript SDK for drift and runs its tests
# against a real server; any failure there fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."

emulators=
if [ -x scripts/emulators.sh ] && [ "${OMNIGRAPH_NO_EMULATORS:-}" = "" ]; then
  emulators=1
  # On an empty cache the install takes minutes (MinIO's go install alone
  # about 9 on 2 cores, mostly downloads): start it now, beside go vet.
  mkdir -p test-results
  scripts/emulators.sh install >test-results/emulators-install.log 2>&1 &
  install_pid=$!
fi

echo "== go vet"
go vet ./...

if [ -n "$emulators" ]; then
  echo "== emulators"
  wait "$install_pid" || { cat test-results/emulators-install.log; exit 1; }
  scripts/emulators.sh start
  trap 'scripts/emulators.sh stop' EXIT
  eval "$(scripts/emulators.sh env)"
fi

# The console's browser tests drive Debian's Chromium (TestConsoleInBrowser;
# it must run in CI). Installed here when missing, as the emulators are.
if [ "${OMNIGRAPH_NO_BROWSER:-}" = "" ] && ! command -v chromium >/dev/null 2>&1; then
  echo "== chromium (the console's browser tests)"
  sudo=""
  if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null 2>&1; then sudo="sudo -n"; fi
  if command -v apt-get >/dev/null 2>&1; then
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null 2>&1 ||
      { $sudo apt-get update -q >/dev/null 2>&1 && $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null; } ||
      echo "could not install chromium: the console's browser test skips outside CI and fails in CI"
  fi
fi

# promtool (Debian's prometheus package) checks the alert rules and a real
# scrape (TestServeMetricsProcess); installed here when missing.
if ! command -v promtool >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
  echo "== promtool (the metrics and alert rules checks)"
  sudo=""
  if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null 2>&1; then sudo="sudo -n"; fi
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends prometheus >/dev/null 2>&1 ||
    echo "could not install promtool: the scrape is linted by promlint only"
fi
if command -v promtool >/dev/null 2>&1; then
  echo "== promtool check rules"
  promtool check rules docs/monitoring/alerts.yml
fi

mkdir -p test-results
# The simulation runs fresh seeds besides its fixed ones, drawn from the
# commit under test (sim/sim_test.go freshSeeds; the log names them, and a
# failing one replays with -seed=N).
export OMNIGRAPH_SIM_FRESH=${OMNIGRAPH_SIM_FRESH:-$(git rev-parse HEAD 2>/dev/null || date -u +%F)}
echo "== go build (the binary the client and SDK tests serve with)"
go build -o test-results/omnigraph ./cmd/omnigraph
export OMNIGRAPH_TEST_BIN=$(pwd)/test-results/omnigraph

echo "== go test"
set +e
go test -count=1 -json -timeout 30m ${GOTESTFLAGS:-} ./... > test-results/go-test.json
set -e

echo "== examples/backend-bolt (its own module)"
example=test-results/example-backend-bolt.json
set +e
(cd examples/backend-bolt && go vet ./... && go test -count=1 -json -timeout 10m ./...) > "$example"
example_rc=$?
set -e

# A short run of every fuzz target of the languages (parser, type checker,
# planner; FUZZTIME each, default 3s): no panic on inputs mutated from every
# query and schema of the repository. make soak runs them longer.
echo "== fuzz (${FUZZTIME:-3s} per target)"
fuzz_rc=0
while read -r pkg target; do
  go test -run '^$' -fuzz "^${target}\$" -fuzztime "${FUZZTIME:-3s}" "./${pkg}" > "test-results/fuzz-${target}-${pkg//\//-}.log" 2>&1 \
    || { echo "fuzz ${pkg} ${target} failed:"; tail -30 "test-results/fuzz-${target}-${pkg//\//-}.log"; fuzz_rc=1; }
done < scripts/fuzz-targets.txt

echo "== OpenAPI lint, the TypeScript SDK's drift check and tests (scripts/sdk.sh ci)"
set +e
OMNIGRAPH_BIN=$OMNIGRAPH_TEST_BIN bash scripts/sdk.sh ci
sdk_rc=$?
set -e

cat test-results/go-test.json "$example" | go run ./internal/tools/testreport -must-not-skip scripts/must-not-skip.txt
if [ "$fuzz_rc" -ne 0 ]; then
  echo "a fuzz target failed: its input is in the package's testdata/fuzz"
  exit 1
fi
if [ "$sdk_rc" -ne 0 ]; then
  echo "scripts/sdk.sh ci failed (exit $sdk_rc): the OpenAPI lint, the SDK drift check or the SDK tests"
  exit 1
fi
if [ "$example_rc" -ne 0 ]; then
  echo "examples/backend-bolt: vet or tests failed (exit $example_rc)"
  exit 1
fi
if grep -E '"Action":"skip".*"Test":' "$example"; then
  echo "examples/backend-bolt: a test or conformance rule skipped; the example must pass every rule"
  exit 1
fi
