#!/usr/bin/env bash
# mariadb.sh — a throwaway MariaDB server for fedsearch on 127.0.0.1, holding the sample `shop`
# database (data/sample/sql, utf8mb4) with an owner account and a read-only account for the adapter,
# and the held-out company's `nimbus` billing database (data/nimbus/sql) with the same accounts.
#
#   mariadb.sh install            apt-get mariadb-server + mariadb-client
#   mariadb.sh start              mariadb-install-db (first time) + start + accounts + database + seed
#   mariadb.sh stop [--keep-data] clean shutdown; removes the data dir unless --keep-data
#   mariadb.sh status             exit 0 when running, 3 when stopped
#   mariadb.sh seed               drop + re-create the tables and rows (idempotent); server must run
#   mariadb.sh verify             SELECT works and writes fail for the read-only account
#
# Everything lives in $FEDSEARCH_RUN_DIR/mariadb (data/, unix socket, pid, log). mariadbd runs with
# --no-defaults, so /etc/mysql and the Debian service are neither used nor touched. As root the
# server runs as the OS user `mysql` (from the Debian package) or, failing that, --user=root.
# Bootstrap access is root@localhost via unix_socket auth on the private socket; the app accounts
# exist only @'127.0.0.1' (TCP, mysql_native_password, which sqlx supports).
# Connection URLs are written to $FEDSEARCH_RUN_DIR/mariadb.env:
#   MARIADB_RO_URL=mysql://fedsearch_ro:PASS@127.0.0.1:53306/shop       (SELECT only)
#   MARIADB_ADMIN_URL=mysql://fedsearch_admin:PASS@127.0.0.1:53306/shop (all on shop.*; setup/tests)
#   NIMBUS_MARIADB_RO_URL / NIMBUS_MARIADB_ADMIN_URL: the same for the `nimbus` database
#   ORCA_MARIADB_RO_URL / ORCA_MARIADB_ADMIN_URL: the same for the `orca` database (data/orca/sql)
# TLS is not configured on the server; sqlx's default ssl-mode=preferred falls back to plain TCP.
#
# Settings (environment): MARIADB_PORT (53306), MARIADB_RO_PASSWORD, MARIADB_ADMIN_PASSWORD
# (plain [A-Za-z0-9_] so they need no URL escaping).
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

MARIADB_PORT=${MARIADB_PORT:-53306}
MDB_DB=shop
MDB_NIMBUS_DB=nimbus                      # the held-out company's billing database (data/nimbus/sql)
MDB_ORCA_DB=orca                          # the second tuning company's freight database (data/orca/sql)
MDB_ADMIN_USER=fedsearch_admin
MDB_RO_USER=fedsearch_ro
MARIADB_ADMIN_PASSWORD=${MARIADB_ADMIN_PASSWORD:-fedsearch_admin_pw}
MARIADB_RO_PASSWORD=${MARIADB_RO_PASSWORD:-fedsearch_ro_pw}

MDB_DIR=$FEDSEARCH_RUN_DIR/mariadb
MDB_DATA=$MDB_DIR/data
MDB_SOCK=$MDB_DIR/mariadb.sock
MDB_PID=$MDB_DIR/mariadb.pid
MDB_LOG=$MDB_DIR/mariadb.log
MDB_PORTFILE=$MDB_DIR/port                # port of the running server
MDB_SEEDED=$MDB_DIR/seeded                # marker: the shop data was loaded into this data dir
MDB_ENV=$FEDSEARCH_RUN_DIR/mariadb.env
SQL_DIR=$FEDSEARCH_ROOT/data/sample/sql
NIMBUS_SQL_DIR=$FEDSEARCH_ROOT/data/nimbus/sql
ORCA_SQL_DIR=$FEDSEARCH_ROOT/data/orca/sql

for pw in "$MARIADB_ADMIN_PASSWORD" "$MARIADB_RO_PASSWORD"; do
  [[ $pw =~ ^[A-Za-z0-9_]+$ ]] || die "MARIADB_*_PASSWORD may only hold [A-Za-z0-9_] (it goes into URLs unescaped)"
done

ro_url()    { echo "mysql://$MDB_RO_USER:$MARIADB_RO_PASSWORD@127.0.0.1:$MARIADB_PORT/${1:-$MDB_DB}"; }
admin_url() { echo "mysql://$MDB_ADMIN_USER:$MARIADB_ADMIN_PASSWORD@127.0.0.1:$MARIADB_PORT/${1:-$MDB_DB}"; }

# The OS user mariadbd runs as; with unix_socket auth the same name is the bootstrap DB account.
if [ "$(id -u)" -eq 0 ]; then
  if id -u mysql >/dev/null 2>&1; then MDB_OS_USER=mysql; else MDB_OS_USER=root; fi
  MDB_SOCKET_ACCOUNT=root
else
  MDB_OS_USER=$(id -un); MDB_SOCKET_ACCOUNT=$MDB_OS_USER
fi

# sql_root ARGS... — bootstrap session over the private unix socket.
sql_root() {
  mariadb --no-defaults --socket="$MDB_SOCK" -u "$MDB_SOCKET_ACCOUNT" --default-character-set=utf8mb4 \
    --batch --skip-column-names "$@"
}
# sql_tcp USER PASSWORD ARGS... — a session over TCP like the adapter's (password via env, not argv).
sql_tcp() {
  local user=$1 pw=$2; shift 2
  MYSQL_PWD=$pw mariadb --no-defaults --protocol=tcp -h 127.0.0.1 -P "$MARIADB_PORT" -u "$user" \
    --default-character-set=utf8mb4 --batch --skip-column-names "$MDB_DB" "$@"
}

need_binaries() {
  command -v mariadbd >/dev/null && command -v mariadb-install-db >/dev/null && command -v mariadb >/dev/null \
    || die "MariaDB binaries (mariadbd, mariadb-install-db, mariadb) not found; run: $0 install"
}

running_pid() {
  [ -f "$MDB_PID" ] || return 1
  local pid; pid=$(cat "$MDB_PID" 2>/dev/null) || return 1
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && grep -q mariadbd "/proc/$pid/comm" 2>/dev/null || return 1
  echo "$pid"
}
is_running() { running_pid >/dev/null; }

cmd_install() {
  # On systemd-less boxes the package's postinst cannot start the Debian service; fine, we never use it.
  apt_install mariadb-server mariadb-client
  need_binaries
  log "MariaDB binaries: $(mariadbd --version)"
}

init_datadir() {
  log "mariadb-install-db into $MDB_DATA"
  rm -rf "$MDB_DATA"
  mkdir -p "$MDB_DATA"
  [ "$(id -u)" -eq 0 ] && chown "$MDB_OS_USER:" "$MDB_DATA"
  mariadb-install-db --no-defaults --datadir="$MDB_DATA" --user="$MDB_OS_USER" \
    --auth-root-authentication-method=socket --skip-test-db --skip-name-resolve \
    >"$MDB_DIR/install-db.log" 2>&1 \
    || { tail -20 "$MDB_DIR/install-db.log" >&2; die "mariadb-install-db failed (log: $MDB_DIR/install-db.log)"; }
  rm -f "$MDB_SEEDED"
}

# Accounts, database and grants; idempotent, run on every start (also re-applies passwords).
ensure_accounts() {
  sql_root <<EOF
CREATE DATABASE IF NOT EXISTS $MDB_DB CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;
ALTER DATABASE $MDB_DB CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;
-- No anonymous accounts (they would shadow named ones).
DELETE FROM mysql.global_priv WHERE User = '';
CREATE USER IF NOT EXISTS '$MDB_ADMIN_USER'@'127.0.0.1';
ALTER USER '$MDB_ADMIN_USER'@'127.0.0.1' IDENTIFIED BY '$MARIADB_ADMIN_PASSWORD';
GRANT ALL PRIVILEGES ON \`$MDB_DB\`.* TO '$MDB_ADMIN_USER'@'127.0.0.1';
CREATE USER IF NOT EXISTS '$MDB_RO_USER'@'127.0.0.1';
ALTER USER '$MDB_RO_USER'@'127.0.0.1' IDENTIFIED BY '$MARIADB_RO_PASSWORD';
-- SELECT only, on shop.* (database level, so it survives every re-seed's DROP/CREATE TABLE).
GRANT SELECT ON \`$MDB_DB\`.* TO '$MDB_RO_USER'@'127.0.0.1';
-- The same two accounts on the held-out company's database.
CREATE DATABASE IF NOT EXISTS $MDB_NIMBUS_DB CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;
GRANT ALL PRIVILEGES ON \`$MDB_NIMBUS_DB\`.* TO '$MDB_ADMIN_USER'@'127.0.0.1';
GRANT SELECT ON \`$MDB_NIMBUS_DB\`.* TO '$MDB_RO_USER'@'127.0.0.1';
-- And on the second tuning company's database.
CREATE DATABASE IF NOT EXISTS $MDB_ORCA_DB CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;
GRANT ALL PRIVILEGES ON \`$MDB_ORCA_DB\`.* TO '$MDB_ADMIN_USER'@'127.0.0.1';
GRANT SELECT ON \`$MDB_ORCA_DB\`.* TO '$MDB_RO_USER'@'127.0.0.1';
FLUSH PRIVILEGES;
EOF
}

# Time zone tables, once per data dir: named zones (Europe/Berlin) for the adapter's session
# `time_zone`, so TIMESTAMP columns and bound times convert with the zone's DST rules.
ensure_time_zones() {
  [ "$(sql_root -e 'SELECT COUNT(*) FROM mysql.time_zone_name')" -gt 0 ] && return 0
  if ! command -v mariadb-tzinfo-to-sql >/dev/null || [ ! -d /usr/share/zoneinfo ]; then
    log "no mariadb-tzinfo-to-sql or /usr/share/zoneinfo: the server knows no time zone names"
    return 0
  fi
  mariadb-tzinfo-to-sql /usr/share/zoneinfo 2>/dev/null | sql_root mysql || die "loading the time zone tables failed"
  log "loaded the time zone tables ($(sql_root -e 'SELECT COUNT(*) FROM mysql.time_zone_name') zones)"
}

write_env() {
  cat >"$MDB_ENV" <<EOF
# Written by scripts/backends/mariadb.sh start. Throwaway loopback server.
MARIADB_HOST=127.0.0.1
MARIADB_PORT=$MARIADB_PORT
MARIADB_DATABASE=$MDB_DB
MARIADB_RO_USER=$MDB_RO_USER
MARIADB_RO_URL=$(ro_url)
MARIADB_ADMIN_URL=$(admin_url)
MARIADB_SOCKET=$MDB_SOCK
NIMBUS_MARIADB_RO_URL=$(ro_url "$MDB_NIMBUS_DB")
NIMBUS_MARIADB_ADMIN_URL=$(admin_url "$MDB_NIMBUS_DB")
ORCA_MARIADB_RO_URL=$(ro_url "$MDB_ORCA_DB")
ORCA_MARIADB_ADMIN_URL=$(admin_url "$MDB_ORCA_DB")
EOF
}

cmd_seed() {
  need_binaries
  is_running || die "mariadb is not running; run: $0 start"
  bash "$SQL_DIR/render.sh" | sql_tcp "$MDB_ADMIN_USER" "$MARIADB_ADMIN_PASSWORD" || die "seeding failed"
  { echo "USE $MDB_NIMBUS_DB;"; bash "$NIMBUS_SQL_DIR/render.sh"; } \
    | sql_tcp "$MDB_ADMIN_USER" "$MARIADB_ADMIN_PASSWORD" || die "seeding $MDB_NIMBUS_DB failed"
  { echo "USE $MDB_ORCA_DB;"; bash "$ORCA_SQL_DIR/render.sh"; } \
    | sql_tcp "$MDB_ADMIN_USER" "$MARIADB_ADMIN_PASSWORD" || die "seeding $MDB_ORCA_DB failed"
  log "seeded database $MDB_ORCA_DB ($(sql_tcp "$MDB_ADMIN_USER" "$MARIADB_ADMIN_PASSWORD" -e "SELECT count(*) FROM $MDB_ORCA_DB.shipments") shipments)"
  touch "$MDB_SEEDED"
  log "seeded database $MDB_DB ($(sql_tcp "$MDB_ADMIN_USER" "$MARIADB_ADMIN_PASSWORD" -e 'SELECT count(*) FROM orders') orders) and $MDB_NIMBUS_DB ($(sql_tcp "$MDB_ADMIN_USER" "$MARIADB_ADMIN_PASSWORD" -e "SELECT count(*) FROM $MDB_NIMBUS_DB.invoices") invoices)"
}

cmd_start() {
  need_binaries
  if is_running; then
    local running_port; running_port=$(cat "$MDB_PORTFILE" 2>/dev/null || echo "?")
    [ "$running_port" = "$MARIADB_PORT" ] || die "already running on port $running_port, not $MARIADB_PORT; stop it first"
    log "already running (pid $(running_pid)) on 127.0.0.1:$MARIADB_PORT"
  else
    port_free "$MARIADB_PORT"
    [ ${#MDB_SOCK} -le 100 ] || die "unix socket path too long (${#MDB_SOCK} > 100): $MDB_SOCK; use a shorter FEDSEARCH_RUN_DIR"
    mkdir -p "$MDB_DIR"
    chmod 0755 "$MDB_DIR"
    [ "$(id -u)" -eq 0 ] && chown "$MDB_OS_USER:" "$MDB_DIR"
    if [ -d "$MDB_DATA/mysql" ]; then
      log "reusing data dir $MDB_DATA"
    else
      init_datadir
    fi
    rm -f "$MDB_PID" "$MDB_SOCK"
    echo "$MARIADB_PORT" >"$MDB_PORTFILE"
    # Small footprint, durability traded for speed (throwaway data; a clean stop keeps everything).
    # setsid -f: the server gets its own session, so it outlives the shell/job that started it.
    setsid -f mariadbd --no-defaults \
      --user="$MDB_OS_USER" --datadir="$MDB_DATA" --socket="$MDB_SOCK" --pid-file="$MDB_PID" \
      --log-error="$MDB_LOG" --bind-address=127.0.0.1 --port="$MARIADB_PORT" --skip-name-resolve \
      --character-set-server=utf8mb4 --collation-server=utf8mb4_unicode_ci \
      --default-time-zone=+00:00 --skip-log-bin --performance-schema=OFF --max-connections=50 \
      --innodb-buffer-pool-size=32M --innodb-log-file-size=16M --innodb-flush-log-at-trx-commit=0 \
      --innodb-doublewrite=0 --skip-innodb-adaptive-hash-index \
      </dev/null >>"$MDB_LOG" 2>&1
    local i=0
    until [ -S "$MDB_SOCK" ] && mariadb-admin --no-defaults --socket="$MDB_SOCK" -u "$MDB_SOCKET_ACCOUNT" \
        --connect-timeout=2 ping >/dev/null 2>&1; do
      i=$((i + 1))
      if [ "$i" -gt 600 ]; then tail -20 "$MDB_LOG" >&2; die "mariadb not ready after 60 s (log: $MDB_LOG)"; fi
      if [ "$i" -gt 20 ] && ! pgrep -f -- "--pid-file=$MDB_PID" >/dev/null; then
        tail -20 "$MDB_LOG" >&2; die "mariadbd exited during start (log: $MDB_LOG)"
      fi
      sleep 0.1
    done
    wait_tcp "$MARIADB_PORT" 30 || die "mariadb does not accept TCP connections on 127.0.0.1:$MARIADB_PORT"
  fi
  ensure_accounts
  ensure_time_zones
  write_env
  [ -f "$MDB_SEEDED" ] || cmd_seed
  log "ready on 127.0.0.1:$MARIADB_PORT (env: $MDB_ENV)"
}

cmd_stop() {
  local keep=0
  case "${1:-}" in --keep-data) keep=1 ;; "") ;; *) die "usage: $0 stop [--keep-data]" ;; esac
  local pid
  if pid=$(running_pid); then
    # SIGTERM = clean shutdown (InnoDB flushes); allow it up to 60 s before SIGKILL.
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 600); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then log "clean shutdown timed out; killing $pid"; kill -9 "$pid" || true; fi
    log "stopped"
  else
    log "not running"
  fi
  rm -f "$MDB_PID" "$MDB_PORTFILE"
  if [ "$keep" -eq 1 ]; then
    log "data kept in $MDB_DATA"
  else
    rm -rf "$MDB_DIR" "$MDB_ENV"
    log "removed $MDB_DIR"
  fi
}

cmd_status() {
  local pid
  if pid=$(running_pid); then
    echo "mariadb: running (pid $pid) on 127.0.0.1:$(cat "$MDB_PORTFILE" 2>/dev/null), data $MDB_DATA"
    return 0
  elif [ -d "$MDB_DATA/mysql" ]; then
    echo "mariadb: stopped (data kept in $MDB_DATA)"
  else
    echo "mariadb: stopped (no data)"
  fi
  return 3
}

# verify — as fedsearch_ro over TCP: reads work (Chinese included), every kind of write fails.
cmd_verify() {
  need_binaries
  is_running || die "mariadb is not running"
  local fail=0 out sql
  out=$(sql_tcp "$MDB_RO_USER" "$MARIADB_RO_PASSWORD" -e "SELECT CONCAT(count(*), ' orders, ', (SELECT name FROM customers WHERE id = 'C1001')) FROM orders" 2>&1) \
    && [ "$out" = "8 orders, 张伟 Zhang Wei" ] \
    && echo "ok   SELECT as $MDB_RO_USER: $out" || { echo "FAIL SELECT as $MDB_RO_USER: $out"; fail=1; }
  for sql in \
    "INSERT INTO customers (id, name, business_line, city) VALUES ('C9999', 'x', 'retail', 'x')" \
    "UPDATE orders SET status = 'delivered' WHERE order_no = 'SO20261001'" \
    "DELETE FROM refunds" \
    "TRUNCATE shipments" \
    "CREATE TABLE evil (x int)" \
    "CREATE TEMPORARY TABLE evil (x int)"; do
    if out=$(sql_tcp "$MDB_RO_USER" "$MARIADB_RO_PASSWORD" -e "$sql" 2>&1); then
      echo "FAIL write allowed: $sql"; fail=1
    elif grep -qE 'ERROR (1142|1044)' <<<"$out"; then
      echo "ok   denied: ${sql%% (*} -> $(grep -m1 ERROR <<<"$out")"
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
