#!/usr/bin/env bash
# render.sh — prints the complete, portable load script for the `orca` freight database (Orca Freight, data/orca):
#   BEGIN; schema.sql (drop + create); seed.sql; COMMIT;
# Unlike data/sample/sql/render.sh there are no time placeholders: every time is absolute.
set -euo pipefail
dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
printf 'BEGIN;\n'
cat "$dir/schema.sql"
printf '\n'
cat "$dir/seed.sql"
printf 'COMMIT;\n'
