#!/usr/bin/env python3
"""Keyword ranking alone, with and without the turn before each turn.

A plain-Python BM25 (k1 1.2, b 0.75, a crude suffix stemmer, stop words
out of the query) over the same samples `memory_quality.py` stores, scoring
the hand-written questions (`written.jsonl`) by turn recall@10 per sample:

- `own`: each turn's own text;
- `merged W`: the turn before's terms added to the turn's with weight W
  (one field, BM25F-like);
- `separate W`: BM25 of the turn plus W times BM25 of the turn before,
  each field with its own length normalisation (what memdb's
  `content_before` field does, SPEC.md §18.2).

It estimates what the turn before gives the keyword side on its own;
hybrid search gains less, since neighbour expansion already brings many
replies in (figures: benches/README.md, "The turn before (stop 47)").

    python3 benches/memory/turn_before_bm25.py [--samples 6]
"""
import argparse
import collections
import json
import math
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import memory_quality as mq  # noqa: E402

STOP = set(
    """a an the of to in on at for and or but is are was were be been has have had do does did what
    which who whom whose when where why how that this these those with from by about as it its his
    her their they he she him them you your i my me we our us not no any some all there here than
    then so if into over after before up down out just also very can could would should will may
    might must say said talk talked mention mentioned tell told share shared""".split()
)


def stem(w):
    for suf in ("ing", "ed", "es", "s"):
        if w.endswith(suf) and len(w) - len(suf) >= 3:
            return w[: -len(suf)]
    return w


def toks(text):
    return [stem(w) for w in re.findall(r"[a-z0-9']+", text.lower())]


STOP_STEMS = {stem(w) for w in STOP}


def query_terms(q):
    return sorted({w for w in toks(q) if w not in STOP_STEMS and len(w) > 2})


class Bm25:
    def __init__(self, docs, k1=1.2, b=0.75):
        # docs: [(turn id, Counter of term weights, length)]
        self.docs, self.k1, self.b = docs, k1, b
        self.n = len(docs)
        self.df = collections.Counter(w for _, tf, _ in docs for w in tf)
        self.avg = sum(length for *_, length in docs) / max(1, self.n)

    def scores(self, terms):
        out = {}
        for tid, tf, length in self.docs:
            s = 0.0
            for w in terms:
                f = tf.get(w, 0)
                if f:
                    idf = math.log(1 + (self.n - self.df[w] + 0.5) / (self.df[w] + 0.5))
                    s += idf * f * (self.k1 + 1) / (f + self.k1 * (1 - self.b + self.b * length / self.avg))
            if s > 0:
                out[tid] = s
        return out


def turns_of(sample):
    for i, sess in enumerate(sample["sessions"], 1):
        texts = [f"{sample['names'][t['sender']]}: {t['text']}" for t in sess["turns"]]
        for j, text in enumerate(texts):
            yield f"S{i}:{j + 1}", text, (texts[j - 1] if j else "")


def index(sample, merged_weight):
    docs = []
    for tid, text, before in turns_of(sample):
        tf = collections.Counter(toks(text))
        length = sum(tf.values())
        if merged_weight:
            for w, c in collections.Counter(toks(before)).items():
                tf[w] += merged_weight * c
            length += merged_weight * len(toks(before))
        docs.append((tid, tf, length))
    return Bm25(docs)


def before_index(sample):
    docs = []
    for tid, _, before in turns_of(sample):
        tf = collections.Counter(toks(before))
        docs.append((tid, tf, sum(tf.values())))
    return Bm25(docs)


def recall(questions, rank):
    by_kind = collections.defaultdict(list)
    for q in questions:
        top = rank(q)[:10]
        by_kind[q["kind"]].append(sum(t in top for t in q["turns"]) / len(q["turns"]))
    every = [x for v in by_kind.values() for x in v]
    kinds = " ".join(f"{k} {sum(v) / len(v):.3f}" for k, v in sorted(by_kind.items()))
    return f"{sum(every) / len(every):.3f}  ({kinds})"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(mq.ROOT / "benches/data/dataset.json"))
    ap.add_argument("--written", default=str(HERE / "written.jsonl"))
    ap.add_argument("--samples", type=int, default=6)
    args = ap.parse_args()
    samples = mq.build_samples(args.data, 10, 4, args.samples)
    names = {s["name"] for s in samples}
    questions = [json.loads(line) for line in open(args.written)]
    questions = [q for q in questions if q["sample"] in names]

    def ranked(scores):
        return [t for t, _ in sorted(scores.items(), key=lambda x: (-x[1], x[0]))]

    own = {s["name"]: index(s, 0) for s in samples}
    before = {s["name"]: before_index(s) for s in samples}
    print(f"{len(questions)} written questions, turn recall@10 of BM25 alone")
    print("own          ", recall(questions, lambda q: ranked(own[q["sample"]].scores(query_terms(q["query"])))))
    for w in (0.3, 0.5, 1.0):
        merged = {s["name"]: index(s, w) for s in samples}
        print(f"merged {w:<6}", recall(questions, lambda q: ranked(merged[q["sample"]].scores(query_terms(q["query"])))))
    for w in (0.3, 0.5, 0.7, 1.0):
        def rank(q, w=w):
            terms = query_terms(q["query"])
            total = collections.Counter(own[q["sample"]].scores(terms))
            for t, v in before[q["sample"]].scores(terms).items():
                total[t] += w * v
            return ranked(total)
        print(f"separate {w:<4}", recall(questions, rank))


if __name__ == "__main__":
    main()
