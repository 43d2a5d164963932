#!/usr/bin/env bash
# bench-tls.sh — what mutual TLS and the identity assertions add to the router's overhead.
#
# Two stacks of separate processes on loopback, each a router, a fusion service and three
# `scripted-adapter` processes (sources answering after 10/20/30 ms):
#   on  — mutual TLS on every internal hop (router → adapters, router → fusion; throwaway
#         certificates from `fedsearch-dev-pki`), the router signing an ES256 assertion per
#         sub-query and every adapter verifying it (`--assertion-jwks`);
#   off — the same with `insecure: true` everywhere and no assertions.
# `fedsearch-loadgen` drives each router's Search open loop at BENCH_TLS_RATE (500) q/s, the two
# sides in turn for BENCH_TLS_ROUNDS (5) rounds so both see the same machine load, and the
# script prints a Markdown section: overhead p50/p99 (latency − the slowest source) and router
# CPU per answered search, per round and as medians. The client → router hop is plaintext on
# both sides (it is not an internal hop). Every process it starts is stopped on exit.
#
# The release build happens in a git worktree of HEAD with its own target dir
# (BENCH_TLS_WORKTREE, default /tmp/fedsearch-bench-tls), never in the shared target/, and the
# worktree is removed at the end unless BENCH_TLS_KEEP=1 (then a next run builds incrementally).
# BENCH_TLS_BIN=DIR runs release binaries built before (no worktree, no build).
# Other knobs: BENCH_TLS_DURATION=15s, BENCH_TLS_WARMUP=3s, BENCH_TLS_OUT=FILE (the section is
# also written there), BENCH_TLS_PORTS=LOW-HIGH (ports from that range only).
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$FEDSEARCH_ROOT" || exit 1

RATE=${BENCH_TLS_RATE:-500}
ROUNDS=${BENCH_TLS_ROUNDS:-5}
DURATION=${BENCH_TLS_DURATION:-15s}
WARMUP=${BENCH_TLS_WARMUP:-3s}
WT=${BENCH_TLS_WORKTREE:-/tmp/fedsearch-bench-tls}
LATENCIES=(10 20 30)
NAMES=(alpha beta gamma)
HITS=20
QUERY="refund for a delayed order"
SLOWEST=30

command -v cargo >/dev/null || die "cargo is not installed (rustup toolchain expected)"
command -v jq >/dev/null || apt_install jq

COMMIT=$(git rev-parse HEAD)
if [ -n "${BENCH_TLS_BIN:-}" ]; then # release binaries built before: no worktree, no build
  BIN=$BENCH_TLS_BIN WT=
  COMMIT=$(cat "$BIN/.bench-tls-commit" 2>/dev/null || echo "unknown (binaries in $BIN)")
elif [ -d "$WT/.git" ] || [ -f "$WT/.git" ]; then
  git -C "$WT" checkout -q --detach "$COMMIT" || die "cannot check out $COMMIT in the worktree $WT"
else
  git worktree add -q --detach "$WT" "$COMMIT" || die "cannot make a worktree at $WT"
fi
remove_worktree() { [ -z "$WT" ] || [ -n "${BENCH_TLS_KEEP:-}" ] || git worktree remove --force "$WT" 2>/dev/null || true; }

if [ -n "$WT" ]; then
  log "building release binaries in $WT (own target dir): router, fusion, scripted-adapter, fedsearch-loadgen, fedsearch-dev-pki"
  (cd "$WT" && CARGO_TARGET_DIR="$WT/target" cargo build --release -p fedsearch-bench -p fedsearch-router \
    -p fedsearch-fusion -p fedsearch-e2e --bins 2>&1 | tail -2)
  BIN=$WT/target/release
  echo "$COMMIT" >"$BIN/.bench-tls-commit"
fi
for b in router fusion scripted-adapter fedsearch-loadgen fedsearch-dev-pki; do
  [ -x "$BIN/$b" ] || die "missing $BIN/$b after the build"
done
LOADGEN=$BIN/fedsearch-loadgen

. "$(dirname "${BASH_SOURCE[0]}")/bench-lib.sh" bench-tls
if [ -n "${BENCH_TLS_PORTS:-}" ]; then # LOW-HIGH: the stacks' ports from this range only
  free_port() {
    local low=${BENCH_TLS_PORTS%-*} high=${BENCH_TLS_PORTS#*-}
    for PORT in $(seq "$low" "$high"); do
      [[ $TAKEN == *" $PORT "* ]] || (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null || { TAKEN+="$PORT "; return; }
    done
    die "no free port in $BENCH_TLS_PORTS"
  }
fi
trap 'cleanup; remove_worktree' EXIT

wait_listening() { # NAME PORT — a TLS server cannot answer the plaintext health check
  for _ in $(seq 300); do (exec 3<>"/dev/tcp/127.0.0.1/$2") 2>/dev/null && return; sleep 0.1; done
  die "$1 is not listening on 127.0.0.1:$2; see $WORK/$1.log"
}

PKI=$WORK/tls
"$BIN/fedsearch-dev-pki" "$PKI" >/dev/null || die "cannot make the throwaway certificates"

# stack SIDE — fusion, three scripted adapters and a router; sets ROUTER_PORT/ROUTER_PID, and
# SIDE_PIDS[SIDE] to every process of the stack.
stack() {
  local side=$1 i scheme adapter_tls=() fusion_tls router_tls identity="" first=${#STACK_PIDS[@]}
  if [ "$side" = on ]; then
    scheme=https
    adapter_tls=(--tls-cert "$PKI/es-adapter.pem" --tls-key "$PKI/es-adapter.key" --tls-ca "$PKI/ca.pem"
      --allowed-client router.fedsearch.svc --assertion-jwks "$PKI/router.jwks")
    fusion_tls="{ ca_file: \"$PKI/ca.pem\", cert_file: \"$PKI/fusion.pem\", key_file: \"$PKI/fusion.key\", allowed_clients: [router.fedsearch.svc] }"
    router_tls="{ ca_file: \"$PKI/ca.pem\", cert_file: \"$PKI/router.pem\", key_file: \"$PKI/router.key\" }"
    identity="identity: { signing_key_file: \"$PKI/signing.pem\" }"
  else
    scheme=http
    fusion_tls="{ insecure: true }"
    router_tls="{ insecure: true }"
  fi
  free_port; local fusion_port=$PORT
  echo "server: { listen: \"127.0.0.1:$fusion_port\", shutdown_grace: 2s, tls: $fusion_tls }" >"$WORK/fusion-$side.yaml"
  start "fusion-$side" "$BIN/fusion" --config "$WORK/fusion-$side.yaml"
  STACK_PIDS+=("$LAST_PID")
  local ports=()
  ADAPTERS=()
  for i in 0 1 2; do
    free_port; ports+=("$PORT")
    start "adapter-$side-${NAMES[$i]}" "$BIN/scripted-adapter" --listen "127.0.0.1:$PORT" \
      --source "${NAMES[$i]}" --latency-ms "${LATENCIES[$i]}" --hits "$HITS" "${adapter_tls[@]}"
    STACK_PIDS+=("$LAST_PID"); ADAPTERS+=("$LAST_PID")
  done
  free_port; ROUTER_PORT=$PORT
  {
    echo "server: { listen: \"127.0.0.1:$ROUTER_PORT\", shutdown_grace: 2s }"
    echo "auth: {}  # hs256_secret comes from FEDSEARCH_AUTH__HS256_SECRET"
    echo "internal_tls: $router_tls"
    [ -n "$identity" ] && echo "$identity"
    echo "fusion: { endpoint: \"$scheme://127.0.0.1:$fusion_port\", timeout: 500ms }"
    echo "limits: { max_in_flight: 100000, default_timeout: 3s, per_user: { max_in_flight: 100000 } }"
    echo "sources:"
    for i in 0 1 2; do
      echo "  - { name: ${NAMES[$i]}, adapter: \"$scheme://127.0.0.1:${ports[$i]}\", description: \"scripted source answering after ${LATENCIES[$i]} ms\", timeout: 2s }"
    done
  } >"$WORK/router-$side.yaml"
  start "router-$side" env FEDSEARCH_AUTH__HS256_SECRET="$SECRET" "$BIN/router" --config "$WORK/router-$side.yaml"
  STACK_PIDS+=("$LAST_PID"); ROUTER_PID=$LAST_PID
  if [ "$side" = on ]; then wait_listening "fusion-$side" "$fusion_port"; else wait_healthy "fusion-$side" "$fusion_port"; fi
  for i in 0 1 2; do
    if [ "$side" = on ]; then wait_listening "adapter-$side-${NAMES[$i]}" "${ports[$i]}"
    else wait_healthy "adapter-$side-${NAMES[$i]}" "${ports[$i]}"; fi
  done
  wait_healthy "router-$side" "$ROUTER_PORT"
  SIDE_PIDS[$side]="${STACK_PIDS[*]:$first}"
}

stack_ticks() { # "PID..." — their CPU ticks together
  local p t=0
  for p in $1; do t=$((t + $(cpu_ticks "$p"))); done
  echo "$t"
}

# drive NAME PIDS — one open-loop run at $RATE against $ROUTER_PORT; JSON to $WORK/NAME.json, the
# router's CPU seconds per wall second to $WORK/NAME.cpu, the whole stack's (PIDS) to NAME.stackcpu.
drive() {
  local name=$1 pids=$2 t0 r0 s0
  t0=$(date +%s.%N); r0=$(cpu_ticks "$ROUTER_PID"); s0=$(stack_ticks "$pids")
  FEDSEARCH_BENCH_SECRET=$SECRET "$LOADGEN" --target "http://127.0.0.1:$ROUTER_PORT" \
    --duration "$DURATION" --warmup "$WARMUP" --slowest-source-ms "$SLOWEST" --query "$QUERY" \
    --rate "$RATE" --label "$name" --json-out "$WORK/$name.json" >"$WORK/$name.row" 2>"$WORK/$name.err" \
    || die "load run $name failed: $(cat "$WORK/$name.err")"
  awk -v w="$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')" -v hz="$CLK_TCK" \
    -v r="$(($(cpu_ticks "$ROUTER_PID") - r0))" 'BEGIN { printf "%.3f\n", r / hz / w }' >"$WORK/$name.cpu"
  awk -v w="$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')" -v hz="$CLK_TCK" \
    -v r="$(($(stack_ticks "$pids") - s0))" 'BEGIN { printf "%.3f\n", r / hz / w }' >"$WORK/$name.stackcpu"
  log "$name: $(jq -c '{achieved_qps, error_total, overhead_ms: {p50: .overhead_ms.p50, p99: .overhead_ms.p99}}' "$WORK/$name.json")"
  sleep 1
}

declare -A ROUTER_OF PORT_OF SIDE_PIDS
STACK_PIDS=()
LOAD_START=$(loadavg)
for side in off on; do stack "$side"; ROUTER_OF[$side]=$ROUTER_PID; PORT_OF[$side]=$ROUTER_PORT; done
# Every on-side sub-query must pass TLS and the assertion check: a refused one makes the answer
# partial (a source not OK) and a failed fusion call a fusion fallback; both are counted below.
for round in $(seq 1 "$ROUNDS"); do
  for side in off on; do
    ROUTER_PID=${ROUTER_OF[$side]} ROUTER_PORT=${PORT_OF[$side]}
    drive "$side-$round" "${SIDE_PIDS[$side]}"
  done
done
LOAD_END=$(loadavg)
stop_pids "${STACK_PIDS[@]}"

cpu_ms() { # RUN [EXT] — router (or with EXT=stackcpu the whole stack's) CPU ms per answered search
  awk -v c="$(cat "$WORK/$1.${2:-cpu}")" -v q="$(jq -r .achieved_qps "$WORK/$1.json")" 'BEGIN { printf "%.3f\n", c * 1000 / q }'
}
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
side_median() { # SIDE JQ-PATH | cpu
  local r
  for r in $(seq 1 "$ROUNDS"); do
    case $2 in cpu | stackcpu) cpu_ms "$1-$r" "$2" ;; *) jq -r "$2" "$WORK/$1-$r.json" ;; esac
  done | median
}
total() { jq -s "map($1) | add" "$WORK"/on-*.json "$WORK"/off-*.json; } # JQ-PATH, over every run
ERRORS=$(total .error_total) PARTIAL=$(total .partial) FALLBACKS=$(total .fusion_fallback)

SECTION=$WORK/tls.md
{
  echo "## TLS and assertions: on vs off"
  echo
  echo "- Date: $(date -u '+%Y-%m-%d %H:%M UTC'); commit ${COMMIT:0:7}; \`scripts/bench-tls.sh\` (BENCH_TLS_RATE=$RATE, BENCH_TLS_ROUNDS=$ROUNDS, BENCH_TLS_DURATION=$DURATION); release builds; load average $LOAD_START at start, $LOAD_END at the end ($(nproc) CPUs)."
  echo "- Two stacks on loopback, each a router, a fusion service and three \`scripted-adapter\` processes (${LATENCIES[*]} ms, $HITS hits): **on** = mutual TLS on router → adapters and router → fusion (throwaway CA from \`fedsearch-dev-pki\`, allow list \`router.fedsearch.svc\`), the router signing one ES256 assertion per sub-query and each adapter verifying it (ring); **off** = \`insecure: true\` and no assertions. Open loop at $RATE q/s, the sides in turn, $ROUNDS rounds. Overhead = latency − the slowest source ($SLOWEST ms). The client → router hop is plaintext on both."
  echo
  echo "| run | achieved q/s | errors | partial answers | fusion fallbacks | overhead p50 ms | overhead p99 ms | router CPU ms/search | stack CPU ms/search |"
  echo "|---|---|---|---|---|---|---|---|---|"
  for round in $(seq 1 "$ROUNDS"); do
    for side in off on; do
      jq -r --arg r "$side-$round" --arg cpu "$(cpu_ms "$side-$round")" --arg all "$(cpu_ms "$side-$round" stackcpu)" \
        '"| \($r) | \(.achieved_qps) | \(.error_total) | \(.partial) | \(.fusion_fallback) | \(.overhead_ms.p50) | \(.overhead_ms.p99) | \($cpu) | \($all) |"' "$WORK/$side-$round.json"
    done
  done
  echo
  echo "Medians over the rounds, on / off: overhead p50 $(side_median on .overhead_ms.p50) / $(side_median off .overhead_ms.p50) ms, p99 $(side_median on .overhead_ms.p99) / $(side_median off .overhead_ms.p99) ms, router CPU $(side_median on cpu) / $(side_median off cpu) ms per search, whole stack (router, fusion, three adapters) $(side_median on stackcpu) / $(side_median off stackcpu) ms per search; in all $ERRORS errors, $PARTIAL partial answers, $FALLBACKS fusion fallbacks (a refused handshake or assertion would show there)."
} >"$SECTION"
cat "$SECTION"
[ -n "${BENCH_TLS_OUT:-}" ] && cp "$SECTION" "$BENCH_TLS_OUT"
log "process logs and reports: $WORK"
