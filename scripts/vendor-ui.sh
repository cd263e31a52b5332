#!/usr/bin/env bash
# Fetch the console's vendored libraries again from the npm registry and
# check the copies under server/ui/assets/vendor against them (the default),
# or replace the copies (--update; then refresh the hashes in
# server/ui/VENDOR.md). This is the only step that needs the network and npm;
# make build and make test use the committed copies, and
# TestVendoredFilesArePinned checks them against VENDOR.md.
set -euo pipefail
cd "$(dirname "$0")/.."

update=0
if [ "${1:-}" = "--update" ]; then update=1; fi

dest=server/ui/assets/vendor
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# name version: file-in-vendor-dir=path-in-tarball ...
libs=(
  "codemirror 5.65.21 LICENSE=package/LICENSE codemirror.js=package/lib/codemirror.js codemirror.css=package/lib/codemirror.css addon/mode/simple.js=package/addon/mode/simple.js addon/lint/lint.js=package/addon/lint/lint.js addon/lint/lint.css=package/addon/lint/lint.css"
  "cytoscape 3.35.0 LICENSE=package/LICENSE cytoscape.min.js=package/dist/cytoscape.min.js"
)

status=0
for spec in "${libs[@]}"; do
  read -r name version files <<<"$spec"
  (cd "$work" && npm pack --silent "$name@$version" >/dev/null)
  mkdir -p "$work/$name"
  tar xzf "$work/$name-$version.tgz" -C "$work/$name"
  for pair in $files; do
    to="$dest/$name-$version/${pair%%=*}"
    from="$work/$name/${pair#*=}"
    if [ "$update" = 1 ]; then
      mkdir -p "$(dirname "$to")"
      cp "$from" "$to"
      echo "copied $to"
    elif ! cmp -s "$from" "$to"; then
      echo "DIFFERS: $to is not $name@$version's ${pair#*=}"
      status=1
    else
      echo "ok $to"
    fi
  done
done
if [ "$update" = 1 ]; then
  echo "now put these hashes in server/ui/VENDOR.md:"
  (cd "$dest" && find . -type f | sort | xargs sha256sum)
fi
exit $status
