#!/usr/bin/env bash
# all.sh — install, start and seed every backend the tests and the demo use, or stop them all.
#
#   all.sh start [BACKEND...]   default: postgres mariadb sqlite opensearch dokuwiki redis chroma
#   all.sh stop  [BACKEND...]
#   all.sh env                  prints `export` lines for every .run/*.env file
#
# Installs run one after another (apt holds one lock); starts run in parallel. A failure names
# the backend and points at its log under $FEDSEARCH_RUN_DIR.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cmd=${1:-}; shift || true
backends=("$@")
[ ${#backends[@]} -eq 0 ] && backends=(postgres mariadb sqlite opensearch dokuwiki redis chroma)

case "$cmd" in
  start)
    for b in "${backends[@]}"; do
      log "installing $b (if missing)"
      "$HERE/$b.sh" install >"$FEDSEARCH_RUN_DIR/install-$b.log" 2>&1 \
        || { tail -20 "$FEDSEARCH_RUN_DIR/install-$b.log" >&2; die "could not install $b (log: $FEDSEARCH_RUN_DIR/install-$b.log)"; }
    done
    # One seeding instant for every backend: data written "N days ago" means the same instant
    # in OpenSearch, SQL and the wiki, and `all.sh env` exports it as FEDSEARCH_SEED_NOW, which
    # scripts/eval.sh gives `fedsearch eval` as the as_of of questions that carry none (so
    # "yesterday" reads the same day whatever the hour the eval runs). Starting some backends
    # again keeps the instant the others were seeded with.
    seed_env="$FEDSEARCH_RUN_DIR/seed.env"
    if [ -z "${FEDSEARCH_NOW:-}" ] && [ "$#" -gt 0 ] && [ -f "$seed_env" ]; then
      FEDSEARCH_NOW=$(sed -n 's/^FEDSEARCH_SEED_NOW=//p' "$seed_env")
    fi
    export FEDSEARCH_NOW=${FEDSEARCH_NOW:-$(date -u +%s)}
    printf '# the instant the backends were seeded at (unix seconds)\nFEDSEARCH_SEED_NOW=%s\n' "$FEDSEARCH_NOW" >"$seed_env"
    pids=()
    for b in "${backends[@]}"; do
      (
        "$HERE/$b.sh" start && { [ "$b" != opensearch ] || "$HERE/$b.sh" seed; }
      ) >"$FEDSEARCH_RUN_DIR/start-$b.log" 2>&1 &
      pids+=("$!:$b")
    done
    failed=0
    for pb in "${pids[@]}"; do
      pid=${pb%%:*}; b=${pb#*:}
      if wait "$pid"; then log "$b is up"; else
        tail -20 "$FEDSEARCH_RUN_DIR/start-$b.log" >&2
        log "error: $b did not start (log: $FEDSEARCH_RUN_DIR/start-$b.log)"; failed=1
      fi
    done
    [ "$failed" -eq 0 ] || exit 1
    ;;
  stop)
    for b in "${backends[@]}"; do "$HERE/$b.sh" stop >/dev/null 2>&1 || log "warning: stopping $b failed"; done
    ;;
  env)
    for f in "$FEDSEARCH_RUN_DIR"/*.env; do
      [ -f "$f" ] || continue
      sed -e '/^#/d' -e '/^$/d' -e 's/^/export /' "$f"
    done
    ;;
  *) die "usage: all.sh start|stop|env [BACKEND...]" ;;
esac
