#!/usr/bin/env python3
"""Check that two memdb runs of the differential workload agree: the MCP run (run_memdb.py) and the Python package run (run_memdb_python.py).

Usage:
  compare_surfaces.py memdb.json memdb_python.json

Both runs drive the same engine through different surfaces, so everything the
workload observed must match: the stored hierarchy (titles, messages,
importance), every search (the ranked exchange keys, match types, scores,
pagination and parsed metadata), the scoped searches, topic membership, memory
usage, the optimizer's output, which bad calls were refused, and the extras.
Ids and timestamps differ between runs and are not compared; scores are
compared to 1e-3 (the recency factor moves with the seconds between runs).
Prints one line per check; exit code 1 if any check fails.
"""
from __future__ import annotations

import json
import sys

SCORE_TOL = 1e-3


def hierarchy(run: dict) -> list:
    out = []
    for s in run.get("hierarchy") or []:
        for c in s["conversations"]:
            for t in c["topics"]:
                for e in t["exchanges"]:
                    out.append((s["user_id"], json.dumps(s["system_config"], sort_keys=True), c["title"],
                                c["summary"], t["title"], t["summary"], e["key"], e["user_message"],
                                e["system_message"], round(e["importance_score"], 9)))
    return out


def search(r: dict) -> dict:
    return {
        "is_error": r.get("is_error"),
        "total_results": r.get("total_results"),
        "pagination": r.get("pagination"),
        "metadata": r.get("metadata"),
        "item_keys": r.get("item_keys"),
        "ranked": [(x["key"], x["match_type"], x["type"]) for x in r.get("results") or []],
    }


def scores(r: dict) -> list:
    return [x["score"] for x in r.get("results") or []]


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    with open(sys.argv[1]) as f:
        mcp = json.load(f)
    with open(sys.argv[2]) as f:
        py = json.load(f)
    fails = 0

    def check(name: str, a, b, ok=None) -> None:
        nonlocal fails
        good = (a == b) if ok is None else ok
        if good:
            print(f"PASS {name}")
        else:
            fails += 1
            print(f"FAIL {name}\n  mcp:    {json.dumps(a)[:600]}\n  python: {json.dumps(b)[:600]}")

    check("both runs completed without errors", mcp.get("errors"), py.get("errors"),
          ok=not mcp.get("errors") and not py.get("errors"))
    check("hierarchy (messages, titles, summaries, importance)", hierarchy(mcp), hierarchy(py),
          ok=bool(hierarchy(mcp)) and hierarchy(mcp) == hierarchy(py))

    pairs = [(f"search {a['query']!r}", a, b) for a, b in zip(mcp.get("searches", []), py.get("searches", []))]
    check("same number of searches", len(mcp.get("searches", [])), len(py.get("searches", [])))
    for key in ("small_limit_search", "page2_search"):
        pairs.append((key, mcp.get(key) or {}, py.get(key) or {}))
    for key in sorted(set(mcp.get("scoped", {})) | set(py.get("scoped", {}))):
        pairs.append((f"scoped {key}", mcp["scoped"].get(key) or {}, py["scoped"].get(key) or {}))
    for name, a, b in pairs:
        check(f"{name}: ranking, pagination, metadata", search(a), search(b))
        sa, sb = scores(a), scores(b)
        check(f"{name}: scores within {SCORE_TOL}", sa, sb,
              ok=len(sa) == len(sb) and all(abs(x - y) <= SCORE_TOL for x, y in zip(sa, sb)))

    check("topic membership", mcp.get("topic_membership"), py.get("topic_membership"))
    for when in ("after_workload", "after_bad_calls"):
        a = dict(mcp.get("memory_usage", {}).get(when) or {})
        b = dict(py.get("memory_usage", {}).get(when) or {})
        # Index bytes depend on when tantivy merged its segments.
        a.pop("index_size", None)
        b.pop("index_size", None)
        check(f"memory usage {when} (all but index_size)", a, b, ok=bool(a) and a == b)

    def optimized(run: dict) -> list:
        return [(o["max_tokens"], o["is_error"], o["value"]) for o in run.get("optimize", [])]

    def refused(run: dict) -> list:
        return [(c["call"], c["is_error"]) for c in run.get("bad_calls", [])]

    for name, of in (("optimize_context", optimized), ("bad calls refused alike", refused)):
        a, b = of(mcp), of(py)
        check(name, a, b, ok=bool(a) and a == b)
    check("optimize_context (unicode)", (mcp.get("optimize_unicode") or {}).get("value"),
          (py.get("optimize_unicode") or {}).get("value"))

    def extras(run: dict) -> dict:
        ex = run.get("extras") or {}
        conv = ex.get("start_conversation_with_title") or {}
        topic = ex.get("create_topic_with_summary") or {}
        dflt = ex.get("create_session_default_config") or {}
        return {"title": conv.get("title"), "summary": topic.get("summary"), "default_config_error": dflt.get("is_error"),
                "default_config": (dflt.get("value") or {}).get("system_config")}

    check("extras (titles, summaries, default config)", extras(mcp), extras(py))
    print(f"{'OK' if not fails else 'FAILED'}: {fails} failing check(s)")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
