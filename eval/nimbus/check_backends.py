#!/usr/bin/env python3
"""Checks the Nimbus labels (questions.jsonl) against the REAL seeded backends, not the data files:
every labeled id (relevant, forbidden, superseded) exists, every relevant doc is visible to the
question's user, and every forbidden doc is not. Visibility is computed the way the deployment in
deploy/eval/nimbus applies it: router required_groups (issues: support/eng/finance, billing:
support/finance), the OpenSearch permission fields (public / allowed_groups / allowed_users), the
SQL region predicate (users.yaml `regions`), and wiki.getPage as the user's own DokuWiki login.
It runs no fedsearch search.

    FEDSEARCH_RUN_DIR=/tmp/run scripts/backends/all.sh start sqlite opensearch dokuwiki
    set -a; . /tmp/run/opensearch.env; . /tmp/run/dokuwiki.env; . /tmp/run/sqlite.env; set +a
    python3 eval/nimbus/check_backends.py
"""

import os, sys
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from backend_labels import Company, check  # noqa: E402 (eval/backend_labels.py: the one checker)

check(Company(
    here=HERE,
    sqlite_env="NIMBUS_SQLITE_PATH",
    index={"issues": "nimbus-issues", "status": "nimbus-status", "docs": "nimbus-docs"},
    required={"issues": {"support", "eng", "finance"}, "billing": {"support", "finance"}},
    sql_source="billing",
    sql_keys=(("invoices", "invoice_no"), ("customers", "org_id"), ("credit_notes", "credit_no")),
    row_column="region",
    user_attribute="regions",
    wiki_users=("mei", "raj", "lena", "omar"),
))
