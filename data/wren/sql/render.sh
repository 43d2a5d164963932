#!/usr/bin/env bash
# render.sh — prints the complete load script for the `wren` bookings database (Wren Travel,
# data/wren) in one transaction: BEGIN; schema.sql (drop + create); seed.sql; COMMIT;
# Loaded into PostgreSQL by scripts/backends/postgres.sh (database `wren`). Every time is absolute.
set -euo pipefail
dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
printf 'BEGIN;\n%s\n%s\nCOMMIT;\n' "$(cat "$dir/schema.sql")" "$(cat "$dir/seed.sql")"
