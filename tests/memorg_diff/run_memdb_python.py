#!/usr/bin/env python3
"""Run the differential workload through memdb's Python package (in-process) and write what was observed.

Usage:
  run_memdb_python.py --out memdb_python.json --base-url http://127.0.0.1:PORT/v1 [--data DIR]

The same workload as run_memdb.py (its ``workload`` function, unchanged), but
each tool call is a call of the ``memdb`` package's Memorg API (``db.memorg``)
on a store opened with ``memdb.open(DIR, embedder="openai")`` and the same
MEMDB_OPENAI_* settings the MCP run uses. Each answer is written in the shape
the MCP tool answers with (``server/src/memorg_tools.rs``), so compare.py judges
it against memorg exactly as it judges the MCP run, and compare_surfaces.py
checks the two memdb runs agree. Needs the ``memdb`` package importable (no
``mcp`` SDK). Exit codes as run_memdb.py's.
"""
from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import inspect
import json
import os
import shutil
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import run_memdb as R  # noqa: E402  (the workload and its recording Runner)


def iso(t) -> str:
    """The MCP tools' time format: Python's isoformat() of a UTC time."""
    return t.astimezone(dt.timezone.utc).isoformat(timespec="microseconds")


class Tools:
    """memorg-mcp's tools over the Python package: each takes the tool's
    arguments (unknown ones are a TypeError, as the MCP server refuses them)
    and answers the tool's JSON value."""

    def __init__(self, db):
        self.m = db.memorg

    def create_session(self, user_id, config=None):
        s = self.m.create_session(user_id, config if isinstance(config, dict) else {})
        return {"session_id": str(s.id), "created_at": iso(s.created_at), "user_id": s.user_id,
                "system_config": s.system_config}

    def start_conversation(self, session_id, title=None):
        c = self.m.start_conversation(session_id, title)
        return {"conversation_id": str(c.id), "created_at": iso(c.created_at), "title": c.title,
                "summary": c.summary, "session_id": str(c.session_id)}

    def create_topic(self, conversation_id, title, summary=None):
        t = self.m.create_topic(conversation_id, title, summary)
        return {"topic_id": str(t.id), "conversation_id": str(t.conversation_id), "created_at": iso(t.created_at),
                "title": t.title, "summary": t.summary, "key_entities": t.to_dict().get("key_entities", [])}

    def add_exchange(self, topic_id, user_message, system_message):
        e = self.m.add_exchange(topic_id, user_message, system_message)
        return {"exchange_id": str(e.id), "created_at": iso(e.created_at),
                "user_message": e.user_message.raw_content, "system_message": e.system_message.raw_content,
                "importance_score": e.importance_score, "topic_id": str(e.topic_id)}

    def search_context(self, query, scope="ALL", scope_id=None, max_results=10, page=1):
        r = self.m.search_context(query, scope, scope_id, max_results, page)
        results = [{
            "id": str(h.exchange.id), "type": str(h.match_type), "record_type": "exchange",
            "content": h.content, "score": h.score, "match_type": str(h.match_type),
            "topic_id": str(h.exchange.topic_id), "created_at": iso(h.exchange.created_at),
            "importance_score": h.exchange.importance_score,
            "factors": h.to_dict().get("factors", []),
        } for h in r.results]
        d = r.to_dict()
        return {"query": query, "results": results, "total_results": len(results),
                "pagination": d.get("pagination"), "metadata": d.get("metadata")}

    def get_memory_usage(self):
        u = self.m.memory_usage().to_dict()
        return {k: u.get(k) for k in ("total_tokens", "active_items", "compressed_items", "vector_count",
                                      "index_size", "counts")}

    def optimize_context(self, content, max_tokens, entities=(), template=None):
        r = self.m.optimize_context(content, max_tokens, entities, template)
        return {"optimized_content": r.optimized_content, "original_length": len(content),
                "optimized_length": len(r.optimized_content), "original_tokens": r.original_length,
                "optimized_tokens": r.optimized_length, "metadata": r.to_dict()["context"]["metadata"]}


def tool_infos() -> list:
    """Each tool as MCP's tools/list describes one, its input schema read
    from the Python signature (every parameter a property; those without a
    default required)."""
    out = []
    for name in R.EXPECTED_TOOLS:
        fn = getattr(Tools, name, None)
        if fn is None:
            continue
        params = [p for p in inspect.signature(fn).parameters.values() if p.name != "self"]
        out.append({
            "name": name,
            "description": (fn.__doc__ or "").strip() or None,
            "input_schema": {"type": "object", "properties": {p.name: {} for p in params},
                             "required": [p.name for p in params if p.default is inspect.Parameter.empty]},
        })
    return out


class Session:
    """Stands where run_memdb.py's MCP ClientSession stood."""

    def __init__(self, tools: Tools, memdb_module):
        self.tools = tools
        self.error_type = memdb_module.MemdbError


async def call(session: Session, name: str, args: dict, _timeout: float) -> dict:
    fn = getattr(session.tools, name, None)
    if fn is None:
        return {"is_error": True, "texts": [f"unknown tool {name}"], "value": None}
    try:
        inspect.signature(fn).bind(**args)
    except TypeError as e:
        return {"is_error": True, "texts": [f"invalid arguments: {e}"], "value": None}
    try:
        value = await asyncio.to_thread(fn, **args)
    except session.error_type as e:
        return {"is_error": True, "texts": [str(e)], "value": None}
    return {"is_error": False, "texts": [json.dumps(value, default=str)], "value": value}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--base-url")
    ap.add_argument("--data", help="memdb data dir (default: a fresh dir under /tmp)")
    args = ap.parse_args()
    import memdb

    args.out = os.path.abspath(args.out)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    if args.data:
        if os.path.isdir(args.data):
            shutil.rmtree(args.data)
    else:
        args.data = tempfile.mkdtemp(prefix="memdb-diff-py-", dir="/tmp")
        os.rmdir(args.data)
    fake = None
    if not args.base_url:
        import fake_openai
        fake, port = fake_openai.serve(quiet=True)
        args.base_url = f"http://127.0.0.1:{port}/v1"
    os.environ.update({"MEMDB_OPENAI_BASE_URL": args.base_url, "MEMDB_OPENAI_MODEL": "text-embedding-ada-002",
                       "MEMDB_OPENAI_DIMENSION": "1536", "MEMDB_OPENAI_API_KEY": "x"})
    out = {
        "system": "memdb", "surface": "python", "memdb_version": memdb.__version__,
        "python": sys.version.split()[0], "base_url": args.base_url, "data_dir": args.data,
        "started": dt.datetime.now(dt.timezone.utc).isoformat(),
        "errors": [], "call_log": [], "results": {}, "searches": [], "scoped": {}, "memory_usage": {},
        "optimize": [], "bad_calls": [],
        "server_info": {"name": "memdb (Python package)", "version": memdb.__version__},
        "missing_tools": [],
    }
    out["tools"] = tool_infos()
    out["missing_tools"] = [t for t in R.EXPECTED_TOOLS if t not in {x["name"] for x in out["tools"]}]
    rc = 0
    t0 = time.time()
    R.M.call = call  # the Runner calls tools through mcp_util.call
    try:
        with memdb.open(args.data, embedder="openai") as db:
            runner = R.Runner(Session(Tools(db), memdb), out, 60.0)
            try:
                asyncio.run(R.workload(runner, out))
            except R.Abort as e:
                out["errors"].append(f"workload aborted: {e}")
                rc = 3
    except Exception as e:  # noqa: BLE001 - recorded for compare.py, which judges
        out["errors"].append(f"{type(e).__name__}: {e}")
        out["traceback"] = traceback.format_exc()[-3000:]
        rc = rc or 2
    out["finished"] = dt.datetime.now(dt.timezone.utc).isoformat()
    with open(args.out, "w") as f:
        json.dump(out, f, indent=2, default=str)
    print(f"wrote {args.out} ({time.time() - t0:.1f}s)")
    for e in out["errors"]:
        print("ERROR:", e, file=sys.stderr)
    if fake:
        fake.shutdown()
    return rc


if __name__ == "__main__":
    sys.exit(main())
