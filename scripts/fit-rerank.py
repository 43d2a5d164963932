#!/usr/bin/env python3
"""Fits the router's `rerank.weights` to labeled question sets.

Each set is a `fedsearch eval --top-k 30 --dump FILE` of a running router (with the `rerank`
candidates at 30, the default, every candidate is in the dump with the features the router
computed: `explanation.rerank`) and the questions it asked. The script re-orders each question's
candidates by a weighted sum of the features exactly as crates/fedsearch-router/src/rerank.rs
does (old versions, variety for one-answer questions, current before superseded), scores nDCG@10 as
`fedsearch eval` does, and searches the weights by coordinate ascent on the mean over the sets
(each set weighs the same, whatever its number of questions).

    scripts/fit-rerank.py spruce=/tmp/dump-spruce.jsonl orca=/tmp/dump-orca.jsonl \
        [--check kestrel=/tmp/dump-kestrel.jsonl] [--weights fused=0.6,coverage=0.4]

A `--check` set is only scored (held out), never fitted to. Prints the fitted weights and every
set's nDCG@10 before and after.
"""

import argparse
import json
import math
import os
import re
import sys

FEATURES = ["fused", "coverage", "title_coverage", "names", "reciprocal_rank", "bm25", "kind_named", "phrases", "rule_reference", "corroborated", "state", "named_id"]
OLD_VERSION_SHARE = 0.7  # rerank.rs
GLOSSARY_SHARE = 0.7  # rerank.rs: a glossary page when the question does not ask what a word means
OUTSIDE_WINDOW_SHARE = 0.3  # rerank.rs: a hit dated outside the question's window its source ranked by
K = 10
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def same_id(shown, label):
    """metrics.rs same_id: a label `<source>:<key>` matches `<source>:<template>:<key>`."""
    if shown == label:
        return True
    if ":" not in shown or ":" not in label:
        return False
    s_src, s_rest = shown.split(":", 1)
    l_src, l_rest = label.split(":", 1)
    if s_src != l_src or not s_rest.endswith(l_rest):
        return False
    prefix = s_rest[: len(s_rest) - len(l_rest)]
    return prefix.endswith(":") and ":" not in prefix[:-1]


def ndcg(hits, relevant):
    used = set()
    gains = []
    for h in hits[:K]:
        best = None
        for i in [h["id"]] + [d["id"] for d in h.get("duplicates", [])]:
            for label, g in relevant.items():
                if label not in used and same_id(i, label) and (best is None or g > best[1]):
                    best = (label, g)
        if best:
            used.add(best[0])
            gains.append(best[1])
        else:
            gains.append(0)
    dcg = sum((2**g - 1) / math.log2(i + 2) for i, g in enumerate(gains))
    ideal = sorted(relevant.values(), reverse=True)[:K]
    idcg = sum((2**g - 1) / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


def features(h):
    r = (h.get("explanation") or {}).get("rerank") or {}
    return [float(r.get(f, 0.0)) for f in FEATURES]


def order(question, hits, w):
    """The order rerank.rs gives: weighted score, old versions, variety for one-answer questions."""
    feats = [features(h) for h in hits]
    at = {h["id"]: i for i, h in enumerate(hits)}
    scored = []
    for i, h in enumerate(hits):
        s = sum(a * b for a, b in zip(w, feats[i]))
        v = h.get("version") or {}
        c = at.get(v.get("superseded_by", "")) if v.get("status") == "superseded" else None
        if c is not None and feats[i][1] <= feats[c][1]:
            s *= OLD_VERSION_SHARE
        if is_glossary_title(h.get("title", "")) and not asks_for_definition(question):
            s *= GLOSSARY_SHARE
        if ((h.get("explanation") or {}).get("rerank") or {}).get("outside_window"):
            s *= OUTSIDE_WINDOW_SHARE
        scored.append((-s, i, h))
    out = [h for _, _, h in sorted(scored, key=lambda t: (t[0], t[1]))]
    if not asks_for_list(question):
        out = varied([(-s, h) for s, _, h in sorted(scored, key=lambda t: (t[0], t[1]))])
    return current_first(out)


# intent.rs is_glossary_title and asks_for_definition.
GLOSSARY_TITLE = re.compile(r"\bglossary\b|\bterminology\b|\babbreviations\b|\bacronyms\b|术语|词汇表|名词解释|缩略语")
DEFINITION_EN = re.compile(r"\b(?:mean|means|meaning|meant|define|defined|definition|definitions|stand for|stands for|abbreviation|acronym|glossary|terminology)\b")
DEFINITION_ZH = ["什么意思", "啥意思", "的意思", "指什么", "是指", "含义", "定义", "全称", "缩写", "术语", "名词解释", "怎么理解"]


def is_glossary_title(title):
    return bool(GLOSSARY_TITLE.search(title.lower()))


def asks_for_definition(question):
    q = question.lower()
    return bool(DEFINITION_EN.search(q)) or any(w in q for w in DEFINITION_ZH)


# analysis/mod.rs asks_for_list: the words that ask for every item that matches.
LIST_CJK = ["哪些", "哪几", "列出", "列一下", "所有", "全部", "清单", "一览", "有几", "多少个", "多少张", "多少笔"]
LIST_WORDS = {"list", "which", "all", "every", "each"}
VARIETY_FREE, VARIETY_DECAY = 3, 0.7  # rerank.rs


def asks_for_list(question):
    q = question.lower()
    return any(w in q for w in LIST_CJK) or any(w in LIST_WORDS for w in re.findall(r"[a-z0-9]+", q))


def varied(scored):
    """rerank.rs varied: past VARIETY_FREE hits of one group (source, SQL template) each further
    one keeps VARIETY_DECAY of its score per hit of its group already placed."""
    rest, placed, out = list(scored), {}, []
    group = lambda h: (h["source"], (h.get("metadata") or {}).get("template", ""))
    while rest:
        def discounted(t):
            n = placed.get(group(t[1]), 0)
            return t[0] * VARIETY_DECAY ** max(0, n + 1 - VARIETY_FREE)
        best = 0
        for i in range(1, len(rest)):
            if discounted(rest[i]) > discounted(rest[best]):
                best = i
        _, h = rest.pop(best)
        placed[group(h)] = placed.get(group(h), 0) + 1
        out.append(h)
    return out


def current_first(hits):
    hits = list(hits)
    for _ in range(len(hits)):
        pos = {h["id"]: i for i, h in enumerate(hits)}
        move = None
        for i, h in enumerate(hits):
            v = h.get("version") or {}
            c = pos.get(v.get("superseded_by", "")) if v.get("status") == "superseded" else None
            if c is not None and c > i:
                move = (i, c)
                break
        if not move:
            return hits
        h = hits.pop(move[1])
        hits.insert(move[0], h)
    return hits


def load(spec):
    name, path = spec.split("=", 1)
    questions = {}
    with open(os.path.join(ROOT, "eval", name, "questions.jsonl"), encoding="utf-8") as f:
        for line in f:
            if line.strip():
                q = json.loads(line)
                questions[q["id"]] = q
    cases = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            q = questions[d["id"]]
            if q.get("relevant"):
                cases.append((q["question"], q["relevant"], d["hits"]))
    return name, cases


def mean_ndcg(cases, w):
    return sum(ndcg(order(q, hits, w), rel) for q, rel, hits in cases) / max(len(cases), 1)


def objective(sets, w):
    return sum(mean_ndcg(c, w) for _, c in sets) / len(sets)


def fit(sets, w):
    grid = [0.0, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8, 1.0, 1.5, 2.0]
    best = objective(sets, w)
    for _ in range(4):
        moved = False
        for i in range(1, len(FEATURES)):  # the fused weight stays fixed: only ratios count
            for v in grid:
                t = list(w)
                t[i] = v
                s = objective(sets, t)
                if s > best + 1e-9:
                    best, w, moved = s, t, True
        if not moved:
            break
    return w, best


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("sets", nargs="+", help="NAME=DUMP (eval/NAME/questions.jsonl holds the labels)")
    p.add_argument("--check", action="append", default=[], help="NAME=DUMP scored only (held out)")
    p.add_argument("--weights", default="fused=0.6,coverage=0.4", help="the starting weights")
    a = p.parse_args()
    start = dict.fromkeys(FEATURES, 0.0)
    for kv in a.weights.split(","):
        k, v = kv.split("=")
        if k not in start:
            sys.exit(f"unknown feature {k}; known: {', '.join(FEATURES)}")
        start[k] = float(v)
    w0 = [start[f] for f in FEATURES]
    sets = [load(s) for s in a.sets]
    checks = [load(s) for s in a.check]
    w, _ = fit(sets, w0)
    for name, cases in sets + checks:
        role = "held out" if (name, cases) in checks else "fitted"
        print(f"{name:10} {role:9} nDCG@10 {mean_ndcg(cases, w0):.3f} -> {mean_ndcg(cases, w):.3f}")
    print("rerank:\n  weights:")
    for f, v in zip(FEATURES, w):
        print(f"    {f}: {v:g}")


if __name__ == "__main__":
    main()
