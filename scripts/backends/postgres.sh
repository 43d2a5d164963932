#!/usr/bin/env bash
# postgres.sh — a throwaway PostgreSQL server for fedsearch on 127.0.0.1, holding the sample `shop`
# database (data/sample/sql) with an owner role and a read-only role for the SQL adapter, and the
# held-out company's `nimbus` billing database (data/nimbus/sql) with the same two roles, and the
# `orca` and `wren` databases (data/orca/sql, data/wren/sql) likewise.
#
#   postgres.sh install            apt-get the server binaries (Debian package `postgresql`)
#   postgres.sh start              initdb (first time) + start + roles + database + seed; reuses kept data
#   postgres.sh stop [--keep-data] fast shutdown; removes the data dir unless --keep-data
#   postgres.sh status             exit 0 when running, 3 when stopped
#   postgres.sh seed               drop + re-create the tables and rows (idempotent); server must run
#   postgres.sh verify             SELECT works and writes fail for the read-only role
#
# Everything lives in $FEDSEARCH_RUN_DIR/postgres (data/, unix socket, log). The Debian default
# cluster (15/main on 5432) and systemd are neither used nor touched. The server refuses to run as
# root, so as root it runs as the OS user $PG_OS_USER (default `postgres`, created if missing).
# Connection URLs are written to $FEDSEARCH_RUN_DIR/postgres.env:
#   PG_RO_URL=postgres://fedsearch_ro:PASS@127.0.0.1:55432/shop     (SELECT only)
#   PG_ADMIN_URL=postgres://fedsearch_admin:PASS@127.0.0.1:55432/shop (owner; setup and tests only)
#   NIMBUS_PG_RO_URL / NIMBUS_PG_ADMIN_URL: the same for the `nimbus` database
#   ORCA_PG_RO_URL / ORCA_PG_ADMIN_URL: the same for the `orca` database (data/orca/sql)
#   WREN_PG_RO_URL / WREN_PG_ADMIN_URL: the same for the `wren` database (data/wren/sql), the
#     held-out company whose records live only in PostgreSQL
# TLS is off on the server (plain TCP on loopback); sqlx's default sslmode=prefer falls back to it.
#
# Settings (environment): PG_PORT (55432), PG_BIN (newest /usr/lib/postgresql/*/bin), PG_OS_USER,
# PG_RO_PASSWORD, PG_ADMIN_PASSWORD (plain [A-Za-z0-9_] so they need no URL escaping).
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

PG_PORT=${PG_PORT:-55432}
PG_OS_USER=${PG_OS_USER:-postgres}
PG_DB=shop
PG_NIMBUS_DB=nimbus
PG_ORCA_DB=orca                         # second tuning company (data/orca)
PG_WREN_DB=wren                         # held-out company Wren Travel (data/wren), PostgreSQL only
PG_ADMIN_USER=fedsearch_admin
PG_RO_USER=fedsearch_ro
PG_ADMIN_PASSWORD=${PG_ADMIN_PASSWORD:-fedsearch_admin_pw}
PG_RO_PASSWORD=${PG_RO_PASSWORD:-fedsearch_ro_pw}
if [ -z "${PG_BIN:-}" ]; then
  PG_BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
  PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}
fi

PG_DIR=$FEDSEARCH_RUN_DIR/postgres      # also the unix socket directory
PG_DATA=$PG_DIR/data
PG_LOG=$PG_DIR/postgres.log
PG_SEEDED=$PG_DIR/seeded                # marker: the shop data was loaded into this data dir
PG_ENV=$FEDSEARCH_RUN_DIR/postgres.env
SQL_DIR=$FEDSEARCH_ROOT/data/sample/sql
NIMBUS_SQL_DIR=$FEDSEARCH_ROOT/data/nimbus/sql
ORCA_SQL_DIR=$FEDSEARCH_ROOT/data/orca/sql
WREN_SQL_DIR=$FEDSEARCH_ROOT/data/wren/sql
PG_WREN_SEEDED=$PG_DIR/seeded-wren      # marker: the wren data was loaded (a data dir kept from before wren existed gets it on start)

export PGCLIENTENCODING=UTF8 PGCONNECT_TIMEOUT=5

for pw in "$PG_ADMIN_PASSWORD" "$PG_RO_PASSWORD"; do
  [[ $pw =~ ^[A-Za-z0-9_]+$ ]] || die "PG_*_PASSWORD may only hold [A-Za-z0-9_] (it goes into URLs unescaped)"
done

ro_url()    { echo "postgres://$PG_RO_USER:$PG_RO_PASSWORD@127.0.0.1:$PG_PORT/${1:-$PG_DB}"; }
admin_url() { echo "postgres://$PG_ADMIN_USER:$PG_ADMIN_PASSWORD@127.0.0.1:$PG_PORT/${1:-$PG_DB}"; }

# as_pg CMD... — run as the server's OS user (only needed when we are root).
as_pg() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u "$PG_OS_USER" -- "$@"; else "$@"; fi
}

# psql_super DB ARGS... — superuser session over the private unix socket (trust, socket dir 0700).
psql_super() {
  local db=$1; shift
  "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$PG_DIR" -p "$PG_PORT" -U postgres -d "$db" "$@"
}

need_binaries() {
  [ -x "$PG_BIN/postgres" ] && [ -x "$PG_BIN/initdb" ] && [ -x "$PG_BIN/psql" ] \
    || die "PostgreSQL server binaries not found in $PG_BIN; run: $0 install"
}

is_running() {
  [ -f "$PG_DATA/postmaster.pid" ] || return 1
  local pid; pid=$(head -1 "$PG_DATA/postmaster.pid" 2>/dev/null) || return 1
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null
}

cmd_install() {
  # `postgresql` is the Debian meta package (15 on bookworm); it also brings psql. Its postinst
  # creates the default cluster, which we never start (policy-rc.d/systemd-less boxes leave it down).
  apt_install postgresql
  need_binaries
  log "PostgreSQL binaries: $PG_BIN ($("$PG_BIN/postgres" --version))"
}

ensure_os_user() {
  [ "$(id -u)" -eq 0 ] || return 0
  id -u "$PG_OS_USER" >/dev/null 2>&1 && return 0
  log "creating system user $PG_OS_USER"
  useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$PG_OS_USER"
}

init_cluster() {
  log "initdb into $PG_DATA"
  rm -rf "$PG_DATA"
  local locale=C
  locale -a 2>/dev/null | grep -qix 'c.utf-\?8' && locale=C.UTF-8
  as_pg "$PG_BIN/initdb" -D "$PG_DATA" -U postgres -E UTF8 --locale="$locale" -N \
    --auth-local=trust --auth-host=reject >"$PG_DIR/initdb.log" 2>&1 \
    || { tail -20 "$PG_DIR/initdb.log" >&2; die "initdb failed (log: $PG_DIR/initdb.log)"; }
  echo "include_if_exists = 'fedsearch.conf'" >>"$PG_DATA/postgresql.conf"
  rm -f "$PG_SEEDED"
}

# Rewritten on every start, so a kept data dir picks up a new PG_PORT or run dir.
write_config() {
  as_pg tee "$PG_DATA/fedsearch.conf" >/dev/null <<EOF
# Written by scripts/backends/postgres.sh on each start; edits are lost.
listen_addresses = '127.0.0.1'
port = $PG_PORT
unix_socket_directories = '$PG_DIR'
unix_socket_permissions = 0700
ssl = off
password_encryption = 'scram-sha-256'
max_connections = 50
shared_buffers = 16MB
# Throwaway test data: durability off for speed (a clean stop --keep-data still keeps everything).
fsync = off
synchronous_commit = off
full_page_writes = off
timezone = 'UTC'
log_timezone = 'UTC'
logging_collector = off
log_min_messages = warning
EOF
  # Superuser only over the private socket; the two app roles only over TCP with a password.
  as_pg tee "$PG_DATA/pg_hba.conf" >/dev/null <<EOF
# Written by scripts/backends/postgres.sh on each start; edits are lost.
# TYPE  DATABASE  USER               ADDRESS        METHOD
local   all       postgres                          trust
host    all       $PG_ADMIN_USER    127.0.0.1/32   scram-sha-256
host    $PG_DB      $PG_RO_USER       127.0.0.1/32   scram-sha-256
host    $PG_NIMBUS_DB    $PG_RO_USER       127.0.0.1/32   scram-sha-256
host    $PG_ORCA_DB      $PG_RO_USER       127.0.0.1/32   scram-sha-256
host    $PG_WREN_DB      $PG_RO_USER       127.0.0.1/32   scram-sha-256
EOF
}

# Roles, database and grants; idempotent, run on every start (also re-applies passwords).
ensure_roles() {
  psql_super postgres -v admin_pw="$PG_ADMIN_PASSWORD" -v ro_pw="$PG_RO_PASSWORD" <<EOF
SELECT 'CREATE ROLE $PG_ADMIN_USER' WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '$PG_ADMIN_USER') \gexec
SELECT 'CREATE ROLE $PG_RO_USER'    WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '$PG_RO_USER') \gexec
ALTER ROLE $PG_ADMIN_USER LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION PASSWORD :'admin_pw';
ALTER ROLE $PG_RO_USER    LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION PASSWORD :'ro_pw';
EOF
  local db
  for db in "$PG_DB" "$PG_NIMBUS_DB" "$PG_ORCA_DB" "$PG_WREN_DB"; do   # the sample shop, the held-out company, the second tuning company, Wren
  psql_super postgres <<EOF
SELECT 'CREATE DATABASE $db OWNER $PG_ADMIN_USER ENCODING ''UTF8'' TEMPLATE template0'
  WHERE NOT EXISTS (SELECT 1 FROM pg_database WHERE datname = '$db') \gexec
-- Nobody but the owner and the read-only role may connect; no temp tables for anyone else.
REVOKE ALL ON DATABASE $db FROM PUBLIC;
GRANT CONNECT ON DATABASE $db TO $PG_RO_USER;
EOF
  psql_super "$db" <<EOF
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
GRANT USAGE ON SCHEMA public TO $PG_RO_USER;
-- Tables the owner creates later (every seed re-creates them) are readable by the ro role...
ALTER DEFAULT PRIVILEGES FOR ROLE $PG_ADMIN_USER IN SCHEMA public GRANT SELECT ON TABLES TO $PG_RO_USER;
-- ...and so are the ones that exist now. SELECT only: no INSERT/UPDATE/DELETE/TRUNCATE/CREATE.
GRANT SELECT ON ALL TABLES IN SCHEMA public TO $PG_RO_USER;
EOF
  done
}

write_env() {
  cat >"$PG_ENV" <<EOF
# Written by scripts/backends/postgres.sh start. Throwaway loopback server.
PG_HOST=127.0.0.1
PG_PORT=$PG_PORT
PG_DATABASE=$PG_DB
PG_RO_USER=$PG_RO_USER
PG_RO_URL=$(ro_url)
PG_ADMIN_URL=$(admin_url)
PG_SOCKET_DIR=$PG_DIR
NIMBUS_PG_RO_URL=$(ro_url "$PG_NIMBUS_DB")
NIMBUS_PG_ADMIN_URL=$(admin_url "$PG_NIMBUS_DB")
ORCA_PG_RO_URL=$(ro_url "$PG_ORCA_DB")
ORCA_PG_ADMIN_URL=$(admin_url "$PG_ORCA_DB")
WREN_PG_RO_URL=$(ro_url "$PG_WREN_DB")
WREN_PG_ADMIN_URL=$(admin_url "$PG_WREN_DB")
EOF
}

cmd_seed() {
  need_binaries
  is_running || die "postgres is not running; run: $0 start"
  bash "$SQL_DIR/render.sh" | PGOPTIONS="-c client_min_messages=warning" \
    "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 "$(admin_url)" >/dev/null \
    || die "seeding failed"
  "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 "$(admin_url)" \
    -c "GRANT SELECT ON ALL TABLES IN SCHEMA public TO $PG_RO_USER" >/dev/null
  bash "$NIMBUS_SQL_DIR/render.sh" | PGOPTIONS="-c client_min_messages=warning" "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 "$(admin_url "$PG_NIMBUS_DB")" >/dev/null \
    || die "seeding $PG_NIMBUS_DB failed"
  "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 "$(admin_url "$PG_NIMBUS_DB")" \
    -c "GRANT SELECT ON ALL TABLES IN SCHEMA public TO $PG_RO_USER" >/dev/null
  bash "$ORCA_SQL_DIR/render.sh" | PGOPTIONS="-c client_min_messages=warning" "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 "$(admin_url "$PG_ORCA_DB")" >/dev/null \
    || die "seeding $PG_ORCA_DB failed"
  "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 "$(admin_url "$PG_ORCA_DB")" \
    -c "GRANT SELECT ON ALL TABLES IN SCHEMA public TO $PG_RO_USER" >/dev/null
  log "seeded database $PG_ORCA_DB ($("$PG_BIN/psql" -X -At "$(admin_url "$PG_ORCA_DB")" -c 'SELECT count(*) FROM shipments') shipments)"
  seed_wren
  touch "$PG_SEEDED"
  log "seeded database $PG_DB ($("$PG_BIN/psql" -X -At "$(admin_url)" -c 'SELECT count(*) FROM orders') orders) and $PG_NIMBUS_DB ($("$PG_BIN/psql" -X -At "$(admin_url "$PG_NIMBUS_DB")" -c 'SELECT count(*) FROM invoices') invoices)"
}

# seed_wren — drop + re-create + load the `wren` database (data/wren/sql); idempotent.
seed_wren() {
  bash "$WREN_SQL_DIR/render.sh" | PGOPTIONS="-c client_min_messages=warning" "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 "$(admin_url "$PG_WREN_DB")" >/dev/null \
    || die "seeding $PG_WREN_DB failed"
  "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 "$(admin_url "$PG_WREN_DB")" \
    -c "GRANT SELECT ON ALL TABLES IN SCHEMA public TO $PG_RO_USER" >/dev/null
  touch "$PG_WREN_SEEDED"
  log "seeded database $PG_WREN_DB ($("$PG_BIN/psql" -X -At "$(admin_url "$PG_WREN_DB")" -c 'SELECT count(*) FROM bookings') bookings)"
}

cmd_start() {
  need_binaries
  if is_running; then
    local running_port; running_port=$(sed -n 4p "$PG_DATA/postmaster.pid")
    [ "$running_port" = "$PG_PORT" ] || die "already running on port $running_port, not $PG_PORT; stop it first"
    log "already running (pid $(head -1 "$PG_DATA/postmaster.pid")) on 127.0.0.1:$PG_PORT"
    # pg_hba.conf again and a reload: a database added since this server started (wren) gets its
    # read-only line without a restart
    write_config
    as_pg "$PG_BIN/pg_ctl" -D "$PG_DATA" -s reload || die "postgres did not reload its configuration"
  else
    port_free "$PG_PORT"
    ensure_os_user
    local sock="$PG_DIR/.s.PGSQL.$PG_PORT"
    [ ${#sock} -le 100 ] || die "unix socket path too long (${#sock} > 100): $sock; use a shorter FEDSEARCH_RUN_DIR"
    mkdir -p "$PG_DIR"
    [ "$(id -u)" -eq 0 ] && chown "$PG_OS_USER:" "$PG_DIR"
    chmod 0700 "$PG_DIR"
    as_pg test -x "$FEDSEARCH_RUN_DIR" || die "OS user $PG_OS_USER cannot enter $FEDSEARCH_RUN_DIR (needs o+x on it and its parents)"
    if [ -s "$PG_DATA/PG_VERSION" ]; then
      log "reusing data dir $PG_DATA"
    else
      init_cluster
    fi
    write_config
    # setsid: the postmaster gets its own session, so it outlives the shell/job that started it.
    as_pg setsid -w "$PG_BIN/pg_ctl" -D "$PG_DATA" -l "$PG_LOG" -w -t 60 -s start \
      || { tail -20 "$PG_LOG" >&2; die "postgres did not start (log: $PG_LOG)"; }
    "$PG_BIN/pg_isready" -q -h 127.0.0.1 -p "$PG_PORT" -U "$PG_RO_USER" -d "$PG_DB" -t 30 || die "postgres does not accept TCP connections on 127.0.0.1:$PG_PORT"
  fi
  ensure_roles
  write_env
  [ -f "$PG_SEEDED" ] || cmd_seed
  [ -f "$PG_WREN_SEEDED" ] || seed_wren   # a data dir seeded before the wren database existed
  log "ready on 127.0.0.1:$PG_PORT (env: $PG_ENV)"
}

cmd_stop() {
  local keep=0
  case "${1:-}" in --keep-data) keep=1 ;; "") ;; *) die "usage: $0 stop [--keep-data]" ;; esac
  if is_running; then
    local pid; pid=$(head -1 "$PG_DATA/postmaster.pid")
    as_pg "$PG_BIN/pg_ctl" -D "$PG_DATA" -m fast -w -t 30 -s stop || {
      log "pg_ctl stop failed; killing $pid"; kill -9 "$pid" 2>/dev/null || true; sleep 0.5; }
    log "stopped"
  else
    log "not running"
  fi
  if [ "$keep" -eq 1 ]; then
    log "data kept in $PG_DATA"
  else
    rm -rf "$PG_DIR" "$PG_ENV"
    log "removed $PG_DIR"
  fi
}

cmd_status() {
  if is_running; then
    echo "postgres: running (pid $(head -1 "$PG_DATA/postmaster.pid")) on 127.0.0.1:$(sed -n 4p "$PG_DATA/postmaster.pid"), data $PG_DATA"
    return 0
  elif [ -s "$PG_DATA/PG_VERSION" ]; then
    echo "postgres: stopped (data kept in $PG_DATA)"
  else
    echo "postgres: stopped (no data)"
  fi
  return 3
}

# verify — as fedsearch_ro over TCP: reads work (Chinese included), every kind of write fails.
cmd_verify() {
  need_binaries
  is_running || die "postgres is not running"
  local ro fail=0 out
  ro=$(ro_url)
  out=$("$PG_BIN/psql" -X -At -v ON_ERROR_STOP=1 "$ro" -c "SELECT count(*) || ' orders, ' || (SELECT name FROM customers WHERE id = 'C1001') FROM orders" 2>&1) \
    && [ "$out" = "8 orders, 张伟 Zhang Wei" ] \
    && echo "ok   SELECT as $PG_RO_USER: $out" || { echo "FAIL SELECT as $PG_RO_USER: $out"; fail=1; }
  local sql
  for sql in \
    "INSERT INTO customers (id, name, business_line, city) VALUES ('C9999', 'x', 'retail', 'x')" \
    "UPDATE orders SET status = 'delivered' WHERE order_no = 'SO20261001'" \
    "DELETE FROM refunds" \
    "TRUNCATE shipments" \
    "CREATE TABLE evil (x int)" \
    "CREATE TEMP TABLE evil (x int)"; do
    if out=$("$PG_BIN/psql" -X -At -v ON_ERROR_STOP=1 "$ro" -c "$sql" 2>&1); then
      echo "FAIL write allowed: $sql"; fail=1
    elif grep -q 'permission denied' <<<"$out"; then
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
