#!/usr/bin/env bash
# Shared helpers for the backend and demo scripts. Source it: `. "$(dirname "$0")/../lib.sh"`.
# Scripts run strict; an interactive shell that sources it (docs/onboarding.md) keeps its options,
# so one failing command does not close it.
[[ $- == *i* ]] || set -euo pipefail

FEDSEARCH_ROOT="${FEDSEARCH_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
# Everything a run creates (data dirs, logs, pid files, env files) lives under here.
FEDSEARCH_RUN_DIR="${FEDSEARCH_RUN_DIR:-$FEDSEARCH_ROOT/.run}"
mkdir -p "$FEDSEARCH_RUN_DIR"

log() { printf '[%s] %s\n' "$(basename "$0")" "$*" >&2; }
die() { printf '[%s] error: %s\n' "$(basename "$0")" "$*" >&2; exit 1; }

# apt_install PKG... — installs the Debian packages that are missing, serialised with a lock so
# several scripts may call it at once. `apt-get update` runs once per machine boot.
apt_install() {
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "installing Debian packages: ${missing[*]}"
  (
    flock 9
    if [ ! -f /tmp/fedsearch-apt-updated ]; then
      apt-get update -qq >/dev/null || die "apt-get update failed"
      touch /tmp/fedsearch-apt-updated
    fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
      || die "could not install: ${missing[*]}"
  ) 9>/tmp/fedsearch-apt.lock
}

# port_free PORT — fails with one clear line when something already listens on 127.0.0.1:PORT.
port_free() {
  if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then
    die "port $1 on 127.0.0.1 is already taken; stop what uses it or set another port"
  fi
}

# wait_tcp PORT SECONDS — waits until 127.0.0.1:PORT accepts connections.
wait_tcp() {
  local port=$1 secs=${2:-30} i=0
  while ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do
    i=$((i + 1)); [ "$i" -gt $((secs * 10)) ] && return 1; sleep 0.1
  done
}

# stop_pidfile FILE — stops the process whose pid is in FILE (TERM, then KILL after 10 s).
stop_pidfile() {
  local f=$1 pid
  [ -f "$f" ] || return 0
  pid=$(cat "$f")
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$f"
}

# tls_env SERVICE DIR — the FEDSEARCH_* overrides (VAR=VALUE words) that point SERVICE's config
# at the throwaway certificates `fedsearch-dev-pki DIR` wrote: mutual TLS between the services and
# the router's assertion key (docs/security.md). DIR must not contain spaces.
tls_env() {
  local s=$1 d=$2
  if [ "$s" = router ]; then
    echo "FEDSEARCH_INTERNAL_TLS__CA_FILE=$d/ca.pem FEDSEARCH_INTERNAL_TLS__CERT_FILE=$d/router.pem" \
      "FEDSEARCH_INTERNAL_TLS__KEY_FILE=$d/router.key FEDSEARCH_IDENTITY__SIGNING_KEY_FILE=$d/signing.pem"
  elif [ "$s" = fusion ]; then
    echo "FEDSEARCH_SERVER__TLS__CA_FILE=$d/ca.pem FEDSEARCH_SERVER__TLS__CERT_FILE=$d/fusion.pem" \
      "FEDSEARCH_SERVER__TLS__KEY_FILE=$d/fusion.key"
  else
    echo "FEDSEARCH_SERVER__TLS__CA_FILE=$d/ca.pem FEDSEARCH_SERVER__TLS__CERT_FILE=$d/$s.pem" \
      "FEDSEARCH_SERVER__TLS__KEY_FILE=$d/$s.key FEDSEARCH_SERVER__IDENTITY__JWKS_FILE=$d/router.jwks"
  fi
}
