#!/usr/bin/env bash
# bench.sh — what `make bench` runs: measures what the router adds on top of its sources.
#
# Builds the router, fusion and the bench tools in release (the one release build of the
# project), starts fusion, three `scripted-adapter` processes and the router as separate
# processes on free loopback ports, drives the router's Search with `fedsearch-loadgen`
# (open loop at fixed rates with 10/20/30 ms sources, then closed loop with 0 ms sources for
# peak throughput), runs the fusion criterion bench when it has benchmarks, and writes
# BENCHMARKS.md. Every process it starts is stopped on exit, success or not.
#
# Knobs (environment): BENCH_OPEN_RATES="100 250 500 750", BENCH_CONCURRENCIES="1 8 32 64",
# BENCH_DURATION=15s, BENCH_WARMUP=3s, BENCH_OUT=BENCHMARKS.md, BENCH_SKIP_FUSION=1.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$FEDSEARCH_ROOT" || exit 1

OPEN_RATES=${BENCH_OPEN_RATES:-"100 250 500 750"}
CONCURRENCIES=${BENCH_CONCURRENCIES:-"1 8 32 64"}
DURATION=${BENCH_DURATION:-15s}
WARMUP=${BENCH_WARMUP:-3s}
OUT=${BENCH_OUT:-BENCHMARKS.md}
TARGET_RATE=500
LATENCIES=(10 20 30)
NAMES=(alpha beta gamma)
HITS=20
QUERY="refund for a delayed order"

command -v cargo >/dev/null || die "cargo is not installed (rustup toolchain expected)"
command -v jq >/dev/null || apt_install jq

WORK=$(mktemp -d "$FEDSEARCH_RUN_DIR/bench.XXXXXX")
PIDS=()

# stop_pids PID... — TERM, then KILL after 5 s; only processes this script started.
stop_pids() {
  local pid
  for pid in "$@"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "$@"; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
}
cleanup() {
  local status=$?
  [ ${#PIDS[@]} -gt 0 ] && stop_pids "${PIDS[@]}"
  if [ "$status" -ne 0 ]; then log "failed; process logs are in $WORK"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# A secret for this run only: passed to the router and the load generator through their
# environment, never written to disk.
SECRET=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')

# Services read FEDSEARCH_* variables as config overrides (deny_unknown_fields): start them
# with none of the caller's, so a stray FEDSEARCH_RUN_DIR cannot break their config.
clean_env() {
  local unset=() v
  for v in $(compgen -e); do [[ $v == FEDSEARCH_* ]] && unset+=(-u "$v"); done
  env "${unset[@]}" "$@"
}

# free_port — sets PORT to a loopback port nothing listens on and this run has not handed out.
TAKEN=" "
free_port() {
  local p
  while :; do
    p=$((20000 + RANDOM % 30000))
    [[ $TAKEN == *" $p "* ]] && continue
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then TAKEN+="$p "; PORT=$p; return; fi
  done
}

# start NAME CMD... — starts CMD in the background, logging to $WORK/NAME.log; sets LAST_PID.
start() {
  local name=$1; shift
  clean_env "$@" >"$WORK/$name.log" 2>&1 &
  LAST_PID=$!
  PIDS+=("$LAST_PID")
}

BIN=target/release
LOADGEN=$BIN/fedsearch-loadgen

wait_healthy() { # NAME PORT
  "$LOADGEN" --target "http://127.0.0.1:$2" --wait-healthy 30s 2>/dev/null \
    || die "$1 did not become healthy on 127.0.0.1:$2; see $WORK/$1.log"
}

loadavg() { cut -d' ' -f1-3 /proc/loadavg; }

log "building release binaries: router, fusion, scripted-adapter, fedsearch-loadgen"
cargo build --release -p fedsearch-bench -p fedsearch-router -p fedsearch-fusion 2>&1 | tail -2
for b in router fusion scripted-adapter fedsearch-loadgen; do [ -x "$BIN/$b" ] || die "missing $BIN/$b after the build"; done

LOAD_START=$(loadavg)

free_port; FUSION_PORT=$PORT
cat >"$WORK/fusion.yaml" <<EOF
server: { listen: "127.0.0.1:$FUSION_PORT", shutdown_grace: 2s }
EOF
start fusion "$BIN/fusion" --config "$WORK/fusion.yaml"
wait_healthy fusion "$FUSION_PORT"

# stack TAG LATENCY... — starts one scripted adapter per latency and a router over them;
# sets ROUTER_PORT and STACK_PIDS.
stack() {
  local tag=$1; shift
  local lat i=0 yaml="$WORK/router-$tag.yaml" ports=()
  STACK_PIDS=()
  for lat in "$@"; do
    free_port; ports+=("$PORT")
    start "adapter-$tag-${NAMES[$i]}" "$BIN/scripted-adapter" --listen "127.0.0.1:$PORT" \
      --source "${NAMES[$i]}" --latency-ms "$lat" --hits "$HITS"
    STACK_PIDS+=("$LAST_PID")
    i=$((i + 1))
  done
  free_port; ROUTER_PORT=$PORT
  {
    echo "server: { listen: \"127.0.0.1:$ROUTER_PORT\", shutdown_grace: 2s }"
    echo "auth: {}  # hs256_secret comes from FEDSEARCH_AUTH__HS256_SECRET"
    echo "fusion: { endpoint: \"http://127.0.0.1:$FUSION_PORT\", timeout: 500ms }"
    echo "limits: { max_in_flight: 100000, default_timeout: 3s }"
    echo "sources:"
    i=0
    for lat in "$@"; do
      echo "  - { name: ${NAMES[$i]}, adapter: \"http://127.0.0.1:${ports[$i]}\", description: \"scripted source answering after $lat ms\", timeout: 2s }"
      i=$((i + 1))
    done
  } >"$yaml"
  start "router-$tag" env FEDSEARCH_AUTH__HS256_SECRET="$SECRET" "$BIN/router" --config "$yaml"
  STACK_PIDS+=("$LAST_PID")
  i=0
  for lat in "$@"; do wait_healthy "adapter-$tag-${NAMES[$i]}" "${ports[$i]}"; i=$((i + 1)); done
  wait_healthy "router-$tag" "$ROUTER_PORT"
}

# drive NAME SLOWEST_MS FLAGS... — one load run; the Markdown row goes to $WORK/NAME.row,
# the JSON report to $WORK/NAME.json, the load average at its start to $WORK/NAME.load.
drive() {
  local name=$1 slowest=$2; shift 2
  loadavg >"$WORK/$name.load"
  FEDSEARCH_BENCH_SECRET=$SECRET "$LOADGEN" --target "http://127.0.0.1:$ROUTER_PORT" \
    --duration "$DURATION" --warmup "$WARMUP" --slowest-source-ms "$slowest" --query "$QUERY" \
    --json-out "$WORK/$name.json" "$@" >"$WORK/$name.row" 2>"$WORK/$name.err" \
    || die "load run $name failed: $(cat "$WORK/$name.err")"
  log "$(tail -n 1 "$WORK/$name.row")"
  sleep 1
}

log "phase 1: sources at ${LATENCIES[*]} ms, open loop at $OPEN_RATES q/s, $DURATION each"
stack lat "${LATENCIES[@]}"
OPEN_RUNS=()
# The first run of each table also prints the table header (`--markdown-header`).
SLOWEST=${LATENCIES[2]}
header=(--markdown-header)
for r in $OPEN_RATES; do drive "open-$r" "$SLOWEST" --rate "$r" "${header[@]}"; OPEN_RUNS+=("open-$r"); header=(); done
stop_pids "${STACK_PIDS[@]}"

log "phase 2: sources at 0 ms, closed loop at concurrency $CONCURRENCIES, $DURATION each"
stack zero 0 0 0
CLOSED_RUNS=()
header=(--markdown-header)
for c in $CONCURRENCIES; do drive "closed-$c" 0 --concurrency "$c" "${header[@]}"; CLOSED_RUNS+=("closed-$c"); header=(); done
stop_pids "${STACK_PIDS[@]}"
LOAD_END=$(loadavg)

# Fusion micro-benchmark (criterion), when the fusion crate defines one.
FUSION_MD="$WORK/fusion.md"
FUSE_BENCH=crates/fedsearch-fusion/benches/fuse.rs
FUSION_CMD="cargo bench -p fedsearch-fusion --bench fuse -- --warm-up-time 1 --measurement-time 3"
if [ -n "${BENCH_SKIP_FUSION:-}" ]; then
  echo "Skipped (BENCH_SKIP_FUSION set)." >"$FUSION_MD"
elif [ ! -f "$FUSE_BENCH" ]; then
  echo "\`$FUSE_BENCH\` does not exist; no fusion numbers." >"$FUSION_MD"
else
  log "fusion criterion bench: $FUSION_CMD"
  $FUSION_CMD >"$WORK/fuse-bench.log" 2>&1 || die "the fusion bench failed; see $WORK/fuse-bench.log"
  # Criterion prints `<name>  time: [low estimate high]`, the name sometimes on the line before.
  awk '
    /time:/ {
      line = $0; name = line; sub(/[ \t]*time:.*/, "", name); gsub(/^[ \t]+|[ \t]+$/, "", name)
      if (name == "") name = prev
      sub(/.*time:[ \t]*\[/, "", line); sub(/\].*/, "", line); n = split(line, v, " ")
      if (n >= 6) printf "| %s | %s %s | %s %s | %s %s |\n", name, v[1], v[2], v[3], v[4], v[5], v[6]
      next
    }
    NF && $0 !~ /^(Benchmarking|Found|  |change:|Performance|No change|Warning|Gnuplot|Running|     Running)/ { prev = $0; gsub(/^[ \t]+|[ \t]+$/, "", prev) }
  ' "$WORK/fuse-bench.log" >"$WORK/fuse-rows.md"
  {
    echo "Command: \`$FUSION_CMD\`"
    echo
    if [ -s "$WORK/fuse-rows.md" ]; then
      echo "| benchmark | time per iteration (low) | estimate | (high) |"
      echo "|---|---|---|---|"
      cat "$WORK/fuse-rows.md"
    else
      echo "The bench ran but reported no measurements: \`$FUSE_BENCH\` defines no criterion benchmarks yet."
    fi
  } >"$FUSION_MD"
fi

# --- BENCHMARKS.md ---
j() { jq -r "$2" "$WORK/$1.json"; }
verdict() {
  local f="$WORK/open-$TARGET_RATE.json"
  if [ ! -f "$f" ]; then echo "The target level ($TARGET_RATE q/s) was not part of this run."; return; fi
  local p50 p99 errs qps
  p50=$(jq -r '.overhead_ms.p50 // "none"' "$f"); p99=$(jq -r '.overhead_ms.p99 // "none"' "$f")
  errs=$(jq -r '.error_total' "$f"); qps=$(jq -r '.achieved_qps' "$f")
  local ok50 ok99
  ok50=$(jq -r 'if .overhead_ms.p50 != null and .overhead_ms.p50 <= 2 then "met" else "NOT met" end' "$f")
  ok99=$(jq -r 'if .overhead_ms.p99 != null and .overhead_ms.p99 <= 10 then "met" else "NOT met" end' "$f")
  echo "At $TARGET_RATE q/s offered ($qps q/s achieved, $errs errors): overhead p50 = $p50 ms (target ≤ 2 ms: **$ok50**), p99 = $p99 ms (target ≤ 10 ms: **$ok99**)."
}
CPU=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
TMP_OUT="$WORK/BENCHMARKS.md"
{
  echo "# Benchmarks"
  echo
  echo "Written by \`make bench\` (scripts/bench.sh); re-run it rather than editing this file."
  echo
  echo "## Router fan-out overhead"
  echo
  echo "- Command: \`make bench\` (levels: BENCH_OPEN_RATES=\"$OPEN_RATES\", BENCH_CONCURRENCIES=\"$CONCURRENCIES\", BENCH_DURATION=$DURATION, BENCH_WARMUP=$WARMUP)"
  echo "- Date: $(date -u '+%Y-%m-%d %H:%M UTC'); commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD -- crates 2>/dev/null || echo ' (with uncommitted changes in crates/)')"
  echo "- Machine: $(nproc) CPUs, $CPU, $(uname -sr)"
  echo "- Load average (1/5/15 min): $LOAD_START at the start, $LOAD_END at the end. The machine is shared: other builds ran at the same time, so these numbers are an upper bound on what the router costs."
  echo "- Setup: release builds of fusion, three \`scripted-adapter\` processes (sources ${NAMES[*]}, $HITS hits each) and the router, each a separate process on loopback, the router using the fusion service; \`fedsearch-loadgen\` sends \`Search\` (\"$QUERY\", top_k 10, no explicit sources, so the router queries all three) over 4 shared HTTP/2 channels with one HS256 token. Latency is timed per request from send to answer; only answered requests enter the histograms."
  echo "- Overhead = latency − latency of the slowest source: what authentication, routing, the three adapter streams, fusion and the network add."
  echo
  echo "### Open loop, sources at ${LATENCIES[0]}/${LATENCIES[1]}/${LATENCIES[2]} ms (overhead = latency − $SLOWEST ms)"
  echo
  for r in "${OPEN_RUNS[@]}"; do cat "$WORK/$r.row"; done
  echo
  verdict
  echo
  echo "### Closed loop, sources at 0 ms (peak throughput; overhead = latency)"
  echo
  for r in "${CLOSED_RUNS[@]}"; do cat "$WORK/$r.row"; done
  echo
  echo "### Where the time goes"
  echo
  echo "The slowest source's latency as the router measured it (\`SourceStatus.latency_ms\`, whole ms: from opening the adapter stream to its \`SubQueryDone\`), next to the end-to-end latency; the difference is the router's own work before and after the fan-out plus fusion. Load average at the start of each run."
  echo
  echo "| run | end-to-end p50 ms | slowest source (router) p50 ms | end-to-end p99 ms | slowest source (router) p99 ms | fusion fallbacks | load avg |"
  echo "|---|---|---|---|---|---|---|"
  for r in "${OPEN_RUNS[@]}" "${CLOSED_RUNS[@]}"; do
    echo "| $(j "$r" .run.label) | $(j "$r" .latency_ms.p50) | $(j "$r" .router_reported_slowest_source_ms.p50) | $(j "$r" .latency_ms.p99) | $(j "$r" .router_reported_slowest_source_ms.p99) | $(j "$r" .fusion_fallback) | $(cut -d' ' -f1 "$WORK/$r.load") |"
  done
  echo
  echo "## Fusion"
  echo
  cat "$FUSION_MD"
} >"$TMP_OUT"
mv "$TMP_OUT" "$OUT"
log "wrote $OUT (process logs and JSON reports in $WORK)"
