#!/usr/bin/env bash
# entrypoint.sh — runs the DEMO DokuWiki of docker-compose.yml. It reuses the project's own
# scripts/backends/dokuwiki.sh to build the instance (users, ACLs, sample pages, search index:
# the same wiki the integration tests use), then serves it on 0.0.0.0:$DOKUWIKI_LISTEN_PORT
# instead of loopback. The generated per-user demo passwords (random per build, never printed)
# are copied to $DOKUWIKI_SECRETS_OUT for the wiki-adapter, which runs as the same uid.
#
# Env: FEDSEARCH_RUN_DIR (instance, kept on a volume), DOKUWIKI_SECRETS_OUT, DOKUWIKI_LISTEN_PORT.
set -euo pipefail
root=${FEDSEARCH_ROOT:-/opt/fedsearch}
run_dir=${FEDSEARCH_RUN_DIR:?set FEDSEARCH_RUN_DIR}
out=${DOKUWIKI_SECRETS_OUT:?set DOKUWIKI_SECRETS_OUT}
port=${DOKUWIKI_LISTEN_PORT:-8080}
build_port=${DOKUWIKI_BUILD_PORT:-18090}   # loopback port used only while building

# Build (or reuse a kept instance), then stop the loopback server the script started.
DOKUWIKI_PORT=$build_port "$root/scripts/backends/dokuwiki.sh" start
DOKUWIKI_PORT=$build_port "$root/scripts/backends/dokuwiki.sh" stop --keep-data

umask 077
mkdir -p "$(dirname "$out")"
cp "$run_dir/dokuwiki/secrets.yaml" "$out.tmp"
mv "$out.tmp" "$out"

site=$run_dir/dokuwiki/site
mkdir -p "$site/data/tmp"
echo "dokuwiki: serving $site on 0.0.0.0:$port" >&2
# Same flags as dokuwiki.sh start; router.php refuses data/, conf/, bin/, inc/ and vendor/.
exec env -u PHP_CLI_SERVER_WORKERS php -d session.save_path="$site/data/tmp" \
  -d display_errors=0 -d log_errors=1 \
  -S "0.0.0.0:$port" -t "$site" "$root/scripts/backends/dokuwiki/router.php"
