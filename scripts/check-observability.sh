#!/usr/bin/env bash
# check-observability.sh — the shipped alert rules pass `promtool check rules`, every PromQL
# expression of the rules and of the Grafana dashboard parses, and the dashboard JSON has the
# structure Grafana needs (uid, title, panels with id, type, gridPos and targets), and the compose
# stack's Prometheus config (deploy/compose/prometheus.yml) passes `promtool check config`. Needs
# Debian's prometheus package (installed here when missing).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
apt_install prometheus
dir=deploy/observability
promtool check rules "$dir/alerts.yaml"
# Every dashboard query as a recording rule, so promtool parses its PromQL too.
python3 - "$dir/grafana-dashboard.json" >"${TMPDIR:-/tmp}/fedsearch-dashboard-rules.yaml" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for key in ("uid", "title", "panels", "schemaVersion"):
    assert key in d, f"dashboard: missing `{key}`"
ids = [p["id"] for p in d["panels"]]
assert len(ids) == len(set(ids)), "dashboard: panel ids must be unique"
print("groups:\n  - name: dashboard\n    rules:")
n = 0
for p in d["panels"]:
    for key in ("id", "type", "title", "gridPos", "targets"):
        assert key in p, f"panel {p.get('title')}: missing `{key}`"
    assert p["targets"], f"panel {p['title']}: no targets"
    for t in p["targets"]:
        n += 1
        print(f"      - record: dashboard:q{n}\n        expr: {json.dumps(t['expr'])}")
PY
promtool check rules "${TMPDIR:-/tmp}/fedsearch-dashboard-rules.yaml"
# The compose stack's Prometheus config, with its rule file pointed at the shipped alerts.
sed "s|/etc/prometheus/alerts.yaml|$PWD/$dir/alerts.yaml|" deploy/compose/prometheus.yml \
  >"${TMPDIR:-/tmp}/fedsearch-compose-prometheus.yml"
promtool check config "${TMPDIR:-/tmp}/fedsearch-compose-prometheus.yml"
log "observability files are valid"
