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
# Then an overload run with the router's default limits (adaptive in-flight limit, per-user
# caps): its capacity (closed loop), then open loop from 0.5× to 3× that, each request with a
# 1 s deadline, spread over 500 users — goodput, shed share and the p99 of OK answers.
#
# Knobs (environment): BENCH_OPEN_RATES="100 250 500 750", BENCH_CONCURRENCIES="1 8 32 64",
# BENCH_OVERLOAD_FACTORS="0.5 1 1.5 2 3" (empty: no overload run), BENCH_OVERLOAD_DEADLINE=1s,
# BENCH_DURATION=15s, BENCH_WARMUP=3s, BENCH_OUT=BENCHMARKS.md, BENCH_SKIP_FUSION=1,
# BENCH_OBS_ROUNDS=3 and BENCH_OBS_RATE=500 (rounds and rate of the metrics+audit on/off
# comparison; 0 rounds skips it),
# BENCH_ROUTER_FUSION=in-process (every router fuses in-process), and
# BENCH_PERF=1 to sample the router with `perf record` during the target-rate run (the flat
# profile is written next to the process logs), BENCH_SKIP_PEER=1 (no side-by-side with the seed
# peer; it runs after the rest when ../shared/bench/seed-peer exists, see scripts/bench-peer.sh).
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$FEDSEARCH_ROOT" || exit 1

OPEN_RATES=${BENCH_OPEN_RATES:-"100 250 500 750"}
OVERLOAD_FACTORS=${BENCH_OVERLOAD_FACTORS-"0.5 1 1.5 2 3"}
OVERLOAD_DEADLINE=${BENCH_OVERLOAD_DEADLINE:-1s}
CONCURRENCIES=${BENCH_CONCURRENCIES:-"1 8 32 64"}
DURATION=${BENCH_DURATION:-15s}
WARMUP=${BENCH_WARMUP:-3s}
OUT=${BENCH_OUT:-BENCHMARKS.md}
TARGET_RATE=500
OBS_ROUNDS=${BENCH_OBS_ROUNDS:-3}
OBS_RATE=${BENCH_OBS_RATE:-$TARGET_RATE}
ROUTER_FUSION=${BENCH_ROUTER_FUSION:-service}
LATENCIES=(10 20 30)
NAMES=(alpha beta gamma)
HITS=20
QUERY="refund for a delayed order"

command -v cargo >/dev/null || die "cargo is not installed (rustup toolchain expected)"
command -v jq >/dev/null || apt_install jq

. "$(dirname "${BASH_SOURCE[0]}")/bench-lib.sh" bench


BIN=target/release
LOADGEN=$BIN/fedsearch-loadgen


log "building release binaries: router, fusion, scripted-adapter, fedsearch-loadgen"
cargo build --release -p fedsearch-bench -p fedsearch-router -p fedsearch-fusion -p fedsearch-cli 2>&1 | tail -2
for b in router fusion scripted-adapter fedsearch-loadgen fedsearch; do [ -x "$BIN/$b" ] || die "missing $BIN/$b after the build"; done

LOAD_START=$(loadavg)
# Other work on the machine inflates every number: say so when the 1-minute load was high at start.
if awk -v l="${LOAD_START%% *}" 'BEGIN { exit !(l > 1.5) }'; then
  LOAD_NOTE="The machine was busy when the run started (other work besides the benchmark), so these numbers are an upper bound on what the router costs."
else
  LOAD_NOTE="Nothing but the benchmark ran; the load during the run is the benchmark's own processes (router, fusion, three adapters, load generator) on 2 cores."
fi

free_port; FUSION_PORT=$PORT
cat >"$WORK/fusion.yaml" <<EOF
server: { listen: "127.0.0.1:$FUSION_PORT", shutdown_grace: 2s, tls: { insecure: true } }
EOF
start fusion "$BIN/fusion" --config "$WORK/fusion.yaml"
FUSION_PID=$LAST_PID
wait_healthy fusion "$FUSION_PORT"

# The fan-out runs measure overhead, not admission: no per-user cap in the way of one token.
FANOUT_LIMITS="limits: { max_in_flight: 100000, default_timeout: 3s, per_user: { max_in_flight: 100000 } }"

# stack TAG LATENCY... — starts one scripted adapter per latency and a router over them;
# sets ROUTER_PORT and STACK_PIDS.
stack() {
  local tag=$1; shift
  local lat i=0 yaml="$WORK/router-$tag.yaml" ports=()
  STACK_PIDS=()
  ADAPTER_PIDS=()
  for lat in "$@"; do
    free_port; ports+=("$PORT")
    start "adapter-$tag-${NAMES[$i]}" "$BIN/scripted-adapter" --listen "127.0.0.1:$PORT" \
      --source "${NAMES[$i]}" --latency-ms "$lat" --hits "$HITS"
    STACK_PIDS+=("$LAST_PID")
    ADAPTER_PIDS+=("$LAST_PID")
    i=$((i + 1))
  done
  STACK_PORTS=("${ports[@]}")
  free_port; ROUTER_PORT=$PORT
  {
    echo "server: { listen: \"127.0.0.1:$ROUTER_PORT\", shutdown_grace: 2s }"
    echo "auth: {}  # hs256_secret comes from FEDSEARCH_AUTH__HS256_SECRET"
    # Plaintext on loopback, said explicitly (the scripted adapters serve no TLS; docs/security.md).
    echo "internal_tls: { insecure: true }"
    if [ "$ROUTER_FUSION" = in-process ]; then
      echo "fusion: {}  # no fusion service: the router fuses in-process"
    else
      echo "fusion: { endpoint: \"http://127.0.0.1:$FUSION_PORT\", timeout: 500ms }"
    fi
    echo "${STACK_LIMITS:-$FANOUT_LIMITS}"
    [ -n "${STACK_EXTRA:-}" ] && echo "$STACK_EXTRA"
    echo "sources:"
    i=0
    for lat in "$@"; do
      echo "  - { name: ${NAMES[$i]}, adapter: \"http://127.0.0.1:${ports[$i]}\", description: \"scripted source answering after $lat ms\", timeout: 2s }"
      i=$((i + 1))
    done
  } >"$yaml"
  start "router-$tag" env FEDSEARCH_AUTH__HS256_SECRET="$SECRET" "$BIN/router" --config "$yaml"
  STACK_PIDS+=("$LAST_PID")
  ROUTER_PID=$LAST_PID
  i=0
  for lat in "$@"; do wait_healthy "adapter-$tag-${NAMES[$i]}" "${ports[$i]}"; i=$((i + 1)); done
  wait_healthy "router-$tag" "$ROUTER_PORT"
}

# drive NAME SLOWEST_MS FLAGS... — one load run; the Markdown row goes to $WORK/NAME.row,
# the JSON report to $WORK/NAME.json, the load average at its start to $WORK/NAME.load.
drive() {
  local name=$1 slowest=$2 perf_pid='' t0 r0 f0 a0; shift 2
  loadavg >"$WORK/$name.load"
  t0=$(date +%s.%N); r0=$(cpu_ticks "$ROUTER_PID"); f0=$(cpu_ticks "$FUSION_PID"); a0=$(cpu_ticks "${ADAPTER_PIDS[@]}")
  if [ -n "${BENCH_PERF:-}" ] && [ "$name" = "open-$TARGET_RATE" ] && command -v perf >/dev/null; then
    perf record -q -F 499 -g -p "$ROUTER_PID" -o "$WORK/router.perf.data" >/dev/null 2>&1 &
    perf_pid=$!
  fi
  FEDSEARCH_BENCH_SECRET=$SECRET "$LOADGEN" --target "http://127.0.0.1:$ROUTER_PORT" \
    --duration "$DURATION" --warmup "$WARMUP" --slowest-source-ms "$slowest" --query "$QUERY" \
    --json-out "$WORK/$name.json" "$@" >"$WORK/$name.row" 2>"$WORK/$name.err" \
    || die "load run $name failed: $(cat "$WORK/$name.err")"
  # CPU used during the run (warm-up included), in cores busy: router, fusion, the adapters.
  awk -v w="$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')" -v hz="$CLK_TCK" \
    -v r="$(($(cpu_ticks "$ROUTER_PID") - r0))" -v f="$(($(cpu_ticks "$FUSION_PID") - f0))" \
    -v a="$(($(cpu_ticks "${ADAPTER_PIDS[@]}") - a0))" \
    'BEGIN { printf "%.2f %.2f %.2f\n", r / hz / w, f / hz / w, a / hz / w }' >"$WORK/$name.cpu"
  log "$(tail -n 1 "$WORK/$name.row")"
  if [ -n "$perf_pid" ]; then
    kill -INT "$perf_pid" 2>/dev/null || true
    wait "$perf_pid" 2>/dev/null || true
    perf report -i "$WORK/router.perf.data" --no-children --sort dso,symbol --stdio 2>/dev/null | head -80 >"$WORK/router.perf.txt" || true
    log "router profile at $TARGET_RATE q/s: $WORK/router.perf.txt"
  fi
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

# For comparison: the same sources at the target rate, the router fusing in-process (no hop to
# the fusion service). Skipped when every run already fuses in-process.
if [ "$ROUTER_FUSION" = service ]; then
  log "phase 1b: the same at $TARGET_RATE q/s with the router fusing in-process"
  ROUTER_FUSION=in-process stack inproc "${LATENCIES[@]}"
  drive "inproc-$TARGET_RATE" "$SLOWEST" --rate "$TARGET_RATE" --label "open $TARGET_RATE q/s, in-process fusion"
  OPEN_RUNS+=("inproc-$TARGET_RATE")
  stop_pids "${STACK_PIDS[@]}"
fi

# Metrics and audit on vs off: two routers over their own scripted sources, one with the admin
# port (its /metrics scraped once a second, as Prometheus would, only faster) and the JSON-lines
# audit sink, one without; driven in turn at the target rate, $OBS_ROUNDS rounds, so both sides see
# the same machine load.
OBS_RUNS=()
if [ "$OBS_ROUNDS" -gt 0 ]; then
  log "phase 1c: metrics and audit on vs off at $OBS_RATE q/s, $OBS_ROUNDS interleaved rounds"
  stack obs-off "${LATENCIES[@]}"
  OFF=("$ROUTER_PORT" "$ROUTER_PID" "${ADAPTER_PIDS[@]}"); OBS_PIDS=("${STACK_PIDS[@]}")
  free_port; ADMIN_PORT=$PORT
  STACK_EXTRA="admin: { listen: \"127.0.0.1:$ADMIN_PORT\" }
audit: { path: \"$WORK/audit.jsonl\", query: hashed }" stack obs-on "${LATENCIES[@]}"
  ON=("$ROUTER_PORT" "$ROUTER_PID" "${ADAPTER_PIDS[@]}"); OBS_PIDS+=("${STACK_PIDS[@]}")
  ( while sleep 1; do curl -fsS -o /dev/null "http://127.0.0.1:$ADMIN_PORT/metrics" || true; done ) &
  SCRAPER_PID=$!
  PIDS+=("$SCRAPER_PID")  # stopped by the exit cleanup too, should a run fail mid-phase
  for round in $(seq 1 "$OBS_ROUNDS"); do
    for side in off on; do
      if [ $side = off ]; then set -- "${OFF[@]}"; else set -- "${ON[@]}"; fi
      ROUTER_PORT=$1 ROUTER_PID=$2; shift 2; ADAPTER_PIDS=("$@")
      drive "obs-$side-$round" "$SLOWEST" --rate "$OBS_RATE" --label "metrics+audit $side, round $round"
      OBS_RUNS+=("obs-$side-$round")
    done
  done
  kill "$SCRAPER_PID" 2>/dev/null || true
  OBS_AUDIT_LINES=$(wc -l <"$WORK/audit.jsonl" 2>/dev/null || echo 0)
  stop_pids "${OBS_PIDS[@]}"
fi

log "phase 2: sources at 0 ms, closed loop at concurrency $CONCURRENCIES, $DURATION each"
stack zero 0 0 0
CLOSED_RUNS=()
header=(--markdown-header)
for c in $CONCURRENCIES; do drive "closed-$c" 0 --concurrency "$c" "${header[@]}"; CLOSED_RUNS+=("closed-$c"); header=(); done
stop_pids "${STACK_PIDS[@]}"

OVER_RUNS=()
if [ -n "$OVERLOAD_FACTORS" ]; then
  log "phase 3: overload with the default limits, sources at ${LATENCIES[*]} ms, deadline $OVERLOAD_DEADLINE"
  STACK_LIMITS="limits: { default_timeout: 3s }" stack over "${LATENCIES[@]}"
  over_flags=(--users 500 --timeout "$OVERLOAD_DEADLINE" --max-outstanding 20000)
  drive over-capacity "$SLOWEST" --concurrency 64 "${over_flags[@]}" --label "capacity (closed x64)" --markdown-header
  CAPACITY=$(jq -r .achieved_qps "$WORK/over-capacity.json")
  for f in $OVERLOAD_FACTORS; do
    rate=$(awk -v c="$CAPACITY" -v f="$f" 'BEGIN { printf "%.0f", c * f }')
    drive "over-$f" "$SLOWEST" --rate "$rate" "${over_flags[@]}" --label "${f}x capacity ($rate q/s)"
    OVER_RUNS+=("over-$f")
  done
  stop_pids "${STACK_PIDS[@]}"
fi
# recovered_after WHAT JQ_TEST — polls a search every ~20 ms until JQ_TEST holds for the response;
# prints the seconds since RESTARTED_AT.
recovered_after() {
  local i
  for i in $(seq 3000); do
    if "$BIN/fedsearch" --router "127.0.0.1:$ROUTER_PORT" --token "$POLL_TOKEN" --json search "$QUERY" 2>/dev/null \
      | jq -e "$2" >/dev/null 2>&1; then
      awk -v a="$RESTARTED_AT" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }'
      return
    fi
    sleep 0.02
  done
  die "$1 was not used again within a minute"
}
# until_state SOURCE STATE_RE — polls until the source's state matches (the breaker has seen it).
until_state() {
  local i
  for i in $(seq 500); do
    "$BIN/fedsearch" --router "127.0.0.1:$ROUTER_PORT" --token "$POLL_TOKEN" --json search "$QUERY" 2>/dev/null \
      | jq -e --arg s "$1" --arg re "$2" '.sources[] | select(.source == $s) | .state | test($re)' >/dev/null 2>&1 && return
    sleep 0.05
  done
  die "$1 never reached $2"
}

RECOVERY=()
if [ -z "${BENCH_SKIP_RECOVERY:-}" ]; then
  log "phase 4: recovery — kill -9 a source's adapter, or fusion, then start it again"
  stack rec 10 20 30
  POLL_TOKEN=$("$BIN/fedsearch" token --secret "$SECRET" --sub bench-recovery)
  # An adapter: killed until its circuit is open (the breaker's 30 s open period has begun), then
  # started again on its port; recovery = restart → first OK status from that source.
  kill -KILL "${ADAPTER_PIDS[0]}"
  until_state "${NAMES[0]}" '^circuit_open$'
  start "adapter-rec-${NAMES[0]}-again" "$BIN/scripted-adapter" --listen "127.0.0.1:${STACK_PORTS[0]}" \
    --source "${NAMES[0]}" --latency-ms 10 --hits "$HITS"
  STACK_PIDS+=("$LAST_PID"); ADAPTER_PIDS[0]=$LAST_PID
  RESTARTED_AT=$(date +%s.%N)
  RECOVERY+=("| adapter killed (kill -9) while its circuit was open for 30 s | $(recovered_after adapter ".sources[] | select(.source == \"${NAMES[0]}\") | .state == \"ok\"") |")
  # Fusion: killed until the router fuses in-process, then started again on its port.
  kill -KILL "$FUSION_PID"
  until "$BIN/fedsearch" --router "127.0.0.1:$ROUTER_PORT" --token "$POLL_TOKEN" --json search "$QUERY" 2>/dev/null \
    | jq -e '.fusion.in_process_fallback' >/dev/null 2>&1; do sleep 0.05; done
  start fusion-again "$BIN/fusion" --config "$WORK/fusion.yaml"
  FUSION_PID=$LAST_PID
  RESTARTED_AT=$(date +%s.%N)
  RECOVERY+=("| fusion killed (kill -9), the router fusing in-process | $(recovered_after fusion '.fusion.in_process_fallback == false') |")
  stop_pids "${STACK_PIDS[@]}"
fi
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
# verdict RUN WHAT — one sentence comparing a run at the target rate with the targets.
verdict() {
  local file="$WORK/$1.json" what=$2
  if [ ! -f "$file" ]; then echo "The target level ($TARGET_RATE q/s) was not part of this run."; return; fi
  jq -r --arg what "$what" '
    def ok(v; limit): if v != null and v <= limit then "met" else "NOT met" end;
    "\($what) at \(.run.rate) q/s offered (\(.achieved_qps) q/s achieved, \(.error_total) errors): overhead p50 = \(.overhead_ms.p50) ms (target ≤ 2 ms: **\(ok(.overhead_ms.p50; 2))**), p99 = \(.overhead_ms.p99) ms (target ≤ 10 ms: **\(ok(.overhead_ms.p99; 10))**)."' "$file"
}
CPU=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
TMP_OUT="$WORK/BENCHMARKS.md"
{
  echo "# Benchmarks"
  echo
  echo "Performance sections are written by \`make bench\` (scripts/bench.sh): re-run it rather than editing them. The answer-quality section at the end comes from \`scripts/eval.sh\` runs and is carried over."
  echo
  echo "## Router fan-out overhead"
  echo
  echo "- Command: \`make bench\` (levels: BENCH_OPEN_RATES=\"$OPEN_RATES\", BENCH_CONCURRENCIES=\"$CONCURRENCIES\", BENCH_DURATION=$DURATION, BENCH_WARMUP=$WARMUP)"
  echo "- Date: $(date -u '+%Y-%m-%d %H:%M UTC'); commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD -- crates 2>/dev/null || echo ' (with uncommitted changes in crates/)')"
  echo "- Machine: $(nproc) CPUs, $CPU, $(uname -sr)"
  echo "- Load average (1/5/15 min): $LOAD_START at the start, $LOAD_END at the end. $LOAD_NOTE"
  echo "- Router fusion: $ROUTER_FUSION (the fusion service unless a row says in-process)."
  echo "- Setup: release builds of fusion, three \`scripted-adapter\` processes (sources ${NAMES[*]}, $HITS hits each) and the router, each a separate process on loopback, the router using the fusion service; \`fedsearch-loadgen\` sends \`Search\` (\"$QUERY\", top_k 10, no explicit sources, so the router queries all three) over 4 shared HTTP/2 channels with one HS256 token. Latency is timed per request from send to answer; only answered requests enter the histograms."
  echo "- Overhead = latency − latency of the slowest source: what authentication, routing, the three adapter streams, fusion and the network add. The scripted sources sleep with the OS timer (a blocking-pool thread), not tokio's 1 ms timer wheel, so a 30 ms source answers after 30.0x ms and its timer rounding is not booked as router overhead (earlier runs used tokio's timer and read ~1 ms higher)."
  echo
  echo "### Open loop, sources at ${LATENCIES[0]}/${LATENCIES[1]}/${LATENCIES[2]} ms (overhead = latency − $SLOWEST ms)"
  echo
  for r in "${OPEN_RUNS[@]}"; do cat "$WORK/$r.row"; done
  echo
  verdict "open-$TARGET_RATE" "Router with the $ROUTER_FUSION fusion"
  echo
  [ -f "$WORK/inproc-$TARGET_RATE.json" ] && verdict "inproc-$TARGET_RATE" "For comparison, router fusing in-process"
  echo
  if [ ${#OBS_RUNS[@]} -gt 0 ]; then
    echo "### Metrics and audit: on vs off"
    echo
    echo "Two routers over their own sources at ${LATENCIES[*]} ms, at $OBS_RATE q/s, driven in turn ($OBS_ROUNDS rounds, off then on): one without an admin port or audit sink, one with the admin port (\`/metrics\` scraped every second during the runs) and the JSON-lines audit sink (\`audit.query: hashed\`; $OBS_AUDIT_LINES records written). Router CPU is in ms per answered search."
    echo
    echo "Load average (1/5/15 min) at the start of the first round: $(cat "$WORK/obs-off-1.load")."
    echo
    echo "| run | achieved q/s | errors | overhead p50 ms | overhead p99 ms | router CPU ms/search |"
    echo "|---|---|---|---|---|---|"
    for r in "${OBS_RUNS[@]}"; do
      jq -r --arg r "$r" --arg cpu "$(cut -d' ' -f1 "$WORK/$r.cpu")" \
        '"| \($r) | \(.achieved_qps) | \(.error_total) | \(.overhead_ms.p50) | \(.overhead_ms.p99) | \(if .achieved_qps > 0 then (($cpu | tonumber) * 1000 / .achieved_qps * 1000 | round / 1000) else "-" end) |"' "$WORK/$r.json"
    done
    echo
    median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
    obs_median() { # SIDE FIELD — the median over the rounds of one side
      for r in "${OBS_RUNS[@]}"; do [[ $r == obs-$1-* ]] && jq -r "$2" "$WORK/$r.json"; done | median
    }
    obs_cpu() { # SIDE — the median router CPU ms per answered search over the rounds of one side
      for r in "${OBS_RUNS[@]}"; do
        [[ $r == obs-$1-* ]] && awk -v c="$(cut -d' ' -f1 "$WORK/$r.cpu")" -v q="$(jq -r .achieved_qps "$WORK/$r.json")" 'BEGIN { printf "%.4f\n", c * 1000 / q }'
      done | median
    }
    echo "Medians over the rounds, on / off: overhead p50 $(obs_median on .overhead_ms.p50) / $(obs_median off .overhead_ms.p50) ms, p99 $(obs_median on .overhead_ms.p99) / $(obs_median off .overhead_ms.p99) ms, router CPU $(obs_cpu on) / $(obs_cpu off) ms per search."
    echo
  fi
  echo "### Closed loop, sources at 0 ms (peak throughput; overhead = latency)"
  echo
  for r in "${CLOSED_RUNS[@]}"; do cat "$WORK/$r.row"; done
  echo
  if [ ${#OVER_RUNS[@]} -gt 0 ]; then
    echo "### Overload: offered load from 0.5× to 3× capacity"
    echo
    echo "The router with its default limits (adaptive in-flight limit, per-user caps of 32; \`crates/fedsearch-router/src/admission.rs\`), sources at ${LATENCIES[*]} ms, requests spread over 500 users, each with a gRPC deadline of $OVERLOAD_DEADLINE. Capacity = the closed loop at concurrency 64: $CAPACITY q/s. Shed = RESOURCE_EXHAUSTED answered at once; late = DEADLINE_EXCEEDED or CANCELLED at the client (an answer that missed its deadline); p99 is of OK answers only."
    echo
    echo "| offered | sent | goodput (OK/s) | shed | late | other errors | OK p50 ms | OK p99 ms | OK max ms | deadline ms |"
    echo "|---|---|---|---|---|---|---|---|---|---|"
    deadline_ms=$(awk -v d="$OVERLOAD_DEADLINE" 'BEGIN { n = d + 0; if (d ~ /ms$/) print n; else print n * 1000 }')
    for r in "${OVER_RUNS[@]}"; do
      jq -r --arg d "$deadline_ms" '
        def pct(n): if .sent > 0 then "\((n * 1000 / .sent | round) / 10) %" else "–" end;
        (.errors.RESOURCE_EXHAUSTED // 0) as $shed
        | ((.errors.DEADLINE_EXCEEDED // 0) + (.errors.CANCELLED // 0)) as $late
        | "| \(.run.label) | \(.sent) | \(.achieved_qps) | \(pct($shed)) | \(pct($late)) | \(.error_total - $shed - $late) | \(.latency_ms.p50) | \(.latency_ms.p99) | \(.latency_ms.max) | \($d) |"' "$WORK/$r.json"
    done
    echo
  fi
  if [ ${#RECOVERY[@]} -gt 0 ]; then
    echo "### Recovery after a fault"
    echo
    echo "Seconds from starting a killed process again to the router's first search that uses it (polled every ~20 ms with \`fedsearch search --json\`; includes the process's own start-up). The breaker's open period is 30 s; an open source's adapter is asked for its gRPC health every second (\`circuit_breaker.health_interval\`)."
    echo
    echo "| fault | recovered after (s) |"
    echo "|---|---|"
    printf '%s\n' "${RECOVERY[@]}"
    echo
  fi
  echo "### Where the time goes"
  echo
  echo "The slowest source's latency as the router measured it (\`SourceStatus.latency_ms\`, whole ms: from opening the adapter stream to its \`SubQueryDone\`), next to the end-to-end latency; the difference is the router's own work before and after the fan-out plus fusion. Load average at the start of each run."
  echo
  echo "CPU columns: cores kept busy during the run (warm-up included), from /proc/<pid>/stat; \"router CPU ms/search\" = router cores × 1000 / achieved q/s."
  echo
  echo "| run | end-to-end p50 ms | slowest source (router) p50 ms | end-to-end p99 ms | slowest source (router) p99 ms | fusion fallbacks | router CPU (cores) | router CPU ms/search | fusion CPU | 3 adapters CPU | load avg |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|"
  for r in "${OPEN_RUNS[@]}" "${CLOSED_RUNS[@]}" "${OVER_RUNS[@]}"; do
    read -r rc fc ac <"$WORK/$r.cpu"
    per=$(awk -v c="$rc" -v q="$(j "$r" .achieved_qps)" 'BEGIN { if (q > 0) printf "%.2f", c * 1000 / q; else print "–" }')
    echo "| $(j "$r" .run.label) | $(j "$r" .latency_ms.p50) | $(j "$r" .router_reported_slowest_source_ms.p50) | $(j "$r" .latency_ms.p99) | $(j "$r" .router_reported_slowest_source_ms.p99) | $(j "$r" .fusion_fallback) | $rc | $per | $fc | $ac | $(cut -d' ' -f1 "$WORK/$r.load") |"
  done
  echo
  echo "Warnings the router logged during the runs (all phases), by message and reason:"
  echo
  warnings=$(cat "$WORK"/router-*.log | jq -Rr 'fromjson? | select(.level == "WARN") | "\(.fields.message)\(if .fields.reason then " (" + .fields.reason + ")" else "" end)"' | sort | uniq -c | sort -rn)
  if [ -n "$warnings" ]; then
    echo "| count | warning |"
    echo "|---|---|"
    echo "$warnings" | awk '{ n = $1; $1 = ""; sub(/^ /, ""); printf "| %s | %s |\n", n, $0 }'
  else
    echo "None."
  fi
  echo
  echo "## Fusion"
  echo
  cat "$FUSION_MD"
  # Every other "## " section (the side-by-side with the seed peer from scripts/bench-peer.sh,
  # answer quality from scripts/eval.sh runs, and any other) is carried over in its order.
  if [ -f "$OUT" ]; then
    awk '/^## / { keep = ($0 != "## Router fan-out overhead" && $0 != "## Fusion"); blank = 0; if (keep) print "" }
         keep && NF { while (blank > 0) { print ""; blank-- }; print; next }
         keep { blank++ }' "$OUT"
  fi
} >"$TMP_OUT"
mv "$TMP_OUT" "$OUT"
log "wrote $OUT (process logs and JSON reports in $WORK)"

# The side-by-side with the seeds' Python design (issue 15) replaces its own section of $OUT, with
# the binaries built above, when the peer is there; a user's clone has no ../shared.
PEER_DIR=${BENCH_PEER_DIR:-$FEDSEARCH_ROOT/../shared/bench/seed-peer}
if [ -n "${BENCH_SKIP_PEER:-}" ]; then
  log "BENCH_SKIP_PEER is set: the side-by-side with the seed peer (scripts/bench-peer.sh) is skipped"
elif [ -d "$PEER_DIR" ]; then
  BENCH_PEER_DIR=$PEER_DIR BENCH_PEER_SKIP_BUILD=1 BENCH_PEER_OUT=$OUT "$(dirname "${BASH_SOURCE[0]}")/bench-peer.sh"
else
  log "no seed peer at $PEER_DIR: the side-by-side with it (scripts/bench-peer.sh) is skipped"
fi
