#!/usr/bin/env bash
# The TypeScript SDK (sdk/typescript) and the OpenAPI document it is
# generated from (sdk/openapi.json, what 'omnigraph openapi' prints).
#
#   scripts/sdk.sh generate   write sdk/openapi.json and regenerate sdk/typescript/src/gen
#   scripts/sdk.sh check [DOC] fail when generating from DOC (default sdk/openapi.json)
#                             differs from the committed sdk/typescript/src/gen (drift)
#   scripts/sdk.sh lint       redocly's recommended rules on the token and open-mode
#                             documents: 0 errors and 0 warnings
#   scripts/sdk.sh test       build the SDK and run its tests against a real omnigraph serve
#   scripts/sdk.sh ci         install (npm ci), lint, check, the drift self-test, test
#
# OMNIGRAPH_BIN names a built omnigraph binary (default: built into a temp dir).
# Every npm package is pinned in sdk/typescript/package-lock.json.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
ts=$root/sdk/typescript
doc=$root/sdk/openapi.json
scratch=$(mktemp -d "${TMPDIR:-/tmp}/omnigraph-sdk.XXXXXX")
server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$scratch"
}
trap cleanup EXIT

bin() {
  if [ -z "${OMNIGRAPH_BIN:-}" ]; then
    OMNIGRAPH_BIN=$scratch/omnigraph
    go build -o "$OMNIGRAPH_BIN" ./cmd/omnigraph
  fi
  echo "$OMNIGRAPH_BIN"
}

# need_node: the generator needs Node 20.19 or later and npm.
need_node() {
  if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    echo "scripts/sdk.sh needs Node.js 20.19 or later and npm (on Debian: apt-get install nodejs npm)" >&2
    exit 1
  fi
  node -e 'const [a, b] = process.versions.node.split(".").map(Number); if (a < 20 || (a === 20 && b < 19)) { console.error(`scripts/sdk.sh needs Node.js 20.19 or later, not ${process.versions.node}`); process.exit(1); }'
}

install() {
  need_node
  if [ ! -d "$ts/node_modules" ] || [ "$ts/package-lock.json" -nt "$ts/node_modules/.package-lock.json" ]; then
    local start=$SECONDS
    (cd "$ts" && npm ci --no-audit --no-fund --loglevel=error)
    echo "npm ci: $((SECONDS - start)) s"
  fi
}

# gen DOC DIR: the SDK's code generated from DOC into DIR.
gen() {
  (cd "$ts" && npx --no -- openapi-ts -i "$1" -o "$2" -c @hey-api/client-fetch --no-log-file -s)
}

check() {
  local from=${1:-$doc}
  gen "$from" "$scratch/gen"
  if ! diff -r "$scratch/gen" "$ts/src/gen" >"$scratch/drift.diff"; then
    echo "sdk/typescript/src/gen is not what $(basename "$from") generates: run scripts/sdk.sh generate and commit the result" >&2
    head -40 "$scratch/drift.diff" >&2
    return 1
  fi
  echo "sdk drift check: no drift"
}

# selftest: the drift check fails when a route changes without regeneration
# (a copy of the document with one more route).
selftest() {
  node -e '
    const fs = require("fs");
    const d = JSON.parse(fs.readFileSync(process.argv[1]));
    d.paths["/graphs/{graph_id}/drift-probe"] = { get: { operationId: "driftProbe", summary: "probe", security: [],
      responses: { "200": { description: "OK", content: { "application/json": { schema: { type: "object" } } } } } } };
    fs.writeFileSync(process.argv[2], JSON.stringify(d));
  ' "$doc" "$scratch/changed.json"
  if check "$scratch/changed.json" 2>/dev/null; then
    echo "the drift check passed a document with a new route: it cannot fail" >&2
    return 1
  fi
  echo "sdk drift self-test: a changed route is caught"
}

lint() {
  local og
  og=$(bin)
  "$og" openapi --open >"$scratch/open.json"
  local out
  for d in "$doc" "$scratch/open.json"; do
    out=$(cd "$ts" && npx --no -- redocly lint --config "$root/redocly.yaml" --format=json "$d" 2>/dev/null) || true
    node -e '
      const r = JSON.parse(process.argv[1]);
      const t = r.totals;
      for (const p of r.problems) console.error(`${p.severity} ${p.ruleId}: ${p.message} at ${(p.location[0]||{}).pointer||""}`);
      if (t.errors || t.warnings) { console.error(`OpenAPI lint of ${process.argv[2]}: ${t.errors} errors, ${t.warnings} warnings`); process.exit(1); }
      console.log(`OpenAPI lint of ${process.argv[2]}: 0 errors, 0 warnings (redocly ${r.version}, recommended)`);
    ' "$out" "$(basename "$d")"
  done
}

generate() {
  go run ./cmd/omnigraph openapi >"$doc"
  rm -rf "$ts/src/gen"
  gen "$doc" "$ts/src/gen"
  echo "wrote sdk/openapi.json and sdk/typescript/src/gen"
}

# test: the SDK's tests against a real server on a fresh example graph
# (examples/social.gq as its stored queries).
test_() {
  local og
  og=$(bin)
  (cd "$ts" && npx --no -- tsc -p tsconfig.json)
  "$og" init --schema examples/social.pg "$scratch/graph" >/dev/null
  "$og" load --data examples/social.jsonl --mode append "$scratch/graph" >/dev/null
  local token
  token=$("$og" token add alice --tokens "$scratch/tokens.json")
  "$og" serve --store "$scratch/graph" --listen 127.0.0.1:0 --tokens "$scratch/tokens.json" --queries examples/social.gq >"$scratch/serve.out" 2>"$scratch/serve.err" &
  server_pid=$!
  local addr="" i
  for i in $(seq 1 600); do
    addr=$(sed -n 's/^OMNIGRAPH_LISTEN_ADDR=//p' "$scratch/serve.out")
    [ -n "$addr" ] && break
    if ! kill -0 "$server_pid" 2>/dev/null; then cat "$scratch/serve.err" >&2; echo "omnigraph serve exited before serving" >&2; return 1; fi
    sleep 0.1
  done
  [ -n "$addr" ] || { echo "omnigraph serve did not start" >&2; return 1; }
  (cd "$ts" && OMNIGRAPH_URL="http://$addr" OMNIGRAPH_TOKEN="$token" node --test test/)
}

case "${1:-}" in
  generate) install; generate ;;
  check) install; check "${2:-}" ;;
  lint) install; lint ;;
  test) install; test_ ;;
  ci) install; lint; check; selftest; test_ ;;
  *) sed -n '2,15p' "$0" >&2; exit 2 ;;
esac
