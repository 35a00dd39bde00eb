#!/usr/bin/env python3
"""Near-tie session swaps over memdb's hybrid ranking, simulated through REST.

For each written question against a store that `memory_quality.py` filled:
the hybrid top 30 with their fused scores. When the ten hold at most
`max_sessions` sessions, up to `swaps` hits from ranks 11-30 whose session
is not among the ten, and whose score is at least `theta` times the tenth's,
replace the lowest hit of a session that holds two or more of the ten.
Prints turn recall@10 and session recall@10 for each setting (figures:
benches/README.md, "A second question set, written blind", stop 49).

    python3 benches/memory/session_swap.py --url URL --key KEY [--written FILE]
"""
import collections
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import memory_quality as mq  # noqa: E402

session = mq.session_of


def swapped(hits, max_sessions, theta, swaps):
    top = hits[:10]
    seen = {session(t) for t, _ in top}
    if len(seen) > max_sessions or not top:
        return top
    tenth = top[-1][1]
    out = list(top)
    done = 0
    for turn, score in hits[10:]:
        if done >= swaps:
            break
        if session(turn) in seen or score < theta * tenth:
            continue
        count = collections.Counter(session(t) for t, _ in out)
        drop = next((i for i in range(len(out) - 1, -1, -1) if count[session(out[i][0])] >= 2), None)
        if drop is None:
            break
        out.pop(drop)
        out.append((turn, score))
        seen.add(session(turn))
        done += 1
    return out


def main():
    client, questions = mq.script_args(__doc__)
    ranked = []
    for q in questions:
        out = client.call("POST", "/api/v1/query", {"query": q["query"], "limit": 30,
                                                    "filters": {"folder": f"/{q['sample']}"}})
        ranked.append((q, [(mq.turn_of(h), h["score"]) for h in out["results"]]))

    def recall(setting):
        turns = sessions = 0.0
        for q, hits in ranked:
            top = swapped(hits, *setting) if setting else hits[:10]
            t, s = mq.recall_at_10(q, [turn for turn, _ in top])
            turns += t
            sessions += s
        return turns / len(ranked), sessions / len(ranked)

    print("shipped                      %.3f %.3f" % recall(None))
    for max_sessions in (2, 3, 4, 10):
        for theta in (0.7, 0.8, 0.9, 0.95):
            for swaps in (1, 2):
                r = recall((max_sessions, theta, swaps))
                print(f"sessions<={max_sessions:<2} theta {theta:<4} swaps {swaps}   %.3f %.3f" % r)


if __name__ == "__main__":
    main()
