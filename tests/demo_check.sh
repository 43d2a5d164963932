#!/usr/bin/env bash
# demo_check.sh — runs `scripts/demo.sh --once` for real (its own backends and services) and checks
# its output: every sample question is answered from the expected sources, carol gets less,
# eve's wiki is denied, a stopped adapter shows up as unavailable. Prints `demo: N passed, M failed`
# last and exits non-zero on any failure.
#
#   tests/demo_check.sh [--postgres]        (DEMO_OUTPUT=FILE: check a saved output instead of running)
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

OUT=$(mktemp /tmp/fedsearch-demo-check.XXXXXX)
trap 'rm -f "$OUT"' EXIT
if [ -n "${DEMO_OUTPUT:-}" ]; then
  cp "$DEMO_OUTPUT" "$OUT"; demo_rc=0
else
  echo "[demo_check] running scripts/demo.sh --once $*"
  start=$SECONDS
  scripts/demo.sh --once "$@" 2>&1 | tee "$OUT"
  demo_rc=${PIPESTATUS[0]}
  echo "[demo_check] scripts/demo.sh --once exited $demo_rc after $((SECONDS - start)) s"
fi

pass=0 fail=0
ok() { pass=$((pass + 1)); printf 'ok    %s\n' "$1"; }
bad() { fail=$((fail + 1)); printf 'FAIL  %s\n' "$1"; [ -z "${2:-}" ] || printf '      %s\n' "$2"; }
# check NAME CMD... — passes when CMD succeeds.
check() { local name=$1; shift; if "$@"; then ok "$name"; else bad "$name"; fi; }

# section TAG — the output of one `==== [TAG] ...` section (up to the next `==== `).
section() { awk -v tag="==== [$1]" 'index($0, tag) == 1 {on = 1; next} /^==== / {on = 0} on' "$OUT"; }
# between FILE START END — lines after the first line containing START up to one containing END.
between() { awk -v a="$2" -v b="$3" 'on && index($0, b) {exit} on; index($0, a) {on = 1}' "$1"; }
# state TEXT SOURCE STATE_RE [MIN_HITS] — the status table row of SOURCE has a matching state and hits.
state() {
  awk -v s="$2" -v re="^($3)\$" -v min="${4:-0}" '
    $1 == s && NF >= 4 && $2 ~ re && $3 ~ /^[0-9]+$/ && $3 + 0 >= min {found = 1}
    END {exit !found}' <<<"$1"
}
# listed TEXT SOURCE... — every SOURCE has a row in `fedsearch sources` output.
listed() { local t=$1 s; shift; for s in "$@"; do grep -Eq "^  $s +[a-z]+ " <<<"$t" || return 1; done; }
selected() { grep -Eq "^ +selected +$2( |\$)" <<<"$1"; }
has() { grep -Eq -- "$2" <<<"$1"; }
hasnt() { ! grep -Eq -- "$2" <<<"$1"; }
# before TEXT RE1 RE2 — RE1 occurs, and RE2 either not at all or only after RE1.
before() {
  local a b
  a=$(grep -En -- "$2" <<<"$1" | head -1 | cut -d: -f1)
  b=$(grep -En -- "$3" <<<"$1" | head -1 | cut -d: -f1)
  [ -n "$a" ] && { [ -z "$b" ] || [ "$a" -lt "$b" ]; }
}

check "demo.sh --once exits 0" test "$demo_rc" -eq 0
check "all five services come up" grep -q '^Everything is up' "$OUT"
check "the internal hops run over mutual TLS with the run's throwaway CA" grep -q 'mutual TLS on every internal hop' "$OUT"

# Q1 — alice: orders + wiki; the backorder; the current policy before the superseded one.
q1=$(section Q1)
check "Q1 alice: asked as alice"                     has "$q1" '^user: +alice'
check "Q1 alice: router selects orders and wiki"     eval 'selected "$q1" orders && selected "$q1" wiki'
check "Q1 alice: orders answers (ok, hits)"          state "$q1" orders ok 1
check "Q1 alice: wiki answers (ok, hits)"            state "$q1" wiki ok 1
check "Q1 alice: order SO20261001 is cited"          has "$q1" 'ref orders:[^ ]*SO20261001'
check "Q1 alice: the backorder reason is shown"      has "$q1" 'backorder|缺货'
check "Q1 alice: current return policy cited before the superseded 2025 one" \
  before "$q1" 'ref wiki:public:return_policy( |$)' 'ref wiki:public:return_policy_2025'
check "Q1 alice: a trace id is printed"              has "$q1" 'trace: [0-9a-f]{16,}'

# Q2 — dave, 最近一周 → last 7 days: incidents + tickets + the runbook; the 12-day-old incident is left out.
q2=$(section Q2)
check "Q2 dave: asked as dave; 最近一周 becomes a 7-day filter" eval 'has "$q2" "^user: +dave" && has "$q2" "last 7 days"'
check "Q2 dave: incidents answers (ok, hits)"        state "$q2" incidents ok 1
check "Q2 dave: tickets answers (ok, hits)"          state "$q2" tickets ok 1
check "Q2 dave: wiki answers (ok, hits)"             state "$q2" wiki ok 1
check "Q2 dave: incident INC-2041 is cited"          has "$q2" 'ref incidents:[^ ]*INC-2041'
check "Q2 dave: ticket TCK-5002 with its status (in_progress)" eval 'has "$q2" "ref tickets:[^ ]*TCK-5002" && has "$q2" "in_progress"'
check "Q2 dave: the payment-timeout runbook is cited" has "$q2" 'ref wiki:support:runbook_payment_timeout'
check "Q2 dave: INC-2038 (12 days old) is left out"  hasnt "$q2" 'ref incidents:[^ ]*INC-2038'

# Q3 — carol: fewer sources, no support:/finance: pages, no tickets/incidents.
q3=$(section Q3)
q3f=$(mktemp); printf '%s\n' "$q3" >"$q3f"
alice_src=$(between "$q3f" '# as alice' '# as carol')
carol_src=$(between "$q3f" '# as carol' 'user:')
carol_q=$(awk '/^user: +carol/ {on = 1} on' "$q3f")
rm -f "$q3f"
check "Q3 sources: alice may use orders, tickets, incidents, kb, wiki" \
  listed "$alice_src" orders tickets incidents kb wiki
check "Q3 sources: carol may use kb and wiki only" \
  eval 'grep -Eq "^  (kb|wiki) " <<<"$carol_src" && ! grep -Eq "^  (orders|tickets|incidents) " <<<"$carol_src"'
check "Q3 carol: her search is answered (status table + trace)" eval 'has "$carol_q" "^ +sources:" && has "$carol_q" "trace: "'
check "Q3 carol: no support:/finance: wiki pages" hasnt "$carol_q" 'wiki:(support|finance):'
check "Q3 carol: no tickets/incidents/orders sources or hits" \
  eval '! grep -Eq "^ +(selected +)?(tickets|incidents|orders) |ref (tickets|incidents|orders):" <<<"$carol_q"'

# Q4 — eve: wiki denied, kb answers.
q4=$(section Q4)
check "Q4 eve: wiki is DENIED"                       state "$q4" wiki denied
check "Q4 eve: kb still answers (ok, hits)"          state "$q4" kb ok 1

# Q5 — wiki adapter stopped: partial answer, wiki unavailable, then back.
q5=$(section Q5)
check "Q5 stopped adapter: wiki reported unavailable/error" state "$q5" wiki 'unavailable|error|timeout|circuit_open'
check "Q5 stopped adapter: the other sources still answer" eval 'state "$q5" orders ok 1 && state "$q5" tickets ok 1'
check "Q5 stopped adapter: hits are still returned" has "$q5" '^ +1\. '
check "Q5 restart: the wiki answers again"           has "$q5" 'wiki source state: ok'

# Clean-up: nothing of the demo left running, .run/demo removed.
check "clean-up: .run/demo removed" test ! -e "$ROOT/.run/demo"

echo "demo: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
