#!/usr/bin/env bash
# make run: the quickstart on an embedded local graph in ./demo-graph.
# The Makefile builds bin/omnigraph first; this script only drives it.
# OMNIGRAPH_BIN, OMNIGRAPH_DEMO_STORE and OMNIGRAPH_DEMO_DATA move the binary,
# the graph and the embedded copy of the data (the quickstart test runs it
# that way).
set -euo pipefail
cd "$(dirname "$0")/.."

og=${OMNIGRAPH_BIN:-bin/omnigraph}
store=${OMNIGRAPH_DEMO_STORE:-./demo-graph}
embedded=${OMNIGRAPH_DEMO_DATA:-demo-social.jsonl}
queries=examples/social.gq

heading() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
run() {
  local shown='$ omnigraph' a
  for a in "$@"; do
    if [[ "$a" =~ [^A-Za-z0-9_./:=@-] ]]; then shown+=" '$a'"; else shown+=" $a"; fi
  done
  echo "$shown"
  "$og" "$@"
}

if [ ! -x "$og" ]; then
  echo "bin/omnigraph is missing: run 'make run' (it builds the CLI first)" >&2
  exit 1
fi

heading "1. Create a graph in $store from examples/social.pg"
rm -rf "$store"
run init --schema examples/social.pg "$store"
init_commit=$("$og" snapshot --json --store "$store" | sed -n 's/.*"commit": *"\([^"]*\)".*/\1/p' | head -n1)

heading "2. Load examples/social.jsonl (one commit)"
run load --data examples/social.jsonl --mode append --store "$store"

heading "3. A filter: Berlin residents aged 30 or more"
run query --query "$queries" city_adults --params '{"city":"Berlin","min":30}' --store "$store"

heading "4. A 2-hop traversal: friends of friends of alice"
run query --query "$queries" friends_of_friends --params '{"h":"alice"}' --store "$store"

heading "5. An aggregate: staff per company"
run query --query "$queries" headcount --store "$store"

heading "6. Create branch 'hiring' and hire two people there"
run branch create hiring --store "$store"
run mutate --query "$queries" hire --branch hiring --store "$store" \
  --params '{"h":"quinn","name":"Quinn Park","age":34,"city":"Lisbon","company":"acme","title":"engineer","since":"2026-01-05"}'
run mutate --query "$queries" hire --branch hiring --store "$store" \
  --params '{"h":"remy","name":"Remy Duval","age":41,"city":"Berlin","company":"acme","title":"designer","since":"2026-02-02"}'

heading "7. The same query on main and on hiring: staff of acme"
echo "-- main:"
run query --query "$queries" staff --params '{"slug":"acme"}' --store "$store"
echo "-- hiring:"
run query --query "$queries" staff --params '{"slug":"acme"}' --branch hiring --store "$store"

heading "8. The headcount query on main vs hiring (diff of the jsonl output)"
main_rows=$(mktemp)
branch_rows=$(mktemp)
trap 'rm -f "$main_rows" "$branch_rows"' EXIT
"$og" query --query "$queries" headcount --format jsonl --store "$store" >"$main_rows"
"$og" query --query "$queries" headcount --format jsonl --branch hiring --store "$store" >"$branch_rows"
diff -u --label main --label hiring "$main_rows" "$branch_rows" || true

heading "9. Merge 'hiring' into main, then see the merge's changes"
run branch merge hiring --into main --delete-branch --store "$store"
merge_commit=$("$og" commit list --limit 1 --json --store "$store" | sed -n 's/.*"id": *"\([0-9A-Z]*\)".*/\1/p' | head -1)
run commit changes "$merge_commit" --store "$store"
run query --query "$queries" staff --params '{"slug":"acme"}' --store "$store"

heading "10. Time travel: the same count now, and as of the empty first commit"
count='query n() { match { $p: Person } return { count($p) as people } }'
run query -e "$count" --format kv --store "$store"
run query -e "$count" --format kv --snapshot "$init_commit" --store "$store"

heading "11. Search: fill the post vectors with omnigraph embed, then text, vector and hybrid search"
run embed --schema examples/social.pg --input examples/social.jsonl --output "$embedded"
run load --data "$embedded" --mode merge --store "$store"
run query --query "$queries" search_posts --params '{"q":"graphs and data"}' --store "$store"
run query --query "$queries" fuzzy_posts --params '{"q":"sourdoh recipes"}' --store "$store"
run query --query "$queries" similar_posts --params '{"text":"type: Post\ntext: Commit graphs make audits easy"}' --store "$store"
run query --query "$queries" hybrid_posts --params '{"q":"graphs"}' --store "$store"

heading "Done. Explore with: bin/omnigraph query --query $queries NAME --store $store"
