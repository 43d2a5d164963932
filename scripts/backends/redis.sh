#!/usr/bin/env bash
# redis.sh — a Redis server (Debian's redis-server) for the router's shared answer cache.
#
#   redis.sh install     apt-get redis-server (the system service is not used)
#   redis.sh start       redis-server on 127.0.0.1:$REDIS_PORT (6389), no persistence, own dir
#   redis.sh stop        stop it
#   redis.sh status      exit 0 when it answers PING, 3 otherwise
#
# Written to $FEDSEARCH_RUN_DIR/redis.env: REDIS_URL=redis://127.0.0.1:PORT/ and REDIS_PORT.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

PORT=${REDIS_PORT:-6389}
[[ $PORT =~ ^[0-9]+$ ]] || die "REDIS_PORT must be a port number, got '$PORT'"
DIR=$FEDSEARCH_RUN_DIR/redis
PID_FILE=$FEDSEARCH_RUN_DIR/redis.pid
ENV_FILE=$FEDSEARCH_RUN_DIR/redis.env
LOG_FILE=$FEDSEARCH_RUN_DIR/redis.log

answers() { redis-cli -h 127.0.0.1 -p "$PORT" ping 2>/dev/null | grep -q PONG; }

case "${1:-}" in
  install)
    apt_install redis-server redis-tools
    ;;
  start)
    command -v redis-server >/dev/null || die "redis-server is not installed: run $0 install"
    if [ -f "$PID_FILE" ] && kill -0 "$(cat "$PID_FILE")" 2>/dev/null && answers; then
      log "redis is already running on 127.0.0.1:$PORT"
    else
      rm -f "$PID_FILE"
      port_free "$PORT"
      mkdir -p "$DIR"
      redis-server --bind 127.0.0.1 --port "$PORT" --dir "$DIR" --save '' --appendonly no \
        --daemonize yes --pidfile "$PID_FILE" --logfile "$LOG_FILE" --protected-mode yes
      wait_tcp "$PORT" 30 || die "redis-server did not listen on 127.0.0.1:$PORT; see $LOG_FILE"
      for _ in $(seq 50); do answers && break; sleep 0.1; done
      answers || die "redis-server does not answer PING; see $LOG_FILE"
    fi
    printf 'REDIS_URL=redis://127.0.0.1:%s/\nREDIS_PORT=%s\n' "$PORT" "$PORT" >"$ENV_FILE"
    log "redis on 127.0.0.1:$PORT (env: $ENV_FILE)"
    ;;
  stop)
    stop_pidfile "$PID_FILE"
    rm -f "$ENV_FILE"
    ;;
  status)
    answers || exit 3
    ;;
  *) die "usage: $0 install|start|stop|status" ;;
esac
