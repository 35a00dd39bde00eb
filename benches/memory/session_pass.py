#!/usr/bin/env python3
"""A session pass over memdb's hybrid ranking, simulated through REST.

For each written question (`written.jsonl`) against a store that
`memory_quality.py` filled: the hybrid top 50, the semantic top 100 and the
keyword top 100, then each hybrid hit's score times `1 + alpha * m`, where
`m` is its session's weight, normalised by the best session's:

- `semantic top k`: the mean of the session's k best semantic similarities
  (each over the best similarity);
- `semantic sum`: their sum;
- `keyword sum`: the sum of its turns' BM25 scores (over the best);
- `hybrid top 3`: the mean of its 3 best hybrid scores.

Prints turn recall@10 and session recall@10 of the written questions for
each (figures: benches/README.md, "Long histories", stop 48).

    python3 benches/memory/session_pass.py --url URL --key KEY
"""
import collections
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import memory_quality as mq  # noqa: E402


def main():
    client, questions = mq.script_args(__doc__)

    def query(body):
        out = client.call("POST", "/api/v1/query", body)["results"]
        return [(mq.turn_of(h), h["score"]) for h in out]

    runs = []
    for q in questions:
        scope = {"folder": f"/{q['sample']}"}
        runs.append((
            q,
            query({"query": q["query"], "limit": 50, "mode": "hybrid", "filters": scope}),
            query({"query": q["query"], "limit": 100, "mode": "semantic", "filters": scope}),
            query({"query": q["query"], "limit": 100, "mode": "keyword", "language": "natural", "filters": scope}),
        ))

    def evaluate(weigh, alpha):
        r10 = s10 = 0.0
        for q, hybrid, semantic, keyword in runs:
            m = weigh(hybrid, semantic, keyword)
            best = max(m.values(), default=0) or 1
            ranked = sorted(hybrid, key=lambda h: -h[1] * (1 + alpha * m.get(mq.session_of(h[0]), 0) / best))
            turns, sessions = mq.recall_at_10(q, [t for t, _ in ranked[:10]])
            r10 += turns
            s10 += sessions
        return r10 / len(runs), s10 / len(runs)

    def per_session(hits, k=None, mean=False):
        top = max((s for _, s in hits), default=1) or 1
        by = collections.defaultdict(list)
        for t, s in hits:
            by[mq.session_of(t)].append(s / top)
        if k:
            return {x: sum(sorted(v, reverse=True)[:k]) / (k if mean else 1) for x, v in by.items()}
        return {x: sum(v) for x, v in by.items()}

    print(f"{len(runs)} written questions: turn recall@10 / session recall@10")
    print("none                  %.3f / %.3f" % evaluate(lambda h, s, k: {}, 0))
    for k in (2, 3, 5):
        for alpha in (0.2, 0.4, 0.6):
            r = evaluate(lambda h, s, kw, k=k: per_session(s, k, mean=True), alpha)
            print(f"semantic top {k}, a {alpha}  %.3f / %.3f" % r)
    for alpha in (0.1, 0.2, 0.4):
        print(f"semantic sum, a {alpha}    %.3f / %.3f" % evaluate(lambda h, s, kw: per_session(s), alpha))
        print(f"keyword sum, a {alpha}     %.3f / %.3f" % evaluate(lambda h, s, kw: per_session(kw), alpha))
        print(f"hybrid top 3, a {alpha}    %.3f / %.3f" % evaluate(lambda h, s, kw: per_session(h, 3, mean=True), alpha))


if __name__ == "__main__":
    sys.exit(main())
