#!/usr/bin/env bash
# bench-lib.sh — the processes of one benchmark run, for scripts/bench.sh, bench-peer.sh and
# bench-tls.sh. Source it after lib.sh: `. "$(dirname "${BASH_SOURCE[0]}")/bench-lib.sh" NAME`. It
# makes $WORK ($FEDSEARCH_RUN_DIR/NAME.XXXXXX, where every process logs), a $SECRET for this run
# only (passed through the environment, never written to disk), `start NAME CMD...`, `stop_pids`,
# `free_port`, `wait_healthy`, `cpu_ticks`, `loadavg`, and stops every process it started when the
# script exits, success or not.

WORK=$(mktemp -d "$FEDSEARCH_RUN_DIR/$1.XXXXXX")
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

SECRET=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')

# Services read FEDSEARCH_* variables as config overrides (deny_unknown_fields): start them
# with none of the caller's, so a stray FEDSEARCH_RUN_DIR cannot break their config.
UNSET_ENV=()
for v in $(compgen -e); do [[ $v == FEDSEARCH_* ]] && UNSET_ENV+=(-u "$v"); done

# start NAME CMD... — starts CMD in the background, logging to $WORK/NAME.log; sets LAST_PID
# (`env` execs CMD, so LAST_PID is CMD's own pid).
start() {
  local name=$1; shift
  env "${UNSET_ENV[@]}" "$@" >"$WORK/$name.log" 2>&1 &
  LAST_PID=$!
  PIDS+=("$LAST_PID")
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

# wait_healthy NAME PORT — waits for the gRPC health check ($LOADGEN, else $BIN/fedsearch-loadgen).
wait_healthy() {
  "${LOADGEN:-$BIN/fedsearch-loadgen}" --target "http://127.0.0.1:$2" --wait-healthy 30s 2>/dev/null \
    || die "$1 did not become healthy on 127.0.0.1:$2; see $WORK/$1.log"
}

loadavg() { cut -d' ' -f1-3 /proc/loadavg; }

# cpu_ticks PID... — user+system CPU ticks used so far by these processes together.
cpu_ticks() {
  local pid total=0 f
  for pid in "$@"; do
    # Fields after the `(comm)`: utime and stime are the 12th and 13th.
    read -ra f < <(sed 's/^.*) //' "/proc/$pid/stat" 2>/dev/null) || continue
    total=$((total + f[11] + f[12]))
  done
  echo "$total"
}
CLK_TCK=$(getconf CLK_TCK)
