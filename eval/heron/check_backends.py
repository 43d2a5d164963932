#!/usr/bin/env python3
"""Checks the Heron Property labels (questions.jsonl) against the REAL seeded backends, not the data
files: every labeled id (relevant, forbidden, superseded) exists, every relevant doc is visible to
the question's user, and every forbidden doc is not. Visibility is computed the way the deployment
in deploy/eval/heron applies it: router required_groups (workorders: engineering/cs/contractor,
records: cs/finance/leasing), the OpenSearch permission fields (public / allowed_groups /
allowed_users), the SQL estate predicate (users.yaml `estates`), and wiki.getPage as the user's own
DokuWiki login. It runs no fedsearch search.

    eval "$(scripts/backends/all.sh env)"
    python3 eval/heron/check_backends.py
"""

import os, sys
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from backend_labels import Company, check  # noqa: E402 (eval/backend_labels.py: the one checker)

check(Company(
    here=HERE,
    sqlite_env="HERON_SQLITE_PATH",
    index={"workorders": "heron-workorders", "notices": "heron-notices", "guides": "heron-guides"},
    required={"workorders": {"engineering", "cs", "contractor"}, "records": {"cs", "finance", "leasing"}},
    sql_source="records",
    sql_keys=(("accounts", "account_id"), ("invoices", "invoice_no"), ("leases", "lease_no"), ("estates", "estate")),
    row_column="estate",
    user_attribute="estates",
    wiki_users=("liang", "kwok", "helen", "david"),
))
