#!/usr/bin/env bash
# demo.sh — what `make demo` runs: the whole fedsearch stack on this machine, asked the sample
# company's questions (data/sample/COMPANY.md) as different people.
#
#   scripts/demo.sh [--once] [--postgres]
#
#   --once       ask the questions, then stop everything and exit (tests/demo_check.sh uses this)
#   --postgres   the orders source reads PostgreSQL instead of the SQLite file
#
# Steps: install what is missing (Debian packages, Maven jars — via scripts/backends/*.sh), build
# the debug binaries, start OpenSearch (seeded), DokuWiki and SQLite (or PostgreSQL) on 127.0.0.1,
# start fusion, es-adapter, sql-adapter, wiki-adapter and the router, ask the sample questions with
# the `fedsearch` CLI, then wait for Ctrl-C. On exit (Ctrl-C, --once, or any failure) every process
# it started and its backends are stopped and $FEDSEARCH_RUN_DIR (.run/demo) is removed; on a
# failure the service logs under .run/demo/logs are kept for a look. Re-running is safe: leftovers
# of an earlier run that was killed hard are stopped first.
#
# Everything lives under .run/demo (its own backend instances, never the ones of `make test`).
# Ports (127.0.0.1), overridable from the environment:
#   DEMO_ROUTER_PORT 50051  DEMO_FUSION_PORT 50052  DEMO_ES_ADAPTER_PORT 50061
#   DEMO_SQL_ADAPTER_PORT 50062  DEMO_WIKI_ADAPTER_PORT 50063  DEMO_MCP_PORT 50071
#   OPENSEARCH_PORT 9201  DOKUWIKI_PORT 8090  PG_PORT 55432 (only with --postgres)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# A clean environment: settings exported for `make test` or by hand must not steer the demo's
# backends (seed targets) or override the services' configs.
for v in $(compgen -e); do
  case "$v" in FEDSEARCH_*__* | FEDSEARCH_CONFIG | FEDSEARCH_ROUTER | FEDSEARCH_TOKEN | FEDSEARCH_JWT_SECRET) unset "$v" ;; esac
done
unset OPENSEARCH_URL DOKUWIKI_URL DOKUWIKI_SECRETS SQLITE_URL SQLITE_PATH PG_RO_URL SQL_ADAPTER_DATABASE_URL
export FEDSEARCH_ROOT=$ROOT FEDSEARCH_RUN_DIR=$ROOT/.run/demo
. "$ROOT/scripts/lib.sh"
cd "$ROOT"

ONCE=0 SQL=sqlite
for a in "$@"; do
  case "$a" in
    --once) ONCE=1 ;;
    --postgres) SQL=postgres ;;
    -h | --help) sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option $a (usage: scripts/demo.sh [--once] [--postgres])" ;;
  esac
done

ROUTER_PORT=${DEMO_ROUTER_PORT:-50051}
FUSION_PORT=${DEMO_FUSION_PORT:-50052}
ES_PORT=${DEMO_ES_ADAPTER_PORT:-50061}
SQLA_PORT=${DEMO_SQL_ADAPTER_PORT:-50062}
WIKIA_PORT=${DEMO_WIKI_ADAPTER_PORT:-50063}
MCP_PORT=${DEMO_MCP_PORT:-50071}
export OPENSEARCH_PORT=${OPENSEARCH_PORT:-9201} DOKUWIKI_PORT=${DOKUWIKI_PORT:-8090} PG_PORT=${PG_PORT:-55432}
BACKENDS=(sqlite opensearch dokuwiki)
[ "$SQL" = postgres ] && BACKENDS=(postgres opensearch dokuwiki)

RUN=$FEDSEARCH_RUN_DIR
LOGS=$RUN/logs
PIDS=$RUN/pids
BIN=$ROOT/target/debug
SERVICES=(fusion es-adapter sql-adapter wiki-adapter router)

say() { printf '%s\n' "$*"; }
section() { printf '\n==== %s\n' "$*"; }

# ---- stopping (also what an earlier, hard-killed run left behind) ---------------------------
stop_services() {
  local s
  for s in router wiki-adapter sql-adapter es-adapter fusion; do stop_pidfile "$PIDS/$s.pid"; done
}
stop_backends() {
  # The backend scripts only stop instances under $FEDSEARCH_RUN_DIR (they check the pid's
  # command line), so this never touches the backends of `make test` in .run/.
  "$ROOT/scripts/backends/all.sh" stop postgres sqlite opensearch dokuwiki >/dev/null 2>&1 || true
}
STARTED=0
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  [ "$STARTED" = 1 ] || { rmdir "$RUN" 2>/dev/null || true; exit "$rc"; }
  say ""
  log "stopping the services and backends the demo started"
  if [ -n "${backends_pid:-}" ] && kill -0 "$backends_pid" 2>/dev/null; then
    kill "$backends_pid" 2>/dev/null || true; wait "$backends_pid" 2>/dev/null || true
  fi
  stop_services
  stop_backends
  if [ "$rc" -eq 0 ]; then
    rm -rf "$RUN"
  else
    find "$RUN" -mindepth 1 -maxdepth 1 ! -name logs -exec rm -rf {} + 2>/dev/null || true
    log "the demo failed (exit $rc); service logs kept in $LOGS"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# (lib.sh creates $RUN; anything in it is from an earlier run)
if [ -n "$(ls -A "$RUN" 2>/dev/null)" ]; then
  log "cleaning up after an earlier demo run"
  mkdir -p "$PIDS"; stop_services; stop_backends; rm -rf "$RUN"
fi

# ---- 0. preflight: tools and ports -----------------------------------------------------------
command -v cargo >/dev/null || die "cargo is not installed (install Rust with rustup: https://rustup.rs)"
ports=("$ROUTER_PORT" "$MCP_PORT" "$FUSION_PORT" "$ES_PORT" "$SQLA_PORT" "$WIKIA_PORT" "$OPENSEARCH_PORT" "$DOKUWIKI_PORT")
[ "$SQL" = postgres ] && ports+=("$PG_PORT")
for p in "${ports[@]}"; do port_free "$p"; done
mkdir -p "$RUN" "$LOGS" "$PIDS"
STARTED=1

SECRET=$(sed -n 's/^ *hs256_secret: *"\{0,1\}\([^"]*\)"\{0,1\} *$/\1/p' deploy/config/router.yaml | head -1)
[ -n "$SECRET" ] || die "no auth.hs256_secret in deploy/config/router.yaml"

# ---- 1+2. install + start the backends (in the background) while the binaries build ----------
section "Installing (if missing) and starting the backends: ${BACKENDS[*]}"
t0=$SECONDS
"$ROOT/scripts/backends/all.sh" start "${BACKENDS[@]}" & backends_pid=$!

# `make test` has just built every target (DEMO_PREBUILT=1): building only the binaries again
# would resolve dependency features differently and rebuild half the workspace.
if [ "${DEMO_PREBUILT:-0}" = 1 ]; then
  section "Using the binaries make test built"
else
  section "Building the debug binaries (cargo build -p ... --bins)"
  crates=(fedsearch-router fedsearch-fusion fedsearch-es-adapter fedsearch-sql-adapter fedsearch-wiki-adapter fedsearch-cli fedsearch-e2e)
  if ! cargo build $(printf -- '-p %s ' "${crates[@]}") --bins; then
    wait "$backends_pid" 2>/dev/null || true
    die "cargo build failed (see the errors above)"
  fi
fi
for b in "${SERVICES[@]}" fedsearch fedsearch-dev-pki; do [ -x "$BIN/$b" ] || die "the build did not produce $BIN/$b"; done
log "binaries ready in $BIN"
wait "$backends_pid" || die "the backends did not start (see the messages above and $RUN/start-*.log)"
eval "$("$ROOT/scripts/backends/all.sh" env)"
log "backends up in $((SECONDS - t0)) s"

# ---- 3. the five services ------------------------------------------------------------------
section "Starting the services (logs in .run/demo/logs)"
# start_service NAME PORT CONFIG [VAR=VALUE...]
start_service() {
  local name=$1 port=$2 cfg=$3; shift 3
  # The services read every FEDSEARCH_* variable as a config key, so none of the script's own
  # (FEDSEARCH_ROOT, FEDSEARCH_RUN_DIR, FEDSEARCH_ROUTER) may reach them.
  local unset_args=() v
  for v in $(compgen -e); do case "$v" in FEDSEARCH_*) unset_args+=(-u "$v") ;; esac; done
  # shellcheck disable=SC2046 # tls_env's words are VAR=VALUE pairs without spaces
  env "${unset_args[@]}" "$@" $(tls_env "$name" "$RUN/tls") \
    FEDSEARCH_SERVER__LISTEN="127.0.0.1:$port" FEDSEARCH_TELEMETRY__LOG_FORMAT=json \
    "$BIN/$name" --config "$cfg" </dev/null >"$LOGS/$name.log" 2>&1 &
  echo $! >"$PIDS/$name.pid"
}
# wait_service NAME PORT — the process is alive and its port accepts connections.
wait_service() {
  local name=$1 port=$2 pid i
  pid=$(cat "$PIDS/$name.pid")
  for i in $(seq 600); do
    kill -0 "$pid" 2>/dev/null || { tail -15 "$LOGS/$name.log" >&2; die "$name exited at start (log: $LOGS/$name.log)"; }
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return 0
    sleep 0.1
  done
  tail -15 "$LOGS/$name.log" >&2; die "$name did not listen on 127.0.0.1:$port within 60 s (log: $LOGS/$name.log)"
}

# Every hop between the services is mutual TLS, with a CA made for this run (docs/security.md):
# certificates for each service, the router's assertion signing key and its JWKS in .run/demo/tls.
"$BIN/fedsearch-dev-pki" "$RUN/tls" >/dev/null || die "cannot make the demo's certificates"
log "throwaway CA and certificates in $RUN/tls (mutual TLS on every internal hop)"
# Configs with the demo's ports and OpenSearch URL (the same files when nothing is overridden).
sed "s#http://127.0.0.1:9201#$OPENSEARCH_URL#" deploy/config/es-adapter.yaml >"$RUN/es-adapter.yaml"
sed -e "s#127.0.0.1:50052#127.0.0.1:$FUSION_PORT#" -e "s#127.0.0.1:50061#127.0.0.1:$ES_PORT#" \
    -e "s#127.0.0.1:50062#127.0.0.1:$SQLA_PORT#" -e "s#127.0.0.1:50063#127.0.0.1:$WIKIA_PORT#" \
    -e "s#127.0.0.1:50071#127.0.0.1:$MCP_PORT#" \
    deploy/config/router.yaml >"$RUN/router.yaml"
if [ "$SQL" = postgres ]; then SQL_URL=$PG_RO_URL; else SQL_URL=$SQLITE_URL; fi

start_service fusion "$FUSION_PORT" deploy/config/fusion.yaml
start_service es-adapter "$ES_PORT" "$RUN/es-adapter.yaml"
start_service sql-adapter "$SQLA_PORT" deploy/config/sql-adapter.yaml SQL_ADAPTER_DATABASE_URL="$SQL_URL"
start_wiki_adapter() {
  start_service wiki-adapter "$WIKIA_PORT" deploy/config/wiki-adapter.yaml \
    DOKUWIKI_URL="$DOKUWIKI_URL" DOKUWIKI_SECRETS="$DOKUWIKI_SECRETS"
}
start_wiki_adapter
start_service router "$ROUTER_PORT" "$RUN/router.yaml" FEDSEARCH_AUTH__HS256_SECRET="$SECRET"
wait_service fusion "$FUSION_PORT"
wait_service es-adapter "$ES_PORT"
wait_service sql-adapter "$SQLA_PORT"
wait_service wiki-adapter "$WIKIA_PORT"
wait_service router "$ROUTER_PORT"

export FEDSEARCH_ROUTER=http://127.0.0.1:$ROUTER_PORT
fs() { "$BIN/fedsearch" "$@"; }
token() { "$BIN/fedsearch" token --secret "$SECRET" --user "$1" --ttl 2h; }
# The router answers ListSources once it serves gRPC.
ok=0
for _ in $(seq 100); do
  if fs --token "$(token alice)" sources >/dev/null 2>&1; then ok=1; break; fi
  sleep 0.3
done
[ "$ok" = 1 ] || { fs --token "$(token alice)" sources || true; die "the router does not answer on $FEDSEARCH_ROUTER (log: $LOGS/router.log)"; }

db="SQLite $SQLITE_PATH"; [ "$SQL" = postgres ] && db="PostgreSQL 127.0.0.1:$PG_PORT"
say ""
say "Everything is up (in $((SECONDS - t0)) s):"
printf '  %-13s %-22s %s\n' \
  router "127.0.0.1:$ROUTER_PORT" "public API fedsearch.v1.FederatedSearch (JWT HS256, secret in deploy/config/router.yaml)" \
  "router MCP" "127.0.0.1:$MCP_PORT" "MCP streamable HTTP at http://127.0.0.1:$MCP_PORT/mcp (same bearer tokens)" \
  fusion "127.0.0.1:$FUSION_PORT" "dedup + rank fusion" \
  es-adapter "127.0.0.1:$ES_PORT" "sources tickets, incidents, kb  -> OpenSearch $OPENSEARCH_URL" \
  sql-adapter "127.0.0.1:$SQLA_PORT" "source orders (target shop)    -> $db" \
  wiki-adapter "127.0.0.1:$WIKIA_PORT" "source wiki, as each user      -> DokuWiki $DOKUWIKI_URL"
say "  router -> fusion and adapters: mutual TLS (only the router's certificate is allowed), every"
say "  sub-query's user signed by the router (ES256) and verified by the adapter (docs/security.md)"

# ---- 4. the questions ----------------------------------------------------------------------
# ask USER ROLE QUESTION [search options...]
ask() {
  local user=$1 role=$2 q=$3; shift 3
  say "user:     $user ($role)"
  say "question: $q${*:+   [options: $*]}"
  say "\$ fedsearch --token \"\$(fedsearch token --user $user)\" search \"$q\"${*:+ $*}"
  say ""
  fs --token "$(token "$user")" search "$q" "$@" 2>&1 | sed 's/^/  /' || true
}
Q1='客户C1001：我昨天买的商品为什么还没发货？如果拒收要收手续费吗？'
Q2='最近一周线上问题中哪些和支付超时有关，同时附上对应的工单处理状态'
Q4='支付超时 怎么处理'
Q5='SO20261007 拒收手续费'

section "[Q1] alice asks about a customer's order: orders (SQL) -> shipment -> the CURRENT return policy (wiki)"
say "Shows: the router picks orders (customer/order ids, 发货) and wiki (拒收, 手续费); the SQL answer"
say "explains the backorder, and the 2026 return policy (¥12) ranks above the superseded 2025 one (¥8)."
say ""
ask alice "support agent, retail" "$Q1"

section "[Q2] dave asks about last week's payment timeouts: incidents + tickets + wiki runbook"
say "Shows: logs (incidents), tickets with their handling status and the support runbook, only from"
say "the last 7 days: the router turns 最近一周 into a 7-day filter for tickets and incidents (INC-2038,"
say "12 days old, is left out), while the runbook — reference material — gets no date filter. The"
say "routing block shows what each source was sent."
say ""
ask dave "support agent, wholesale" "$Q2"

section "[Q3] carol (plain employee) asks the same question: she gets less"
say "Shows: the sources each person may use (ListSources) — carol has no support/finance group, so"
say "orders, tickets and incidents are not even offered to her, and the wiki searches as her own"
say "login (no support:/finance: pages)."
say ""
say "\$ fedsearch sources   # as alice"
fs --token "$(token alice)" sources 2>&1 | sed 's/^/  /' || true
say ""
say "\$ fedsearch sources   # as carol"
fs --token "$(token carol)" sources 2>&1 | sed 's/^/  /' || true
say ""
ask carol "plain employee" "$Q2"

section "[Q4] eve (contractor, no wiki account) asks how to handle a payment timeout: wiki DENIED, kb answers"
say "Shows: the wiki is searched as the user's own wiki login; eve has none, so the wiki source is"
say "DENIED for her while the knowledge base (public articles) still answers."
say ""
ask eve "contractor, no wiki account" "$Q4"

section "[Q5] the wiki adapter is stopped: a partial answer with per-source status"
say "Shows: with one adapter down the router still answers from the others (orders, tickets) and"
say "says which source is missing and why; then the adapter is restarted."
say ""
log "stopping wiki-adapter (pid $(cat "$PIDS/wiki-adapter.pid"))"
stop_pidfile "$PIDS/wiki-adapter.pid"
ask alice "support agent, retail" "$Q5"
say ""
log "restarting wiki-adapter"
start_wiki_adapter
wait_service wiki-adapter "$WIKIA_PORT"
back=$(fs --token "$(token alice)" search "拒收手续费" -s wiki 2>&1 | awk '$1 == "wiki" && NF >= 3 {print $2; exit}')
say "wiki-adapter is back on 127.0.0.1:$WIKIA_PORT (wiki source state: ${back:-unknown})"

# ---- 5. stay up, or stop -------------------------------------------------------------------
if [ "$ONCE" = 1 ]; then
  section "Done (--once): stopping everything"
  exit 0
fi
section "The stack stays up until Ctrl-C. Ask your own questions:"
say "  export FEDSEARCH_ROUTER=$FEDSEARCH_ROUTER"
say "  export FEDSEARCH_TOKEN=\$($BIN/fedsearch token --secret '$SECRET' --user alice)   # or dave, bob, carol, eve"
say "  $BIN/fedsearch search '订单SO20261007拒收了，退款手续费多少？'"
say "  $BIN/fedsearch search --stream --explain '支付超时怎么处理'"
say "  $BIN/fedsearch get wiki:public:return_policy"
say "Logs: $LOGS"
trap 'exit 0' INT TERM   # Ctrl-C is the normal way out now
while :; do
  sleep 5 & wait $! || true
  for s in "${SERVICES[@]}"; do
    if [ -f "$PIDS/$s.pid" ] && ! kill -0 "$(cat "$PIDS/$s.pid")" 2>/dev/null; then
      log "warning: $s exited (log: $LOGS/$s.log)"; rm -f "$PIDS/$s.pid"
    fi
  done
done
