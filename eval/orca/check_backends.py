#!/usr/bin/env python3
"""Checks the Orca Freight labels (questions.jsonl) against the REAL seeded backends, not the data
files: every labeled id (relevant, forbidden, superseded) exists, every relevant doc is visible to
the question's user, and every forbidden doc is not. Visibility is computed the way the deployment
in deploy/eval/orca applies it: router required_groups (cases: cs/ops/customs/claims, shipments:
cs/ops/customs/finance), the OpenSearch permission fields (public / allowed_groups / allowed_users),
the SQL branch predicate (users.yaml `branches`), and wiki.getPage as the user's own DokuWiki login.
It runs no fedsearch search.

    FEDSEARCH_RUN_DIR=/tmp/run scripts/backends/all.sh start sqlite opensearch dokuwiki
    set -a; . /tmp/run/opensearch.env; . /tmp/run/dokuwiki.env; . /tmp/run/sqlite.env; set +a
    python3 eval/orca/check_backends.py
"""

import os, sys
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from backend_labels import Company, check  # noqa: E402 (eval/backend_labels.py: the one checker)

# An optional folder with its own questions.jsonl and users.yaml (eval/orca-extra) is checked instead.
check(Company(
    here=os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else HERE,
    sqlite_env="ORCA_SQLITE_PATH",
    index={"cases": "orca-cases", "advisories": "orca-advisories", "guides": "orca-guides"},
    required={"cases": {"cs", "ops", "customs", "claims"}, "shipments": {"cs", "ops", "customs", "finance"}},
    sql_source="shipments",
    sql_keys=(("shipments", "booking_no"), ("invoices", "invoice_no"), ("claims", "claim_no"), ("customers", "customer_id")),
    row_column="branch",
    user_attribute="branches",
    wiki_users=("ting", "hannah", "wei", "priya"),
))
