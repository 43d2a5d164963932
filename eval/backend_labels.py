"""Checks one company's labels (eval/<company>/questions.jsonl) against the REAL seeded backends,
not the data files: every labeled id (relevant, forbidden, superseded) exists, every relevant doc
is visible to the question's user, and every forbidden doc is not. Visibility is computed the way
a deployment applies it: the router's required_groups per source, the OpenSearch permission fields
(public / allowed_groups / allowed_users), the SQL row predicate (a row column against a users.yaml
attribute), and wiki.getPage as the user's own DokuWiki login. It runs no fedsearch search.

Each company's check_backends.py describes its deployment as a `Company` and calls `check`.
"""
import base64, json, os, sqlite3, sys, urllib.error, urllib.request, xmlrpc.client
from dataclasses import dataclass
import yaml


@dataclass
class Company:
    here: str            # the company's eval directory (users.yaml, questions.jsonl)
    sqlite_env: str      # the env var naming its SQLite database file
    index: dict          # router source -> OpenSearch index
    required: dict       # router source -> the groups of which one is required
    sql_source: str      # the router's SQL source
    sql_keys: tuple      # (table, key column) pairs a SQL local id is looked up in
    row_column: str      # the column the SQL permission predicate reads (branch, region)
    user_attribute: str  # the users.yaml attribute it is compared with (branches, regions)
    wiki_users: tuple    # users whose logins together see every labeled wiki page


def check(c: Company):
    needed = ["OPENSEARCH_URL", "DOKUWIKI_URL", "DOKUWIKI_SECRETS", c.sqlite_env]
    missing = [v for v in needed if not os.environ.get(v)]
    if missing:
        sys.exit("check_backends: set %s (start the backends and load their env: "
                 'eval "$(scripts/backends/all.sh env)")' % ", ".join(missing))
    es = os.environ["OPENSEARCH_URL"]; wiki = os.environ["DOKUWIKI_URL"] + "/lib/exe/xmlrpc.php"
    db = sqlite3.connect("file:%s?mode=ro" % os.environ[c.sqlite_env], uri=True)
    secrets = yaml.safe_load(open(os.environ["DOKUWIKI_SECRETS"]))
    users = yaml.safe_load(open(os.path.join(c.here, "users.yaml")))["users"]

    def es_get(index, id):
        try:
            with urllib.request.urlopen(f"{es}/{index}/_doc/{id}") as r: return json.load(r)["_source"]
        except urllib.error.HTTPError: return None

    def es_visible(index, id, sub, groups):
        q = {"query": {"bool": {"filter": [{"ids": {"values": [id]}}, {"bool": {"should": [
            {"term": {"public": True}}, {"terms": {"allowed_groups": groups}}, {"terms": {"allowed_users": [sub]}}],
            "minimum_should_match": 1}}]}}}
        req = urllib.request.Request(f"{es}/{index}/_search", data=json.dumps(q).encode(), headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req) as r: return json.load(r)["hits"]["total"]["value"] == 1

    def sql_row(key):
        # Table and column names come from the Company above, never from a label.
        for table, col in c.sql_keys:
            r = db.execute(f"SELECT {c.row_column} FROM {table} WHERE {col} = ?", (key,)).fetchone()
            if r: return r[0]
        return None

    def wiki_call(sub, method, *args):
        cred = secrets[sub]; auth = base64.b64encode(f"{cred['username']}:{cred['password']}".encode()).decode()
        req = urllib.request.Request(wiki, data=xmlrpc.client.dumps(args, method).encode(),
                                     headers={"Content-Type": "text/xml", "Authorization": "Basic " + auth})
        try:
            with urllib.request.urlopen(req) as r: return r.status, xmlrpc.client.loads(r.read())[0][0]
        except urllib.error.HTTPError as e: return e.code, None

    wiki_seen = {}
    def wiki_exists(page):
        if page not in wiki_seen:
            wiki_seen[page] = any(wiki_call(s, "wiki.getPage", page)[1] for s in c.wiki_users)
        return wiki_seen[page]

    def exists(doc):
        src, local = doc.split(":", 1)
        if src in c.index: return es_get(c.index[src], local) is not None
        if src == c.sql_source: return sql_row(local) is not None
        if src == "wiki": return wiki_exists(local)
        return False

    def visible(doc, sub):
        u = users[sub]; groups = u["groups"]; src, local = doc.split(":", 1)
        if src in c.required and not (c.required[src] & set(groups)): return False
        if src in c.index: return es_visible(c.index[src], local, sub, groups)
        if src == c.sql_source:
            allowed = [v for v in (u["attributes"].get(c.user_attribute) or "").split(",") if v]
            return sql_row(local) in allowed
        if src == "wiki":
            if sub not in secrets: return False
            code, text = wiki_call(sub, "wiki.getPage", local)
            return code == 200 and bool(text)
        return False

    errs = 0; ids = set()
    for line in open(os.path.join(c.here, "questions.jsonl"), encoding="utf-8"):
        q = json.loads(line); sub = q["user"]
        sup = [d for s in q.get("superseded", []) for d in (s["old"], s["current"])]
        for d in list(q["relevant"]) + q.get("forbidden", []) + sup:
            ids.add(d)
            if not exists(d): print(q["id"], "MISSING", d); errs += 1
        for d in q["relevant"]:
            if not visible(d, sub): print(q["id"], sub, "relevant but NOT visible:", d); errs += 1
        for d in q.get("forbidden", []):
            if visible(d, sub): print(q["id"], sub, "forbidden but VISIBLE:", d); errs += 1
    print(len(ids), "distinct ids checked;", errs, "problems")
    sys.exit(1 if errs else 0)
