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
import base64, json, os, sqlite3, sys, urllib.error, urllib.request, xmlrpc.client
import yaml
HERE = os.path.dirname(os.path.abspath(__file__))
NEEDED = ["OPENSEARCH_URL", "DOKUWIKI_URL", "DOKUWIKI_SECRETS", "KESTREL_SQLITE_PATH"]
if [v for v in NEEDED if not os.environ.get(v)]:
    sys.exit("check_backends: set %s (start the backends and load their env: "
             'eval "$(scripts/backends/all.sh env)")' % ", ".join(v for v in NEEDED if not os.environ.get(v)))
ES = os.environ["OPENSEARCH_URL"]; WIKI = os.environ["DOKUWIKI_URL"] + "/lib/exe/xmlrpc.php"
DB = sqlite3.connect("file:%s?mode=ro" % os.environ["KESTREL_SQLITE_PATH"], uri=True)
secrets = yaml.safe_load(open(os.environ["DOKUWIKI_SECRETS"]))
users = yaml.safe_load(open(os.path.join(HERE, "users.yaml")))["users"]
INDEX = {"tickets": "kestrel-tickets", "notices": "kestrel-notices", "manuals": "kestrel-manuals"}
REQ = {"tickets": {"service", "quality", "sales"}, "records": {"service", "sales", "finance", "quality"}}
SQL_KEYS = (("installations", "serial_no"), ("orders", "order_no"), ("service_contracts", "contract_no"), ("hospitals", "hospital_id"))
WIKI_USERS = ("lin", "zhao", "sarah", "wang")

def es_get(index, id):
    try:
        with urllib.request.urlopen(f"{ES}/{index}/_doc/{id}") as r: return json.load(r)["_source"]
    except urllib.error.HTTPError: return None

def es_visible(index, id, sub, groups):
    q = {"query": {"bool": {"filter": [{"ids": {"values": [id]}}, {"bool": {"should": [
        {"term": {"public": True}}, {"terms": {"allowed_groups": groups}}, {"terms": {"allowed_users": [sub]}}],
        "minimum_should_match": 1}}]}}}
    req = urllib.request.Request(f"{ES}/{index}/_search", data=json.dumps(q).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req) as r: return json.load(r)["hits"]["total"]["value"] == 1

def sql_region(key):
    for table, col in SQL_KEYS:
        r = DB.execute(f"SELECT region FROM {table} WHERE {col} = ?", (key,)).fetchone()
        if r: return r[0]
    return None

def wiki_call(sub, method, *args):
    c = secrets[sub]; auth = base64.b64encode(f"{c['username']}:{c['password']}".encode()).decode()
    req = urllib.request.Request(WIKI, data=xmlrpc.client.dumps(args, method).encode(),
                                 headers={"Content-Type": "text/xml", "Authorization": "Basic " + auth})
    try:
        with urllib.request.urlopen(req) as r: return r.status, xmlrpc.client.loads(r.read())[0][0]
    except urllib.error.HTTPError as e: return e.code, None

wiki_seen = {}
def wiki_exists(page):
    if page not in wiki_seen:
        wiki_seen[page] = any(wiki_call(s, "wiki.getPage", page)[1] for s in WIKI_USERS)
    return wiki_seen[page]

def exists(doc):
    src, local = doc.split(":", 1)
    if src in INDEX: return es_get(INDEX[src], local) is not None
    if src == "records": return sql_region(local) is not None
    if src == "wiki": return wiki_exists(local)
    return False

def visible(doc, sub):
    u = users[sub]; groups = u["groups"]; src, local = doc.split(":", 1)
    if src in REQ and not (REQ[src] & set(groups)): return False
    if src in INDEX: return es_visible(INDEX[src], local, sub, groups)
    if src == "records":
        regions = [r for r in (u["attributes"].get("regions") or "").split(",") if r]
        return sql_region(local) in regions
    if src == "wiki":
        if sub not in secrets: return False
        code, text = wiki_call(sub, "wiki.getPage", local)
        return code == 200 and bool(text)
    return False

errs = 0; ids = set()
for line in open(os.path.join(HERE, "questions.jsonl"), encoding="utf-8"):
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
