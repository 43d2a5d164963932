#!/usr/bin/env bash
# test.sh — what `make test` runs: install and start the real backends, run every test against
# them, validate the deploy files, stop everything. Works on a fresh machine of this kind.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$FEDSEARCH_ROOT"

cleanup() { scripts/backends/all.sh stop || true; }
trap cleanup EXIT

if ! command -v cargo >/dev/null; then die "cargo is not installed (rustup toolchain expected)"; fi

log "starting backends (PostgreSQL, MariaDB, SQLite, OpenSearch, DokuWiki)"
# Build while the backends start: both take minutes on a fresh machine.
( scripts/backends/all.sh start ) & backends_pid=$!
log "building the workspace and its tests (debug)"
cargo build --workspace --all-targets --locked 2>&1 | tail -3
wait "$backends_pid" || die "backends failed to start"
eval "$(scripts/backends/all.sh env)"

log "running the tests"
FEDSEARCH_REQUIRE_BACKENDS=1 cargo test --workspace --locked --no-fail-fast 2>&1 | tee "$FEDSEARCH_RUN_DIR/cargo-test.log"
status=${PIPESTATUS[0]}

if [ -x scripts/validate-deploy.sh ]; then
  log "validating docker-compose.yml, Dockerfiles and Kubernetes manifests (statically: no engine here)"
  scripts/validate-deploy.sh || status=1
fi
exit "$status"
