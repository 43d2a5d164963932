#!/usr/bin/env bash
# 10-shop.sh — first-start init of the compose `postgres` service (postgres:15 runs every script in
# /docker-entrypoint-initdb.d once, on an empty data volume, as the OS user postgres over the unix
# socket). Same result as scripts/backends/postgres.sh start: the `shop` database owned by
# fedsearch_admin, the SELECT-only role fedsearch_ro the sql-adapter connects as, and the sample rows
# from data/sample/sql (mounted at /fedsearch/sql) with timestamps relative to now.
# Passwords come from the environment (PG_ADMIN_PASSWORD, PG_RO_PASSWORD); never from this file.
set -euo pipefail
: "${PG_ADMIN_PASSWORD:?PG_ADMIN_PASSWORD must be set}"
: "${PG_RO_PASSWORD:?PG_RO_PASSWORD must be set}"
SQL_DIR=${FEDSEARCH_SQL_DIR:-/fedsearch/sql}
su_psql() { psql -X -q -v ON_ERROR_STOP=1 --username "${POSTGRES_USER:-postgres}" "$@"; }

su_psql --dbname postgres -v admin_pw="$PG_ADMIN_PASSWORD" -v ro_pw="$PG_RO_PASSWORD" <<'SQL'
CREATE ROLE fedsearch_admin LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION PASSWORD :'admin_pw';
CREATE ROLE fedsearch_ro    LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION PASSWORD :'ro_pw';
CREATE DATABASE shop OWNER fedsearch_admin ENCODING 'UTF8' TEMPLATE template0;
-- Nobody but the owner and the read-only role may connect; no temp tables for anyone else.
REVOKE ALL ON DATABASE shop FROM PUBLIC;
GRANT CONNECT ON DATABASE shop TO fedsearch_ro;
SQL

su_psql --dbname shop <<'SQL'
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
GRANT USAGE ON SCHEMA public TO fedsearch_ro;
ALTER DEFAULT PRIVILEGES FOR ROLE fedsearch_admin IN SCHEMA public GRANT SELECT ON TABLES TO fedsearch_ro;
SQL

# Schema + rows, created as the owner (SET ROLE), in one transaction (render.sh wraps BEGIN/COMMIT).
{ echo 'SET ROLE fedsearch_admin;'; bash "$SQL_DIR/render.sh"; } \
  | PGOPTIONS="-c client_min_messages=warning" su_psql --dbname shop >/dev/null
su_psql --dbname shop -c 'GRANT SELECT ON ALL TABLES IN SCHEMA public TO fedsearch_ro'
echo "10-shop.sh: database shop ready ($(su_psql --dbname shop -At -c 'SELECT count(*) FROM orders') orders)"
