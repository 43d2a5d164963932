#!/usr/bin/env bash
# render.sh — prints the complete, portable load script for the `heron` records database
# (Heron Property, data/heron) in one transaction: BEGIN; schema.sql (drop + create); seed.sql; COMMIT;
# Every time is absolute (no placeholders), as in data/kestrel.
set -euo pipefail
dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
printf 'BEGIN;\n%s\n%s\nCOMMIT;\n' "$(cat "$dir/schema.sql")" "$(cat "$dir/seed.sql")"
