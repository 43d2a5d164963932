#!/usr/bin/env bash
# render.sh — prints the complete, portable load script for the sample shop database:
#   BEGIN; schema.sql (drop + create); seed.sql.in with its time placeholders filled; COMMIT;
# Placeholders: {{days_ago:N}} / {{hours_ago:N}} -> ISO-8601 UTC text of now - N days / hours,
# e.g. 2026-11-28T09:15:00Z (see the header of schema.sql for why timestamps are TEXT).
# Needs only bash and GNU date. FEDSEARCH_NOW (unix seconds) pins "now" for reproducible output.
set -euo pipefail
dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
now=${FEDSEARCH_NOW:-$(date -u +%s)}

seed=$(cat "$dir/seed.sql.in")
# Replace each distinct placeholder once (the template only has a handful).
for tok in $(grep -oE '\{\{(days|hours)_ago:[0-9]+\}\}' "$dir/seed.sql.in" | sort -u); do
  kind=${tok#\{\{}; kind=${kind%%_ago:*}
  n=${tok##*:}; n=${n%\}\}}
  case $kind in days) secs=$((n * 86400)) ;; hours) secs=$((n * 3600)) ;; esac
  ts=$(date -u -d "@$((now - secs))" +%Y-%m-%dT%H:%M:%SZ)
  seed=${seed//"$tok"/$ts}
done
if grep -qE '\{\{[a-z_]+:[0-9]+\}\}' <<<"$seed"; then
  echo "render.sh: unknown placeholder left in seed.sql.in: $(grep -oE '\{\{[a-z_]+:[0-9]+\}\}' <<<"$seed" | head -1)" >&2
  exit 1
fi

printf 'BEGIN;\n'
cat "$dir/schema.sql"
printf '\n%s\n' "$seed"
printf 'COMMIT;\n'
