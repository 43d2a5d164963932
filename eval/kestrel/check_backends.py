#!/usr/bin/env python3
"""Checks the Kestrel Medical labels (questions.jsonl) against the REAL seeded backends, not the data
files: every labeled id (relevant, forbidden, superseded) exists, every relevant doc is visible to
the question's user, and every forbidden doc is not. Visibility is computed the way the deployment
in deploy/eval/kestrel applies it: router required_groups (tickets: service/quality/sales,
records: service/sales/finance/quality), the OpenSearch permission fields (public / allowed_groups /
allowed_users), the SQL region predicate (users.yaml `regions`), and wiki.getPage as the user's own
DokuWiki login. It runs no fedsearch search.

    FEDSEARCH_RUN_DIR=/tmp/run scripts/backends/all.sh start sqlite opensearch dokuwiki
    set -a; . /tmp/run/opensearch.env; . /tmp/run/dokuwiki.env; . /tmp/run/sqlite.env; set +a
    python3 eval/kestrel/check_backends.py
"""

import os, sys
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from backend_labels import Company, check  # noqa: E402 (eval/backend_labels.py: the one checker)

# An optional folder with its own questions.jsonl and users.yaml (eval/kestrel-extra) is checked instead.
check(Company(
    here=os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else HERE,
    sqlite_env="KESTREL_SQLITE_PATH",
    index={"tickets": "kestrel-tickets", "notices": "kestrel-notices", "manuals": "kestrel-manuals"},
    required={"tickets": {"service", "quality", "sales"}, "records": {"service", "sales", "finance", "quality"}},
    sql_source="records",
    sql_keys=(("installations", "serial_no"), ("orders", "order_no"), ("service_contracts", "contract_no"), ("hospitals", "hospital_id")),
    row_column="region",
    user_attribute="regions",
    wiki_users=("lin", "zhao", "sarah", "wang"),
))
