#!/usr/bin/env bash
# generate.sh [--check] — writes deploy/docker/<bin>.Dockerfile (and its <bin>.Dockerfile.dockerignore)
# for each of the five services from Dockerfile.in and dockerignore.in. --check writes nothing and
# exits 1 naming every file that is missing or differs (used by scripts/validate-deploy.sh).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# bin|crate|port|mcp port (router only)|what
SERVICES='
router|fedsearch-router|50051|50071|authenticates the end user, routes, fans out to the adapters, fuses, answers
fusion|fedsearch-fusion|50052||deduplicates and fuses per-source result lists into one ranked list
es-adapter|fedsearch-es-adapter|50061||full-text search over Elasticsearch/OpenSearch as the end user
sql-adapter|fedsearch-sql-adapter|50062||whitelisted, permission-bound SQL templates over PostgreSQL/MySQL/SQLite
wiki-adapter|fedsearch-wiki-adapter|50063||DokuWiki and Confluence searched as the end user
'

check=0
[ "${1:-}" = --check ] && check=1
stale=0

render() {  # render TEMPLATE BIN CRATE PORT MCP_PORT WHAT
  # @PORTS@: every port the image serves; @MCP_ENV@: the MCP listener on every interface (router).
  local ports=$4 mcp_env=''
  if [ -n "$5" ]; then
    ports="$4 $5"
    mcp_env=" FEDSEARCH_MCP__LISTEN=0.0.0.0:$5"
  fi
  sed -e "s|@BIN@|$2|g" -e "s|@CRATE@|$3|g" -e "s|@PORTS@|$ports|g" -e "s|@PORT@|$4|g" \
    -e "s|@MCP_ENV@|$mcp_env|g" -e "s|@WHAT@|$6|g" "$1"
}

emit() {  # emit FILE CONTENT
  if [ "$check" = 1 ]; then
    if [ ! -f "$1" ] || [ "$(cat "$1")" != "$2" ]; then
      echo "stale: ${1#"$here"/} differs from its template; run deploy/docker/generate.sh"
      stale=1
    fi
  else
    printf '%s\n' "$2" >"$1"
  fi
}

while IFS='|' read -r bin crate port mcp what; do
  [ -n "$bin" ] || continue
  emit "$here/$bin.Dockerfile" "$(render "$here/Dockerfile.in" "$bin" "$crate" "$port" "$mcp" "$what")"
  emit "$here/$bin.Dockerfile.dockerignore" "$(render "$here/dockerignore.in" "$bin" "$crate" "$port" "$mcp" "$what")"
done <<<"$SERVICES"
exit "$stale"
