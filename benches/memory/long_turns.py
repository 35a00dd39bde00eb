#!/usr/bin/env python3
"""Long messages: does what a message says past the model's token limit
find it by meaning? Through memdb-server's REST path, on the same
multi-session dialogue as `memory_quality.py` (chitchat, PyPI
`chitchat-dataset`, MIT).

Each session of the --samples largest sender pairs (the first
--skip-samples left out) is stored as one conversation whose messages
each hold --turns-per-message consecutive turns ("Name: text" lines): a
message of 24 turns runs to 300-800 model tokens, past the 256 the local
models read. Every hand-written question of --written (default
written_blind.jsonl: pair06-pair11) then goes through POST /api/v1/query,
limit 10, folder filter, in semantic and hybrid mode. Message recall@10:
the share of the question's evidence messages (those holding an evidence
turn) in its top 10, averaged; reported over all questions and over the
evidence messages longer than --long-chars characters (about 300 tokens
and more).

Run it against two stores filled the same way, one per build or rule, and
compare: benches/README.md, "Long messages" (stop 54).
"""
import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import memory_quality as mq  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", required=True)
    ap.add_argument("--key", required=True)
    here = Path(__file__).resolve().parent
    ap.add_argument("--data", default=str(here.parent / "data" / "dataset.json"))
    ap.add_argument("--written", default=str(here / "written_blind.jsonl"))
    ap.add_argument("--samples", type=int, default=12)
    ap.add_argument("--skip-samples", type=int, default=6)
    ap.add_argument("--turns-per-message", type=int, default=24)
    ap.add_argument("--long-chars", type=int, default=1200)
    ap.add_argument("--skip-store", action="store_true", help="the store is already filled")
    a = ap.parse_args()
    client = mq.Client(a.url, a.key)
    samples = mq.build_samples(a.data, 10, 4, a.samples, 0, a.skip_samples)
    n = a.turns_per_message
    # (sample, turn id) -> message key (sample, session, chunk); key -> chars
    where, chars = {}, {}
    for s in samples:
        for i, sess in enumerate(s["sessions"], 1):
            lines = [f"{s['names'][t['sender']]}: {t['text']}" for t in sess["turns"]]
            msgs = []
            for k in range(0, len(lines), n):
                key = f"S{i}/{k // n}"
                content = "\n".join(lines[k : k + n])
                chars[(s["name"], key)] = len(content)
                for j in range(k, min(k + n, len(lines))):
                    where[(s["name"], f"S{i}:{j + 1}")] = key
                msgs.append({"role": "user", "content": content, "metadata": {"chunk": key}})
            if not a.skip_store:
                client.call("POST", "/api/v1/conversations",
                            {"label": f"{s['name']} session {i}", "folder": f"/{s['name']}", "messages": msgs})
    if not a.skip_store:
        print(f"embedding finished {mq.wait_embedded(client):.1f} s after the last store", flush=True)
    names = {s["name"] for s in samples}
    qs = [json.loads(line) for line in Path(a.written).read_text().splitlines() if line.strip()]
    qs = [q for q in qs if q["sample"] in names]
    long_msgs = sum(1 for c in chars.values() if c > a.long_chars)
    print(f"{len(samples)} samples, {len(chars)} messages ({long_msgs} over {a.long_chars} characters), "
          f"{len(qs)} questions", flush=True)
    for mode in ("semantic", "hybrid"):
        total = hits = 0.0
        long_n = long_hits = 0
        for q in qs:
            want = {where[(q["sample"], t)] for t in mq.evidence(q) if (q["sample"], t) in where}
            if not want:
                continue
            out = client.call("POST", "/api/v1/query", {
                "query": q["query"], "limit": 10, "mode": mode, "filters": {"folder": f"/{q['sample']}"}})
            top = {(h.get("metadata") or {}).get("chunk") for h in out["results"]}
            total += 1
            hits += len(want & top) / len(want)
            for w in want:
                if chars[(q["sample"], w)] > a.long_chars:
                    long_n += 1
                    long_hits += w in top
        print(f"{mode}: message recall@10 {hits / total:.3f} over {int(total)} questions; "
              f"long evidence messages {long_hits / max(long_n, 1):.3f} of {long_n}", flush=True)


if __name__ == "__main__":
    main()
