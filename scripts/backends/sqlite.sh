#!/usr/bin/env bash
# sqlite.sh — the sample `shop` database (data/sample/sql) as an SQLite file for fedsearch, and
# beside it the held-out company's `nimbus` billing database (data/nimbus/sql, absolute dates).
#
#   sqlite.sh install            apt-get the sqlite3 CLI
#   sqlite.sh start              create + seed $FEDSEARCH_RUN_DIR/shop.sqlite and nimbus.sqlite
#                                (reuses existing files)
#   sqlite.sh stop [--keep-data] nothing runs; removes the files unless --keep-data
#   sqlite.sh status             exit 0 when the file exists, 3 otherwise
#   sqlite.sh seed               drop + re-create the tables and rows in place (one transaction)
#   sqlite.sh verify             reads work and writes fail through a read-only (mode=ro) open
#
# SQLite has no roles: opening the file read-only is the equivalent of the read-only role.
# Written to $FEDSEARCH_RUN_DIR/sqlite.env:
#   SQLITE_URL=sqlite:///abs/path/shop.sqlite?mode=ro   (adapter: read-only open)
#   SQLITE_ADMIN_URL=sqlite:///abs/path/shop.sqlite     (setup and tests)
#   SQLITE_PATH=/abs/path/shop.sqlite
#   NIMBUS_SQLITE_URL=sqlite:///abs/path/nimbus.sqlite?mode=ro (and NIMBUS_SQLITE_ADMIN_URL, _PATH)
#   ORCA_SQLITE_URL=sqlite:///abs/path/orca.sqlite?mode=ro     (and ORCA_SQLITE_ADMIN_URL, _PATH; data/orca/sql)
#   KESTREL_SQLITE_URL=sqlite:///abs/path/kestrel.sqlite?mode=ro (and KESTREL_SQLITE_ADMIN_URL, _PATH; data/kestrel/sql)
#   HERON_SQLITE_URL=sqlite:///abs/path/heron.sqlite?mode=ro     (and HERON_SQLITE_ADMIN_URL, _PATH; data/heron/sql)
# The file stays in rollback-journal mode (journal_mode=DELETE), never WAL: a WAL database needs
# its -shm file to be writable, which breaks read-only opens.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

SQLITE_PATH=$FEDSEARCH_RUN_DIR/shop.sqlite
SQLITE_ENV=$FEDSEARCH_RUN_DIR/sqlite.env
SQL_DIR=$FEDSEARCH_ROOT/data/sample/sql
NIMBUS_SQLITE_PATH=$FEDSEARCH_RUN_DIR/nimbus.sqlite
NIMBUS_SQL_DIR=$FEDSEARCH_ROOT/data/nimbus/sql
ORCA_SQLITE_PATH=$FEDSEARCH_RUN_DIR/orca.sqlite   # second tuning company (data/orca)
ORCA_SQL_DIR=$FEDSEARCH_ROOT/data/orca/sql
KESTREL_SQLITE_PATH=$FEDSEARCH_RUN_DIR/kestrel.sqlite   # second held-out company (data/kestrel)
KESTREL_SQL_DIR=$FEDSEARCH_ROOT/data/kestrel/sql
HERON_SQLITE_PATH=$FEDSEARCH_RUN_DIR/heron.sqlite   # third held-out company (data/heron)
HERON_SQL_DIR=$FEDSEARCH_ROOT/data/heron/sql

need_cli() { command -v sqlite3 >/dev/null || die "sqlite3 CLI not found; run: $0 install"; }
ro_uri() { echo "file:$SQLITE_PATH?mode=ro"; }   # the same open, as the sqlite3 CLI spells it

cmd_install() {
  apt_install sqlite3
  need_cli
  log "sqlite3 $(sqlite3 --version | cut -d' ' -f1)"
}

write_env() {
  cat >"$SQLITE_ENV" <<EOF
# Written by scripts/backends/sqlite.sh start.
SQLITE_PATH=$SQLITE_PATH
SQLITE_URL=sqlite://$SQLITE_PATH?mode=ro
SQLITE_ADMIN_URL=sqlite://$SQLITE_PATH
NIMBUS_SQLITE_PATH=$NIMBUS_SQLITE_PATH
NIMBUS_SQLITE_URL=sqlite://$NIMBUS_SQLITE_PATH?mode=ro
NIMBUS_SQLITE_ADMIN_URL=sqlite://$NIMBUS_SQLITE_PATH
ORCA_SQLITE_PATH=$ORCA_SQLITE_PATH
ORCA_SQLITE_URL=sqlite://$ORCA_SQLITE_PATH?mode=ro
ORCA_SQLITE_ADMIN_URL=sqlite://$ORCA_SQLITE_PATH
KESTREL_SQLITE_PATH=$KESTREL_SQLITE_PATH
KESTREL_SQLITE_URL=sqlite://$KESTREL_SQLITE_PATH?mode=ro
KESTREL_SQLITE_ADMIN_URL=sqlite://$KESTREL_SQLITE_PATH
HERON_SQLITE_PATH=$HERON_SQLITE_PATH
HERON_SQLITE_URL=sqlite://$HERON_SQLITE_PATH?mode=ro
HERON_SQLITE_ADMIN_URL=sqlite://$HERON_SQLITE_PATH
EOF
}

cmd_seed() {
  need_cli
  # One transaction (render.sh emits BEGIN ... COMMIT): readers see the old or the new data, never half.
  { echo "PRAGMA journal_mode = DELETE;"; bash "$SQL_DIR/render.sh"; } \
    | sqlite3 -bail "$SQLITE_PATH" >/dev/null || die "seeding $SQLITE_PATH failed"
  log "seeded $SQLITE_PATH ($(sqlite3 "$(ro_uri)" 'SELECT count(*) FROM orders') orders)"
  { echo "PRAGMA journal_mode = DELETE;"; bash "$NIMBUS_SQL_DIR/render.sh"; } \
    | sqlite3 -bail "$NIMBUS_SQLITE_PATH" >/dev/null || die "seeding $NIMBUS_SQLITE_PATH failed"
  log "seeded $NIMBUS_SQLITE_PATH ($(sqlite3 "file:$NIMBUS_SQLITE_PATH?mode=ro" 'SELECT count(*) FROM invoices') invoices)"
  { echo "PRAGMA journal_mode = DELETE;"; bash "$ORCA_SQL_DIR/render.sh"; } \
    | sqlite3 -bail "$ORCA_SQLITE_PATH" >/dev/null || die "seeding $ORCA_SQLITE_PATH failed"
  log "seeded $ORCA_SQLITE_PATH ($(sqlite3 "file:$ORCA_SQLITE_PATH?mode=ro" 'SELECT count(*) FROM shipments') shipments)"
  { echo "PRAGMA journal_mode = DELETE;"; bash "$KESTREL_SQL_DIR/render.sh"; } \
    | sqlite3 -bail "$KESTREL_SQLITE_PATH" >/dev/null || die "seeding $KESTREL_SQLITE_PATH failed"
  log "seeded $KESTREL_SQLITE_PATH ($(sqlite3 "file:$KESTREL_SQLITE_PATH?mode=ro" 'SELECT count(*) FROM installations') installations)"
  seed_heron
}

# The third held-out company alone (data/heron/sql), also for loading it beside running ones.
seed_heron() {
  { echo "PRAGMA journal_mode = DELETE;"; bash "$HERON_SQL_DIR/render.sh"; } \
    | sqlite3 -bail "$HERON_SQLITE_PATH" >/dev/null || die "seeding $HERON_SQLITE_PATH failed"
  log "seeded $HERON_SQLITE_PATH ($(sqlite3 "file:$HERON_SQLITE_PATH?mode=ro" 'SELECT count(*) FROM invoices') invoices)"
}

cmd_start() {
  need_cli
  if [ -s "$SQLITE_PATH" ] && sqlite3 "$(ro_uri)" 'SELECT 1 FROM orders LIMIT 1' >/dev/null 2>&1 \
    && sqlite3 "file:$NIMBUS_SQLITE_PATH?mode=ro" 'SELECT 1 FROM invoices LIMIT 1' >/dev/null 2>&1 \
    && sqlite3 "file:$ORCA_SQLITE_PATH?mode=ro" 'SELECT 1 FROM shipments LIMIT 1' >/dev/null 2>&1 \
    && sqlite3 "file:$KESTREL_SQLITE_PATH?mode=ro" 'SELECT 1 FROM installations LIMIT 1' >/dev/null 2>&1; then
    log "reusing $SQLITE_PATH, $NIMBUS_SQLITE_PATH, $ORCA_SQLITE_PATH and $KESTREL_SQLITE_PATH"
    # a run dir seeded before Heron existed gets it without reloading the others
    if ! sqlite3 "file:$HERON_SQLITE_PATH?mode=ro" 'SELECT 1 FROM invoices LIMIT 1' >/dev/null 2>&1; then
      rm -f "$HERON_SQLITE_PATH" "$HERON_SQLITE_PATH-journal"
      seed_heron
    fi
  else
    rm -f "$SQLITE_PATH" "$SQLITE_PATH-journal" "$NIMBUS_SQLITE_PATH" "$NIMBUS_SQLITE_PATH-journal" \
      "$ORCA_SQLITE_PATH" "$ORCA_SQLITE_PATH-journal" "$KESTREL_SQLITE_PATH" "$KESTREL_SQLITE_PATH-journal" \
      "$HERON_SQLITE_PATH" "$HERON_SQLITE_PATH-journal"
    cmd_seed
  fi
  write_env
  log "ready: $SQLITE_PATH (env: $SQLITE_ENV)"
}

cmd_stop() {
  case "${1:-}" in
    --keep-data) log "kept $SQLITE_PATH" ;;
    "") rm -f "$SQLITE_PATH" "$SQLITE_PATH-journal" "$NIMBUS_SQLITE_PATH" "$NIMBUS_SQLITE_PATH-journal" "$SQLITE_ENV" \
          "$ORCA_SQLITE_PATH" "$ORCA_SQLITE_PATH-journal" "$KESTREL_SQLITE_PATH" "$KESTREL_SQLITE_PATH-journal" \
          "$HERON_SQLITE_PATH" "$HERON_SQLITE_PATH-journal"
        log "removed $SQLITE_PATH, $NIMBUS_SQLITE_PATH, $ORCA_SQLITE_PATH, $KESTREL_SQLITE_PATH and $HERON_SQLITE_PATH" ;;
    *) die "usage: $0 stop [--keep-data]" ;;
  esac
}

cmd_status() {
  if [ -s "$SQLITE_PATH" ]; then echo "sqlite: $SQLITE_PATH present"; return 0; fi
  echo "sqlite: no database file"; return 3
}

# verify — through a mode=ro open (what SQLITE_URL gives the adapter): reads work, writes fail.
cmd_verify() {
  need_cli
  [ -s "$SQLITE_PATH" ] || die "no database; run: $0 start"
  local fail=0 out sql ro; ro=$(ro_uri)
  out=$(sqlite3 -bail "$ro" "SELECT count(*) || ' orders, ' || (SELECT name FROM customers WHERE id = 'C1001') FROM orders" 2>&1) \
    && [ "$out" = "8 orders, 张伟 Zhang Wei" ] \
    && echo "ok   SELECT via $ro: $out" || { echo "FAIL SELECT via $ro: $out"; fail=1; }
  for sql in \
    "INSERT INTO customers (id, name, business_line, city) VALUES ('C9999', 'x', 'retail', 'x')" \
    "UPDATE orders SET status = 'delivered' WHERE order_no = 'SO20261001'" \
    "DELETE FROM refunds" \
    "DROP TABLE shipments" \
    "CREATE TABLE evil (x int)"; do
    if out=$(sqlite3 -bail "$ro" "$sql" 2>&1); then
      echo "FAIL write allowed: $sql"; fail=1
    elif grep -q 'attempt to write a readonly database' <<<"$out"; then
      echo "ok   denied: ${sql%% (*} -> $(head -1 <<<"$out")"
    else
      echo "FAIL unexpected error for $sql: $out"; fail=1
    fi
  done
  return $fail
}

case "${1:-}" in
  install) cmd_install ;;
  start) cmd_start ;;
  stop) shift; cmd_stop "$@" ;;
  status) cmd_status ;;
  seed) cmd_seed ;;
  verify) cmd_verify ;;
  *) die "usage: $0 install|start|stop [--keep-data]|status|seed|verify" ;;
esac
