#!/usr/bin/env bash
# Records real XML-RPC exchanges with a running instance (scripts/backends/dokuwiki.sh start) into
# data/sample/wiki/xmlrpc-examples/ as fixtures for the wiki adapter's parser tests:
#   NN-name.request.xml    the exact POST body
#   NN-name.response.xml   the exact response body
#   NN-name.response.txt   status line + response headers (cookies and credentials redacted)
# plus INDEX.md listing caller, HTTP status and what the reply means. Passwords never leave the
# secrets file: curl reads them from a temporary config file, and the recorded headers carry none.
. "$(dirname "${BASH_SOURCE[0]}")/../../lib.sh"

. "$FEDSEARCH_RUN_DIR/dokuwiki.env"
OUT="${1:-$FEDSEARCH_ROOT/data/sample/wiki/xmlrpc-examples}"
RPC="$DOKUWIKI_URL/lib/exe/xmlrpc.php"
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
mkdir -p "$OUT"
rm -f "$OUT"/*.xml "$OUT"/*.txt "$OUT/INDEX.md"

field_of() {  # SUBJECT FIELD
  awk -v s="$1" -v k="$2" '$0 ~ "^"s":" {f=1; next}
    f && $1 == k":" {sub(/^ *[a-z]+: "/, ""); sub(/"$/, ""); print; exit} /^[^ #]/ {f=0}' "$DOKUWIKI_SECRETS"
}

{
  echo "# Recorded DokuWiki XML-RPC exchanges"
  echo
  echo "DokuWiki $(cat "$FEDSEARCH_RUN_DIR/dokuwiki/site/VERSION" 2>/dev/null) on PHP $(php -r 'echo PHP_VERSION;'),"
  echo "recorded $(date -u +%Y-%m-%dT%H:%MZ) by scripts/backends/dokuwiki/record_examples.sh against the sample"
  echo "wiki (data/sample/wiki). POST $RPC, \`Content-Type: text/xml\`, HTTP Basic auth"
  echo "(credentials from the secrets file; redacted here). Timestamps depend on the load time."
  echo
  echo "| file | caller | call | HTTP | reply |"
  echo "|------|--------|------|------|-------|"
} >"$OUT/INDEX.md"

n=0
# record NAME WHO NOTE METHOD [string args...]; WHO: subject | - (no credentials) | bad:<login> | raw:<body>
record() {
  local name=$1 who=$2 note=$3 m=$4 params="" p auth=() f
  shift 4
  n=$((n + 1)); f=$(printf '%02d-%s' "$n" "$name")
  if [[ $m == raw:* ]]; then
    printf '%s' "${m#raw:}" >"$OUT/$f.request.xml"
  else
    for p in "$@"; do params+="<param><value><string>$p</string></value></param>"; done
    printf '<?xml version="1.0"?>\n<methodCall><methodName>%s</methodName><params>%s</params></methodCall>\n' \
      "$m" "$params" >"$OUT/$f.request.xml"
  fi
  case $who in
    -) ;;
    bad:*) printf 'user = "%s:%s"\n' "${who#bad:}" "wrong-password" >"$TMP/cfg"; auth=(-K "$TMP/cfg") ;;
    *) printf 'user = "%s:%s"\n' "$(field_of "$who" username)" "$(field_of "$who" password)" >"$TMP/cfg"
       auth=(-K "$TMP/cfg") ;;
  esac
  local code
  code=$(curl -s -D "$TMP/hdr" -o "$OUT/$f.response.xml" -w '%{http_code}' "${auth[@]}" \
    -H 'Content-Type: text/xml' --data-binary @"$OUT/$f.request.xml" "$RPC")
  {
    printf '# request: POST /lib/exe/xmlrpc.php, caller: %s\n' \
      "$(case $who in -) echo "no credentials" ;; bad:*) echo "${who#bad:} with a wrong password" ;; *) echo "$who (Basic auth, password redacted)" ;; esac)"
    tr -d '\r' <"$TMP/hdr" | sed -E 's/^(Set-Cookie: [^=]+=)[^;]*/\1<redacted>/I; /^Date:/Id'
  } >"$OUT/$f.response.txt"
  local call="\`$m($*)\`"
  [[ $m == raw:* ]] && call="body: \`${m#raw:}\`"
  printf '| %s | %s | %s | %s | %s |\n' "$f" "$who" "$call" "$code" "$note" >>"$OUT/INDEX.md"
}

record getVersion alice "string" dokuwiki.getVersion
record search-zhifuchaoshi-alice alice "array of {id,score,rev,mtime,size,snippet(HTML),title}: support runbook" dokuwiki.search 支付超时
record search-zhifuchaoshi-bob bob "finance page only (ACL)" dokuwiki.search 支付超时
record search-zhifuchaoshi-carol carol "empty array: nothing readable matches" dokuwiki.search 支付超时
record search-jushou-shouxufei-carol carol "old and new return policy" dokuwiki.search "拒收 手续费"
record search-english-phrase-alice alice "quoted phrase" dokuwiki.search '"rejection fee"'
record getPage-return-policy-carol carol "raw wiki text" wiki.getPage public:return_policy
record getPageInfo-return-policy-carol carol "{name,lastModified(dateTime.iso8601),author,version}" wiki.getPageInfo public:return_policy
record getPage-missing-carol carol "empty string for a page that does not exist" wiki.getPage public:no_such_page
record getPageInfo-missing-carol carol "EMPTY struct, HTTP 200 (RemoteException 121 serialised without <fault>)" wiki.getPageInfo public:no_such_page
record getPage-finance-as-alice-403 alice "EMPTY struct, HTTP 403: page denied by ACL" wiki.getPage finance:q3_revenue
record search-no-credentials-401 - "EMPTY struct, HTTP 401" dokuwiki.search 支付超时
record search-wrong-password-401 bad:alice "EMPTY struct, HTTP 401 (same as no credentials)" dokuwiki.search 支付超时
record search-no-account-eve-401 bad:eve "EMPTY struct, HTTP 401 (unknown login looks the same)" dokuwiki.search 支付超时
record unknown-method-200 alice "EMPTY struct, HTTP 200: unknown method" no.such.method
record missing-param-200 alice "EMPTY struct, HTTP 200: wrong argument count" dokuwiki.search
record malformed-xml-fault alice "the only real <fault>: -32700 parse error" "raw:this is not xml"

log "recorded $n exchanges in $OUT"
