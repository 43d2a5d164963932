#!/usr/bin/env python3
"""Checks the Wren Travel labels (questions.jsonl) against the REAL seeded backends, not the data
files: every labeled id (relevant, forbidden, superseded) exists, every relevant doc is visible to
the question's user, and every forbidden doc is not. Visibility is computed the way a deployment of
Wren applies it (data/wren/COMPANY.md): no router required_groups (every source is offered to all
five users), the OpenSearch permission fields (public / allowed_groups / allowed_users), the SQL
office predicate (office IN users.yaml `offices`) and wiki.getPage as the user's own DokuWiki login.
It runs no fedsearch search.

Wren's records live in PostgreSQL (database `wren`), not SQLite: eval/backend_labels.py reads its
SQL rows through sqlite3, so this script hands it a small stand-in that answers the checker's one
query form (`SELECT office FROM <table> WHERE <key> = ?`) from `psql` as the read-only role
($WREN_PG_RO_URL), one SELECT per table.

    eval "$(scripts/backends/all.sh env)"
    python3 eval/wren/check_backends.py
"""

import glob, os, re, shutil, subprocess, sys, types
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import backend_labels  # noqa: E402 (eval/backend_labels.py: the one checker)
from backend_labels import Company, check  # noqa: E402


def psql_binary():
    found = shutil.which("psql")
    if found:
        return found
    bins = sorted(glob.glob("/usr/lib/postgresql/*/bin/psql"))
    if not bins:
        sys.exit("check_backends: psql not found (apt-get install postgresql-client)")
    return bins[-1]


class PgRows:
    """sqlite3-like connection for backend_labels.check: `execute(sql, (key,)).fetchone()`."""
    QUERY = re.compile(r"^SELECT (\w+) FROM (\w+) WHERE (\w+) = \?$")

    def __init__(self, url):
        self.url, self.psql, self.tables = url, psql_binary(), {}

    def _table(self, table, key, column):
        if (table, key) not in self.tables:
            out = subprocess.run([self.psql, "-X", "-At", "-F", "\t", "-v", "ON_ERROR_STOP=1", self.url,
                                  "-c", f"SELECT {key}, {column} FROM {table}"],
                                 capture_output=True, text=True, env=dict(os.environ, PGCLIENTENCODING="UTF8"))
            if out.returncode != 0:
                sys.exit(f"check_backends: psql failed on {table}: {out.stderr.strip()}")
            self.tables[(table, key)] = dict(l.split("\t", 1) for l in out.stdout.splitlines() if l)
        return self.tables[(table, key)]

    def execute(self, sql, params):
        m = self.QUERY.match(sql.strip())
        if not m:
            raise ValueError("unexpected query: " + sql)
        column, table, key = m.groups()
        value = self._table(table, key, column).get(params[0])
        return types.SimpleNamespace(fetchone=lambda: (value,) if value is not None else None)


def connect(database, **_):
    # backend_labels opens "file:<value of sqlite_env>?mode=ro"; the value here is the postgres URL.
    return PgRows(re.sub(r"^file:|\?mode=ro$", "", database))


backend_labels.sqlite3 = types.SimpleNamespace(connect=connect)

check(Company(
    here=HERE,
    sqlite_env="WREN_PG_RO_URL",
    index={"itineraries": "wren-itineraries", "cases": "wren-cases", "notices": "wren-supplier-notices"},
    required={},
    sql_source="bookings",
    sql_keys=(("bookings", "booking_no"), ("customers", "customer_id"), ("payments", "payment_id"),
              ("refunds", "refund_id"), ("visa_applications", "visa_id"), ("offices", "office")),
    row_column="office",
    user_attribute="offices",
    wiki_users=("xiaoyu", "tao", "marcus", "fang", "ruby"),
))
