#!/usr/bin/env bash
# Object-store emulators for the cloud-backend tests.
#
#   scripts/emulators.sh install   install the pinned emulators into the cache (skipped when present)
#   scripts/emulators.sh start     install if needed, start all four on 127.0.0.1, wait until each answers
#   scripts/emulators.sh env       print `export` lines for the running emulators (eval them)
#   scripts/emulators.sh status    show which emulators are running
#   scripts/emulators.sh stop      stop them by PID (whole process group) and remove their data dirs
#
# Pinned: versitygw v1.8.0 (S3), fake-gcs-server v1.56.1 (GCS), Azurite 3.37.0 (Azure Blob),
# and MinIO (a second S3 server, single drive; the most deployed S3-compatible
# server, whose listings differ from versitygw's). MinIO is a test server
# only (AGPL-3.0): it is built and run, never linked into OmniGraph.
# Cache (outside the repo): $OMNIGRAPH_EMULATOR_CACHE, default ~/.cache/omnigraph-emulators.
# Run state (PIDs, ports, logs): $OMNIGRAPH_EMULATOR_RUN, default $CACHE/run.
# Preferred ports: $OMNIGRAPH_S3_PORT (7070), $OMNIGRAPH_GCS_PORT (4443),
# $OMNIGRAPH_AZURE_PORT (10000), $OMNIGRAPH_MINIO_PORT (9100); a busy port
# moves to the next free one and `env` prints the port actually used.
#
# Install time on an empty cache (2 cores): MinIO's go install is the long
# one, about 9 minutes (1.2 GB of modules to download, 5 min of CPU), against
# about a minute for each of the others; all four install side by side, and
# scripts/test.sh starts the install before `go vet` so it overlaps the
# project's own build.
set -euo pipefail

VERSITYGW_VERSION=v1.8.0
FAKEGCS_VERSION=v1.56.1
AZURITE_VERSION=3.37.0
MINIO_VERSION=v0.0.0-20260212201848-7aac2a2c5b7c

CACHE=${OMNIGRAPH_EMULATOR_CACHE:-$HOME/.cache/omnigraph-emulators}
RUN=${OMNIGRAPH_EMULATOR_RUN:-$CACHE/run}
BIN=$CACHE/bin
WAIT_SECONDS=${OMNIGRAPH_EMULATOR_WAIT:-60}

# Test-only credentials for the local S3 emulator; never real secrets.
S3_ACCESS_KEY=omnigraph-test
S3_SECRET_KEY=omnigraph-test-secret
# Azurite's well-known development account (published in Azurite's docs).
AZURE_ACCOUNT=devstoreaccount1
AZURE_KEY='Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=='

log() { echo "emulators: $*" >&2; }
die() { log "$*"; exit 1; }

stamp_ok() { # name version
  [ -f "$BIN/$1.version" ] && [ "$(cat "$BIN/$1.version")" = "$2" ]
}

install_go_tool() { # name module version
  local name=$1 module=$2 version=$3
  if stamp_ok "$name" "$version" && [ -x "$BIN/$name" ]; then
    return 0
  fi
  log "installing $name $version (go install: a minute or two, MinIO about nine, on an empty cache)"
  mkdir -p "$BIN"
  # Build outside any module so the repo's go.mod and GOFLAGS play no part.
  (cd "$CACHE" && GOFLAGS=-buildvcs=false GOBIN="$BIN" go install "$module@$version") >"$CACHE/$name.install.log" 2>&1 ||
    { tail -20 "$CACHE/$name.install.log" >&2; return 1; }
  echo "$version" >"$BIN/$name.version"
}

install_azurite() {
  local dir=$CACHE/azurite
  if stamp_ok azurite "$AZURITE_VERSION" && [ -e "$dir/node_modules/.bin/azurite-blob" ]; then
    return 0
  fi
  command -v npm >/dev/null || die "npm is needed to install Azurite (apt-get install nodejs npm)"
  log "installing azurite $AZURITE_VERSION (npm)"
  rm -rf "$dir"
  mkdir -p "$dir" "$BIN"
  echo '{"name":"omnigraph-emulators","private":true}' >"$dir/package.json"
  (cd "$dir" && npm install --no-audit --no-fund --loglevel=error "azurite@$AZURITE_VERSION") >"$CACHE/azurite.install.log" 2>&1 ||
    { tail -20 "$CACHE/azurite.install.log" >&2; return 1; }
  echo "$AZURITE_VERSION" >"$BIN/azurite.version"
}

cmd_install() {
  mkdir -p "$CACHE"
  # The four installs are independent and slow: run them side by side.
  install_go_tool versitygw github.com/versity/versitygw/cmd/versitygw "$VERSITYGW_VERSION" &
  local p1=$!
  install_go_tool fake-gcs-server github.com/fsouza/fake-gcs-server "$FAKEGCS_VERSION" &
  local p2=$!
  install_azurite &
  local p3=$!
  install_go_tool minio github.com/minio/minio "$MINIO_VERSION" &
  local p4=$!
  local rc=0
  wait $p1 || { log "versitygw install failed (log: $CACHE/versitygw.install.log)"; rc=1; }
  wait $p2 || { log "fake-gcs-server install failed (log: $CACHE/fake-gcs-server.install.log)"; rc=1; }
  wait $p3 || { log "azurite install failed (log: $CACHE/azurite.install.log)"; rc=1; }
  wait $p4 || { log "minio install failed (log: $CACHE/minio.install.log)"; rc=1; }
  return $rc
}

port_busy() { # port
  (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

free_port() { # preferred
  local p=$1 i
  for i in $(seq 0 50); do
    if ! port_busy $((p + i)); then
      echo $((p + i))
      return 0
    fi
  done
  die "no free port near $1"
}

running() { # name
  [ -f "$RUN/$1.pid" ] && kill -0 "$(cat "$RUN/$1.pid")" 2>/dev/null
}

launch() { # name port command...
  local name=$1 port=$2
  shift 2
  # setsid: each server leads its own process group, so stop can end the
  # whole group (npm/node children included).
  setsid "$@" >"$RUN/$name.log" 2>&1 </dev/null &
  echo $! >"$RUN/$name.pid"
  echo "$port" >"$RUN/$name.port"
}

wait_ready() { # name check-command...
  local name=$1
  shift
  local deadline=$((SECONDS + WAIT_SECONDS))
  until "$@" >/dev/null 2>&1; do
    if ! running "$name"; then
      tail -20 "$RUN/$name.log" >&2 || true
      die "$name exited during start-up (log above, full log: $RUN/$name.log)"
    fi
    if [ $SECONDS -ge $deadline ]; then
      tail -20 "$RUN/$name.log" >&2 || true
      die "$name did not answer within ${WAIT_SECONDS}s (log: $RUN/$name.log)"
    fi
    sleep 0.2
  done
}

cmd_start() {
  cmd_install
  mkdir -p "$RUN"
  local started=0

  if running versitygw; then
    log "versitygw already running (pid $(cat "$RUN/versitygw.pid"))"
  else
    local s3port data
    # Data left by a server that died without `stop`.
    [ -f "$RUN/versitygw.data" ] && rm -rf "$(cat "$RUN/versitygw.data")"
    s3port=$(free_port "${OMNIGRAPH_S3_PORT:-7070}")
    data=$(mktemp -d "${TMPDIR:-/tmp}/omnigraph-s3.XXXXXX")
    echo "$data" >"$RUN/versitygw.data"
    launch versitygw "$s3port" env ROOT_ACCESS_KEY="$S3_ACCESS_KEY" ROOT_SECRET_KEY="$S3_SECRET_KEY" \
      "$BIN/versitygw" --port "127.0.0.1:$s3port" --quiet posix "$data"
    started=1
  fi

  if running fake-gcs-server; then
    log "fake-gcs-server already running (pid $(cat "$RUN/fake-gcs-server.pid"))"
  else
    local gport
    gport=$(free_port "${OMNIGRAPH_GCS_PORT:-4443}")
    launch fake-gcs-server "$gport" "$BIN/fake-gcs-server" -scheme http -host 127.0.0.1 -port "$gport" \
      -backend memory -external-url "http://127.0.0.1:$gport" -public-host "127.0.0.1:$gport" -log-level warn
    started=1
  fi

  if running azurite; then
    log "azurite already running (pid $(cat "$RUN/azurite.pid"))"
  else
    local aport adata
    [ -f "$RUN/azurite.data" ] && rm -rf "$(cat "$RUN/azurite.data")"
    aport=$(free_port "${OMNIGRAPH_AZURE_PORT:-10000}")
    # Files in a temp dir, not --inMemoryPersistence: the in-memory store
    # keeps one extent per blob, and its periodic garbage collection is
    # quadratic in them; after some 30k test writes it blocks the server for
    # minutes. On disk, many blobs share one extent file.
    adata=$(mktemp -d "${TMPDIR:-/tmp}/omnigraph-azure.XXXXXX")
    echo "$adata" >"$RUN/azurite.data"
    # Azurite drops idle keep-alive connections after 5 s by default; a
    # request sent on one as it closes gets a reset, which turns a write into
    # an unknown outcome. Keep them as long as a real store does.
    launch azurite "$aport" "$CACHE/azurite/node_modules/.bin/azurite-blob" --blobHost 127.0.0.1 --blobPort "$aport" \
      --blobKeepAliveTimeout 600 --location "$adata" --skipApiVersionCheck --disableTelemetry --silent
    started=1
  fi

  if running minio; then
    log "minio already running (pid $(cat "$RUN/minio.pid"))"
  else
    local mport cport mdata
    [ -f "$RUN/minio.data" ] && rm -rf "$(cat "$RUN/minio.data")"
    mport=$(free_port "${OMNIGRAPH_MINIO_PORT:-9100}")
    cport=$(free_port $((mport + 1)))
    # One drive in a private temp dir (single-node single-drive), the
    # console off, no update checks.
    mdata=$(mktemp -d "${TMPDIR:-/tmp}/omnigraph-minio.XXXXXX")
    echo "$mdata" >"$RUN/minio.data"
    launch minio "$mport" env MINIO_ROOT_USER="$S3_ACCESS_KEY" MINIO_ROOT_PASSWORD="$S3_SECRET_KEY" \
      MINIO_BROWSER=off MINIO_UPDATE=off \
      "$BIN/minio" server --quiet --address "127.0.0.1:$mport" --console-address "127.0.0.1:$cport" "$mdata"
    started=1
  fi

  # Readiness: S3 and Azure answer any HTTP request once listening; fake-gcs
  # and MinIO have health endpoints.
  wait_ready versitygw curl -s -o /dev/null "http://127.0.0.1:$(cat "$RUN/versitygw.port")/"
  wait_ready fake-gcs-server curl -sf -o /dev/null "http://127.0.0.1:$(cat "$RUN/fake-gcs-server.port")/_internal/healthcheck"
  wait_ready azurite curl -s -o /dev/null "http://127.0.0.1:$(cat "$RUN/azurite.port")/"
  wait_ready minio curl -sf -o /dev/null "http://127.0.0.1:$(cat "$RUN/minio.port")/minio/health/live"
  [ $started = 1 ] && log "ready: s3 :$(cat "$RUN/versitygw.port"), gcs :$(cat "$RUN/fake-gcs-server.port"), azure :$(cat "$RUN/azurite.port"), minio :$(cat "$RUN/minio.port")"
  return 0
}

stop_one() { # name
  local name=$1 pid i
  [ -f "$RUN/$name.pid" ] || return 0
  pid=$(cat "$RUN/$name.pid")
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
    for i in $(seq 1 50); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL -- "-$pid" 2>/dev/null || true
  fi
  rm -f "$RUN/$name.pid" "$RUN/$name.port"
  if [ -f "$RUN/$name.data" ]; then
    rm -rf "$(cat "$RUN/$name.data")"
    rm -f "$RUN/$name.data"
  fi
}

cmd_stop() {
  stop_one versitygw
  stop_one fake-gcs-server
  stop_one azurite
  stop_one minio
}

cmd_status() {
  local name rc=0
  for name in versitygw fake-gcs-server azurite minio; do
    if running "$name"; then
      echo "$name: running, pid $(cat "$RUN/$name.pid"), port $(cat "$RUN/$name.port")"
    else
      echo "$name: stopped"
      rc=1
    fi
  done
  return $rc
}

cmd_env() {
  local name
  for name in versitygw fake-gcs-server azurite minio; do
    running "$name" || die "$name is not running; run: scripts/emulators.sh start"
  done
  local s3 gcs az minio
  s3=$(cat "$RUN/versitygw.port")
  minio=$(cat "$RUN/minio.port")
  gcs=$(cat "$RUN/fake-gcs-server.port")
  az=$(cat "$RUN/azurite.port")
  cat <<EOF
export AWS_ENDPOINT_URL_S3=http://127.0.0.1:$s3
export AWS_ACCESS_KEY_ID=$S3_ACCESS_KEY
export AWS_SECRET_ACCESS_KEY=$S3_SECRET_KEY
export AWS_REGION=us-east-1
export STORAGE_EMULATOR_HOST=127.0.0.1:$gcs
export AZURE_STORAGE_ACCOUNT=$AZURE_ACCOUNT
export AZURE_STORAGE_KEY='$AZURE_KEY'
export OMNIGRAPH_AZURE_ENDPOINT=http://127.0.0.1:$az/$AZURE_ACCOUNT
export OMNIGRAPH_AZURE_EMULATOR=true
export OMNIGRAPH_MINIO_ENDPOINT=http://127.0.0.1:$minio
export OMNIGRAPH_MINIO_ACCESS_KEY_ID=$S3_ACCESS_KEY
export OMNIGRAPH_MINIO_SECRET_ACCESS_KEY=$S3_SECRET_KEY
EOF
}

case "${1:-}" in
install) cmd_install ;;
start) cmd_start ;;
stop) cmd_stop ;;
env) cmd_env ;;
status) cmd_status ;;
*)
  echo "usage: $0 install|start|stop|env|status" >&2
  exit 2
  ;;
esac
