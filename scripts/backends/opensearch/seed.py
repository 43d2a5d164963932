#!/usr/bin/env python3
"""Load the sample search documents (data/sample/search/*.json) into OpenSearch/Elasticsearch.

Idempotent: each index is deleted and recreated with explicit mappings, then bulk-loaded with
refresh, and the document count is checked. Standard library only.

Relative times in the JSON (`days_ago`, `hours_ago`) become `updated_at` = now - that much, as
ISO-8601 UTC (`2026-11-29T12:00:00Z`), so "yesterday" / "last week" stay true whenever the demo
runs. A document that already has an absolute `updated_at` keeps it (data/nimbus/search). A data
directory without tickets/incidents/kb.json has its *.json files loaded, each naming its index;
a file's optional `extra_fields` ({"field": "keyword" | "date" | ...}) adds to the mappings. `--now` pins the clock for reproducible tests; `--print` writes the rendered documents as
JSON lines (`{"_index": ..., "_id": ..., "_source": {...}}`) and touches no server.

    python3 seed.py --url http://127.0.0.1:9201 [--data DIR] [--now 2026-11-29T12:00:00Z]
    python3 seed.py --print [--now ...]
"""
import argparse
import datetime as dt
import json
import os
import signal
import sys
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_DATA = os.path.normpath(os.path.join(HERE, "..", "..", "..", "data", "sample", "search"))
FILES = ("tickets.json", "incidents.json", "kb.json")

KEYWORD = {"type": "keyword"}

# Analyzer choice. `title` and `body` use the `standard` analyzer: it is built into every
# Elasticsearch and OpenSearch (no plugin), handles English well, and splits CJK text into single
# characters (支付超时 -> 支 付 超 时), so a `match`/`multi_match` for 支付超时 finds the
# Chinese payment-timeout documents (and ranks documents with all four characters first; with
# `"operator": "and"` it requires all four). Order numbers such as SO20261004 stay one token
# even inside Chinese text (订单SO20261004付款失败 -> 订 单 so20261004 付 款 ...).
# Each text field also has a `.cjk` sub-field with the built-in `cjk` analyzer (analysis-common
# module, shipped by the runner and by stock Elasticsearch): CJK bigrams (支付 付超 超时), which
# gives better precision for Chinese. Adapters may add `title.cjk` / `body.cjk` to their
# multi_match fields; nothing requires it. Dedicated Chinese analyzers (smartcn, ik) are plugins
# the runner does not ship.
TEXT = {
    "type": "text",
    "analyzer": "standard",
    "fields": {"cjk": {"type": "text", "analyzer": "cjk"}},
}

# Same fields in all three indices; fields a document type does not use are simply absent.
# dynamic=false: unknown fields are kept in _source but not indexed (no mapping surprises).
MAPPINGS = {
    "dynamic": False,
    "properties": {
        "id": KEYWORD,
        "doc_type": KEYWORD,  # ticket | incident | kb
        "title": TEXT,
        "body": TEXT,
        "tags": KEYWORD,
        "status": KEYWORD,
        "priority": KEYWORD,  # P1..P4 (tickets, incidents)
        "service": KEYWORD,
        "level": KEYWORD,  # ERROR | WARN | INFO (incidents)
        "order_no": KEYWORD,  # array of SO\d{8}
        "customer_id": KEYWORD,  # string in tickets, array in incidents
        "business_line": KEYWORD,  # retail | wholesale
        "assignee_group": KEYWORD,
        "related": KEYWORD,  # ids of linked tickets / incidents / refunds
        "url": KEYWORD,
        "updated_at": {"type": "date"},
        "allowed_groups": KEYWORD,
        "allowed_users": KEYWORD,
        "public": {"type": "boolean"},
    },
}

SETTINGS = {"index": {"number_of_shards": 1, "number_of_replicas": 0}}


def parse_now(value):
    if not value and os.environ.get("FEDSEARCH_NOW"):
        # the one seeding instant all.sh gives every backend (unix seconds)
        return dt.datetime.fromtimestamp(int(os.environ["FEDSEARCH_NOW"]), dt.timezone.utc)
    if not value:
        return dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
    t = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    if t.tzinfo is None:
        t = t.replace(tzinfo=dt.timezone.utc)
    return t.astimezone(dt.timezone.utc).replace(microsecond=0)


def data_files(data_dir):
    """Spruce Mall's three files in their fixed order, or every *.json of another data set."""
    if all(os.path.exists(os.path.join(data_dir, n)) for n in FILES):
        return FILES
    return sorted(n for n in os.listdir(data_dir) if n.endswith(".json"))


def render(data_dir, now):
    """Returns [(index, [doc, ...], mappings), ...] with updated_at rendered."""
    out, seen = [], set()
    for name in data_files(data_dir):
        with open(os.path.join(data_dir, name), encoding="utf-8") as f:
            spec = json.load(f)
        docs = []
        for raw in spec["docs"]:
            doc = dict(raw)
            days = doc.pop("days_ago", None)
            hours = doc.pop("hours_ago", None)
            doc_id = doc["id"]
            if doc_id in seen:
                sys.exit(f"seed: duplicate id {doc_id} in {name}")
            seen.add(doc_id)
            doc.setdefault("doc_type", spec["doc_type"])
            if "updated_at" in doc:  # absolute time: kept as written
                if days is not None or hours is not None:
                    sys.exit(f"seed: {doc_id} in {name} has both updated_at and days_ago/hours_ago")
            else:
                when = now - dt.timedelta(days=days or 0, hours=hours or 0)
                doc["updated_at"] = when.strftime("%Y-%m-%dT%H:%M:%SZ")
            docs.append(doc)
        mappings = dict(MAPPINGS, properties=dict(MAPPINGS["properties"]))
        for field, kind in spec.get("extra_fields", {}).items():
            mappings["properties"].setdefault(field, {"type": kind})
        out.append((spec["index"], docs, mappings))
    return out


def request(method, url, body=None, ndjson=False, ok=(200, 201)):
    data = None
    headers = {}
    if body is not None:
        data = body.encode("utf-8") if isinstance(body, str) else json.dumps(body).encode("utf-8")
        headers["Content-Type"] = "application/x-ndjson" if ndjson else "application/json"
    req = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return resp.status, json.loads(resp.read() or b"{}")
    except urllib.error.HTTPError as e:
        payload = e.read().decode("utf-8", "replace")
        if e.code in ok:
            return e.code, json.loads(payload or "{}")
        return e.code, payload
    except urllib.error.URLError as e:
        sys.exit(f"seed: cannot reach {url}: {e.reason}")


def seed(base, indices):
    base = base.rstrip("/")
    total = 0
    for index, docs, mappings in indices:
        status, body = request("DELETE", f"{base}/{index}", ok=(200, 404))
        if status not in (200, 404):
            sys.exit(f"seed: DELETE {index} failed ({status}): {body}")
        status, body = request("PUT", f"{base}/{index}", {"settings": SETTINGS, "mappings": mappings})
        if status != 200:
            sys.exit(f"seed: creating {index} failed ({status}): {body}")
        lines = []
        for doc in docs:
            lines.append(json.dumps({"index": {"_index": index, "_id": doc["id"]}}))
            lines.append(json.dumps(doc, ensure_ascii=False))
        status, body = request("POST", f"{base}/_bulk?refresh=true", "\n".join(lines) + "\n", ndjson=True)
        if status != 200 or not isinstance(body, dict):
            sys.exit(f"seed: bulk into {index} failed ({status}): {body}")
        if body.get("errors"):
            errs = [i for i in body["items"] if i.get("index", {}).get("error")]
            sys.exit(f"seed: bulk into {index} had errors: {json.dumps(errs[:3], ensure_ascii=False)}")
        status, body = request("GET", f"{base}/{index}/_count")
        count = body.get("count") if isinstance(body, dict) else None
        if count != len(docs):
            sys.exit(f"seed: {index} holds {count} documents, expected {len(docs)}")
        print(f"seed: {index}: {count} documents", file=sys.stderr)
        total += count
    print(f"seed: {total} documents in {len(indices)} indices at {base}", file=sys.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", default=os.environ.get("OPENSEARCH_URL"), help="base URL (default $OPENSEARCH_URL)")
    ap.add_argument("--data", default=DEFAULT_DATA, help="directory with tickets/incidents/kb.json (or another data set's *.json)")
    ap.add_argument("--now", help="ISO-8601 time to count days_ago/hours_ago from (default: $FEDSEARCH_NOW in unix seconds, else now, UTC)")
    ap.add_argument("--print", action="store_true", help="print rendered documents as JSON lines; no server")
    args = ap.parse_args()
    indices = render(args.data, parse_now(args.now))
    if args.print:
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` is fine
        for index, docs, _ in indices:
            for doc in docs:
                print(json.dumps({"_index": index, "_id": doc["id"], "_source": doc}, ensure_ascii=False))
        return
    if not args.url:
        ap.error("--url or $OPENSEARCH_URL is required")
    seed(args.url, indices)


if __name__ == "__main__":
    main()
