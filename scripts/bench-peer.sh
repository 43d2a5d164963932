#!/usr/bin/env bash
# bench-peer.sh — fedsearch side by side with the seeds' Python design (../shared/bench/seed-peer:
# FastAPI + asyncio.gather, one uvicorn worker), on the same scenario, in one run, interleaved.
#
# Scenario (both sides): three mock sources answering after 10/20/30 ms with 20 hits each,
# top_k 10, the same query. fedsearch = release `router` + `fusion` + three `scripted-adapter`
# processes started as scripts/bench.sh starts them; a second router over the same adapters fuses
# in-process (`fusion: {}`), so both fusion modes are measured. The peer = its run.sh with
# PEER_SOURCES=docs:10:20,ticket:20:20,logs:30:20.
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
# Knobs: BENCH_PEER_ROUNDS=3, BENCH_PEER_DURATION=10 (s per measurement), BENCH_PEER_WARMUP=2 (s,
# not measured, before each), BENCH_PEER_CONCURRENCIES="50 200", BENCH_PEER_RATE=500 (q/s),
# BENCH_PEER_QUERY=支付超时问题, BENCH_PEER_BASE_PORT=31000, BENCH_PEER_SIDES="peer fedsearch
# fedsearch-inproc", BENCH_PEER_DIR=../shared/bench/seed-peer, BENCH_PEER_VENV=/tmp/peer-venv,
# BENCH_PEER_SKIP_BUILD=1, BENCH_PEER_BIN=DIR (the binaries, default target/release), BENCH_PEER_BASE_BIN=DIR (adds the side fedsearch-base: DIR/router, an
# earlier build, with the fusion service, over the same adapters — before/after in one run),
# BENCH_PEER_OUT=BENCHMARKS.md (its "## Against the seed peer" section
# is replaced; empty: print the section only), BENCH_PEER_PERF=1 (perf record -g the router
# during its first closed-loop run; the report goes next to the logs).
# Every process it starts is stopped on exit, by pid.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$FEDSEARCH_ROOT" || exit 1

ROUNDS=${BENCH_PEER_ROUNDS:-3}
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
SECTION="## Against the seed peer"

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

# --- fedsearch: fusion, three adapters, a router using the fusion service, a router fusing in-process
# Binaries with internal TLS refuse plaintext unless told: on loopback this bench says so (what
# TLS costs is not measured here); older binaries do not know the setting.
SERVER_TLS=''; grep -aq 'server.tls' "$BIN/fusion" && SERVER_TLS=', tls: { insecure: true }'
INTERNAL_TLS=''; grep -aq 'internal_tls' "$BIN/router" && INTERNAL_TLS='internal_tls: { insecure: true }'
FUSION_PORT=$(port 52)
cat >"$WORK/fusion.yaml" <<EOF
server: { listen: "127.0.0.1:$FUSION_PORT", shutdown_grace: 2s$SERVER_TLS }
EOF
start fusion "$BIN/fusion" --config "$WORK/fusion.yaml"; FUSION_PID=$LAST_PID
ADAPTER_PIDS=(); ADAPTER_PORTS=()
for i in 0 1 2; do
  p=$(port $((61 + i))); ADAPTER_PORTS+=("$p")
  start "adapter-${NAMES[$i]}" "$BIN/scripted-adapter" --listen "127.0.0.1:$p" --source "${NAMES[$i]}" \
    --latency-ms "${LATENCIES[$i]}" --hits "$HITS"
  ADAPTER_PIDS+=("$LAST_PID")
done
router_yaml() { # PORT FUSION_LINE
  echo "server: { listen: \"127.0.0.1:$1\", shutdown_grace: 2s }"
  echo "auth: {}  # hs256_secret from FEDSEARCH_AUTH__HS256_SECRET"
  echo "$2"
  echo "$INTERNAL_TLS"
  # Admission is not what this measures (scripts/bench.sh's overload curve is): no in-flight cap
  # and no adaptive limit, which on a busy machine sheds calls as the runtime lags.
  echo "limits: { max_in_flight: 100000, adaptive: false, default_timeout: 3s, per_user: { max_in_flight: 100000 } }"
  echo "sources:"
  for i in 0 1 2; do
    echo "  - { name: ${NAMES[$i]}, adapter: \"http://127.0.0.1:${ADAPTER_PORTS[$i]}\", description: \"scripted source answering after ${LATENCIES[$i]} ms\", timeout: 2s }"
  done
}
ROUTER_PORT=$(port 51); ROUTER_INPROC_PORT=$(port 53)
router_yaml "$ROUTER_PORT" "fusion: { endpoint: \"http://127.0.0.1:$FUSION_PORT\", timeout: 500ms }" >"$WORK/router.yaml"
router_yaml "$ROUTER_INPROC_PORT" "fusion: {}  # in-process" >"$WORK/router-inproc.yaml"
start router env FEDSEARCH_AUTH__HS256_SECRET="$SECRET" "$BIN/router" --config "$WORK/router.yaml"; ROUTER_PID=$LAST_PID
start router-inproc env FEDSEARCH_AUTH__HS256_SECRET="$SECRET" "$BIN/router" --config "$WORK/router-inproc.yaml"; ROUTER_INPROC_PID=$LAST_PID
ROUTER_BASE_PORT='' ROUTER_BASE_PID=''
if [ -n "$BASE_BIN" ]; then
  ROUTER_BASE_PORT=$(port 54)
  router_yaml "$ROUTER_BASE_PORT" "fusion: { endpoint: \"http://127.0.0.1:$FUSION_PORT\", timeout: 500ms }" >"$WORK/router-base.yaml"
  start router-base env FEDSEARCH_AUTH__HS256_SECRET="$SECRET" "$BASE_BIN/router" --config "$WORK/router-base.yaml"; ROUTER_BASE_PID=$LAST_PID
  wait_healthy router-base "$ROUTER_BASE_PORT"
fi
wait_healthy fusion "$FUSION_PORT"
for i in 0 1 2; do wait_healthy "adapter-${NAMES[$i]}" "${ADAPTER_PORTS[$i]}"; done
wait_healthy router "$ROUTER_PORT"; wait_healthy router-inproc "$ROUTER_INPROC_PORT"

# --- the peer
PEER_PORT=$(port 80)
PEER_PID=$(PORT=$PEER_PORT WORKERS=1 VENV=$VENV PEER_SOURCES=docs:10:20,ticket:20:20,logs:30:20 \
  PEER_LOG="$WORK/peer.log" "$PEER_DIR/run.sh") || die "the peer did not start; see $WORK/peer.log"
PIDS+=("$PEER_PID")

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
for p in "$ROUTER_PORT" "$ROUTER_INPROC_PORT" $ROUTER_BASE_PORT; do
  "$BIN/fedsearch" --router "127.0.0.1:$p" --token "$TOKEN" --json search "$QUERY" >"$WORK/sanity-$p.json" \
    || die "sanity search on the router at $p failed"
  jq -e '(.hits | length) == 10 and ([.sources[] | select(.state == "ok")] | length) == 3' "$WORK/sanity-$p.json" >/dev/null \
    || die "sanity search on $p: expected 10 hits and 3 OK sources, got $(head -c 400 "$WORK/sanity-$p.json")"
done
curl -s -X POST "http://127.0.0.1:$PEER_PORT/search" -H 'Content-Type: application/json' --data-binary @"$WORK/search.json" \
  | jq -e '(.results | length) == 10' >/dev/null || die "sanity search on the peer failed"

# h2load_args SIDE KIND LEVEL — the generator's arguments for one measurement.
h2load_args() {
  local side=$1 kind=$2 level=$3 conns streams n
  if [ "$side" = peer ]; then
    # HTTP/1.1 keep-alive, one request in flight per connection.
    if [ "$kind" = closed ]; then conns=$level; else conns=50; fi
    echo "--h1 -c $conns -m 1"
    if [ "$kind" = open ]; then echo "--rps $(awk -v r="$level" -v c="$conns" 'BEGIN { printf "%g", r / c }')"; fi
    echo "-d $WORK/search.json -H content-type:application/json http://127.0.0.1:$PEER_PORT/search"
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
    local p=$ROUTER_PORT; [ "$side" = fedsearch-inproc ] && p=$ROUTER_INPROC_PORT; [ "$side" = fedsearch-base ] && p=$ROUTER_BASE_PORT
    echo "-d $WORK/search.grpc -H content-type:application/grpc -H te:trailers -H grpc-timeout:5S"
    echo "-H authorization:Bearer_TOKEN http://127.0.0.1:$p/fedsearch.v1.FederatedSearch/Search"
  fi
}
side_pids() { # SIDE — every process of that side
  case $1 in
    peer) echo "$PEER_PID" ;;
    fedsearch) echo "$ROUTER_PID $FUSION_PID ${ADAPTER_PIDS[*]}" ;;
    fedsearch-inproc) echo "$ROUTER_INPROC_PID ${ADAPTER_PIDS[*]}" ;;
    fedsearch-base) echo "$ROUTER_BASE_PID $FUSION_PID ${ADAPTER_PIDS[*]}" ;;
  esac
}
router_pid() { case $1 in fedsearch) echo "$ROUTER_PID" ;; fedsearch-inproc) echo "$ROUTER_INPROC_PID" ;; fedsearch-base) echo "$ROUTER_BASE_PID" ;; *) echo "" ;; esac; }
# grpc_failures SIDE — calls the side's router answered with an error status so far (its log's
# "call failed" lines, except the generator's own resets as it stops at the end of a run, which
# the router logs as CANCELLED or, for a stream reset before its request was read, UNKNOWN at 0 ms). h2load
# counts a gRPC error as an HTTP 200 answer, so these are subtracted from its answers.
grpc_failures() {
  local f
  case $1 in fedsearch) f=router ;; fedsearch-inproc) f=router-inproc ;; fedsearch-base) f=router-base ;; *) echo 0; return ;; esac
  grep '"call failed"' "$WORK/$f.log" 2>/dev/null | grep -vEc '"code":"(CANCELLED|UNKNOWN)"' || true
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
measure() { # SIDE KIND LEVEL ROUND
  local side=$1 kind=$2 level=$3 round=$4 name="$1-$2-$3-r$4" args pids rpid c0 r0 t0 t1 c1 r1 g
  # shellcheck disable=SC2207 # the arguments hold no spaces (paths under $WORK, header tokens)
  args=($(h2load_args "$side" "$kind" "$level"))
  read -ra pids < <(side_pids "$side")
  rpid=$(router_pid "$side")
  run_h2load "$WARMUP" '' "${args[@]}" >/dev/null 2>&1 || true
  local load1; load1=$(loadavg)
  local perf_pid=''
  if [ -n "${BENCH_PEER_PERF:-}" ] && [ -n "$rpid" ] && [ "$kind" = closed ] && [[ $PERF_DONE != *" $side "* ]] && command -v perf >/dev/null; then
    perf record -q -F 499 ${BENCH_PEER_PERF_ARGS:--g} -p "$rpid" -o "$WORK/perf-$side.data" >/dev/null 2>&1 &
    perf_pid=$!; PERF_DONE+=" $side "
  fi
  local f0 f1; f0=$(grpc_failures "$side")
  local fpid=''; [[ $side == fedsearch || $side == fedsearch-base ]] && fpid=$FUSION_PID
  local u0 u1; u0=$([ -n "$fpid" ] && tree_ticks "$fpid" || echo 0)
  c0=$(tree_ticks "${pids[@]}"); r0=$([ -n "$rpid" ] && tree_ticks "$rpid" || echo 0); t0=$(date +%s.%N)
  local gt="$WORK/$name.time"
  { TIMEFORMAT='%U %S'; time run_h2load "$DURATION" "$WORK/$name.log" "${args[@]}" >"$WORK/$name.out" 2>&1; } 2>"$gt"
  t1=$(date +%s.%N); c1=$(tree_ticks "${pids[@]}"); r1=$([ -n "$rpid" ] && tree_ticks "$rpid" || echo 0)
  f1=$(grpc_failures "$side"); u1=$([ -n "$fpid" ] && tree_ticks "$fpid" || echo 0)
  if [ -n "$perf_pid" ]; then
    kill -INT "$perf_pid" 2>/dev/null || true; wait "$perf_pid" 2>/dev/null || true
    perf report -i "$WORK/perf-$side.data" --no-children --sort dso,symbol --stdio 2>/dev/null | head -120 >"$WORK/perf-$side.txt" || true
    log "router profile ($side, closed $level): $WORK/perf-$side.txt"
  fi
  read -r gu gs <"$gt"
  python3 - "$side" "$kind" "$level" "$round" "$WORK/$name.out" "$WORK/$name.log" "$((c1 - c0))" "$((r1 - r0))" \
    "$t0" "$t1" "$CLK_TCK" "$gu" "$gs" "$load1" "$((f1 - f0))" "$((u1 - u0))" >>"$RUNS" <<'PY'
import json, re, sys
side, kind, level, rnd, out, logf, ticks, rticks, t0, t1, hz, gu, gs, load, grpc_errors, fticks = sys.argv[1:]
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
    "side": side, "kind": kind, "level": int(level), "round": int(rnd), "load1": float(load.split()[0]), "load": load,
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
log "$ROUNDS rounds × (closed loop at $CONCURRENCIES, open loop at $RATE q/s) × sides: $SIDES; ${DURATION}s each"
for round in $(seq "$ROUNDS"); do
  # Rotate the side order each round so no side always runs first (or right after another).
  k=$(( (round - 1) % ${#SIDE_LIST[@]} ))
  order=("${SIDE_LIST[@]:$k}" "${SIDE_LIST[@]:0:$k}")
  for c in $CONCURRENCIES; do
    for s in "${order[@]}"; do measure "$s" closed "$c" "$round"; done
  done
  for s in "${order[@]}"; do measure "$s" open "$RATE" "$round"; done
done
LOAD_END=$(loadavg)
WARNINGS=$(cat "$WORK"/router*.log | jq -Rr 'fromjson? | select(.level == "WARN") | .fields.message' | sort | uniq -c | sort -rn | awk '{ n = $1; $1 = ""; printf "%s×%s;", n, $0 }')
RSS=$(for s in router router-inproc fusion; do
  pid=$ROUTER_PID; [ $s = router-inproc ] && pid=$ROUTER_INPROC_PID; [ $s = fusion ] && pid=$FUSION_PID
  echo -n "$s $(awk '/VmRSS/ { print int($2 / 1024) }' /proc/$pid/status) MB, "
done; echo -n "each adapter $(awk '/VmRSS/ { print int($2 / 1024) }' /proc/${ADAPTER_PIDS[0]}/status) MB, peer $(awk '/VmRSS/ { print int($2 / 1024) }' /proc/$PEER_PID/status) MB")

# --- the Markdown section
: >"$WORK/perf-top.txt"
if [ -f "$WORK/perf-fedsearch.data" ]; then
  perf report -i "$WORK/perf-fedsearch.data" --no-children --sort dso,symbol --stdio -g none 2>/dev/null \
    | grep '%' | grep -v '^#' | head -25 | sed -E 's/ +$//; s/^ +//' | cut -c1-150 >"$WORK/perf-top.txt" || true
fi
python3 - "$RUNS" "$WORK/section.md" <<PY
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
sides = "$SIDES".split()
concs = [int(c) for c in "$CONCURRENCIES".split()]
rate = int(float("$RATE"))
def cell(side, kind, level, key, fmt="{:.2f}"):
    v = [r[key] for r in runs if r["side"] == side and r["kind"] == kind and r["level"] == level and r[key] is not None]
    if not v:
        return None, "–"
    m = statistics.median(v)
    return m, (fmt.format(m) + (f" ({fmt.format(min(v))}–{fmt.format(max(v))})" if len(v) > 1 else ""))
def ratio(a, b, fmt="{:.2f}×"):
    return fmt.format(a / b) if a and b else "–"
L = []
L.append("$SECTION")
L.append("")
L.append("Written by \`scripts/bench-peer.sh\` (not by \`make bench\`; scripts/bench.sh carries this section over).")
L.append("")
L.append("- Command: \`scripts/bench-peer.sh\` (BENCH_PEER_ROUNDS=$ROUNDS, BENCH_PEER_DURATION=$DURATION s, BENCH_PEER_WARMUP=$WARMUP s, BENCH_PEER_CONCURRENCIES=\"$CONCURRENCIES\", BENCH_PEER_RATE=$RATE)")
L.append("- Date: $STARTED; commit $(git rev-parse --short HEAD 2>/dev/null)$(git diff --quiet HEAD -- crates 2>/dev/null || echo ' (with uncommitted changes in crates/)'); machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(uname -sr)")
L.append("- Load average (1/5/15 min): $LOAD_START at the start, $LOAD_END at the end; each run's 1-minute load at its start is in the last column. Both sides and the generator share the 2 cores.")
L.append("- Scenario, both sides: three mock sources at 10/20/30 ms, 20 hits each, top_k 10, query \"$QUERY\". **peer** = the seed's design (../shared/bench/seed-peer, \`run.sh\`, 1 uvicorn worker, PEER_SOURCES=docs:10:20,ticket:20:20,logs:30:20); **fedsearch** = release router + fusion service + three \`scripted-adapter\` processes (5 processes); **fedsearch-inproc** = a second router over the same adapters fusing in-process (\`fusion: {}\`, 4 processes)$([ -n "$BASE_BIN" ] && echo "; **fedsearch-base** = the router of an earlier build ($BASE_BIN/router) with the same fusion service and adapters, for before/after in this run").")
L.append("- Generator, both sides: h2load (nghttp2-client): the peer over HTTP/1.1 keep-alive (one request in flight per connection, like wrk), fedsearch over HTTP/2 with gRPC framing (concurrency spread over 4–5 connections, like fedsearch-loadgen's channels). One generator, one clock and one percentile computation for both, so the driver is not the difference. Open loop: the rate paced over 50 (peer) or 5 (fedsearch) connections.")
L.append("- Interleaved: $ROUNDS rounds, each running every measurement on every side back to back (side order rotated per round); cells are the median over rounds (min–max). CPU per search = user+system CPU of all the side's processes (/proc/<pid>/stat) in the measured window ÷ answered searches. Ratios are of medians from this one run.")
L.append("")
pairs = [(s, "peer") for s in sides if s != "peer" and "peer" in sides]
if "fedsearch" in sides and "fedsearch-base" in sides:
    pairs.append(("fedsearch", "fedsearch-base"))
L.append("| measurement | " + " | ".join(sides) + " | " + " | ".join(f"{a} vs {b}" for a, b in pairs) + " |")
L.append("|---|" + "---|" * (len(sides) + len(pairs)))
rows = []
for c in concs:
    rows.append((f"closed c={c}: searches/s", "closed", c, "qps", "{:.0f}", "higher"))
    rows.append((f"closed c={c}: CPU ms/search (all processes)", "closed", c, "cpu_ms_per_search", "{:.3f}", "lower"))
    rows.append((f"closed c={c}: p50 / p99 ms", "closed", c, ("p50", "p99"), "{:.1f}", "lat"))
rows.append((f"open {rate} q/s: achieved q/s", "open", rate, "qps", "{:.0f}", "higher"))
rows.append((f"open {rate} q/s: CPU ms/search (all processes)", "open", rate, "cpu_ms_per_search", "{:.3f}", "lower"))
rows.append((f"open {rate} q/s: p50 / p95 / p99 ms", "open", rate, ("p50", "p95", "p99"), "{:.2f}", "lat"))
rows.append((f"open {rate} q/s: overhead over the 30 ms source, p50 / p99 ms", "open", rate, ("p50", "p99"), "{:.2f}", "ovh"))
for label, kind, level, key, fmt, better in rows:
    vals, cells = {}, []
    for s in sides:
        if isinstance(key, tuple):
            ms = [cell(s, kind, level, k, fmt)[0] for k in key]
            if better == "ovh":
                ms = [m - 30 if m is not None else None for m in ms]
            vals[s] = ms
            cells.append(" / ".join(fmt.format(m) if m is not None else "–" for m in ms))
        else:
            m, text = cell(s, kind, level, key, fmt)
            vals[s] = m
            cells.append(text)
    rs = []
    for s, other in pairs:
        a, b = vals[s], vals.get(other)
        if better == "higher":
            rs.append(ratio(a, b))
        elif better == "lower":
            rs.append(ratio(a, b))
        else:
            rs.append(" / ".join(ratio(x, y) for x, y in zip(a, b or [None] * len(a))))
    L.append(f"| {label} | " + " | ".join(cells) + " | " + " | ".join(rs) + " |")
L.append("")
for who, key in (("Router", "router_cpu_ms_per_search"), ("Fusion service", "fusion_cpu_ms_per_search"), ("The three adapters together", "adapters_cpu_ms_per_search")):
    got = [(s, k, lv) for s in sides if s != "peer" for k, lv in [("closed", c) for c in concs] + [("open", rate)] if cell(s, k, lv, key)[0] is not None]
    if got:
        L.append(f"{who} alone, CPU ms/search (median): " + "; ".join(f"{s} {k} {'c=' if k == 'closed' else ''}{lv}{' q/s' if k == 'open' else ''}: {cell(s, k, lv, key, '{:.3f}')[1]}" for s, k, lv in got) + ".")
        L.append("")
L.append("")
errs = sum(r["errors"] for r in runs)
bpa = {s: sorted({r['bytes_per_answer'] for r in runs if r['side'] == s}) for s in sides}
L.append(f"Errors over all runs: {errs}. Response bytes per answer (an error answer has none): " + "; ".join(f"{s} {min(v)}–{max(v)}" for s, v in bpa.items()) + ". Generator CPU (cores, median over runs): " + "; ".join(f"{s} {statistics.median([r['gen_cpu_cores'] for r in runs if r['side'] == s]):.2f}" for s in sides) + ".")
L.append("")
L.append("Router warnings during the runs: ${WARNINGS:-none}. RSS at the end: $RSS.")
L.append("")
L.append("Errors count h2load's failed requests and the calls each router logged as failed (\`call failed\`, other than the generator's cancellations at the end of a run): h2load books a gRPC error as an HTTP 200 answer. A \`locally-reset streams reached limit\` warning would mean h2 closed an adapter connection after 1024 resets (issue 15); the clients remember up to 1,024 reset streams for 5 s (fedsearch_core::grpc::client_endpoint), so frames in flight for a cancelled sub-query no longer count toward that limit.")
L.append("")
import os
top = "$WORK/perf-top.txt"
if os.path.exists(top) and os.path.getsize(top) > 0:
    L.append("Router profile (\`perf record -F 499\` of the fedsearch router during its first closed-loop run; self time by symbol, top frames):")
    L.append("")
    L.append("\`\`\`")
    L.extend(l.rstrip() for l in open(top))
    L.append("\`\`\`")
    L.append("")
L.append("Every run (JSON lines, one per measurement):")
L.append("")
L.append("| side | kind | level | round | q/s | p50 ms | p99 ms | errors | CPU ms/search | router CPU ms/search | gen cores | load 1m |")
L.append("|---|---|---|---|---|---|---|---|---|---|---|---|")
for r in runs:
    L.append(f"| {r['side']} | {r['kind']} | {r['level']} | {r['round']} | {r['qps']} | {r['p50']} | {r['p99']} | {r['errors']} | {r['cpu_ms_per_search']} | {r['router_cpu_ms_per_search'] or '–'} | {r['gen_cpu_cores']} | {r['load1']} |")
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
