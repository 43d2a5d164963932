#!/usr/bin/env bash
# eval.sh — answer quality on a labeled sample company: start the five services with that
# company's configs against the running backends, ask its labeled questions with
# `fedsearch eval` (each as its user), print the report, stop the services.
#
#   scripts/eval.sh COMPANY [fedsearch eval options...]
#   scripts/eval.sh spruce --min-ndcg 0.9          # fails below the threshold
#   scripts/eval.sh nimbus --json > nimbus.json
#   scripts/eval.sh orca --with-vector ...          # also the vector source (EVAL_WITH_VECTOR=1 too)
#
# COMPANY is a folder under eval/ with questions.jsonl, users.yaml and eval.env, which names
# CONFIG_DIR (the router/adapter/fusion YAML files) and SQL_URL_VAR (the backend env variable
# holding the read-only SQL URL). The backends must be up and their env loaded:
#   scripts/backends/all.sh start && eval "$(scripts/backends/all.sh env)"
# Binaries: target/debug (make build), or BIN=target/release for release ones.
# Ports (127.0.0.1): EVAL_BASE_PORT (default 30151) to EVAL_BASE_PORT+5, below the kernel's
# ephemeral range (32768+), so no outgoing connection takes one while the services start.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$FEDSEARCH_ROOT"

company=${1:-}; [ -n "$company" ] || die "usage: scripts/eval.sh COMPANY [--with-vector] [fedsearch eval options...]"; shift
# --with-vector: index the company's stable documents into the vector store (scripts/backends/chroma.sh,
# $CONFIG_DIR/vector-adapter.yaml), start the vector adapter and add $CONFIG_DIR/router-vector-source.yaml
# to the router's sources. Off by default.
WITH_VECTOR=${EVAL_WITH_VECTOR:-0}
if [ "${1:-}" = --with-vector ]; then WITH_VECTOR=1; shift; fi
DIR=eval/$company
[ -f "$DIR/eval.env" ] || die "no $DIR/eval.env (companies: $(ls eval | tr '\n' ' '))"
CONFIG_DIR= SQL_URL_VAR=
. "$DIR/eval.env"
# EVAL_CONFIG_DIR: another copy of the company's configs (an A/B run of one setting).
CONFIG_DIR=${EVAL_CONFIG_DIR:-$CONFIG_DIR}
[ -d "$CONFIG_DIR" ] || die "$DIR/eval.env: CONFIG_DIR=$CONFIG_DIR is not a folder"
SQL_URL=${!SQL_URL_VAR:-}
for v in OPENSEARCH_URL DOKUWIKI_URL DOKUWIKI_SECRETS; do
  [ -n "${!v:-}" ] || die "$v is not set: start the backends and load their env (see the header of $0)"
done
[ -n "$SQL_URL" ] || die "$SQL_URL_VAR is not set: start the backends and load their env (see the header of $0)"

BIN=${BIN:-$FEDSEARCH_ROOT/target/debug}
base=${EVAL_BASE_PORT:-30151}
ROUTER_PORT=$base FUSION_PORT=$((base + 1)) ES_PORT=$((base + 2)) SQLA_PORT=$((base + 3)) WIKIA_PORT=$((base + 4))
MCP_PORT=$((base + 5)) VEC_PORT=$((base + 6))
for p in $ROUTER_PORT $FUSION_PORT $ES_PORT $SQLA_PORT $WIKIA_PORT $MCP_PORT; do port_free "$p"; done
if [ "$WITH_VECTOR" = 1 ]; then
  port_free "$VEC_PORT"
  for f in vector-adapter.yaml router-vector-source.yaml; do [ -f "$CONFIG_DIR/$f" ] || die "--with-vector: no $CONFIG_DIR/$f"; done
  [ -n "${CHROMA_URL:-}" ] && [ -n "${FEDSEARCH_VECTOR_MODEL_DIR:-}" ] \
    || die "--with-vector: CHROMA_URL / FEDSEARCH_VECTOR_MODEL_DIR not set (scripts/backends/chroma.sh start; load .run/chroma.env)"
fi
RUN=$(mktemp -d "$FEDSEARCH_RUN_DIR/eval-$company.XXXX")
pids=()
cleanup() {
  local rc=$?
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  if [ "$rc" -eq 0 ]; then rm -rf "$RUN"; else log "service logs kept in $RUN"; fi
  exit "$rc"
}
trap cleanup EXIT

# The configs with this run's ports and backend URLs. A company's configs use the demo's port
# layout, 5x0NN: fusion NN=52, es-adapter 61, sql-adapter 62, wiki-adapter 63, MCP 71.
sed "s#http://127.0.0.1:9201#$OPENSEARCH_URL#" "$CONFIG_DIR/es-adapter.yaml" >"$RUN/es-adapter.yaml"
sed -E -e "s#127\.0\.0\.1:5[0-9]052\b#127.0.0.1:$FUSION_PORT#" -e "s#127\.0\.0\.1:5[0-9]061\b#127.0.0.1:$ES_PORT#" \
    -e "s#127\.0\.0\.1:5[0-9]062\b#127.0.0.1:$SQLA_PORT#" -e "s#127\.0\.0\.1:5[0-9]063\b#127.0.0.1:$WIKIA_PORT#" \
    -e "s#127\.0\.0\.1:5[0-9]071\b#127.0.0.1:$MCP_PORT#" "$CONFIG_DIR/router.yaml" >"$RUN/router.yaml"
if [ "$WITH_VECTOR" = 1 ]; then
  # the entry goes at the end of `sources:`, which must be the file's last top-level key
  [ "$(grep -E '^[a-z_]+:' "$RUN/router.yaml" | tail -1)" = "sources:" ] || die "sources: is not the last key of router.yaml"
  sed -E "s#127\.0\.0\.1:5[0-9]064\b#127.0.0.1:$VEC_PORT#" "$CONFIG_DIR/router-vector-source.yaml" >>"$RUN/router.yaml"
  scripts/backends/chroma.sh index "$CONFIG_DIR/vector-adapter.yaml" >&2
fi
SECRET=$(sed -n 's/^ *hs256_secret: *"\{0,1\}\([^"]*\)"\{0,1\} *$/\1/p' "$RUN/router.yaml" | head -1)
[ -n "$SECRET" ] || die "no auth.hs256_secret in $CONFIG_DIR/router.yaml"

# Mutual TLS between the services with a throwaway CA of this run (docs/security.md).
[ -x "$BIN/fedsearch-dev-pki" ] || die "no $BIN/fedsearch-dev-pki: cargo build -p fedsearch-e2e --bins"
"$BIN/fedsearch-dev-pki" "$RUN/tls" >/dev/null
start() { # NAME PORT CONFIG [VAR=VALUE...]
  local name=$1 port=$2 cfg=$3; shift 3
  local unset_args=() v
  for v in $(compgen -e); do case "$v" in FEDSEARCH_*) unset_args+=(-u "$v") ;; esac; done
  # shellcheck disable=SC2046 # tls_env's words are VAR=VALUE pairs without spaces
  env "${unset_args[@]}" "$@" $(tls_env "$name" "$RUN/tls") \
    FEDSEARCH_SERVER__LISTEN="127.0.0.1:$port" FEDSEARCH_TELEMETRY__LOG_FORMAT=json \
    "$BIN/$name" --config "$cfg" </dev/null >"$RUN/$name.log" 2>&1 &
  pids+=("$!")
}
start fusion "$FUSION_PORT" "$CONFIG_DIR/fusion.yaml"
start es-adapter "$ES_PORT" "$RUN/es-adapter.yaml"
start sql-adapter "$SQLA_PORT" "$CONFIG_DIR/sql-adapter.yaml" SQL_ADAPTER_DATABASE_URL="$SQL_URL"
start wiki-adapter "$WIKIA_PORT" "$CONFIG_DIR/wiki-adapter.yaml" DOKUWIKI_URL="$DOKUWIKI_URL" DOKUWIKI_SECRETS="$DOKUWIKI_SECRETS"
ports="$FUSION_PORT $ES_PORT $SQLA_PORT $WIKIA_PORT"
if [ "$WITH_VECTOR" = 1 ]; then
  start vector-adapter "$VEC_PORT" "$CONFIG_DIR/vector-adapter.yaml" CHROMA_URL="$CHROMA_URL" \
    FEDSEARCH_VECTOR_MODEL_DIR="$FEDSEARCH_VECTOR_MODEL_DIR"
  ports="$ports $VEC_PORT"
fi
start router "$ROUTER_PORT" "$RUN/router.yaml"
for p in $ports $ROUTER_PORT; do
  wait_tcp "$p" 60 || { tail -n 5 "$RUN"/*.log >&2; die "a service did not listen on 127.0.0.1:$p (logs: $RUN)"; }
done
# cpu_ms PID — CPU time the process used so far (utime + stime from /proc, ticks of 1/100 s)
cpu_ms() { local st; st=$(cat "/proc/$1/stat" 2>/dev/null) || { echo 0; return; }; set -- ${st##*) }; echo $(( (${12} + ${13}) * 10 )); }
before=(); for p in "${pids[@]}"; do before+=("$(cpu_ms "$p")"); done
log "asking $(grep -c . "$DIR/questions.jsonl") questions of $company"
rc=0
# Questions without an as_of are asked as of the instant the backends were seeded at (all.sh
# start exports it), so data seeded "N days ago" answers "yesterday" the same at any hour.
seeded=()
if [ -n "${FEDSEARCH_SEED_NOW:-}" ] && [ -z "${FEDSEARCH_EVAL_DEFAULT_AS_OF:-}" ]; then
  seeded=("FEDSEARCH_EVAL_DEFAULT_AS_OF=$(date -u -d "@$FEDSEARCH_SEED_NOW" +%Y-%m-%dT%H:%M:%SZ)")
fi
env -u FEDSEARCH_TOKEN "${seeded[@]}" "$BIN/fedsearch" --router "http://127.0.0.1:$ROUTER_PORT" eval \
  --questions "$DIR/questions.jsonl" --users "$DIR/users.yaml" --secret "$SECRET" "$@" || rc=$?
cpu=""
for i in "${!pids[@]}"; do
  name=$(tr '\0' ' ' <"/proc/${pids[$i]}/cmdline" 2>/dev/null | awk '{print $1}') || continue
  cpu="$cpu ${name##*/}=$(( $(cpu_ms "${pids[$i]}") - ${before[$i]} ))ms"
done
log "CPU used while the questions were asked:$cpu"
# EVAL_HOLD=SECONDS keeps the services up that long afterwards, to ask them by hand, as one of
# the company's users (the claims of eval/COMPANY/users.yaml; `--user` mints only the demo users):
#   fedsearch --router http://127.0.0.1:$ROUTER_PORT \
#     --token "$(fedsearch token --secret … --sub ting --group employee --group cs --attr branches=szx)" search …
if [ "${EVAL_HOLD:-0}" -gt 0 ]; then
  log "holding the services for ${EVAL_HOLD}s: router http://127.0.0.1:$ROUTER_PORT, TLS files in $RUN/tls"
  sleep "$EVAL_HOLD"
fi
exit "$rc"
