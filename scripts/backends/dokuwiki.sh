#!/usr/bin/env bash
# DokuWiki backend for fedsearch: a real DokuWiki (Debian package, 2022-07-31 "Igor") with per-user
# ACLs and the sample company's pages, served by `php -S` behind a router that hides data/ & conf/.
# The held-out evaluation company's pages (data/nimbus/wiki, namespace nimbus:) live in the same
# instance, with their own users, groups and ACL lines (data/nimbus/wiki/auth.spec); so do the second
# tuning company's (data/orca/wiki, namespace orca:, data/orca/wiki/auth.spec) and the second held-out
# company's (data/kestrel/wiki, namespace kestrel:, data/kestrel/wiki/auth.spec) and the third held-out
# company's (data/heron/wiki, namespace heron:, data/heron/wiki/auth.spec), and Wren Travel's
# (data/wren/wiki, namespace wren:, data/wren/wiki/auth.spec).
#
# Usage: scripts/backends/dokuwiki.sh install | start | stop [--keep-data] | status | import DIR [--replace]
#
#   install            apt packages dokuwiki php-cli php-xml php8.2-cgi (php8.2-cgi keeps apache out)
#   start              build an isolated instance under $FEDSEARCH_RUN_DIR/dokuwiki (or reuse one kept
#                      by `stop --keep-data`), serve it on 127.0.0.1:$DOKUWIKI_PORT, wait until it
#                      answers, write $FEDSEARCH_RUN_DIR/dokuwiki.env. No-op when already running.
#   stop               stop php and delete the instance (pages, users, secrets, env file)
#   stop --keep-data   stop php only; the next `start` serves the same instance and credentials
#   status             prints running/stopped; exit 0 when running, 3 when not
#   import DIR [--replace]
#                      load a company's folder into the instance (built by `start`; it may be
#                      running): DIR/<ns>/**/<page>.txt are the pages, laid out like data/pages;
#                      DIR/mtimes.txt their dates and authors (`<page id> <ISO-8601 time | days ago>
#                      [<login>]`; a page not listed is dated by its file's mtime; a page on
#                      several lines gets that many revisions, the oldest its creation), written
#                      into the wiki's revision history (changelog + attic + metadata + file time),
#                      so wiki.getPageInfo / getPageVersions / dokuwiki.search report them; DIR/auth.spec its users and
#                      ACL lines (format of AUTH_SPEC below), MERGED: existing accounts and their
#                      passwords stay, new users get a credential in the secrets file. --replace
#                      first removes every page (and its history) of the top namespaces DIR holds.
#                      Then re-indexes. Running adapters need a restart only for NEW users
#                      (they read the secrets file at start).
#                      Logins and subjects are GLOBAL to the instance, shared by every company in
#                      it: an auth.spec user whose login already exists with other groups (e.g. a
#                      second company's `mei` beside Nimbus's), or whose subject the secrets file
#                      already maps to another login, FAILS the import before anything changes
#                      (exit 1, each collision named with both group sets / both logins); rename
#                      the login and subject in DIR/auth.spec. The same login with the same groups
#                      (importing a folder again) is fine.
#
# Env: DOKUWIKI_PORT (default 8090), FEDSEARCH_RUN_DIR (default <repo>/.run).
# Files: $FEDSEARCH_RUN_DIR/dokuwiki/site        document root (code, conf/, data/)
#        $FEDSEARCH_RUN_DIR/dokuwiki/secrets.yaml subject -> {username, password} (mode 0600)
#        $FEDSEARCH_RUN_DIR/dokuwiki.env          DOKUWIKI_URL=..., DOKUWIKI_SECRETS=...
#        $FEDSEARCH_RUN_DIR/dokuwiki.pid, dokuwiki.log (php -S access log; never has passwords)
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

PORT="${DOKUWIKI_PORT:-8090}"
[[ $PORT =~ ^[0-9]+$ ]] && [ "$PORT" -ge 1 ] && [ "$PORT" -le 65535 ] || die "DOKUWIKI_PORT must be a port number, got '$PORT'"
HERE="$FEDSEARCH_ROOT/scripts/backends/dokuwiki"
PAGES_SRC="$FEDSEARCH_ROOT/data/sample/wiki"
NIMBUS_SRC="$FEDSEARCH_ROOT/data/nimbus/wiki"
ORCA_SRC="$FEDSEARCH_ROOT/data/orca/wiki"
KESTREL_SRC="$FEDSEARCH_ROOT/data/kestrel/wiki"
HERON_SRC="$FEDSEARCH_ROOT/data/heron/wiki"
WREN_SRC="$FEDSEARCH_ROOT/data/wren/wiki"
INST="$FEDSEARCH_RUN_DIR/dokuwiki"
SITE="$INST/site"
SECRETS="$INST/secrets.yaml"
ENV_FILE="$FEDSEARCH_RUN_DIR/dokuwiki.env"
PID_FILE="$FEDSEARCH_RUN_DIR/dokuwiki.pid"
LOG_FILE="$FEDSEARCH_RUN_DIR/dokuwiki.log"
READY="$INST/.ready"   # written last when an instance build completes

# Wiki accounts from data/sample/COMPANY.md (eve has none). Last field: the subject (JWT sub)
# the adapter maps to this account in the secrets file.
AUTH_SPEC='
user|alice|Alice (support, retail)|alice@spruce-mall.example|user,support|alice
user|dave|Dave (support, wholesale)|dave@spruce-mall.example|user,support|dave
user|bob|Bob (finance)|bob@spruce-mall.example|user,finance|bob
user|carol|Carol|carol@spruce-mall.example|user|carol
# Names are encoded by gen_auth.php (auth_nameencode); write them plainly here.
acl|*|@ALL|0
acl|public:*|@ALL|0
acl|public:*|@user|1
acl|support:*|@ALL|0
acl|support:*|@support|1
acl|finance:*|@ALL|0
acl|finance:*|@finance|1
'

# running() PID: alive and not a zombie (after SIGTERM php exits at once, but init may take ~1 s
# to reap it; a zombie has already closed its socket).
running() {
  local st
  st=$(awk '/^State:/ {print $2}' "/proc/$1/status" 2>/dev/null) || return 1
  [ -n "$st" ] && [ "$st" != Z ] && [ "$st" != X ]
}
# is_ours PID: a php -S serving this instance (guards against a recycled pid in a stale pid file)
is_ours() { tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null | grep -qF -- "-t $SITE "; }
php_alive() { [ -f "$PID_FILE" ] && running "$(cat "$PID_FILE")" && is_ours "$(cat "$PID_FILE")"; }

stop_php() {
  local pid
  [ -f "$PID_FILE" ] || return 1
  pid=$(cat "$PID_FILE")
  if running "$pid" && is_ours "$pid"; then
    # The server leads its own process group (setsid): its workers go with it.
    kill -- "-$pid" 2>/dev/null || kill "$pid" 2>/dev/null || true
    for _ in $(seq 100); do running "$pid" || break; sleep 0.05; done
    running "$pid" && kill -9 -- "-$pid" 2>/dev/null || true
    pkill -9 -g "$pid" 2>/dev/null || true
  fi
  rm -f "$PID_FILE"
}

http_ok() {  # the wiki answers its XML-RPC endpoint (401 without credentials is an answer)
  local code
  code=$(curl -s -o /dev/null -m 2 -w '%{http_code}' -H 'Content-Type: text/xml' \
    --data '<?xml version="1.0"?><methodCall><methodName>dokuwiki.getVersion</methodName></methodCall>' \
    "http://127.0.0.1:$PORT/lib/exe/xmlrpc.php" 2>/dev/null) || return 1
  [ "$code" = 200 ] || [ "$code" = 401 ]
}

cmd_install() {
  apt_install dokuwiki php-cli php-xml php8.2-cgi curl
  log "installed: dokuwiki $(cat /usr/share/dokuwiki/VERSION 2>/dev/null), $(php -r 'echo "php ", PHP_VERSION;')"
}

need_installed() {
  [ -f /usr/share/dokuwiki/doku.php ] && command -v php >/dev/null && command -v curl >/dev/null \
    || die "DokuWiki is not installed; run: $0 install"
}

# link_code SITE — the DokuWiki code tree for an instance: ~100 symlinks into the Debian package
# plus real copies of exactly the files whose location decides where DokuWiki looks for its
# config (a full `cp -rL` is 5,300 files; deleting it took 1.5-7 s on this disk).
#  - PHP resolves symlinks in __FILE__/__DIR__, and the entry points derive DOKU_INC from it
#    (doku.php, lib/exe/*.php, bin/*.php), as does inc/init.php for inc/preload.php: these are copied.
#  - inc/preload.php (Debian's, hard-codes /etc/dokuwiki) and install.php are left out, so
#    DOKU_CONF = SITE/conf/ and $conf['savedir'] in local.php puts data in SITE/data.
link_code() {
  local site=$1 src=/usr/share/dokuwiki f name
  mkdir -p "$site/inc" "$site/lib"
  cp "$src/doku.php" "$src/index.php" "$src/feed.php" "$src/VERSION" "$site/"
  cp -r "$src/bin" "$site/bin"
  cp -r "$src/lib/exe" "$site/lib/exe"
  ln -s "$src/vendor" "$site/vendor"
  for f in "$src"/lib/*; do
    name=${f##*/}
    [ "$name" = exe ] && continue
    ln -s "$(readlink -f "$f")" "$site/lib/$name"   # lib/plugins, lib/tpl -> /var/lib/dokuwiki/lib/...
  done
  for f in "$src"/inc/* "$src"/inc/.htaccess; do
    name=${f##*/}
    case $name in
      preload.php) ;;
      init.php) cp "$f" "$site/inc/" ;;
      *) ln -s "$f" "$site/inc/$name" ;;
    esac
  done
}

build_instance() {
  local t0 n
  t0=$EPOCHREALTIME
  rm -rf "$INST"
  mkdir -p "$SITE"
  chmod 700 "$INST"
  link_code "$SITE"
  mkdir -p "$SITE/conf" "$SITE/data"
  cp -rL /etc/dokuwiki/. "$SITE/conf/"
  rm -f "$SITE/conf/apache.conf" "$SITE/conf/lighttpd.conf" "$SITE/conf/mysql.conf.php.example"
  cp -r /var/lib/dokuwiki/data/. "$SITE/data/"
  rm -rf "$SITE/data/pages"/* "$SITE/data/meta"/* "$SITE/data/attic"/* "$SITE/data/index"/* \
    "$SITE/data/cache"/*   # drop the package's wiki:* and playground pages
  cat >"$SITE/conf/local.php" <<'PHP'
<?php
// Written by scripts/backends/dokuwiki.sh: isolated fedsearch test instance.
$conf['title']       = 'Spruce Mall Wiki 云杉商城';
$conf['lang']        = 'en';
$conf['savedir']     = DOKU_INC.'data';
$conf['useacl']      = 1;
$conf['authtype']    = 'authplain';
$conf['superuser']   = '@admin';
$conf['remote']      = 1;
$conf['remoteuser']  = '@user,@nimbus,@orca,@kestrel,@heron,@wren';
$conf['useheading']  = 1;
$conf['updatecheck'] = 0;
$conf['dnslookups']  = 0;
$conf['userewrite']  = 0;
$conf['disableactions'] = 'register,resendpwd';
PHP
  printf '<?php\n$plugins['"'"'popularity'"'"'] = 0;\n$plugins['"'"'extension'"'"'] = 0;\n' \
    >"$SITE/conf/plugins.local.php"

  # users, ACL and the adapter's credentials
  { printf '%s\n' "$AUTH_SPEC"; cat "$NIMBUS_SRC/auth.spec" "$ORCA_SRC/auth.spec" "$KESTREL_SRC/auth.spec" "$HERON_SRC/auth.spec" "$WREN_SRC/auth.spec"; } | php "$HERE/gen_auth.php" "$SITE" "$SECRETS" >/dev/null

  # sample pages: data/sample/wiki/<ns>/<page>.txt
  n=0
  while IFS= read -r -d '' f; do
    rel=${f#"$PAGES_SRC/"}
    mkdir -p "$SITE/data/pages/$(dirname "$rel")"
    cp "$f" "$SITE/data/pages/$rel"
    n=$((n + 1))
  done < <(find "$PAGES_SRC" -mindepth 2 -maxdepth 2 -name '*.txt' -not -path '*/xmlrpc-examples/*' -print0)
  [ "$n" -gt 0 ] || die "no sample pages found under $PAGES_SRC/<ns>/<page>.txt"
  # Nimbus pages: data/nimbus/wiki/nimbus/** is laid out like data/pages (nested namespaces)
  cp -r "$NIMBUS_SRC/nimbus" "$SITE/data/pages/"
  n=$((n + $(find "$NIMBUS_SRC/nimbus" -name '*.txt' | wc -l)))
  cp -r "$ORCA_SRC/orca" "$SITE/data/pages/"   # Orca pages, laid out the same way
  n=$((n + $(find "$ORCA_SRC/orca" -name '*.txt' | wc -l)))
  cp -r "$KESTREL_SRC/kestrel" "$SITE/data/pages/"   # Kestrel pages, laid out the same way
  n=$((n + $(find "$KESTREL_SRC/kestrel" -name '*.txt' | wc -l)))
  cp -r "$HERON_SRC/heron" "$SITE/data/pages/"   # Heron pages, laid out the same way
  n=$((n + $(find "$HERON_SRC/heron" -name '*.txt' | wc -l)))
  cp -r "$WREN_SRC/wren" "$SITE/data/pages/"   # Wren Travel pages, laid out the same way
  n=$((n + $(find "$WREN_SRC/wren" -name '*.txt' | wc -l)))

  # ages from both mtimes.txt files (file mtime + changelog + metadata), then the search index;
  # one seed_meta run, so the global changelog stays chronological across the two companies
  cat "$PAGES_SRC/mtimes.txt" "$NIMBUS_SRC/mtimes.txt" "$ORCA_SRC/mtimes.txt" "$KESTREL_SRC/mtimes.txt" "$HERON_SRC/mtimes.txt" "$WREN_SRC/mtimes.txt" >"$INST/mtimes.txt"
  # shellcheck disable=SC2086 # FEDSEARCH_NOW (all.sh's seeding instant) is one word or none
  php "$HERE/seed_meta.php" "$SITE" "$INST/mtimes.txt" ${FEDSEARCH_NOW:-} >/dev/null
  HTTP_HOST=127.0.0.1 SERVER_PORT=80 php "$SITE/bin/indexer.php" -c -q \
    || die "indexing the sample pages failed"
  touch "$READY"
  log "built instance in $INST ($n pages) in $(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN{printf "%.2f", b-a}') s"
}

write_env() {
  local tmp="$ENV_FILE.tmp"
  printf 'DOKUWIKI_URL=http://127.0.0.1:%s\nDOKUWIKI_SECRETS=%s\n' "$PORT" "$SECRETS" >"$tmp"
  mv "$tmp" "$ENV_FILE"
}

cmd_start() {
  need_installed
  if php_alive; then
    if http_ok; then
      log "already running on http://127.0.0.1:$PORT (pid $(cat "$PID_FILE"))"
      [ -f "$ENV_FILE" ] || write_env
      return 0
    fi
    die "php -S pid $(cat "$PID_FILE") serves this instance but 127.0.0.1:$PORT does not answer (started with another DOKUWIKI_PORT?); run: $0 stop"
  fi
  rm -f "$PID_FILE"
  port_free "$PORT"

  if [ -f "$READY" ] && [ -f "$SECRETS" ]; then
    log "reusing kept instance $INST"
  else
    build_instance
  fi

  mkdir -p "$SITE/data/tmp"
  # Detached: stdin/stdout/stderr to /dev/null and the log, every other inherited descriptor closed
  # (a caller's pipe or our lock fd must not be held open by the server), own session.
  # Several workers (PHP_CLI_SERVER_WORKERS, DOKUWIKI_WORKERS, default 4), so the adapter's
  # concurrent searches are not served one by one; they are forked into the server's own process
  # group, which stop_php ends as a whole.
  (
    for fd in /proc/$BASHPID/fd/*; do
      fd=${fd##*/}
      [ "$fd" -gt 2 ] 2>/dev/null && eval "exec $fd>&-"
    done
    exec setsid env PHP_CLI_SERVER_WORKERS="${DOKUWIKI_WORKERS:-4}" php -d session.save_path="$SITE/data/tmp" \
      -d display_errors=0 -d log_errors=1 \
      -S "127.0.0.1:$PORT" -t "$SITE" "$HERE/router.php"
  ) </dev/null >>"$LOG_FILE" 2>&1 &
  echo $! >"$PID_FILE"

  local i
  for i in $(seq 150); do
    http_ok && break
    running "$(cat "$PID_FILE")" || { rm -f "$PID_FILE"; die "php -S exited at startup; see $LOG_FILE"; }
    sleep 0.1
  done
  http_ok || { stop_php; die "DokuWiki did not answer on 127.0.0.1:$PORT within 15 s; see $LOG_FILE"; }
  write_env
  log "DokuWiki running on http://127.0.0.1:$PORT (pid $(cat "$PID_FILE")); env in $ENV_FILE"
}

cmd_stop() {
  local keep=0
  case "${1:-}" in
    --keep-data) keep=1 ;;
    "") ;;
    *) die "unknown option for stop: $1 (only --keep-data)" ;;
  esac
  if stop_php; then
    log "stopped"
  else
    log "not running"
  fi
  if [ "$keep" = 0 ]; then
    rm -rf "$INST" "$ENV_FILE"
    log "removed instance $INST"
  else
    log "kept instance $INST (next start reuses it)"
  fi
}

cmd_status() {
  if php_alive && http_ok; then
    echo "dokuwiki: running on http://127.0.0.1:$PORT (pid $(cat "$PID_FILE"))"
    return 0
  elif php_alive; then
    echo "dokuwiki: process $(cat "$PID_FILE") alive but not answering on 127.0.0.1:$PORT"
    return 3
  fi
  if [ -f "$READY" ]; then echo "dokuwiki: stopped (instance kept in $INST)"; else echo "dokuwiki: stopped"; fi
  return 3
}

cmd_import() {
  local dir=${1:-} replace=0
  [ -n "$dir" ] && [ -d "$dir" ] || die "usage: $0 import DIR [--replace] (DIR holds <ns>/<page>.txt, optional mtimes.txt and auth.spec)"
  [ "${2:-}" = "--replace" ] && replace=1
  [ -f "$READY" ] && [ -f "$SECRETS" ] || die "no instance in $INST; run: $0 start"
  dir=$(cd "$dir" && pwd)
  local namespaces ns n=0 f rel id dates="$INST/import-mtimes.txt"
  namespaces=$(find "$dir" -mindepth 1 -maxdepth 1 -type d -printf '%f\n' | sort)
  [ -n "$namespaces" ] || die "$dir holds no namespace folder (<ns>/<page>.txt)"
  for ns in $namespaces; do
    [[ $ns =~ ^[a-z0-9_.-]+$ ]] || die "namespace folder '$ns' is not a DokuWiki id (lower-case letters, digits, _ . -)"
  done
  # users and ACL first: a login or subject another company already uses stops the import here,
  # before any page is removed or copied (gen_auth.php names each collision on stderr)
  if [ -f "$dir/auth.spec" ]; then
    php "$HERE/gen_auth.php" "$SITE" "$SECRETS" --merge <"$dir/auth.spec" >/dev/null \
      || die "merging $dir/auth.spec failed (see above); nothing was imported"
  fi
  for ns in $namespaces; do
    if [ "$replace" = 1 ]; then
      rm -rf "$SITE/data/pages/$ns" "$SITE/data/meta/$ns" "$SITE/data/attic/$ns"
      log "removed namespace $ns"
    fi
  done
  : >"$dates"
  while IFS= read -r -d '' f; do
    rel=${f#"$dir/"}
    mkdir -p "$SITE/data/pages/$(dirname "$rel")"
    cp "$f" "$SITE/data/pages/$rel"
    id=${rel%.txt}; id=${id//\//:}
    # a page mtimes.txt does not list is dated by its own file
    if ! grep -qE "^[[:space:]]*$id[[:space:]]" "$dir/mtimes.txt" 2>/dev/null; then
      printf '%s %s\n' "$id" "$(date -u -d "@$(stat -c %Y "$f")" +%Y-%m-%dT%H:%M:%SZ)" >>"$dates"
    fi
    n=$((n + 1))
  done < <(find "$dir" -mindepth 2 -name '*.txt' -print0)
  [ -f "$dir/mtimes.txt" ] && cat "$dir/mtimes.txt" >>"$dates"
  php "$HERE/seed_meta.php" "$SITE" "$dates" >/dev/null || die "dating the pages failed"
  rm -rf "$SITE/data/cache"/*
  # -c: a replaced page is back-dated below its .indexed stamp, which an incremental run would skip
  HTTP_HOST=127.0.0.1 SERVER_PORT=80 php "$SITE/bin/indexer.php" -c -q || die "indexing failed"
  log "imported $n pages from $dir (namespaces: $(echo $namespaces | tr ' ' ,)) into $INST"
}

# start/stop/status of one run dir are serialised (two test processes calling start at once).
lock() { exec 8>"$FEDSEARCH_RUN_DIR/dokuwiki.lock"; flock 8; }

case "${1:-}" in
  install) cmd_install ;;
  start) lock; cmd_start ;;
  stop) shift; lock; cmd_stop "$@" ;;
  status) cmd_status ;;
  import) shift; lock; cmd_import "$@" ;;
  *) echo "usage: $0 install | start | stop [--keep-data] | status | import DIR [--replace]" >&2; exit 2 ;;
esac
