#!/usr/bin/env bash
# bench-peer.sh — fedsearch side by side with the seeds' Python design (../shared/bench/seed-peer:
# FastAPI + asyncio.gather, one uvicorn worker), on the same scenario, in one run, interleaved.
#
# Scenarios (both sides): three mock sources with 20 hits each, top_k 10, the same query;
# "slow": sources answering after 10/20/30 ms, the peer with one uvicorn worker; "peak": sources
# at 0 ms, the peer with BENCH_PEER_PEAK_WORKERS (2) workers. fedsearch = release `router` +
# `fusion` + three `scripted-adapter` processes per scenario, started as scripts/bench.sh starts
# them; a second router over the same adapters fuses in-process (`fusion: {}`), so both fusion
# modes are measured. The peer = its run.sh with PEER_SOURCES=docs:10:20,ticket:20:20,logs:30:20
# (or :0: for peak). Then a hanging-source phase: a router over the 10 and 20 ms adapters and one
# that never answers, driven by fedsearch-loadgen (which reads every answer) at
# BENCH_PEER_HANG_RATE q/s with a BENCH_PEER_HANG_DEADLINE deadline, given once as the gRPC
# deadline and once as the request's `timeout` field; the peer gets one request with the same
# hanging source.
#
# One load generator drives every side: h2load (nghttp2-client, C++, event loop, a few % of a
# core): HTTP/1.1 keep-alive connections, one request in flight each, against the peer's POST
# /search (what wrk does), and HTTP/2 streams with the gRPC framing against the router's
# fedsearch.v1.FederatedSearch/Search (what fedsearch-loadgen does, 4–5 connections). Same
# closed-loop concurrency, same open-loop pacing, same clock, same percentile code (from
# h2load's per-request log), so the generator is not the difference. A gRPC answer that fails
# still has HTTP status 200, so each run also reports the response bytes per answer (an error
# answer has none) and a sanity search is checked before the runs (10 hits, every source OK).
#
# Rounds: each round runs every measurement (closed loop at each concurrency, open loop at the
# fixed rate) on every side back to back, the side order rotated per round, so machine noise hits
# every side; the tables show the median over rounds (min–max). CPU per search = user+system CPU
# of all of a side's processes (from /proc/<pid>/stat, children included) during the measured
# window ÷ answered searches.
#
# Knobs: BENCH_PEER_STREAMS=N (the routers' `streams:` per source, default: the router's own),
# BENCH_PEER_SIDES may add fedsearch-perstream (the fusion-service router with `streams: 0`, one
# HTTP/2 stream per sub-query), BENCH_PEER_SCENARIOS="slow peak", BENCH_PEER_PEAK_WORKERS=2, BENCH_PEER_HANG_DEADLINE=200ms
# (empty: no hanging-source phase), BENCH_PEER_HANG_RATE=50, BENCH_PEER_IDLE_WAIT=10 (s idle before
# the second RSS reading), BENCH_PEER_ROUNDS=3, BENCH_PEER_DURATION=10 (s per measurement), BENCH_PEER_WARMUP=2 (s,
# not measured, before each), BENCH_PEER_CONCURRENCIES="50 200", BENCH_PEER_RATE=500 (q/s; several, space-separated, e.g. "500 1000"),
# BENCH_PEER_QUERY=支付超时问题, BENCH_PEER_BASE_PORT=31000, BENCH_PEER_SIDES="peer fedsearch
# fedsearch-inproc", BENCH_PEER_DIR=../shared/bench/seed-peer, BENCH_PEER_VENV=/tmp/peer-venv,
# BENCH_PEER_WORKERS=N (TOKIO_WORKER_THREADS for every fedsearch process; default 1, what each
# service runs in its pod: deploy/k8s gives each a CPU limit of 1 and tokio sizes its runtime to
# the cgroup's quota; set it empty for tokio's default on this host, one worker per core),
# BENCH_PEER_ROUTER_WORKERS=N (the router's alone; default: BENCH_PEER_WORKERS),
# BENCH_PEER_SKIP_BUILD=1, BENCH_PEER_BIN=DIR (the binaries, default target/release), BENCH_PEER_BASE_BIN=DIR (adds the side fedsearch-base: DIR's router,
# fusion and scripted-adapter, an earlier build, a stack of their own per scenario — before/after
# in one run),
# BENCH_PEER_OUT=BENCHMARKS.md (its "## Against the seed peer" section
# is replaced; empty: print the section only), BENCH_PEER_PERF=1 (perf record -g the router
# during its first closed-loop run; the report goes next to the logs, with the folded stacks and
# a flame graph SVG when inferno-collapse-perf/inferno-flamegraph are on PATH; the section gets
# the top self-time frames and fedsearch's widest frames). Call graphs need frame pointers:
# build the bench set with RUSTFLAGS="-C force-frame-pointers=yes" CARGO_TARGET_DIR=../fp-target
# (its own target directory, so target/release is not rebuilt; ~2 GB, on the checkout's disk rather
# than a small /tmp; CARGO_PROFILE_RELEASE_DEBUG=line-tables-only adds source lines to the frames)
# and pass BENCH_PEER_BIN=../fp-target/release
# (copy target/release/fedsearch there too); BENCH_PEER_PERF_ARGS="--call-graph fp".
# Every process it starts is stopped on exit, by pid.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$FEDSEARCH_ROOT" || exit 1

ROUNDS=${BENCH_PEER_ROUNDS:-3}
ROUTER_STREAMS=${BENCH_PEER_STREAMS:-}
DURATION=${BENCH_PEER_DURATION:-10}
WARMUP=${BENCH_PEER_WARMUP:-2}
CONCURRENCIES=${BENCH_PEER_CONCURRENCIES:-"50 200"}
RATE=${BENCH_PEER_RATE:-500}
QUERY=${BENCH_PEER_QUERY:-支付超时问题}
BASE_PORT=${BENCH_PEER_BASE_PORT:-31000}
BASE_BIN=${BENCH_PEER_BASE_BIN:-}
SIDES=${BENCH_PEER_SIDES:-"peer fedsearch fedsearch-inproc${BASE_BIN:+ fedsearch-base}"}
PEER_DIR=${BENCH_PEER_DIR:-$FEDSEARCH_ROOT/../shared/bench/seed-peer}
VENV=${BENCH_PEER_VENV:-/tmp/peer-venv}
OUT=${BENCH_PEER_OUT-BENCHMARKS.md}
NAMES=(docs ticket logs)
LATENCIES=(10 20 30)
HITS=20
TOP_K=10
BIN=${BENCH_PEER_BIN:-target/release}
SCENARIOS=${BENCH_PEER_SCENARIOS:-"slow peak"}
PEAK_WORKERS=${BENCH_PEER_PEAK_WORKERS:-2}
HANG_DEADLINE=${BENCH_PEER_HANG_DEADLINE-200ms}
HANG_RATE=${BENCH_PEER_HANG_RATE:-50}
IDLE_WAIT=${BENCH_PEER_IDLE_WAIT:-10}
SECTION="## Against the seed peer"
WORKERS=${BENCH_PEER_WORKERS-1}
[ -n "$WORKERS" ] && export TOKIO_WORKER_THREADS=$WORKERS
ROUTER_WORKERS=${BENCH_PEER_ROUTER_WORKERS:-$WORKERS}

[ -d "$PEER_DIR" ] || die "no seed peer at $PEER_DIR (the side-by-side needs ../shared/bench/seed-peer)"
command -v h2load >/dev/null || apt_install nghttp2-client
command -v jq >/dev/null || apt_install jq
if [ ! -x "$VENV/bin/python" ]; then
  log "installing the peer into $VENV"
  python3 -m venv "$VENV" && "$VENV/bin/pip" install -q -r "$PEER_DIR/requirements.txt" || die "peer install failed"
fi
if [ -z "${BENCH_PEER_SKIP_BUILD:-}" ]; then
  log "building release binaries: router, fusion, scripted-adapter, fedsearch"
  cargo build --release -p fedsearch-bench -p fedsearch-router -p fedsearch-fusion -p fedsearch-cli 2>&1 | tail -1
fi
for b in router fusion scripted-adapter fedsearch-loadgen fedsearch; do [ -x "$BIN/$b" ] || die "missing $BIN/$b"; done

. "$(dirname "${BASH_SOURCE[0]}")/bench-lib.sh" bench-peer
# The router's environment: the token secret, and its worker count when one is set.
router_env=(env FEDSEARCH_AUTH__HS256_SECRET="$SECRET")
[ -n "$ROUTER_WORKERS" ] && router_env+=(TOKIO_WORKER_THREADS="$ROUTER_WORKERS")
port() { # N — BASE_PORT + N, refused when something already listens there
  local p=$((BASE_PORT + $1))
  if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then die "port $p is taken (set BENCH_PEER_BASE_PORT)"; fi
  echo "$p"
}
# tree_ticks PID... — user+system ticks of these processes and all their live descendants
# (plus what they reaped of their children).
tree_ticks() {
  local total=0 pid f
  declare -A seen=()
  local todo=("$@")
  while [ ${#todo[@]} -gt 0 ]; do
    pid=${todo[0]}; todo=("${todo[@]:1}")
    [ -n "${seen[$pid]:-}" ] && continue
    seen[$pid]=1
    read -ra f < <(sed 's/^.*) //' "/proc/$pid/stat" 2>/dev/null) || continue
    total=$((total + f[11] + f[12] + f[13] + f[14]))
    for c in $(cat /proc/"$pid"/task/*/children 2>/dev/null); do todo+=("$c"); done
  done
  echo "$total"
}

# --- fedsearch stacks: per scenario and build, a fusion service, three adapters, a router using
# the fusion service and a router fusing in-process. Binaries with internal TLS refuse plaintext
# unless told: on loopback this bench says so (what TLS costs is not measured here); older
# binaries do not know the setting.
declare -A SIDE_PORT=() SIDE_PIDS=() SIDE_ROUTER=() SIDE_FUSION=() SIDE_LOG=() RSS_OF=()
NEXT_PORT=0
next_port() { NEXT_PORT=$((NEXT_PORT + 1)); PORT=$(port "$NEXT_PORT"); }
# listen_start NAME CONF_FN CMD... — picks the next port, calls CONF_FN PORT (writes the process's
# config; `:` for none), starts CMD with every @PORT@ in its arguments replaced, and waits until
# it listens. The ports lie in the kernel's ephemeral range, so an outgoing connection may take
# one between the check and the bind: then the process exits with "Address already in use" and
# the next port is tried. Sets PORT and LAST_PID.
listen_start() {
  local name=$1 conf=$2 try a args; shift 2
  for try in 1 2 3 4 5; do
    next_port
    "$conf" "$PORT"
    args=(); for a in "$@"; do args+=("${a//@PORT@/$PORT}"); done
    start "$name" "${args[@]}"
    for _ in $(seq 100); do
      if (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then return 0; fi
      kill -0 "$LAST_PID" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$LAST_PID" 2>/dev/null; then return 0; fi  # still starting: wait_healthy decides
    grep -q "Address already in use" "$WORK/$name.log" || die "$name exited at start; see $WORK/$name.log"
    log "$name: port $PORT was taken as it started (try $try), trying the next"
  done
  die "$name: no port it could listen on after 5 tries"
}
router_yaml() { # PORT FUSION_LINE INTERNAL_TLS NAME:PORT:LATENCY...
  local listen=$1 fusion=$2 tls=$3; shift 3
  echo "server: { listen: \"127.0.0.1:$listen\", shutdown_grace: 2s }"
  echo "auth: {}  # hs256_secret from FEDSEARCH_AUTH__HS256_SECRET"
  echo "$fusion"
  echo "$tls"
  # Admission is not what this measures (scripts/bench.sh's overload curve is): no in-flight cap
  # and no adaptive limit, which on a busy machine sheds calls as the runtime lags.
  echo "limits: { max_in_flight: 100000, adaptive: false, default_timeout: 3s, per_user: { max_in_flight: 100000 } }"
  echo "sources:"
  local s
  for s in "$@"; do
    IFS=: read -r n p l <<<"$s"
    echo "  - { name: $n, adapter: \"http://127.0.0.1:$p\", description: \"scripted source answering after $l ms\", timeout: 2s${ROUTER_STREAMS:+, streams: $ROUTER_STREAMS} }"
  done
}
# start_stack SCENARIO BUILD BINDIR LATENCY... — starts the stack and registers its sides
# ("fedsearch", "fedsearch-inproc" and "fedsearch-perstream" for BUILD "", "fedsearch-base" for
# BUILD "base"), keyed
# SIDE@SCENARIO. Sets STACK_SOURCES (NAME:PORT:LATENCY of its adapters) and STACK_FUSION_PORT.
start_stack() {
  local scen=$1 build=$2 bin=$3; shift 3
  local tag="$scen${build:+-$build}" server_tls='' internal_tls='' i fport fpid apids=() rport rpid
  grep -aq 'server.tls' "$bin/fusion" && server_tls=', tls: { insecure: true }'
  grep -aq 'internal_tls' "$bin/router" && internal_tls='internal_tls: { insecure: true }'
  conf_fusion() { echo "server: { listen: \"127.0.0.1:$1\", shutdown_grace: 2s$server_tls }" >"$WORK/fusion-$tag.yaml"; }
  listen_start "fusion-$tag" conf_fusion "$bin/fusion" --config "$WORK/fusion-$tag.yaml"; fport=$PORT; fpid=$LAST_PID
  STACK_SOURCES=()
  local lats=("$@")
  for i in "${!lats[@]}"; do
    listen_start "adapter-$tag-${NAMES[$i]}" : "$bin/scripted-adapter" --listen "127.0.0.1:@PORT@" --source "${NAMES[$i]}" \
      --latency-ms "${lats[$i]}" --hits "$HITS"
    apids+=("$LAST_PID"); STACK_SOURCES+=("${NAMES[$i]}:$PORT:${lats[$i]}")
  done
  wait_healthy "fusion-$tag" "$fport"
  for i in "${!lats[@]}"; do p=${STACK_SOURCES[$i]#*:}; wait_healthy "adapter-$tag-${NAMES[$i]}" "${p%%:*}"; done
  local side mode
  for mode in service inproc perstream; do
    [ -n "$build" ] && [ $mode != service ] && continue
    side=fedsearch; [ -n "$build" ] && side=fedsearch-$build; [ $mode != service ] && side=fedsearch-$mode
    [[ " $SIDES " == *" $side "* ]] || continue
    conf_router() {
      if [ $mode = perstream ]; then
        ROUTER_STREAMS=0 router_yaml "$1" "fusion: { endpoint: \"http://127.0.0.1:$fport\", timeout: 500ms }" "$internal_tls" "${STACK_SOURCES[@]}"
      elif [ -n "$build" ]; then
        ROUTER_STREAMS='' router_yaml "$1" "fusion: { endpoint: \"http://127.0.0.1:$fport\", timeout: 500ms }" "$internal_tls" "${STACK_SOURCES[@]}"
      elif [ $mode = service ]; then
        router_yaml "$1" "fusion: { endpoint: \"http://127.0.0.1:$fport\", timeout: 500ms }" "$internal_tls" "${STACK_SOURCES[@]}"
      else
        router_yaml "$1" "fusion: {}  # in-process" "$internal_tls" "${STACK_SOURCES[@]}"
      fi >"$WORK/router-$side@$scen.yaml"
    }
    listen_start "router-$side@$scen" conf_router "${router_env[@]}" "$bin/router" --config "$WORK/router-$side@$scen.yaml"
    rport=$PORT; rpid=$LAST_PID
    wait_healthy "router-$side@$scen" "$rport"
    SIDE_PORT[$side@$scen]=$rport; SIDE_ROUTER[$side@$scen]=$rpid; SIDE_LOG[$side@$scen]="$WORK/router-$side@$scen.log"
    if [ $mode != inproc ]; then
      SIDE_FUSION[$side@$scen]=$fpid; SIDE_PIDS[$side@$scen]="$rpid $fpid ${apids[*]}"
    else
      SIDE_PIDS[$side@$scen]="$rpid ${apids[*]}"
    fi
    RSS_OF["$side@$scen router"]=$rpid
  done
  RSS_OF["$tag fusion"]=$fpid; RSS_OF["$tag adapter"]=${apids[0]}
  STACK_FUSION_PORT=$fport
}
# start_peer SCENARIO WORKERS SOURCES
start_peer() {
  local pid='' try
  for try in 1 2 3 4 5; do
    next_port
    if pid=$(PORT=$PORT WORKERS=$2 VENV=$VENV PEER_SOURCES=$3 PEER_LOG="$WORK/peer-$1.log" "$PEER_DIR/run.sh" 2>/dev/null); then break; fi
    pid=''
    grep -q "address already in use" "$WORK/peer-$1.log" || die "the peer did not start; see $WORK/peer-$1.log"
    log "peer ($1): port $PORT was taken as it started (try $try), trying the next"
  done
  [ -n "$pid" ] || die "the peer ($1) found no port it could listen on after 5 tries"
  PIDS+=("$pid")
  local workers="$2 worker"; [ "$2" -gt 1 ] && workers+=s
  SIDE_PORT[peer@$1]=$PORT; SIDE_PIDS[peer@$1]=$pid; RSS_OF["peer@$1 ($workers)"]=$pid
}
peer_sources() { # LATENCY... — the peer's PEER_SOURCES for these latencies
  local i out=() lats=("$@")
  for i in "${!lats[@]}"; do out+=("${NAMES[$i]}:${lats[$i]}:$HITS"); done
  (IFS=,; echo "${out[*]}")
}

read -ra SCENARIO_LIST <<<"$SCENARIOS"
for scen in "${SCENARIO_LIST[@]}"; do
  case $scen in
    slow) lats=("${LATENCIES[@]}"); workers=1 ;;
    peak) lats=(0 0 0); workers=$PEAK_WORKERS ;;
    *) die "unknown scenario $scen (slow, peak)" ;;
  esac
  if [[ " $SIDES " == *" fedsearch "* || " $SIDES " == *" fedsearch-inproc "* || " $SIDES " == *" fedsearch-perstream "* ]]; then
    start_stack "$scen" "" "$BIN" "${lats[@]}"
    [ "$scen" = slow ] && { SLOW_SOURCES=("${STACK_SOURCES[@]}"); SLOW_FUSION_PORT=$STACK_FUSION_PORT; }
  fi
  [ -n "$BASE_BIN" ] && start_stack "$scen" base "$BASE_BIN" "${lats[@]}"
  [[ " $SIDES " == *" peer "* ]] && start_peer "$scen" "$workers" "$(peer_sources "${lats[@]}")"
done
# --- request bodies and a sanity search on each side
TOKEN=$("$BIN/fedsearch" token --secret "$SECRET" --sub bench-peer --ttl 2h)
python3 - "$QUERY" "$TOP_K" "$WORK/search.grpc" "$WORK/search.json" <<'PY'
import json, struct, sys
query, top_k, grpc_path, json_path = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
def varint(n):
    out = b""
    while True:
        b, n = n & 0x7F, n >> 7
        out += bytes([b | (0x80 if n else 0)])
        if not n:
            return out
q = query.encode()
msg = b"\x0a" + varint(len(q)) + q + b"\x18" + varint(top_k)  # SearchRequest{query=1, top_k=3}
open(grpc_path, "wb").write(b"\x00" + struct.pack(">I", len(msg)) + msg)
open(json_path, "w").write(json.dumps({"query": query, "top_k": top_k}, ensure_ascii=False))
PY
for key in "${!SIDE_PORT[@]}"; do
  p=${SIDE_PORT[$key]}
  if [[ $key == peer@* ]]; then
    curl -s -X POST "http://127.0.0.1:$p/search" -H 'Content-Type: application/json' --data-binary @"$WORK/search.json" \
      | jq -e '(.results | length) == 10' >/dev/null || die "sanity search on the peer ($key) failed"
    continue
  fi
  "$BIN/fedsearch" --router "127.0.0.1:$p" --token "$TOKEN" --json search "$QUERY" >"$WORK/sanity-$p.json" \
    || die "sanity search on the router of $key failed"
  jq -e '(.hits | length) == 10 and ([.sources[] | select(.state == "ok")] | length) == 3' "$WORK/sanity-$p.json" >/dev/null \
    || die "sanity search on $key: expected 10 hits and 3 OK sources, got $(head -c 400 "$WORK/sanity-$p.json")"
done

# h2load_args SIDE@SCENARIO KIND LEVEL — the generator's arguments for one measurement.
h2load_args() {
  local key=$1 kind=$2 level=$3 conns streams n p=${SIDE_PORT[$1]}
  if [[ $key == peer@* ]]; then
    # HTTP/1.1 keep-alive, one request in flight per connection.
    if [ "$kind" = closed ]; then conns=$level; else conns=50; fi
    echo "--h1 -c $conns -m 1"
    if [ "$kind" = open ]; then echo "--rps $(awk -v r="$level" -v c="$conns" 'BEGIN { printf "%g", r / c }')"; fi
    echo "-d $WORK/search.json -H content-type:application/json http://127.0.0.1:$p/search"
  else
    # HTTP/2: a few connections (4 or 5, like fedsearch-loadgen's 4 channels), streams in flight on each.
    if [ "$kind" = closed ]; then
      for n in 4 5 2 1; do [ $((level % n)) -eq 0 ] && { conns=$n; break; }; done
      streams=$((level / conns))
    else
      conns=5; streams=50
    fi
    echo "-c $conns -m $streams"
    if [ "$kind" = open ]; then echo "--rps $(awk -v r="$level" -v c="$conns" 'BEGIN { printf "%g", r / c }')"; fi
    echo "-d $WORK/search.grpc -H content-type:application/grpc -H te:trailers -H grpc-timeout:5S"
    echo "-H authorization:Bearer_TOKEN http://127.0.0.1:$p/fedsearch.v1.FederatedSearch/Search"
  fi
}
# grpc_failures SIDE@SCENARIO — calls the side's router answered with an error status so far (its
# log's "call failed" lines, except the generator's own resets as it stops at the end of a run,
# which the router logs as CANCELLED or, for a stream reset before its request was read, UNKNOWN
# at 0 ms). h2load counts a gRPC error as an HTTP 200 answer, so these are subtracted from its answers.
grpc_failures() {
  local f=${SIDE_LOG[$1]:-}
  [ -n "$f" ] || { echo 0; return; }
  grep '"call failed"' "$f" 2>/dev/null | grep -vEc '"code":"(CANCELLED|UNKNOWN)"' || true
}

run_h2load() { # SECONDS LOGFILE ARGS... — h2load with the token filled in; summary on stdout
  local secs=$1 logf=$2; shift 2
  local a=() x
  for x in "$@"; do
    if [ "$x" = authorization:Bearer_TOKEN ]; then a+=("authorization: Bearer $TOKEN")
    elif [[ $x == *:* && $x != http://* && $x == [a-z]*:* && ${a[-1]:-} == -H ]]; then a+=("${x%%:*}: ${x#*:}")
    else a+=("$x"); fi
  done
  h2load -D "$secs" ${logf:+--log-file="$logf"} "${a[@]}"
}

RUNS="$WORK/runs.jsonl"
: >"$RUNS"
PERF_DONE=''
measure() { # SIDE SCENARIO KIND LEVEL ROUND
  local side=$1 scen=$2 kind=$3 level=$4 round=$5 key="$1@$2" name="$1-$2-$3-$4-r$5" args pids rpid c0 r0 t0 t1 c1 r1 g
  # shellcheck disable=SC2207 # the arguments hold no spaces (paths under $WORK, header tokens)
  args=($(h2load_args "$key" "$kind" "$level"))
  read -ra pids <<<"${SIDE_PIDS[$key]}"
  rpid=${SIDE_ROUTER[$key]:-}
  run_h2load "$WARMUP" '' "${args[@]}" >/dev/null 2>&1 || true
  local load1; load1=$(loadavg)
  local perf_pid=''
  if [ -n "${BENCH_PEER_PERF:-}" ] && [ -n "$rpid" ] && [ "$kind" = closed ] && [[ $PERF_DONE != *" $key "* ]] && command -v perf >/dev/null; then
    perf record -q -F 499 ${BENCH_PEER_PERF_ARGS:--g} -p "$rpid" -o "$WORK/perf-$key.data" >/dev/null 2>&1 &
    perf_pid=$!; PERF_DONE+=" $key "
  fi
  local f0 f1; f0=$(grpc_failures "$key")
  local fpid=${SIDE_FUSION[$key]:-}
  local u0 u1; u0=$([ -n "$fpid" ] && tree_ticks "$fpid" || echo 0)
  c0=$(tree_ticks "${pids[@]}"); r0=$([ -n "$rpid" ] && tree_ticks "$rpid" || echo 0); t0=$(date +%s.%N)
  local gt="$WORK/$name.time"
  { TIMEFORMAT='%U %S'; time run_h2load "$DURATION" "$WORK/$name.log" "${args[@]}" >"$WORK/$name.out" 2>&1; } 2>"$gt"
  t1=$(date +%s.%N); c1=$(tree_ticks "${pids[@]}"); r1=$([ -n "$rpid" ] && tree_ticks "$rpid" || echo 0)
  f1=$(grpc_failures "$key"); u1=$([ -n "$fpid" ] && tree_ticks "$fpid" || echo 0)
  if [ -n "$perf_pid" ]; then
    kill -INT "$perf_pid" 2>/dev/null || true; wait "$perf_pid" 2>/dev/null || true
    perf report -i "$WORK/perf-$key.data" --no-children --sort dso,symbol --stdio 2>/dev/null | head -120 >"$WORK/perf-$key.txt" || true
    log "router profile ($key, closed $level): $WORK/perf-$key.txt"
  fi
  read -r gu gs <"$gt"
  python3 - "$side" "$scen" "$kind" "$level" "$round" "$WORK/$name.out" "$WORK/$name.log" "$((c1 - c0))" "$((r1 - r0))" \
    "$t0" "$t1" "$CLK_TCK" "$gu" "$gs" "$load1" "$((f1 - f0))" "$((u1 - u0))" >>"$RUNS" <<'PY'
import json, re, sys
side, scen, kind, level, rnd, out, logf, ticks, rticks, t0, t1, hz, gu, gs, load, grpc_errors, fticks = sys.argv[1:]
text = open(out).read()
def grab(pat, default=0.0):
    m = re.search(pat, text)
    return float(m.group(1)) if m else default
lat = []
for line in open(logf):
    f = line.split()
    if len(f) >= 3 and f[1].startswith("2"):
        lat.append(int(f[2]) / 1000.0)
lat.sort()
def pct(p):
    if not lat:
        return None
    k = max(0, min(len(lat) - 1, -(-len(lat) * p // 100) - 1))
    return round(lat[int(k)], 2)
wall = float(t1) - float(t0)
secs = grab(r"finished in ([0-9.]+)s") or wall
ok = max(0, len(lat) - int(grpc_errors))
status_2xx = grab(r"status codes: (\d+) 2xx")
data = grab(r"traffic: .*?, [0-9.]+[KMG]?B \((\d+)\) data")
errors = int(grab(r"requests: .*? (\d+) errored") + grab(r"requests: .*? (\d+) timeout")
             + grab(r"status codes: \d+ 2xx, (\d+) 3xx") + grab(r"status codes: .*? (\d+) 4xx") + grab(r"status codes: .*? (\d+) 5xx")
             + int(grpc_errors))
cpu_s = int(ticks) / float(hz)
print(json.dumps({
    "side": side, "scenario": scen, "kind": kind, "level": int(level), "round": int(rnd), "load1": float(load.split()[0]), "load": load,
    "ok": ok, "qps": round(ok / secs, 1), "errors": errors,
    "p50": pct(50), "p95": pct(95), "p99": pct(99), "max": round(lat[-1], 2) if lat else None,
    "bytes_per_answer": round(data / status_2xx) if status_2xx else 0,
    "cpu_cores": round(cpu_s / wall, 3), "cpu_ms_per_search": round(cpu_s * 1000 / ok, 3) if ok else None,
    "router_cpu_ms_per_search": round(int(rticks) / float(hz) * 1000 / ok, 3) if ok and int(rticks) else None,
    "fusion_cpu_ms_per_search": round(int(fticks) / float(hz) * 1000 / ok, 3) if ok and int(fticks) else None,
    "adapters_cpu_ms_per_search": round((int(ticks) - int(rticks) - int(fticks)) / float(hz) * 1000 / ok, 3) if ok and int(rticks) else None,
    "gen_cpu_cores": round((float(gu) + float(gs)) / wall, 3),
}))
PY
  log "$(tail -n 1 "$RUNS")"
  rm -f "$WORK/$name.log"
}

read -ra SIDE_LIST <<<"$SIDES"
LOAD_START=$(loadavg)
STARTED=$(date -u '+%Y-%m-%d %H:%M UTC')
log "$ROUNDS rounds × scenarios $SCENARIOS (closed loop at $CONCURRENCIES; open loop at $RATE q/s with the 10/20/30 ms sources) × sides: $SIDES; ${DURATION}s each"
for round in $(seq "$ROUNDS"); do
  # Rotate the side order each round so no side always runs first (or right after another).
  k=$(( (round - 1) % ${#SIDE_LIST[@]} ))
  order=("${SIDE_LIST[@]:$k}" "${SIDE_LIST[@]:0:$k}")
  for scen in "${SCENARIO_LIST[@]}"; do
    for c in $CONCURRENCIES; do
      for s in "${order[@]}"; do measure "$s" "$scen" closed "$c" "$round"; done
    done
    if [ "$scen" = slow ]; then
      for r in $RATE; do
        for s in "${order[@]}"; do measure "$s" slow open "$r" "$round"; done
      done
    fi
  done
done

# --- a hanging source: one source never answers (a scripted adapter waiting 60 s), the other two
# are the 10 and 20 ms adapters of the main stack. Open loop at HANG_RATE q/s through
# fedsearch-loadgen (it reads every answer: hits, per-source states), once with a gRPC deadline of
# HANG_DEADLINE and once with the request's `timeout` field at HANG_DEADLINE (gRPC deadline 5 s).
HANG_RUNS="$WORK/hang.jsonl"
: >"$HANG_RUNS"
PEER_HANG=''
if [ -n "$HANG_DEADLINE" ] && [ -n "${SLOW_SOURCES[*]:-}" ]; then
  listen_start adapter-hang : "$BIN/scripted-adapter" --listen "127.0.0.1:@PORT@" --source hang --latency-ms 60000 --hits "$HITS"
  hang_port=$PORT
  wait_healthy adapter-hang "$hang_port"
  hang_builds=(fedsearch); [ -n "$BASE_BIN" ] && hang_builds+=(fedsearch-base)
  [[ " $SIDES " == *" fedsearch-perstream "* ]] && hang_builds+=(fedsearch-perstream)
  for side in "${hang_builds[@]}"; do
    bin=$BIN; [ "$side" = fedsearch-base ] && bin=$BASE_BIN
    tls=''; grep -aq 'internal_tls' "$bin/router" && tls='internal_tls: { insecure: true }'
    conf_hang_router() {
      local streams=$ROUTER_STREAMS
      case $side in fedsearch-perstream) streams=0 ;; fedsearch-base) streams='' ;; esac
      ROUTER_STREAMS=$streams router_yaml "$1" "fusion: { endpoint: \"http://127.0.0.1:$SLOW_FUSION_PORT\", timeout: 500ms }" "$tls" \
        "${SLOW_SOURCES[0]}" "${SLOW_SOURCES[1]}" "hang:$hang_port:never" >"$WORK/router-$side@hang.yaml"
    }
    listen_start "router-$side@hang" conf_hang_router "${router_env[@]}" "$bin/router" --config "$WORK/router-$side@hang.yaml"
    rport=$PORT; hpid=$LAST_PID
    wait_healthy "router-$side@hang" "$rport"
    for how in deadline field; do
      if [ $how = deadline ]; then t=(--timeout "$HANG_DEADLINE"); else t=(--timeout 5s --request-timeout "$HANG_DEADLINE"); fi
      h0=$(tree_ticks "$hpid")
      FEDSEARCH_BENCH_SECRET=$SECRET "$BIN/fedsearch-loadgen" --target "http://127.0.0.1:$rport" --rate "$HANG_RATE" \
        --duration "${DURATION}s" --warmup "${WARMUP}s" --query "$QUERY" --top-k "$TOP_K" "${t[@]}" \
        --slowest-source-ms "${HANG_DEADLINE%ms}" --label "$side $how" --json >"$WORK/hang-$side-$how.json" \
        || die "the hanging-source run ($side, $how) failed; see $WORK"
      h1=$(tree_ticks "$hpid")
      jq -c --arg side "$side" --arg how "$how" --arg load "$(loadavg)" --argjson ticks $((h1 - h0)) --argjson hz "$CLK_TCK" \
        '{side: $side, how: $how, load: $load, ok, errors, error_total, partial, timed_out, without_hits, achieved_qps,
          p50: .latency_ms.p50, p99: .latency_ms.p99, max: .latency_ms.max,
          router_cpu_ms_per_search: (if .ok > 0 then ($ticks / $hz * 1000 / .ok * 1000 | round / 1000) else null end)}' \
        "$WORK/hang-$side-$how.json" >>"$HANG_RUNS"
      log "$(tail -n 1 "$HANG_RUNS")"
    done
  done
  # The peer has no per-source timeout (asyncio.gather waits for every source): one request,
  # given 3 s.
  if [[ " $SIDES " == *" peer "* ]]; then
    start_peer hang 1 "docs:10:$HITS,ticket:20:$HITS,hang:60000:$HITS"
    t0=$(date +%s.%N)
    if curl -s -m 3 -X POST "http://127.0.0.1:${SIDE_PORT[peer@hang]}/search" -H 'Content-Type: application/json' \
      --data-binary @"$WORK/search.json" >/dev/null; then
      PEER_HANG="answered after $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", (b - a) * 1000 }') ms"
    else
      PEER_HANG="no answer within 3 s (curl gave up)"
    fi
  fi
fi

LOAD_END=$(loadavg)
WARNINGS=$(cat "$WORK"/router*.log | jq -Rr 'fromjson? | select(.level == "WARN") | .fields.message' | sort | uniq -c | sort -rn | awk '{ n = $1; $1 = ""; printf "%s×%s;", n, $0 }')
# rss_tree PID — resident MB of PID and its descendants (the 2-worker peer is a supervisor and two workers).
rss_tree() {
  local kb=0 pid todo=("$1") v
  while [ ${#todo[@]} -gt 0 ]; do
    pid=${todo[0]}; todo=("${todo[@]:1}")
    v=$(awk '/VmRSS/ { print $2 }' "/proc/$pid/status" 2>/dev/null || true); kb=$((kb + ${v:-0}))
    for c in $(cat /proc/"$pid"/task/*/children 2>/dev/null); do todo+=("$c"); done
  done
  echo $((kb / 1024))
}
rss_all() { local k; for k in $(printf '%s\n' "${!RSS_OF[@]}" | sort | tr ' ' '~'); do k=${k//\~/ }; echo -n "$k $(rss_tree "${RSS_OF[$k]}") MB, "; done | sed 's/, $//'; }
RSS=$(rss_all)
sleep "$IDLE_WAIT"
RSS_IDLE=$(rss_all)

# --- the Markdown section
: >"$WORK/perf-top.txt"; : >"$WORK/perf-inclusive.txt"
PERF_DATA=$(ls "$WORK"/perf-fedsearch@slow.data "$WORK"/perf-fedsearch@peak.data 2>/dev/null | head -1 || true)
if [ -n "$PERF_DATA" ]; then
  perf report -i "$PERF_DATA" --no-children --sort dso,symbol --stdio -g none 2>/dev/null \
    | grep '%' | grep -v '^#' | head -25 | sed -E 's/ +$//; s/^ +//' | cut -c1-150 >"$WORK/perf-top.txt" || true
  # The flame graph's widest frames of fedsearch's own code: time including callees. Only
  # meaningful with call graphs, i.e. a build with frame pointers (see the header).
  perf report -i "$PERF_DATA" --children --sort symbol --stdio -g none 2>/dev/null \
    | grep '%' | grep -v '^#' | grep -E 'fedsearch_[a-z_]+::' | grep -v '{{closure}}' | head -25 \
    | sed -E 's/ +$//; s/^ +//' | cut -c1-150 >"$WORK/perf-inclusive.txt" || true
  if command -v inferno-collapse-perf >/dev/null && command -v inferno-flamegraph >/dev/null; then
    perf script -i "$PERF_DATA" 2>/dev/null | inferno-collapse-perf >"$WORK/router.folded" 2>/dev/null \
      && inferno-flamegraph <"$WORK/router.folded" >"$WORK/router-flamegraph.svg" 2>/dev/null \
      && log "router flame graph: $WORK/router-flamegraph.svg"
  fi
fi
if [ -n "$WORKERS" ]; then WORKERS_TEXT="$WORKERS (BENCH_PEER_WORKERS)"; else WORKERS_TEXT="the tokio default, one per core ($(nproc))"; fi
[ "$ROUTER_WORKERS" != "$WORKERS" ] && WORKERS_TEXT+="; the router: $ROUTER_WORKERS (BENCH_PEER_ROUTER_WORKERS)"
python3 - "$RUNS" "$WORK/section.md" <<PY
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
sides = "$SIDES".split()
concs = [int(c) for c in "$CONCURRENCIES".split()]
rates = [int(float(r)) for r in "$RATE".split()]
scenarios = "$SCENARIOS".split()
def cell(side, scen, kind, level, key, fmt="{:.2f}"):
    v = [r[key] for r in runs if r["side"] == side and r["scenario"] == scen and r["kind"] == kind and r["level"] == level and r[key] is not None]
    if not v:
        return None, "–"
    m = statistics.median(v)
    return m, (fmt.format(m) + (f" ({fmt.format(min(v))}–{fmt.format(max(v))})" if len(v) > 1 else ""))
def ratio(a, b, fmt="{:.2f}×"):
    return fmt.format(a / b) if a and b else "–"
L = []
L.append("$SECTION")
L.append("")
L.append("Written by \`scripts/bench-peer.sh\` (\`make bench\` runs it at its end when ../shared/bench/seed-peer exists).")
L.append("")
L.append("- Command: \`scripts/bench-peer.sh\` (BENCH_PEER_ROUNDS=$ROUNDS, BENCH_PEER_DURATION=$DURATION s, BENCH_PEER_WARMUP=$WARMUP s, BENCH_PEER_CONCURRENCIES=\"$CONCURRENCIES\", BENCH_PEER_RATE=\"$RATE\", BENCH_PEER_SCENARIOS=\"$SCENARIOS\", BENCH_PEER_PEAK_WORKERS=$PEAK_WORKERS, BENCH_PEER_HANG_DEADLINE=$HANG_DEADLINE, BENCH_PEER_HANG_RATE=$HANG_RATE)")
L.append("- Date: $STARTED; commit $(git rev-parse --short HEAD 2>/dev/null)$(git diff --quiet HEAD -- crates 2>/dev/null || echo ' (with uncommitted changes in crates/)'); machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(uname -sr)")
L.append("- Tokio worker threads per fedsearch process: $WORKERS_TEXT.")
L.append("- Load average (1/5/15 min): $LOAD_START at the start, $LOAD_END at the end; each run's 1-minute load at its start is in the last column. Both sides and the generator share the 2 cores.")
L.append("- Scenarios, both sides: three mock sources, 20 hits each, top_k 10, query \"$QUERY\"; **10/20/30 ms** sources (peer: 1 uvicorn worker, PEER_SOURCES=docs:10:20,ticket:20:20,logs:30:20) and **peak**: sources at 0 ms (peer: $PEAK_WORKERS uvicorn workers, PEER_SOURCES=docs:0:20,ticket:0:20,logs:0:20). **peer** = the seed's design (../shared/bench/seed-peer, \`run.sh\`); **fedsearch** = release router + fusion service + three \`scripted-adapter\` processes (5 processes, one stack per scenario); **fedsearch-inproc** = a second router over the same adapters fusing in-process (\`fusion: {}\`, 4 processes)$([[ " $SIDES " == *" fedsearch-perstream "* ]] && echo "; **fedsearch-perstream** = a third router over the same adapters and fusion service with streams: 0 (one HTTP/2 stream per sub-query, the design before the long-lived multiplexed streams)")$([ -n "$BASE_BIN" ] && echo "; **fedsearch-base** = an earlier build ($BASE_BIN: its router, fusion service and adapters, a stack of its own per scenario), for before/after in this run").")
L.append("- Generator, both sides: h2load (nghttp2-client): the peer over HTTP/1.1 keep-alive (one request in flight per connection, like wrk), fedsearch over HTTP/2 with gRPC framing (concurrency spread over 4–5 connections, like fedsearch-loadgen's channels). One generator, one clock and one percentile computation for both, so the driver is not the difference. Open loop: the rate paced over 50 (peer) or 5 (fedsearch) connections.")
L.append("- Interleaved: $ROUNDS rounds, each running every measurement on every side back to back (side order rotated per round); cells are the median over rounds (min–max). CPU per search = user+system CPU of all the side's processes (/proc/<pid>/stat) in the measured window ÷ answered searches. Ratios are of medians from this one run.")
L.append("")
pairs = [(s, "peer") for s in sides if s != "peer" and "peer" in sides]
for other in ("fedsearch-base", "fedsearch-perstream"):
    if "fedsearch" in sides and other in sides:
        pairs.append(("fedsearch", other))
L.append("| measurement | " + " | ".join(sides) + " | " + " | ".join(f"{a} vs {b}" for a, b in pairs) + " |")
L.append("|---|" + "---|" * (len(sides) + len(pairs)))
rows = []
for scen in scenarios:
    name = "10/20/30 ms" if scen == "slow" else "peak (0 ms)"
    for c in concs:
        rows.append((f"{name}, closed c={c}: searches/s", scen, "closed", c, "qps", "{:.0f}", "higher"))
        rows.append((f"{name}, closed c={c}: CPU ms/search (all processes)", scen, "closed", c, "cpu_ms_per_search", "{:.3f}", "lower"))
        rows.append((f"{name}, closed c={c}: p50 / p99 ms", scen, "closed", c, ("p50", "p99"), "{:.1f}", "lat"))
    for rate in (rates if scen == "slow" else []):
        rows.append((f"{name}, open {rate} q/s: achieved q/s", scen, "open", rate, "qps", "{:.0f}", "higher"))
        rows.append((f"{name}, open {rate} q/s: CPU ms/search (all processes)", scen, "open", rate, "cpu_ms_per_search", "{:.3f}", "lower"))
        rows.append((f"{name}, open {rate} q/s: p50 / p95 / p99 ms", scen, "open", rate, ("p50", "p95", "p99"), "{:.2f}", "lat"))
        rows.append((f"{name}, open {rate} q/s: overhead over the 30 ms source, p50 / p99 ms", scen, "open", rate, ("p50", "p99"), "{:.2f}", "ovh"))
for label, scen, kind, level, key, fmt, better in rows:
    vals, cells = {}, []
    for s in sides:
        if isinstance(key, tuple):
            ms = [cell(s, scen, kind, level, k, fmt)[0] for k in key]
            if better == "ovh":
                ms = [m - 30 if m is not None else None for m in ms]
            vals[s] = ms
            cells.append(" / ".join(fmt.format(m) if m is not None else "–" for m in ms))
        else:
            m, text = cell(s, scen, kind, level, key, fmt)
            vals[s] = m
            cells.append(text)
    rs = []
    for s, other in pairs:
        a, b = vals[s], vals.get(other)
        if better in ("higher", "lower"):
            rs.append(ratio(a, b))
        else:
            rs.append(" / ".join(ratio(x, y) for x, y in zip(a, b or [None] * len(a))))
    L.append(f"| {label} | " + " | ".join(cells) + " | " + " | ".join(rs) + " |")
L.append("")
levels = [(scen, "closed", c) for scen in scenarios for c in concs] + ([("slow", "open", r) for r in rates] if "slow" in scenarios else [])
def where(scen, k, lv):
    return ("peak " if scen == "peak" else "") + (f"c={lv}" if k == "closed" else f"open {lv} q/s")
for who, key in (("Router", "router_cpu_ms_per_search"), ("Fusion service", "fusion_cpu_ms_per_search"), ("The three adapters together", "adapters_cpu_ms_per_search")):
    got = [(s, sc, k, lv) for s in sides if s != "peer" for sc, k, lv in levels if cell(s, sc, k, lv, key)[0] is not None]
    if got:
        L.append(f"{who} alone, CPU ms/search (median): " + "; ".join(f"{s} {where(sc, k, lv)}: {cell(s, sc, k, lv, key, '{:.3f}')[1]}" for s, sc, k, lv in got) + ".")
        L.append("")
hang = [json.loads(l) for l in open("$HANG_RUNS")]
if hang:
    L.append("With a hanging source (one of three never answers; the others answer at 10 and 20 ms; \`fedsearch-loadgen\` open loop at $HANG_RATE q/s for $DURATION s, reading every answer): the deadline is $HANG_DEADLINE, given as the gRPC deadline (\`grpc-timeout\`) or as the request's \`timeout\` field (gRPC deadline 5 s). Latency is the client's, from send to answer; an answer after a gRPC deadline is a DEADLINE_EXCEEDED error.")
    L.append("")
    L.append("| side | deadline given as | answers | errors | with a TIMEOUT source | without hits | p50 ms | p99 ms | max ms | router CPU ms/search | load 1m |")
    L.append("|---|---|---|---|---|---|---|---|---|---|---|")
    for h in hang:
        how = "gRPC deadline" if h["how"] == "deadline" else "request \`timeout\` field"
        L.append(f"| {h['side']} | {how} | {h['ok']} | {h['error_total']} | {h['timed_out']} | {h['without_hits']} | {h['p50']} | {h['p99']} | {h['max']} | {h['router_cpu_ms_per_search']} | {h['load'].split()[0]} |")
    L.append("")
    if "$PEER_HANG":
        L.append("The peer with the same hanging source (\`asyncio.gather\` over every source, no per-source timeout): $PEER_HANG.")
        L.append("")
L.append("")
errs = sum(r["errors"] for r in runs)
bpa = {s: sorted({r['bytes_per_answer'] for r in runs if r['side'] == s}) for s in sides}
L.append(f"Errors over all runs: {errs}. Response bytes per answer (an error answer has none): " + "; ".join(f"{s} {min(v)}–{max(v)}" for s, v in bpa.items()) + ". Generator CPU (cores, median over runs): " + "; ".join(f"{s} {statistics.median([r['gen_cpu_cores'] for r in runs if r['side'] == s]):.2f}" for s in sides) + ".")
L.append("")
L.append("Router warnings during the runs: ${WARNINGS:-none}.")
L.append("")
L.append("RSS at the end of the runs: $RSS. After $IDLE_WAIT s idle: $RSS_IDLE.")
L.append("")
L.append("Errors count h2load's failed requests and the calls each router logged as failed (\`call failed\`, other than the generator's cancellations at the end of a run): h2load books a gRPC error as an HTTP 200 answer. A \`locally-reset streams reached limit\` warning would mean h2 closed an adapter connection after 1024 resets (issue 15); the clients remember up to 1,024 reset streams for 5 s (fedsearch_core::grpc::client_endpoint), so frames in flight for a cancelled sub-query no longer count toward that limit.")
L.append("")
import os
for path, title in (
    ("$WORK/perf-top.txt", "Router profile (\`perf record -F 499\` of the fedsearch router during its first closed-loop run; self time by symbol, top frames):"),
    ("$WORK/perf-inclusive.txt", "fedsearch's own widest frames in the flame graph (time including callees, then self time; needs a build with frame pointers):"),
):
    if os.path.exists(path) and os.path.getsize(path) > 0:
        L.extend([title, "", "\`\`\`"])
        L.extend(l.rstrip() for l in open(path))
        L.extend(["\`\`\`", ""])
L.append("Every run (JSON lines, one per measurement):")
L.append("")
L.append("| side | scenario | kind | level | round | q/s | p50 ms | p99 ms | errors | CPU ms/search | router CPU ms/search | gen cores | load 1m |")
L.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for r in runs:
    L.append(f"| {r['side']} | {r['scenario']} | {r['kind']} | {r['level']} | {r['round']} | {r['qps']} | {r['p50']} | {r['p99']} | {r['errors']} | {r['cpu_ms_per_search']} | {r['router_cpu_ms_per_search'] or '–'} | {r['gen_cpu_cores']} | {r['load1']} |")
L.append("")
open(sys.argv[2], "w").write("\n".join(L) + "\n")
PY
cat "$WORK/section.md"
if [ -n "$OUT" ]; then
  # Replace the section (from its heading to the next "## "), else insert it before "## Answer quality".
  awk -v sec="$WORK/section.md" -v head="$SECTION" '
    function emit() { while ((getline l < sec) > 0) print l; done = 1 }
    $0 == head { skip = 1; emit(); next }
    skip && /^## / { skip = 0 }
    skip { next }
    !done && /^## Answer quality/ { emit() }
    { print }
    END { if (!done) { print ""; emit() } }
  ' "$OUT" >"$WORK/out.md" && mv "$WORK/out.md" "$OUT"
  log "wrote the \"$SECTION\" section of $OUT (runs: $RUNS)"
fi
