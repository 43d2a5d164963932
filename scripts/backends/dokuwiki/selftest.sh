#!/usr/bin/env bash
# Checks a running instance from scripts/backends/dokuwiki.sh with real HTTP calls:
# the router's refusals, ACL-filtered XML-RPC search, error replies, page ages.
#   scripts/backends/dokuwiki/selftest.sh [--bench N]
# Reads $FEDSEARCH_RUN_DIR/dokuwiki.env; never prints passwords. Exit 1 on the first failure count > 0.
. "$(dirname "${BASH_SOURCE[0]}")/../../lib.sh"

ENV_FILE="$FEDSEARCH_RUN_DIR/dokuwiki.env"
[ -f "$ENV_FILE" ] || die "no $ENV_FILE; run scripts/backends/dokuwiki.sh start"
# shellcheck disable=SC1090
. "$ENV_FILE"
RPC="$DOKUWIKI_URL/lib/exe/xmlrpc.php"
FAIL=0
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT

ok()  { printf '  ok   %s\n' "$*"; }
bad() { printf '  FAIL %s\n' "$*"; FAIL=$((FAIL + 1)); }

password_of() {  # password of a subject from the secrets file (kept off the command line)
  awk -v s="$1" '$0 ~ "^"s":" {f=1; next} f && /^  password:/ {sub(/^  password: "/, ""); sub(/"$/, ""); print; exit} /^[^ #]/ {f=0}' "$DOKUWIKI_SECRETS"
}
username_of() {
  awk -v s="$1" '$0 ~ "^"s":" {f=1; next} f && /^  username:/ {sub(/^  username: "/, ""); sub(/"$/, ""); print; exit} /^[^ #]/ {f=0}' "$DOKUWIKI_SECRETS"
}

# rpc WHO METHOD [string args...] -> sets CODE, body in $TMP/body. WHO: subject | - (no auth) | bad:<login>
rpc() {
  local who=$1 m=$2 params="" p; shift 2
  for p in "$@"; do params+="<param><value><string>$p</string></value></param>"; done
  printf '<?xml version="1.0"?><methodCall><methodName>%s</methodName><params>%s</params></methodCall>' \
    "$m" "$params" >"$TMP/req"
  local auth=()
  case $who in
    -) ;;
    bad:*) printf 'user = "%s:%s"\n' "${who#bad:}" "not-the-password" >"$TMP/cfg"; auth=(-K "$TMP/cfg") ;;
    *) printf 'user = "%s:%s"\n' "$(username_of "$who")" "$(password_of "$who")" >"$TMP/cfg"; auth=(-K "$TMP/cfg") ;;
  esac
  CODE=$(curl -s -o "$TMP/body" -w '%{http_code}' "${auth[@]}" -H 'Content-Type: text/xml' \
    --data-binary @"$TMP/req" "$RPC")
}
ids() { { grep -o '<name>id</name><value><string>[^<]*' "$TMP/body" || true; } | sed 's/.*<string>//' | sort | tr '\n' ' ' | sed 's/ $//'; }

expect_ids() {  # WHO QUERY EXPECTED-SORTED-IDS
  rpc "$1" dokuwiki.search "$2"
  local got; got=$(ids)
  if [ "$CODE" = 200 ] && [ "$got" = "$3" ]; then ok "search '$2' as $1 -> [${got}]"
  else bad "search '$2' as $1 -> HTTP $CODE [${got}], expected [$3]"; fi
}
expect_code() {  # WHO METHOD ARG CODE BODY-GREP
  rpc "$1" "$2" "$3"
  if [ "$CODE" = "$4" ] && grep -q -- "$5" "$TMP/body"; then ok "$2($3) as $1 -> HTTP $CODE ($5)"
  else bad "$2($3) as $1 -> HTTP $CODE, expected $4 with '$5': $(tr -d '\n' <"$TMP/body" | head -c 200)"; fi
}

echo "router:"
for p in /data/pages/public/return_policy.txt /conf/users.auth.php /%64ata/pages/public/return_policy.txt \
  /%2564ata/pages/public/return_policy.txt /lib/../conf/local.php /lib/%2e%2e/conf/local.php \
  /lib/%252e%252e/conf/local.php /./conf/acl.auth.php '/lib\..\conf\users.auth.php' \
  '/lib%5c..%5cconf%5cusers.auth.php' /CONF/users.auth.php //conf//users.auth.php /conf./users.auth.php \
  /bin/indexer.php /inc/init.php /vendor/autoload.php /install.php /.htaccess \
  /lib/plugins/authplain/auth.php /doku.php/../conf/users.auth.php /DaTa/pages/finance/q3_revenue.txt; do
  c=$(curl -s --path-as-is -o /dev/null -w '%{http_code}' "$DOKUWIKI_URL$p")
  [ "$c" = 403 ] && ok "403 $p" || bad "$c $p (expected 403)"
done
c=$(curl -s --path-as-is -o /dev/null -w '%{http_code}' "$DOKUWIKI_URL/conf%00/users.auth.php")
[ "$c" = 400 ] && ok "400 /conf%00/users.auth.php" || bad "$c /conf%00/users.auth.php (expected 400)"
for p in '/doku.php?id=public:return_policy' /lib/exe/css.php /lib/tpl/dokuwiki/images/logo.png; do
  c=$(curl -s -o /dev/null -w '%{http_code}' "$DOKUWIKI_URL$p")
  [ "$c" = 200 ] && ok "200 $p" || bad "$c $p (expected 200)"
done
c=$(curl -s -o /dev/null -w '%{http_code}' "$DOKUWIKI_URL/no/such/file")
[ "$c" = 404 ] && ok "404 /no/such/file" || bad "$c /no/such/file (expected 404)"

echo "search (ACL filtered by the wiki):"
expect_ids alice 支付超时 "support:runbook_payment_timeout"
expect_ids dave 支付超时 "support:runbook_payment_timeout"
expect_ids carol 支付超时 ""
expect_ids bob 支付超时 "finance:refund_reconciliation"
expect_ids alice "拒收 手续费" "public:return_policy public:return_policy_2025"
expect_ids carol "拒收 手续费" "public:return_policy public:return_policy_2025"
expect_ids bob "拒收 手续费" "finance:q3_revenue finance:refund_reconciliation public:return_policy public:return_policy_2025"
expect_ids bob RF3002 "finance:refund_reconciliation"
expect_ids alice RF3002 ""

echo "errors (no <fault> in this DokuWiki version):"
expect_code alice wiki.getPage finance:q3_revenue 403 '<struct>'
expect_code alice wiki.getPageInfo finance:q3_revenue 403 '<struct>'
expect_code - dokuwiki.search 支付超时 401 '<struct>'
expect_code bad:alice dokuwiki.search 支付超时 401 '<struct>'
expect_code bad:eve dokuwiki.search 支付超时 401 '<struct>'
expect_code alice no.such.method x 200 '<struct>'
expect_code alice wiki.getPageInfo public:no_such_page 200 '<struct>'
expect_code alice wiki.getPage public:no_such_page 200 '<string></string>'
expect_code carol wiki.getPage public:return_policy 200 '拒收手续费 12 元'

echo "page ages (mtimes.txt vs wiki.getPageInfo lastModified):"
now=$(date +%s)
while read -r id days _; do
  case $id in ''|'#'*) continue ;; esac
  case $id in support:*) who=alice ;; finance:*) who=bob ;; *) who=carol ;; esac
  rpc "$who" wiki.getPageInfo "$id"
  lm=$({ grep -o '<dateTime.iso8601>[^<]*' "$TMP/body" || true; } | sed 's/.*>//')
  age=-1; [ -n "$lm" ] && age=$(( (now - $(date -d "$lm" +%s)) / 86400 ))
  # a kept instance may be a few days older than its build; allow that drift upwards
  if [ -n "$lm" ] && [ "$age" -ge "$days" ] && [ "$age" -le $((days + 7)) ]; then ok "$id lastModified $lm ($age days ago, mtimes.txt: $days)"
  else bad "$id lastModified '$lm' ($age days), expected $days days ago"; fi
done <"$FEDSEARCH_ROOT/data/sample/wiki/mtimes.txt"

if [ "${1:-}" = "--bench" ]; then
  n=${2:-50}
  printf 'user = "%s:%s"\n' "$(username_of alice)" "$(password_of alice)" >"$TMP/cfg"
  printf '<?xml version="1.0"?><methodCall><methodName>dokuwiki.search</methodName><params><param><value><string>支付超时</string></value></param></params></methodCall>' >"$TMP/req"
  for _ in $(seq "$n"); do
    curl -s -o /dev/null -w '%{time_total}\n' -K "$TMP/cfg" -H 'Content-Type: text/xml' --data-binary @"$TMP/req" "$RPC"
  done | sort -n | awk '{a[NR]=$1} END {printf "bench: dokuwiki.search 支付超时 as alice, %d calls: median %.1f ms, p90 %.1f ms, min %.1f ms, max %.1f ms\n", NR, a[int((NR+1)/2)]*1000, a[int(NR*0.9)]*1000, a[1]*1000, a[NR]*1000}'
fi

[ "$FAIL" = 0 ] && echo "selftest: all checks passed" || { echo "selftest: $FAIL check(s) failed"; exit 1; }
