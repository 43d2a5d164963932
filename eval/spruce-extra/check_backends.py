#!/usr/bin/env python3
"""Checks the Spruce Mall (云杉商城) supplementary labels (eval/spruce-extra/questions.jsonl). It runs
no fedsearch search.

The questions carry no `as_of`: scripts/eval.sh asks them as of the instant the backends were
seeded at (FEDSEARCH_SEED_NOW, exported by `scripts/backends/all.sh env`), and the sample data is
seeded relative to that instant (`days_ago` / `hours_ago` in data/sample/search/*.json,
{{days_ago:N}} in data/sample/sql/seed.sql.in, days ago in data/sample/wiki/mtimes.txt). Every time
question therefore uses a ROLLING window (最近一周, "more than a week ago", ...), never a calendar
period (上周, "this month", "in October"), whose contents would depend on the seed's weekday, hour
or day of the month.

1. Robustness, offline (data files only, no backend): for seed instants at every hour of 7
   consecutive days (at :00:00, :30:00 and :59:59) and at every hour of the first and last day of
   every month from 2026-12 to 2028-03, and for every reasonable reading of each window (exactly
   N x 24 h back, start inclusive or exclusive; or from 00:00 Asia/Shanghai of the day N or N-1
   days back), the records in each window must be the same set, and the labels must fit it (rule
   of 2. below). A question whose window catches a record only at some seed instants or in some
   readings is reported with the records that flip.
2. The periods, against the running backends: the backends were seeded at FEDSEARCH_SEED_NOW
   (checked on one record of each backend); each window is computed from that instant, in every
   reading of 1.; every row or document in it (orders.placed_at, OpenSearch updated_at, wiki
   lastModified) that passes the question's filter must be labeled grade >= 2 if the user can see
   it and be in `forbidden` if not; every grade-3 label of that collection must lie in the window.
3. Through eval/backend_labels.py (the checker the other companies use), against the running
   backends: every labeled id (relevant, forbidden, superseded) exists; every relevant id is visible
   to the question's user; every forbidden id is not. Visibility as Spruce applies it
   (eval/spruce/README.md, "How the labels were made"): router required_groups (orders and tickets:
   support or finance; incidents: support; kb and wiki: anyone), the OpenSearch permission fields
   (public / allowed_groups / allowed_users), the SQL predicate business_line IN users.yaml
   `business_lines`, and wiki.getPage as the user's own DokuWiki login (eve has none).

    eval "$(scripts/backends/all.sh env)"
    python3 eval/spruce-extra/check_backends.py [questions dir, default: this folder]
    python3 eval/spruce-extra/check_backends.py --offline [questions dir]   # 1. only, no backends
"""

import base64, datetime as dt, json, os, re, sqlite3, sys, urllib.request, xmlrpc.client
from zoneinfo import ZoneInfo

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(HERE))
from backend_labels import Company, check  # noqa: E402 (eval/backend_labels.py: the one checker)

ARGS = [a for a in sys.argv[1:] if not a.startswith("--")]
OFFLINE = "--offline" in sys.argv[1:]
QDIR = os.path.abspath(ARGS[0]) if ARGS else HERE
SAMPLE = os.path.join(ROOT, "data", "sample")
COMPANY = Company(
    here=QDIR,
    sqlite_env="SQLITE_PATH",
    index={"tickets": "tickets", "incidents": "incidents", "kb": "kb"},
    required={"orders": {"support", "finance"}, "tickets": {"support", "finance"}, "incidents": {"support"}},
    sql_source="orders",
    sql_keys=(("orders", "order_no"), ("refunds", "refund_id")),  # shipments share the order number
    row_column="business_line",
    user_attribute="business_lines",
    wiki_users=("alice", "bob"),  # public + support, public + finance: every page between them
)

TZ = ZoneInfo("Asia/Shanghai")  # every question's time_zone
DAY, HOUR = dt.timedelta(days=1), dt.timedelta(hours=1)


# ---- windows ------------------------------------------------------------------------------------
# A window is made of cuts: points N days (or hours) before the question's moment `now`. A reading
# says where a cut lies and whether a record exactly on it is inside:
#   exact       now - N x 24 h, a record on the cut is inside the window   ("rolling")
#   exact-open  now - N x 24 h, a record on the cut is outside
#   day-N       00:00 Asia/Shanghai of the calendar day N days before now's day
#   day-N+1     00:00 Asia/Shanghai of the calendar day N-1 days before now's day (N days counting today)
# Hour cuts have only the two exact readings.
READINGS = ("exact", "exact-open", "day-N", "day-N+1")


def cut(now, days, hours, reading):
    if reading.startswith("exact") or hours:
        return now - days * DAY - hours * HOUR
    day = now.astimezone(TZ).date() - dt.timedelta(days=days if reading == "day-N" else days - 1)
    return dt.datetime.combine(day, dt.time(), tzinfo=TZ)


def inside(ts, lo, hi, reading):
    """lo / hi: a cut or None (open). Records on a cut: inside at the older end, outside at the newer
    (a half-open interval), and the other way round for exact-open."""
    if reading == "exact-open":
        return (lo is None or ts > lo) and (hi is None or ts <= hi)
    return (lo is None or ts >= lo) and (hi is None or ts < hi)


class Win:
    """Records from `older` ago (None: no limit) up to `newer` ago (0: the question's moment).
    Both are (days, hours)."""

    def __init__(self, phrase, older, newer=(0, 0)):
        self.phrase, self.older, self.newer = phrase, older, newer

    def bounds(self, now, reading):
        lo = None if self.older is None else cut(now, *self.older, reading)
        hi = now + HOUR if self.newer == (0, 0) else cut(now, *self.newer, reading)  # records are never ahead of now
        return lo, hi

    def has(self, ts, now, reading):
        lo, hi = self.bounds(now, reading)
        return inside(ts, lo, hi, reading)


def last(days=0, hours=0, phrase=""):       # 最近一周, "in the past week": back N days from now
    return Win(phrase, (days, hours))


def before(days, phrase=""):                # "more than a week ago": older than N days
    return Win(phrase, None, (days, 0))


def between(older, newer, phrase=""):       # "the week before that": between `older` and `newer` days ago
    return Win(phrase, (older, 0), (newer, 0))


def payment_incident(r):
    return r.get("service") == "payment-gateway" and r.get("level") in ("ERROR", "WARN")


# question id -> [(collection, window, filter on the record or None)]
PERIODS = {
    "sx01": [("orders", last(7, phrase="最近一周"), None)],
    "sx02": [("tickets", before(7, phrase="more than a week ago"), None)],
    "sx03": [("orders", last(7, phrase="最近7天"), lambda r: r.get("status") == "payment_failed"),
             ("tickets", last(7, phrase="最近7天"), lambda r: r.get("service") == "payment-gateway"),
             ("incidents", last(7, phrase="最近7天"), payment_incident)],
    "sx04": [("orders", last(7, phrase="over the past week"), None)],
    "sx05": [("incidents", last(7, phrase="最近一周"), None)],
    "sx06": [("incidents", last(7, phrase="in the past week"),
              lambda r: r.get("service") in ("logistics-api", "warehouse-sync"))],
    "sx07": [(c, last(42, phrase="最近六周"), None) for c in ("kb", "wiki")],
    "sx08": [(c, before(42, phrase="more than six weeks ago"), None) for c in ("kb", "wiki")],
    "sx09": [("tickets", last(14, phrase="最近两周"), lambda r: r.get("assignee_group") == "finance")],
    "sx10": [("incidents", w, lambda r: r.get("service") == "payment-gateway" and r.get("level") == "ERROR")
             for w in (last(7, phrase="in the past week"), between(14, 7, phrase="the week before that"))],
}


def parse(ts):
    return dt.datetime.fromisoformat(str(ts).replace("Z", "+00:00"))


def questions():
    return [json.loads(l) for l in open(os.path.join(QDIR, "questions.jsonl"), encoding="utf-8") if l.strip()]


def label_problems(q, in_period, recs):
    """in_period: {doc id: record} of the question's windows (after its filters), for one seed
    instant and reading. Returns the problems that do not depend on visibility."""
    rel, forb, out = q["relevant"], set(q.get("forbidden", [])), []
    for doc in sorted(in_period):
        if rel.get(doc, 0) < 2 and doc not in forb:
            out.append("in the period but neither labeled >= 2 nor forbidden: " + doc)
    colls = {c for c, *_ in PERIODS[q["id"]]}
    for doc, g in rel.items():
        c, id = doc.split(":", 1)
        if g == 3 and c in colls and id in recs.get(c, {}) and doc not in in_period:
            out.append("grade 3 but outside the period: " + doc)
    return out


# ---- 1. offline robustness -----------------------------------------------------------------------
def offsets():
    """collection -> id -> (age as a timedelta before the seeding instant, record), from the data files."""
    recs = {}
    row = re.compile(r"^\s*\('(SO\d{8})',\s*'[^']*',\s*'(\w+)',\s*'\{\{(days|hours)_ago:(\d+)\}\}',"
                     r"\s*'[^']*',\s*[\d.]+,\s*'[A-Z]+',\s*'(\w+)'")
    recs["orders"] = {}
    for line in open(os.path.join(SAMPLE, "sql", "seed.sql.in"), encoding="utf-8"):
        m = row.match(line)
        if m:
            no, bl, kind, n, status = m.groups()
            recs["orders"][no] = ((DAY if kind == "days" else HOUR) * int(n), {"business_line": bl, "status": status})
    for c in ("tickets", "incidents", "kb"):
        spec = json.load(open(os.path.join(SAMPLE, "search", c + ".json"), encoding="utf-8"))
        recs[c] = {d["id"]: ((d.get("days_ago") or 0) * DAY + (d.get("hours_ago") or 0) * HOUR, d) for d in spec["docs"]}
    recs["wiki"] = {}
    for line in open(os.path.join(SAMPLE, "wiki", "mtimes.txt"), encoding="utf-8"):
        f = line.split("#", 1)[0].split()
        if len(f) >= 2:
            recs["wiki"][f[0]] = (int(f[1]) * DAY, {})
    return recs


def seed_instants(base):
    """Every hour of 7 consecutive days from `base` (at :00:00, :30:00, :59:59 of the hour) and every
    hour of the first and last day of each month from 2026-12 to 2028-03 (Asia/Shanghai)."""
    out = []
    start = base.astimezone(TZ).replace(minute=0, second=0, microsecond=0)
    for h in range(7 * 24):
        for s in (0, 1800, 3599):
            out.append(start + h * HOUR + dt.timedelta(seconds=s))
    y, m = 2026, 12
    while (y, m) <= (2028, 3):
        first = dt.datetime(y, m, 1, tzinfo=TZ)
        y, m = (y + 1, 1) if m == 12 else (y, m + 1)
        last_day = dt.datetime(y, m, 1, tzinfo=TZ) - DAY
        for d in (first, last_day):
            for h in range(24):
                for s in (0, 1800, 3599):
                    out.append(d + h * HOUR + dt.timedelta(seconds=s))
    return out


def robustness(base):
    recs = offsets()
    seeds = seed_instants(base)
    qs = {q["id"]: q for q in questions()}
    bad = 0
    for qid, periods in PERIODS.items():
        if qid not in qs:
            continue
        q = qs[qid]
        sets = {}   # frozenset of every record in the windows (no filter) -> count
        flips = {}  # doc -> number of (seed, reading) it is in the window
        probs = {}
        runs = 0
        for now in seeds:
            for reading in READINGS:
                runs += 1
                whole, in_period = set(), {}
                for c, win, keep in periods:
                    for id, (age, rec) in recs[c].items():
                        if win.has(now - age, now, reading):
                            whole.add(f"{c}:{id}")
                            if keep is None or keep(rec):
                                in_period[f"{c}:{id}"] = rec
                sets[frozenset(whole)] = sets.get(frozenset(whole), 0) + 1
                for d in whole:
                    flips[d] = flips.get(d, 0) + 1
                for p in label_problems(q, in_period, recs):
                    probs[p] = probs.get(p, 0) + 1
        if len(sets) > 1:
            bad += 1
            unstable = sorted(d for d, n in flips.items() if n != runs)
            print(f"{qid}: its window holds different records for different seed instants/readings: "
                  + ", ".join(f"{d} (in {flips[d]} of {runs})" for d in unstable))
        for p, n in sorted(probs.items()):
            bad += 1
            print(f"{qid}: {p} (for {n} of {runs} seed instants x readings)")
    n = sum(1 for qid in PERIODS if qid in qs)
    print(f"{n} time questions x {len(seeds)} seed instants x {len(READINGS)} readings of each window; "
          f"{bad} problems")
    return bad


# ---- 2. the periods against the running backends -------------------------------------------------
def period_checks(seed):
    es = os.environ["OPENSEARCH_URL"]
    db = sqlite3.connect("file:%s?mode=ro" % os.environ[COMPANY.sqlite_env], uri=True)
    secrets = yaml.safe_load(open(os.environ["DOKUWIKI_SECRETS"]))
    users = yaml.safe_load(open(os.path.join(QDIR, "users.yaml")))["users"]
    wiki = os.environ["DOKUWIKI_URL"] + "/lib/exe/xmlrpc.php"
    errs = 0

    # Every timestamped record: collection -> id -> (timestamp, record).
    recs = {}
    recs["orders"] = {r[0]: (parse(r[1]), {"business_line": r[2], "status": r[3]}) for r in
                      db.execute("SELECT order_no, placed_at, business_line, status FROM orders")}
    for c in ("tickets", "incidents", "kb"):
        req = urllib.request.Request(f"{es}/{COMPANY.index[c]}/_search", data=json.dumps(
            {"size": 1000, "query": {"match_all": {}}}).encode(), headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req) as r:
            recs[c] = {h["_id"]: (parse(h["_source"]["updated_at"]), h["_source"]) for h in json.load(r)["hits"]["hits"]}

    def wiki_pages(sub):
        if sub not in secrets:
            return {}
        cred = secrets[sub]; auth = base64.b64encode(f"{cred['username']}:{cred['password']}".encode()).decode()
        req = urllib.request.Request(wiki, data=xmlrpc.client.dumps((), "wiki.getAllPages").encode(),
                                     headers={"Content-Type": "text/xml", "Authorization": "Basic " + auth})
        with urllib.request.urlopen(req) as r:
            return {p["id"]: parse(p["lastModified"].value if hasattr(p["lastModified"], "value") else p["lastModified"])
                    for p in xmlrpc.client.loads(r.read())[0][0]}

    wiki_by_user = {s: wiki_pages(s) for s in users}
    recs["wiki"] = {}
    for s in COMPANY.wiki_users:
        recs["wiki"].update({p: (t, {}) for p, t in wiki_by_user[s].items()})

    # The backends were seeded at FEDSEARCH_SEED_NOW: one record of each, against its offset in the data.
    data = offsets()
    for c, id in (("orders", "SO20261001"), ("tickets", "TCK-5001"), ("wiki", "public:return_policy")):
        got = recs[c].get(id, (None,))[0]
        want = seed - data[c][id][0]
        if got is None or abs((got - want).total_seconds()) > 1:
            print(f"SEED: {c}:{id} is dated {got}, not {want.isoformat()} (FEDSEARCH_SEED_NOW={int(seed.timestamp())}):"
                  " the backends were seeded at another instant than FEDSEARCH_SEED_NOW says")
            errs += 1

    def visible(c, id, rec, sub):
        u = users[sub]; groups = set(u["groups"])
        if c in COMPANY.required and not (COMPANY.required[c] & groups):
            return False
        if c == "orders":
            return rec["business_line"] in (u["attributes"].get(COMPANY.user_attribute) or "").split(",")
        if c == "wiki":
            return id in wiki_by_user[sub]
        return bool(rec.get("public")) or bool(groups & set(rec.get("allowed_groups") or [])) \
            or sub in (rec.get("allowed_users") or [])

    n = 0
    for q in questions():
        if "as_of" in q:
            print(q["id"], "carries as_of", q["as_of"], "(the questions are asked as of the seeding instant)"); errs += 1
        if q["id"] not in PERIODS:
            continue
        n += 1
        sub, rel, forb = q["user"], q["relevant"], set(q.get("forbidden", []))
        seen = set()
        for reading in READINGS:
            in_period = {}
            for c, win, keep in PERIODS[q["id"]]:
                for id, (ts, rec) in recs[c].items():
                    if win.has(ts, seed, reading) and (keep is None or keep(rec)):
                        in_period[f"{c}:{id}"] = rec
                        doc = f"{c}:{id}"
                        if visible(c, id, rec, sub):
                            msg = None if rel.get(doc, 0) >= 2 else "in the period and visible but not labeled >= 2"
                        else:
                            msg = None if doc in forb else "in the period, invisible, not in forbidden"
                        if msg and (msg, doc) not in seen:
                            seen.add((msg, doc))
                            print(q["id"], sub, f"[{reading}]", msg + ":", doc, ts.astimezone(TZ)); errs += 1
            for p in label_problems(q, in_period, recs):
                if p not in seen:
                    seen.add(p)
                    print(q["id"], f"[{reading}]", p); errs += 1
    print(f"{n} time questions' periods checked at FEDSEARCH_SEED_NOW={int(seed.timestamp())} "
          f"({seed.astimezone(TZ).isoformat()}, {len(READINGS)} readings); {errs} problems")
    return errs


if __name__ == "__main__":
    seed_env = os.environ.get("FEDSEARCH_SEED_NOW")
    seed = dt.datetime.fromtimestamp(int(seed_env), dt.timezone.utc) if seed_env else None
    robust_errs = robustness(seed or dt.datetime(2026, 12, 7, tzinfo=TZ))
    if OFFLINE:
        sys.exit(1 if robust_errs else 0)
    needed = ["OPENSEARCH_URL", "DOKUWIKI_URL", "DOKUWIKI_SECRETS", COMPANY.sqlite_env, "FEDSEARCH_SEED_NOW"]
    if any(not os.environ.get(v) for v in needed):
        sys.exit('check_backends: load the backends\' env first: eval "$(scripts/backends/all.sh env)"')
    period_errs = period_checks(seed)
    try:
        check(COMPANY)  # prints "<n> distinct ids checked; <k> problems" and exits
        code = 0
    except SystemExit as e:
        code = e.code or 0
    sys.exit(1 if (robust_errs or period_errs or code) else 0)
