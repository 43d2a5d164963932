#!/usr/bin/env bash
# python-client-test.sh — the Python client (clients/python) tested against the live stack: a
# venv with the package and its `langchain` + `llamaindex` extras from PyPI (the gRPC stubs are
# generated from proto/ while pip builds it), then pytest against the real router, adapters and
# fusion over OpenSearch, SQLite and DokuWiki. `make test` calls it after the demo check.
#
#   scripts/python-client-test.sh [pytest args...]     e.g. -k langchain -x
#   scripts/python-client-test.sh --serve              start the stack, print its env, wait for Ctrl-C
#
# The stack: unless FEDSEARCH_TEST_ROUTER (host:port) names a running router, this script starts
# its own backends (scripts/backends/all.sh, instances under $FEDSEARCH_RUN_DIR/pyclient, never
# the ones of `make test` or the demo) and the five debug binaries from target/debug, and stops
# everything it started on exit. With FEDSEARCH_TEST_ROUTER, FEDSEARCH_TEST_SECRET is the router's
# HS256 secret (default: auth.hs256_secret of deploy/config/router.yaml).
#
# Environment (127.0.0.1 ports, chosen not to clash with make test, eval.sh or the demo):
#   PYCLIENT_BASE_PORT 30171  router, fusion, es-, sql-, wiki-adapter, MCP on BASE..BASE+5
#   OPENSEARCH_PORT 9221  DOKUWIKI_PORT 8093
#   FEDSEARCH_RUN_DIR (.run)  the venv is $FEDSEARCH_RUN_DIR/pyclient-venv (reused when present)
#   BIN (target/debug)        where the service binaries and the `fedsearch` CLI are
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# The backend env of make test (exported by test.sh) must not steer ours; the services below get
# only the FEDSEARCH_* settings given here, and the CLI gets --router and --token explicitly.
unset OPENSEARCH_URL DOKUWIKI_URL DOKUWIKI_SECRETS SQLITE_URL SQLITE_PATH PG_RO_URL SQL_ADAPTER_DATABASE_URL
export FEDSEARCH_ROOT=$ROOT
. "$ROOT/scripts/lib.sh"
cd "$ROOT"

SERVE=0
if [ "${1:-}" = --serve ]; then SERVE=1; shift; fi
RUN=$FEDSEARCH_RUN_DIR
VENV=$RUN/pyclient-venv
STACK=$RUN/pyclient
BIN=${BIN:-$ROOT/target/debug}
PY_DIR=$ROOT/clients/python
t0=$SECONDS

# ---- stopping what we started ----------------------------------------------------------------
svc_pids=()
own_backends=0
backends() { FEDSEARCH_RUN_DIR=$STACK "$ROOT/scripts/backends/all.sh" "$1" sqlite opensearch dokuwiki; }
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  local p
  [ -z "${pip_pid:-}" ] || kill "$pip_pid" 2>/dev/null || true
  for p in "${svc_pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${svc_pids[@]}"; do wait "$p" 2>/dev/null || true; done
  if [ "$own_backends" = 1 ]; then
    backends stop >/dev/null 2>&1 || true
    if [ "$rc" -eq 0 ]; then rm -rf "$STACK"; else
      find "$STACK" -mindepth 1 -maxdepth 1 ! -name logs ! -name '*.log' -exec rm -rf {} + 2>/dev/null || true
      log "failed (exit $rc); logs kept in $STACK"
    fi
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---- the venv (in the background while the stack starts) -------------------------------------
install_venv() {
  [ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q --disable-pip-version-check --upgrade pip >/dev/null
  # A fresh build every time: the stubs come from the proto files as they are now. pip builds
  # in the source tree; its build/ and egg-info are removed so no stale stub outlives a proto.
  rm -rf "$PY_DIR/build" "$PY_DIR/src/fedsearch.egg-info"
  "$VENV/bin/pip" install -q --disable-pip-version-check --force-reinstall --no-deps "$PY_DIR"
  "$VENV/bin/pip" install -q --disable-pip-version-check "$PY_DIR[langchain,llamaindex,test]"
  rm -rf "$PY_DIR/build" "$PY_DIR/src/fedsearch.egg-info"
}
mkdir -p "$RUN"
log "installing clients/python[langchain,llamaindex,test] into $VENV"
install_venv >"$RUN/pyclient-pip.log" 2>&1 & pip_pid=$!

# ---- the stack -------------------------------------------------------------------------------
if [ -n "${FEDSEARCH_TEST_ROUTER:-}" ]; then
  ROUTER=${FEDSEARCH_TEST_ROUTER#http://}
  SECRET=${FEDSEARCH_TEST_SECRET:-}
  log "using the running router at $ROUTER"
else
  base=${PYCLIENT_BASE_PORT:-30171}
  ROUTER_PORT=$base FUSION_PORT=$((base + 1)) ES_PORT=$((base + 2)) SQLA_PORT=$((base + 3))
  WIKIA_PORT=$((base + 4)) MCP_PORT=$((base + 5))
  export OPENSEARCH_PORT=${OPENSEARCH_PORT:-9221} DOKUWIKI_PORT=${DOKUWIKI_PORT:-8093}
  for p in $ROUTER_PORT $FUSION_PORT $ES_PORT $SQLA_PORT $WIKIA_PORT $MCP_PORT $OPENSEARCH_PORT $DOKUWIKI_PORT; do
    port_free "$p"
  done
  for b in fusion es-adapter sql-adapter wiki-adapter router fedsearch; do
    [ -x "$BIN/$b" ] || die "no $BIN/$b: build the binaries first (cargo build --workspace --bins)"
  done
  # Leftovers of a run that was killed hard: the backend scripts stop only their own instances.
  if [ -d "$STACK" ]; then
    backends stop >/dev/null 2>&1 || true
    rm -rf "$STACK"
  fi
  mkdir -p "$STACK/logs"
  own_backends=1
  log "starting SQLite, OpenSearch and DokuWiki under $STACK (OpenSearch :$OPENSEARCH_PORT, DokuWiki :$DOKUWIKI_PORT)"
  # One more try when a backend fails to come up (a node starved on a busy 2-core machine).
  if ! backends start; then
    log "a backend did not start; stopping them and trying once more"
    backends stop >/dev/null 2>&1 || true
    backends start || die "the backends did not start (logs: $STACK/start-*.log)"
  fi
  eval "$(backends env)"

  # The deploy configs with this run's ports and backend URLs.
  sed "s#http://127.0.0.1:9201#$OPENSEARCH_URL#" deploy/config/es-adapter.yaml >"$STACK/es-adapter.yaml"
  sed -e "s#127.0.0.1:50052#127.0.0.1:$FUSION_PORT#" -e "s#127.0.0.1:50061#127.0.0.1:$ES_PORT#" \
      -e "s#127.0.0.1:50062#127.0.0.1:$SQLA_PORT#" -e "s#127.0.0.1:50063#127.0.0.1:$WIKIA_PORT#" \
      -e "s#127.0.0.1:50071#127.0.0.1:$MCP_PORT#" deploy/config/router.yaml >"$STACK/router.yaml"
  SECRET=$(sed -n 's/^ *hs256_secret: *"\{0,1\}\([^"]*\)"\{0,1\} *$/\1/p' "$STACK/router.yaml" | head -1)
  [ -n "$SECRET" ] || die "no auth.hs256_secret in deploy/config/router.yaml"

  # NAME|PORT|CONFIG[|VAR=VALUE...] — the services read every FEDSEARCH_* variable as a config
  # key, so only the ones given here reach them.
  clean_env=()
  for v in $(compgen -e); do case "$v" in FEDSEARCH_*) clean_env+=(-u "$v") ;; esac; done
  services=(
    "fusion|$FUSION_PORT|deploy/config/fusion.yaml"
    "es-adapter|$ES_PORT|$STACK/es-adapter.yaml"
    "sql-adapter|$SQLA_PORT|deploy/config/sql-adapter.yaml|SQL_ADAPTER_DATABASE_URL=$SQLITE_URL"
    "wiki-adapter|$WIKIA_PORT|deploy/config/wiki-adapter.yaml|DOKUWIKI_URL=$DOKUWIKI_URL|DOKUWIKI_SECRETS=$DOKUWIKI_SECRETS"
    "router|$ROUTER_PORT|$STACK/router.yaml|FEDSEARCH_FEEDBACK__PATH=$STACK/feedback.jsonl"
  )
  # Mutual TLS between the services with a throwaway CA of this run (docs/security.md).
  "$BIN/fedsearch-dev-pki" "$STACK/tls" >/dev/null || die "no $BIN/fedsearch-dev-pki (cargo build --workspace --bins)"
  for spec in "${services[@]}"; do
    IFS="|" read -r -a f <<<"$spec"
    # shellcheck disable=SC2046 # tls_env's words are VAR=VALUE pairs without spaces
    env "${clean_env[@]}" "${f[@]:3}" $(tls_env "${f[0]}" "$STACK/tls") FEDSEARCH_SERVER__LISTEN="127.0.0.1:${f[1]}" \
      FEDSEARCH_TELEMETRY__LOG_FORMAT=json "$BIN/${f[0]}" --config "${f[2]}" </dev/null >"$STACK/logs/${f[0]}.log" 2>&1 &
    svc_pids+=("$!")
  done
  for spec in "${services[@]}"; do
    IFS="|" read -r -a f <<<"$spec"
    wait_tcp "${f[1]}" 60 || { tail -n 15 "$STACK/logs/${f[0]}.log" >&2; die "${f[0]} did not listen on 127.0.0.1:${f[1]}"; }
  done
  ROUTER=127.0.0.1:$ROUTER_PORT
  export FEDSEARCH_TEST_FEEDBACK_FILE=$STACK/feedback.jsonl
  log "stack up in $((SECONDS - t0)) s: router $ROUTER (MCP :$MCP_PORT), logs in $STACK/logs"
fi
if [ -z "${SECRET:-}" ]; then
  SECRET=$(sed -n 's/^ *hs256_secret: *"\{0,1\}\([^"]*\)"\{0,1\} *$/\1/p' deploy/config/router.yaml | head -1)
fi

# The router answers ListSources once it serves gRPC.
ok=0
for _ in $(seq 100); do
  if "$BIN/fedsearch" --router "http://$ROUTER" --token "$("$BIN/fedsearch" token --secret "$SECRET" --user alice)" \
    sources >/dev/null 2>&1; then ok=1; break; fi
  sleep 0.3
done
[ "$ok" = 1 ] || die "the router at $ROUTER does not answer ListSources"

wait "$pip_pid" || { tail -n 30 "$RUN/pyclient-pip.log" >&2; die "pip could not install clients/python (log: $RUN/pyclient-pip.log)"; }

export FEDSEARCH_TEST_ROUTER=$ROUTER FEDSEARCH_TEST_SECRET=$SECRET FEDSEARCH_TEST_CLI=$BIN/fedsearch
if [ "$SERVE" = 1 ]; then
  say() { printf '%s\n' "$*"; }
  say "export FEDSEARCH_TEST_ROUTER=$ROUTER FEDSEARCH_TEST_SECRET='$SECRET' FEDSEARCH_TEST_CLI=$BIN/fedsearch"
  say "$VENV/bin/pytest $PY_DIR/tests    # Ctrl-C here stops the stack"
  trap 'exit 0' INT TERM
  while :; do sleep 5 & wait $! || true; done
fi
log "pytest clients/python/tests against $ROUTER"
# Run from the tests folder, so `import fedsearch` is the installed package, not the source tree.
status=0
(cd "$PY_DIR/tests" && "$VENV/bin/python" -m pytest -p no:cacheprovider "$@" .) || status=1
log "type check: mypy --strict of the installed package and examples/agent_loop.py"
(
  cd "$RUN"
  mypy=("$VENV/bin/mypy" --config-file "$PY_DIR/pyproject.toml" --cache-dir "$RUN/pyclient-mypy-cache")
  "${mypy[@]}" -p fedsearch && "${mypy[@]}" "$PY_DIR/examples/agent_loop.py"
) || status=1
log "finished in $((SECONDS - t0)) s with status $status"
exit "$status"
