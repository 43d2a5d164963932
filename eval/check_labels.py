#!/usr/bin/env python3
"""Validates a labeled evaluation set (questions.jsonl) for fedsearch.

    python3 eval/check_labels.py eval/spruce/questions.jsonl \
        [--users eval/spruce/users.yaml] [--sample data/sample]

Checks, per line: one JSON object; the required keys; a unique question id; document ids of the
form "<source>:<local id>"; grades 1..3; expected_sources equal to the sources of the grade >= 2
ids; no id both relevant and forbidden; superseded pairs well formed and not the same id; lang
one of zh/en/mixed; no as_of together with relative time (only a warning).
With --users: every question's user is defined. With --sample: every id exists in a sample data
directory laid out like data/sample (search/<index>.json, wiki/<ns>/<page>.txt, sql/seed.sql.in),
where the SQL rows are named "<sql source>:<key>" (order numbers SO\\d{8} and refund ids RF\\d{4}).
Prints a summary (counts per lang and per kind) and exits 1 on any error.
"""
import argparse
import collections
import json
import pathlib
import re
import sys

REQUIRED = ("id", "user", "question", "relevant", "expected_sources", "lang", "kinds")
OPTIONAL = ("superseded", "forbidden", "time_zone", "as_of")
LANGS = ("zh", "en", "mixed")
DOC_ID = re.compile(r"^[a-z][a-z0-9_-]*:\S+$")


def sample_ids(root, sql_source, wiki_source):
    ids = set()
    for f in sorted((root / "search").glob("*.json")):
        data = json.loads(f.read_text(encoding="utf-8"))
        for doc in data.get("docs", []):
            ids.add(f"{data.get('index', f.stem)}:{doc['id']}")
    wiki = root / "wiki"
    for f in sorted(wiki.rglob("*.txt")):
        rel = f.relative_to(wiki)
        if len(rel.parts) < 2:  # mtimes.txt and other top-level notes are not pages
            continue
        ids.add(f"{wiki_source}:" + ":".join(rel.with_suffix("").parts))
    seed = root / "sql" / "seed.sql.in"
    if seed.exists():
        text = seed.read_text(encoding="utf-8")
        for key in re.findall(r"\('((?:SO\d{8})|(?:RF\d{4}))'", text):
            ids.add(f"{sql_source}:{key}")
    return ids


def load_users(path):
    import yaml  # only needed with --users

    data = yaml.safe_load(pathlib.Path(path).read_text(encoding="utf-8"))
    return set((data or {}).get("users", {}) or {})


def check(path, users=None, known=None):
    errors, warnings = [], []
    seen = set()
    by_lang, by_kind, by_user = collections.Counter(), collections.Counter(), collections.Counter()
    n = 0
    for lineno, line in enumerate(pathlib.Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        where = f"{path}:{lineno}"
        try:
            q = json.loads(line)
        except json.JSONDecodeError as e:
            errors.append(f"{where}: not JSON: {e}")
            continue
        if not isinstance(q, dict):
            errors.append(f"{where}: not a JSON object")
            continue
        n += 1
        missing = [k for k in REQUIRED if k not in q]
        if missing:
            errors.append(f"{where}: missing keys {missing}")
            continue
        unknown = [k for k in q if k not in REQUIRED + OPTIONAL]
        if unknown:
            warnings.append(f"{where}: unknown keys {unknown}")
        qid = q["id"]
        where = f"{where} ({qid})"
        if qid in seen:
            errors.append(f"{where}: duplicate id")
        seen.add(qid)
        if not isinstance(q["question"], str) or not q["question"].strip():
            errors.append(f"{where}: empty question")
        if users is not None and q["user"] not in users:
            errors.append(f"{where}: user {q['user']!r} not in the users file")
        if q["lang"] not in LANGS:
            errors.append(f"{where}: lang {q['lang']!r} not one of {LANGS}")
        if not isinstance(q["kinds"], list) or not all(isinstance(k, str) for k in q["kinds"]):
            errors.append(f"{where}: kinds must be a list of strings")
        rel = q["relevant"]
        if not isinstance(rel, dict) or not rel:
            errors.append(f"{where}: relevant must be a non-empty object")
            rel = {}
        forbidden = q.get("forbidden", [])
        if not isinstance(forbidden, list):
            errors.append(f"{where}: forbidden must be a list")
            forbidden = []
        superseded = q.get("superseded", [])
        if not isinstance(superseded, list):
            errors.append(f"{where}: superseded must be a list")
            superseded = []
        for doc, grade in rel.items():
            if not isinstance(grade, int) or isinstance(grade, bool) or not 1 <= grade <= 3:
                errors.append(f"{where}: grade of {doc} is {grade!r}, not 1..3")
        pairs = []
        for s in superseded:
            if not isinstance(s, dict) or set(s) != {"old", "current"}:
                errors.append(f"{where}: superseded entries are {{old, current}}: {s!r}")
                continue
            if s["old"] == s["current"]:
                errors.append(f"{where}: superseded old == current ({s['old']})")
            pairs += [s["old"], s["current"]]
        for doc in list(rel) + forbidden + pairs:
            if not isinstance(doc, str) or not DOC_ID.match(doc):
                errors.append(f"{where}: bad document id {doc!r}")
            elif known is not None and doc not in known:
                errors.append(f"{where}: {doc} does not exist in the sample data")
        both = sorted(set(rel) & set(forbidden))
        if both:
            errors.append(f"{where}: both relevant and forbidden: {both}")
        if len(set(forbidden)) != len(forbidden):
            errors.append(f"{where}: forbidden lists an id twice")
        want = {d.split(":", 1)[0] for d, g in rel.items() if isinstance(g, int) and g >= 2}
        got = q["expected_sources"]
        if not isinstance(got, list) or set(got) != want or len(set(got)) != len(got):
            errors.append(f"{where}: expected_sources {got} != sources of grade>=2 ids {sorted(want)}")
        if not want:
            errors.append(f"{where}: no relevant document of grade >= 2")
        if "as_of" in q and "time" in q["kinds"]:
            warnings.append(f"{where}: as_of pins 'now' for a relative-time question")
        by_lang[q["lang"]] += 1
        by_user[q["user"]] += 1
        for k in set(q["kinds"]) if isinstance(q["kinds"], list) else ():
            by_kind[k] += 1
    return n, errors, warnings, by_lang, by_kind, by_user


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("questions")
    ap.add_argument("--users", help="users.yaml with a `users:` mapping")
    ap.add_argument("--sample", help="sample data directory (like data/sample) to check ids against")
    ap.add_argument("--sql-source", default="orders", help="source name of the SQL rows (default orders)")
    ap.add_argument("--wiki-source", default="wiki", help="source name of the wiki pages (default wiki)")
    a = ap.parse_args()
    users = load_users(a.users) if a.users else None
    known = sample_ids(pathlib.Path(a.sample), a.sql_source, a.wiki_source) if a.sample else None
    n, errors, warnings, by_lang, by_kind, by_user = check(a.questions, users, known)
    for w in warnings:
        print("warning:", w)
    for e in errors:
        print("error:", e)
    print(f"{n} questions; lang: {dict(sorted(by_lang.items()))}")
    print("users:", dict(sorted(by_user.items())))
    print("kinds:", ", ".join(f"{k} {v}" for k, v in sorted(by_kind.items())))
    print("OK" if not errors else f"{len(errors)} error(s)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
