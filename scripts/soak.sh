#!/usr/bin/env bash
# make soak: the fuzz targets of scripts/fuzz-targets.txt for FUZZTIME each
# (default 60s), then the simulation (sim, TestSimulation) over many more
# seeds than make test runs. SEEDS seeds (default 2000) from FIRST (default 1000: past
# the 200 make test runs), OPS operations each (default 200). With DURATION
# (seconds) it runs batches of SEEDS seeds from FIRST on until the time is
# up. A failing seed prints its history and its replay command, and the
# shrinker logs a shorter failing replay of the first three failing seeds:
#   go test ./sim -run 'TestSimulation$' -seed=N -ops=OPS -v
#   go test ./sim -run 'TestSimulation$' -seed=N -ops=K -drop=3,10-12 -v
set -euo pipefail
cd "$(dirname "$0")/.."
# The fuzz targets of the languages first, FUZZTIME each (default 60s).
while read -r pkg target; do
  echo "== fuzz: ${pkg} ${target} for ${FUZZTIME:-60s}"
  go test -run '^$' -fuzz "^${target}\$" -fuzztime "${FUZZTIME:-60s}" "./${pkg}"
done < scripts/fuzz-targets.txt
SEEDS=${SEEDS:-2000}
FIRST=${FIRST:-1000}
OPS=${OPS:-200}
DURATION=${DURATION:-}

batch() {
  echo "== sim: seeds $1..$(($1 + SEEDS - 1)), $OPS operations each"
  go test ./sim -run 'TestSimulation$' -count=1 -timeout 0 -first="$1" -seeds="$SEEDS" -ops="$OPS" -fresh=0
}

if [ -z "$DURATION" ]; then
  batch "$FIRST"
  exit 0
fi
end=$(($(date +%s) + DURATION))
first=$FIRST
while [ "$(date +%s)" -lt "$end" ]; do
  batch "$first"
  first=$((first + SEEDS))
done
