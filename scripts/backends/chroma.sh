#!/usr/bin/env bash
# chroma.sh — the vector store of the vector adapter: a Chroma server (`chroma run`, the PyPI
# package chromadb, pinned) on 127.0.0.1, persistent in its own directory; and the embedding model
# the adapter and the indexer read (scripts/vector-model.sh).
#
#   chroma.sh install            venv + pip install chromadb into $FEDSEARCH_RUN_DIR/chroma/venv; the model
#   chroma.sh start              chroma run on 127.0.0.1:$CHROMA_PORT (28800); reuses kept data
#   chroma.sh stop [--keep-data] stop it; removes the data dir unless --keep-data
#   chroma.sh status             exit 0 when the heartbeat answers, 3 otherwise
#   chroma.sh spec               write Spruce Mall's wiki ACL (dokuwiki.sh) to $FEDSEARCH_RUN_DIR/spruce-wiki-auth.spec
#   chroma.sh index CONFIG...    (the same, then) embed the `index:` inputs of each vector-adapter config ($BIN, else a debug build)
#
# Written to $FEDSEARCH_RUN_DIR/chroma.env: CHROMA_URL, CHROMA_PORT and FEDSEARCH_VECTOR_MODEL_DIR.
# Settings: CHROMA_PORT, CHROMA_DIR (default $FEDSEARCH_RUN_DIR/chroma/<port>: a second instance on
# another port never shares data with the first).
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

CHROMA_VERSION=1.5.9
PORT=${CHROMA_PORT:-28800}
[[ $PORT =~ ^[0-9]+$ ]] || die "CHROMA_PORT must be a port number, got '$PORT'"
BASE=$FEDSEARCH_RUN_DIR/chroma
VENV=$BASE/venv
DIR=${CHROMA_DIR:-$BASE/$PORT}
PID_FILE=$DIR/chroma.pid
LOG_FILE=$DIR/chroma.log
if [ "$PORT" = 28800 ]; then ENV_FILE=$FEDSEARCH_RUN_DIR/chroma.env; else ENV_FILE=$DIR/chroma.env; fi
SCRIPTS=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

answers() { curl -fsS --max-time 2 "http://127.0.0.1:$PORT/api/v2/heartbeat" >/dev/null 2>&1; }
alive() { [ -f "$PID_FILE" ] && kill -0 "$(cat "$PID_FILE")" 2>/dev/null \
  && tr '\0' ' ' <"/proc/$(cat "$PID_FILE")/cmdline" 2>/dev/null | grep -qF -- "--port $PORT"; }

# Spruce Mall's wiki ACL is written inline in dokuwiki.sh; the indexer reads it as a file.
write_spec() {
  sed -n "/^AUTH_SPEC='/,/^'/p" "$SCRIPTS/backends/dokuwiki.sh" | sed -e "1s/^AUTH_SPEC='//" -e '$d' \
    >"$FEDSEARCH_RUN_DIR/spruce-wiki-auth.spec"
}

case "${1:-}" in
  install)
    if [ "$("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("chromadb"))' 2>/dev/null)" != "$CHROMA_VERSION" ]; then
      command -v python3 >/dev/null || die "python3 is needed for chromadb"
      command -v curl >/dev/null || apt_install curl
      [ -x "$VENV/bin/python" ] || python3 -m venv "$VENV" || die "could not create $VENV"
      log "installing chromadb==$CHROMA_VERSION from PyPI into $VENV"
      "$VENV/bin/pip" install -q --disable-pip-version-check "chromadb==$CHROMA_VERSION" \
        || die "could not install chromadb==$CHROMA_VERSION from PyPI"
    fi
    "$SCRIPTS/vector-model.sh" install
    ;;
  start)
    [ -x "$VENV/bin/chroma" ] || die "chromadb is not installed: run $0 install"
    model=$("$SCRIPTS/vector-model.sh" dir) || die "the embedding model is not installed: run $0 install"
    if alive && answers; then
      log "chroma is already running on 127.0.0.1:$PORT"
    else
      rm -f "$PID_FILE"
      port_free "$PORT"
      mkdir -p "$DIR/data"
      # no telemetry, no network beyond the loopback listener
      ANONYMIZED_TELEMETRY=False nohup "$VENV/bin/chroma" run --host 127.0.0.1 --port "$PORT" --path "$DIR/data" \
        >"$LOG_FILE" 2>&1 </dev/null &
      echo $! >"$PID_FILE"
      for _ in $(seq 300); do answers && break; alive || break; sleep 0.1; done
      answers || die "chroma did not answer on 127.0.0.1:$PORT; see $LOG_FILE"
    fi
    printf 'CHROMA_URL=http://127.0.0.1:%s\nCHROMA_PORT=%s\nFEDSEARCH_VECTOR_MODEL_DIR=%s\n' "$PORT" "$PORT" "$model" >"$ENV_FILE"
    log "chroma on 127.0.0.1:$PORT (env: $ENV_FILE)"
    ;;
  stop)
    stop_pidfile "$PID_FILE"
    rm -f "$ENV_FILE"
    [ "${2:-}" = --keep-data ] || rm -rf "$DIR"
    ;;
  status)
    answers || exit 3
    ;;
  spec)
    write_spec
    log "wrote $FEDSEARCH_RUN_DIR/spruce-wiki-auth.spec"
    ;;
  index)
    shift
    [ $# -gt 0 ] || die "usage: $0 index CONFIG..."
    answers || die "chroma is not running on 127.0.0.1:$PORT: run $0 start"
    set -a; . "$ENV_FILE"; set +a
    write_spec
    # BIN: a folder with a built fedsearch-vector-index (as scripts/eval.sh uses); else a debug build
    indexer=${BIN:-}/fedsearch-vector-index
    if [ -z "${BIN:-}" ] || [ ! -x "$indexer" ]; then
      (cd "$FEDSEARCH_ROOT" && cargo build -q -p fedsearch-vector-adapter --bin fedsearch-vector-index)
      indexer=${CARGO_TARGET_DIR:-$FEDSEARCH_ROOT/target}/debug/fedsearch-vector-index
    fi
    for c in "$@"; do
      "$indexer" --config "$c" || die "indexing $c failed"
    done
    ;;
  *) die "usage: $0 install|start|stop [--keep-data]|status|spec|index CONFIG..." ;;
esac
