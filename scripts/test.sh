#!/usr/bin/env bash
# test.sh — what `make test` (and CI) runs: install and start the real backends, run every test
# against them, run the demo once and check its output, validate the deploy files statically,
# stop everything. Works on a fresh machine of this kind (it installs what is missing).
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$FEDSEARCH_ROOT"

cleanup() { scripts/backends/all.sh stop || true; }
trap cleanup EXIT

command -v cargo >/dev/null || die "cargo is not installed (a rustup toolchain is expected)"
# A one-off build gains nothing from incremental state, which would take gigabytes of disk.
export CARGO_INCREMENTAL=${CARGO_INCREMENTAL:-0}
started=$(date +%s)

log "starting backends (PostgreSQL, MariaDB, SQLite, OpenSearch, DokuWiki, Redis, Chroma + the embedding model) while the workspace builds"
( scripts/backends/all.sh start ) & backends_pid=$!

log "installing the official MCP Python SDK (for the MCP client test) into .run/venv"
# (pip checked, not python: a venv whose creation was interrupted has python and no pip)
( [ -x "$FEDSEARCH_RUN_DIR/venv/bin/pip" ] || python3 -m venv --clear "$FEDSEARCH_RUN_DIR/venv" ) \
  && "$FEDSEARCH_RUN_DIR/venv/bin/pip" install -q --disable-pip-version-check mcp \
  || die "could not install the Python package mcp from PyPI"
export FEDSEARCH_MCP_PYTHON=$FEDSEARCH_RUN_DIR/venv/bin/python

log "installing the MCP Inspector CLI (npm) into .run/inspector"
INSPECTOR=$FEDSEARCH_RUN_DIR/inspector/node_modules/.bin/mcp-inspector
( [ -x "$INSPECTOR" ] || npm install --prefix "$FEDSEARCH_RUN_DIR/inspector" --silent --no-audit --no-fund \
    @modelcontextprotocol/inspector@2.12.0 ) || die "could not install @modelcontextprotocol/inspector from npm"
export FEDSEARCH_MCP_INSPECTOR=$INSPECTOR

log "building the workspace and its tests (debug)"
cargo build --workspace --all-targets --locked
wait "$backends_pid" || die "the backends did not start (logs: $FEDSEARCH_RUN_DIR/start-*.log)"
eval "$(scripts/backends/all.sh env)"

status=0
log "running the tests"
cargo test --workspace --locked --no-fail-fast || status=1

# Answer quality on the five labeled companies (eval/*/README.md): Spruce Mall, Orca Freight and
# (since session 8) Kestrel Medical are tuned on, with 25 more questions each for Kestrel and Orca
# (eval/kestrel-extra, eval/orca-extra, session 21) and Spruce (eval/spruce-extra, session 22); Nimbus Cloud and Heron Property are held out of
# tuning. The floors (about 0.02-0.03 under the session 8 figures) guard against regressions; the
# measured values and the targets are in BENCHMARKS.md. Any forbidden id shown fails.
# eval_company COMPANY FLOOR — one company's eval with its floor; any forbidden id or superseded-first fails.
eval_company() {
  scripts/eval.sh "$1" --fetch --context-tokens 1500 --min-ndcg "$2" \
    --max-superseded-first 0 >"$FEDSEARCH_RUN_DIR/eval-$1.txt" || status=1
  sed -n '/questions, k/,/latency/p' "$FEDSEARCH_RUN_DIR/eval-$1.txt"
}
log "answer-quality eval: spruce (tuning company)"
# Spruce's questions carry no as_of and its data is seeded relative to the start of the backends:
# eval.sh asks them as of the seeding instant (all.sh's FEDSEARCH_SEED_NOW), so the figure is the
# same at any hour (it read 0.851 instead of 0.873 when seeding and eval straddled midnight in
# Asia/Shanghai before).
# 0.928 after session 15, 0.932 after sessions 16–19, 0.935 after session 20, 0.934 after session 21, 0.936 after session 22, 0.937 after session 23
eval_company spruce "${EVAL_MIN_NDCG_SPRUCE:-0.92}"
log "answer-quality eval: orca (second tuning company)"
# 0.869 after session 14, 0.880 after session 15, 0.893 after session 16, 0.907 after session 18, 0.911 after session 19, 0.912 after session 20, 0.910 after session 21, 0.906 after sessions 22 and 23
eval_company orca "${EVAL_MIN_NDCG_ORCA:-0.89}"
log "answer-quality eval: nimbus (held out of tuning)"
# 0.744 after session 13, 0.765 after session 14's question windows that rank, 0.803 after session 15,
# 0.812 after session 16, 0.810 after session 18, 0.814 after sessions 19 and 20, 0.819 after session 21, 0.831 after session 22, 0.838 after session 23, 0.845 after session 24
eval_company nimbus "${EVAL_MIN_NDCG_NIMBUS:-0.81}"
log "answer-quality eval: kestrel (third tuning company since session 8; configured from the docs alone)"
# 0.785 at the start of session 11, 0.814 after its changes, 0.844 after session 13's, 0.846 in 14,
# 0.870 after session 15, 0.880 after session 16, 0.888 after session 18, 0.891 after session 19, 0.901 after session 20, 0.916 after session 21, 0.918 after sessions 22 and 23
eval_company kestrel "${EVAL_MIN_NDCG_KESTREL:-0.86}"
log "answer-quality eval: kestrel-extra and orca-extra (25 questions each, written in session 21 from the data alone, for tuning)"
# first reading 0.540 and 0.508 (eval/kestrel-extra/README.md, eval/orca-extra/README.md): the
# questions the deployments' configs were not written beside; 0.688 and 0.609 once the configs
# had the templates of the sql-adapter README's "Which templates to write", 0.730 and 0.625 after
# session 21's re-scoring changes, 0.786 and 0.648 after session 22's, 0.859 and 0.731 after session 23's, 0.868 and 0.808 after session 24's
eval_company kestrel-extra "${EVAL_MIN_NDCG_KESTREL_EXTRA:-0.84}"
eval_company orca-extra "${EVAL_MIN_NDCG_ORCA_EXTRA:-0.78}"
log "answer-quality eval: spruce-extra (25 questions written in session 22 from the data alone, for tuning)"
# first reading 0.659 (cc4edea, eval/spruce-extra/README.md), 0.716 at the end of session 22; no as_of, rolling windows only, so
# the labels hold at any seeding instant (eval/spruce-extra/check_backends.py checks 2,808 of them);
# 0.740 after session 23, 0.748 after session 24
eval_company spruce-extra "${EVAL_MIN_NDCG_SPRUCE_EXTRA:-0.72}"
log "answer-quality eval: Orca's and Kestrel's questions through configs helpers wrote from the docs alone (session 22)"
# deploy/eval/orca-docs: 0.883 and 0.808 at their first run (926c0fd), against 0.905 and 0.647
# through deploy/eval/orca, the configs written beside the first questions; deploy/eval/kestrel-docs:
# 0.886 and 0.762 (32172c9), against 0.918 and 0.786 — what an adopting team reaches by the docs;
# after session 23: 0.883 / 0.848 and 0.885 / 0.795
# eval_docs_configs COMPANY QUESTIONS FLOOR — QUESTIONS (eval/<name>) through deploy/eval/COMPANY-docs.
eval_docs_configs() {
  EVAL_CONFIG_DIR="deploy/eval/$1-docs" scripts/eval.sh "$2" --fetch --context-tokens 1500 --min-ndcg "$3" \
    --max-superseded-first 0 >"$FEDSEARCH_RUN_DIR/eval-$2-docs.txt" || status=1
  sed -n '/questions, k/,/latency/p' "$FEDSEARCH_RUN_DIR/eval-$2-docs.txt"
}
eval_docs_configs orca orca "${EVAL_MIN_NDCG_ORCA_DOCS:-0.86}"
eval_docs_configs orca orca-extra "${EVAL_MIN_NDCG_ORCA_EXTRA_DOCS:-0.83}"
eval_docs_configs kestrel kestrel "${EVAL_MIN_NDCG_KESTREL_DOCS:-0.86}"
eval_docs_configs kestrel kestrel-extra "${EVAL_MIN_NDCG_KESTREL_EXTRA_DOCS:-0.78}"
log "answer-quality eval: heron (held out of tuning, configured from the docs alone)"
# first, unseen run 0.808 (eval/heron/README.md); 0.822 after session 8's re-scoring features,
# 0.849 after session 13's, 0.853 after session 14's, 0.851 after session 15's, 0.853 after session 16's, 0.850 after session 18's (and 19's, 20's), 0.849 after session 21's, 0.850 after session 22's and 23's
eval_company heron "${EVAL_MIN_NDCG_HERON:-0.83}"
log "answer-quality eval: wren (held out of tuning; PostgreSQL; configured from the docs alone by someone who never saw its questions)"
# first, unseen run 0.805 on the session-23 start binaries and 0.805 at the session's end (eval/wren/README.md)
eval_company wren "${EVAL_MIN_NDCG_WREN:-0.78}"

log "the contract: buf lint, buf breaking against the tagged contracts, Go stubs without M flags (scripts/proto-check.sh)"
scripts/proto-check.sh || status=1

log "observability: promtool check rules on the alert rules and the dashboard's queries, dashboard structure (scripts/check-observability.sh)"
scripts/check-observability.sh || status=1

log "linting (cargo clippy, warnings are errors)"
cargo clippy --workspace --all-targets --locked -- -D warnings || status=1

log "stopping the test backends (the demo starts its own)"
scripts/backends/all.sh stop
log "running the demo once and checking its output"
DEMO_PREBUILT=1 tests/demo_check.sh || status=1

log "Python client (clients/python, with LangChain and LlamaIndex from PyPI) against its own live stack"
scripts/python-client-test.sh || status=1

log "validating docker-compose.yml, the Dockerfiles and the Kubernetes manifests (statically: no engine here)"
scripts/validate-deploy.sh || status=1

log "make test finished in $(( $(date +%s) - started )) s with status $status"
exit "$status"
