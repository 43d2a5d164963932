#!/usr/bin/env bash
# checks.sh — a tally of named checks, for scripts that print `ok   NAME` or `FAIL NAME: why` per
# check and a summary line. Source it: `. "$(dirname "${BASH_SOURCE[0]}")/checks.sh"`.
passed=0 failed=0
ok()   { echo "ok   $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1: $2"; failed=$((failed + 1)); }
# check NAME CMD... — runs CMD; its output (on one line, at most 1500 bytes) is the reason when it fails.
check() {
  local name=$1 out; shift
  if out=$("$@" 2>&1); then ok "$name"; else fail "$name" "$(tr '\n' ' ' <<<"$out" | sed 's/ *$//' | tail -c 1500)"; fi
}
# checks_summary LABEL — prints `LABEL: N passed, M failed`; fails when any check failed.
checks_summary() {
  echo "$1: $passed passed, $failed failed"
  [ "$failed" = 0 ]
}
