#!/usr/bin/env python3
"""Run the differential workload through memdb's MCP server (stdio) and write what was observed.

Usage:
  run_memdb.py [MEMDB_BIN] --out memdb.json --base-url http://127.0.0.1:PORT/v1
               [--data DIR] [--timeout SECONDS]
The binary comes from the first argument or $MEMDB_BIN. The server is started as
  <bin> mcp --data <dir> --embedder openai --tools memorg
with MEMDB_OPENAI_BASE_URL=<base-url> MEMDB_OPENAI_MODEL=text-embedding-ada-002
MEMDB_OPENAI_DIMENSION=1536 MEMDB_OPENAI_API_KEY=x. Without --base-url an
in-process fake_openai server is started.

The script never stops at the first problem: every call is recorded (result,
is_error, message) and fatal problems go to ``errors``; compare.py judges.
Exit code: 0 if the JSON was written and the workload completed, 2 if the server
could not be started / initialised, 3 if the workload broke part-way.
"""
from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import shutil
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import workload as W  # noqa: E402
import mcp_util as M  # noqa: E402

EXPECTED_TOOLS = ["create_session", "start_conversation", "create_topic", "add_exchange",
                  "search_context", "get_memory_usage", "optimize_context"]


class Abort(Exception):
    pass


def leaves(e: BaseException) -> list[BaseException]:
    """Flatten (nested) exception groups raised by anyio task groups."""
    if isinstance(e, BaseExceptionGroup):
        out = []
        for x in e.exceptions:
            out += leaves(x)
        return out
    return [e]


def describe(e: BaseException) -> str:
    parts = []
    for x in leaves(e):
        if isinstance(x, Abort):
            parts.append(str(x))
        else:
            parts.append(f"{type(x).__name__}: {x}".rstrip(": "))
    return "; ".join(parts)


def tail(path: str, n: int = 40) -> str:
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-n:])
    except OSError:
        return ""


class Runner:
    def __init__(self, session, out: dict, timeout: float):
        self.s = session
        self.out = out
        self.timeout = timeout
        self.ex_keys: dict[str, str] = {}  # exchange id -> workload key

    async def call(self, name: str, args: dict, timeout: float | None = None) -> dict:
        r = await M.call(self.s, name, args, timeout or self.timeout)
        self.out["call_log"].append({"tool": name, "args": {k: (v if not isinstance(v, str) or len(v) < 200
                                                                else f"<{len(v)} chars>") for k, v in args.items()},
                                     "is_error": r["is_error"],
                                     "error_text": (r["texts"][0][:300] if r["is_error"] and r["texts"] else None),
                                     "client_exception": r.get("client_exception")})
        return r

    async def must(self, name: str, args: dict, id_key: str) -> tuple[dict, str]:
        r = await self.call(name, args)
        v = r.get("value")
        if r["is_error"] or not isinstance(v, dict) or not v.get(id_key):
            msg = (r.get("client_exception") or (r["texts"][0][:500] if r["texts"] else "")
                   or r.get("json_parse_error") or "no result")
            raise Abort(f"{name}({json.dumps(args)[:200]}) failed: is_error={r['is_error']} value={json.dumps(v)[:300]} "
                        f"message={msg}")
        return r, v[id_key]

    def map_result(self, item: dict) -> dict:
        rid = item.get("id")
        key = self.ex_keys.get(rid) if isinstance(rid, str) else None
        if key is None:
            key = W.key_for_text(item.get("content"))
        return {"key": key, "id": rid, "type": item.get("type"), "match_type": item.get("match_type"),
                "score": item.get("score"), "content": item.get("content")}

    async def search(self, query: str, scope: str = "ALL", scope_id: str | None = None,
                     max_results: int = 10, page: int | None = None) -> dict:
        args = {"query": query, "scope": scope, "max_results": max_results}
        if scope_id is not None:
            args["scope_id"] = scope_id
        if page is not None:
            args["page"] = page
        r = await self.call("search_context", args)
        self.out["results"].setdefault("search_context", r)
        v = r.get("value") if isinstance(r.get("value"), dict) else {}
        items = v.get("results") if isinstance(v.get("results"), list) else []
        return {
            "query": query, "scope": scope, "scope_id": scope_id, "max_results": max_results, "page": page,
            "is_error": r["is_error"],
            "error_text": r["texts"][0][:300] if r["is_error"] and r["texts"] else None,
            "client_exception": r.get("client_exception"),
            "result_keys": sorted(v.keys()),
            "total_results": v.get("total_results"),
            "pagination": v.get("pagination"),
            "metadata": v.get("metadata"),
            "item_keys": sorted(items[0].keys()) if items and isinstance(items[0], dict) else [],
            "results": [self.map_result(x) for x in items if isinstance(x, dict)],
        }


async def workload(runner: Runner, out: dict) -> None:
    call, must = runner.call, runner.must
    sessions, ids = [], {"sessions": {}, "conversations": {}, "topics": {}}
    for s in W.SESSIONS:
        r, sid = await must("create_session", {"user_id": s["user_id"], "config": s["config"]}, "session_id")
        out["results"].setdefault("create_session", r)
        sv = r["value"]
        sn = {"session_id": sid, "user_id": sv.get("user_id"), "system_config": sv.get("system_config"),
              "created_at": sv.get("created_at"), "conversations": []}
        ids["sessions"][s["user_id"]] = sid
        for ci, c in enumerate(s["conversations"]):
            r, cid = await must("start_conversation", {"session_id": sid}, "conversation_id")
            out["results"].setdefault("start_conversation", r)
            cv = r["value"]
            cn = {"conversation_id": cid, "title": cv.get("title"), "summary": cv.get("summary"),
                  "created_at": cv.get("created_at"), "topics": []}
            ids["conversations"][f"{s['user_id']}/{ci}"] = cid
            for t in c["topics"]:
                r, tid = await must("create_topic", {"conversation_id": cid, "title": t["title"]}, "topic_id")
                out["results"].setdefault("create_topic", r)
                tv = r["value"]
                tn = {"topic_id": tid, "title": tv.get("title"), "summary": tv.get("summary"),
                      "conversation_id": tv.get("conversation_id"), "created_at": tv.get("created_at"), "exchanges": []}
                ids["topics"][f"{s['user_id']}/{t['title']}"] = tid
                for key, u, m in t["exchanges"]:
                    r, eid = await must("add_exchange", {"topic_id": tid, "user_message": u, "system_message": m},
                                        "exchange_id")
                    out["results"].setdefault("add_exchange", r)
                    ev = r["value"]
                    runner.ex_keys[eid] = key
                    tn["exchanges"].append({"exchange_id": eid, "key": key,
                                            "user_message": ev.get("user_message"),
                                            "system_message": ev.get("system_message"),
                                            "importance_score": ev.get("importance_score"),
                                            "created_at": ev.get("created_at")})
                cn["topics"].append(tn)
            sn["conversations"].append(cn)
        sessions.append(sn)
    out["hierarchy"] = sessions
    out["ids"] = ids

    # --- searches, scope ALL
    for qd in W.QUERIES:
        out["searches"].append(await runner.search(qd["query"]))
    q = W.SMALL_LIMIT_QUERY
    out["small_limit_search"] = await runner.search(q["query"], max_results=q["max_results"])
    out["page2_search"] = await runner.search(q["query"], max_results=3, page=2)

    # --- memdb-only scopes
    t_db = ids["topics"]["alice/databases"]
    t_tr = ids["topics"]["alice/travel"]
    s_bob = ids["sessions"]["bob"]
    s_alice = ids["sessions"]["alice"]
    c_alice = ids["conversations"]["alice/0"]
    sc = out["scoped"]
    sc["topic_databases_postgres"] = await runner.search("postgres vacuum", "TOPIC", t_db)
    sc["topic_databases_porto"] = await runner.search("train to Porto", "TOPIC", t_db)
    sc["topic_travel_porto"] = await runner.search("train to Porto", "TOPIC", t_tr)
    sc["session_bob_postgres"] = await runner.search("postgres vacuum", "SESSION", s_bob)
    sc["session_bob_sourdough"] = await runner.search("sourdough oven temperature", "SESSION", s_bob)
    sc["session_alice_sourdough"] = await runner.search("sourdough oven temperature", "SESSION", s_alice)
    sc["conversation_alice_sourdough"] = await runner.search("sourdough oven temperature", "CONVERSATION", c_alice)
    # membership: every topic's exchanges via a TOPIC-scoped search for all its words
    out["topic_membership"] = {}
    for s in W.SESSIONS:
        for c in s["conversations"]:
            for t in c["topics"]:
                tid = ids["topics"][f"{s['user_id']}/{t['title']}"]
                text = " ".join(u for _k, u, _m in t["exchanges"])
                r = await runner.search(text, "TOPIC", tid, max_results=50)
                out["topic_membership"][f"{s['user_id']}/{t['title']}"] = {
                    "is_error": r["is_error"], "keys": sorted(x["key"] for x in r["results"] if x["key"])}

    # --- usage & optimize
    r = await call("get_memory_usage", {})
    out["results"]["get_memory_usage"] = r
    out["memory_usage"]["after_workload"] = r.get("value")
    for mt in (W.OPTIMIZE_SMALL, W.OPTIMIZE_LARGE):
        r = await call("optimize_context", {"content": W.LONG_TEXT, "max_tokens": mt})
        out["results"].setdefault("optimize_context", r)
        out["optimize"].append({"max_tokens": mt, "is_error": r["is_error"], "value": r.get("value"),
                                "original_chars": len(W.LONG_TEXT)})

    r = await call("optimize_context", {"content": W.UNICODE_TEXT, "max_tokens": 4000})
    out["optimize_unicode"] = {"content": W.UNICODE_TEXT, "code_points": len(W.UNICODE_TEXT),
                               "utf8_bytes": len(W.UNICODE_TEXT.encode()), "is_error": r["is_error"],
                               "value": r.get("value")}

    # --- bad calls (each must be an error and must not change active_items)
    bogus = "00000000-0000-0000-0000-000000000000"
    big = ("x" * 9 + " ") * (W.BAD_QUERY_BYTES // 10)
    for label, name, a, required in (
        ("add_exchange(unknown topic)", "add_exchange",
         {"topic_id": bogus, "user_message": "orphan question", "system_message": "orphan answer"}, True),
        ("add_exchange(empty user_message)", "add_exchange",
         {"topic_id": t_db, "user_message": "", "system_message": "reply to nothing"}, True),
        ("search_context(scope BOGUS)", "search_context", {"query": "postgres vacuum", "scope": "BOGUS"}, True),
        ("search_context(100 KB query)", "search_context", {"query": big}, True),
        # informational (not required by the contract; recorded for the report)
        ("search_context(TOPIC without scope_id)", "search_context", {"query": "postgres vacuum", "scope": "TOPIC"}, False),
        ("create_topic(unknown conversation)", "create_topic", {"conversation_id": bogus, "title": "orphan"}, False),
        ("start_conversation(unknown session)", "start_conversation", {"session_id": bogus}, False),
        ("search_context(unknown tool arg)", "search_context", {"query": "x", "bogus_arg": 1}, False),
    ):
        r = await call(name, a)
        out["bad_calls"].append({"call": label, "required_error": required, "is_error": r["is_error"],
                                 "texts": [t[:300] for t in r["texts"]],
                                 "client_exception": r.get("client_exception")})
    r = await call("get_memory_usage", {})
    out["memory_usage"]["after_bad_calls"] = r.get("value")

    # --- extras (after all measurements; excluded from hierarchy comparison)
    ex = {}
    r, sid = await must("create_session", {"user_id": "carol", "config": {}}, "session_id")
    r = await call("start_conversation", {"session_id": sid, "title": "Trip planning"})
    ex["start_conversation_with_title"] = r.get("value")
    cid = (r.get("value") or {}).get("conversation_id")
    if cid:
        r = await call("create_topic", {"conversation_id": cid, "title": "t", "summary": "a short summary"})
        ex["create_topic_with_summary"] = r.get("value")
    r = await call("create_session", {"user_id": "dave"})
    ex["create_session_default_config"] = {"is_error": r["is_error"], "value": r.get("value")}
    out["extras"] = ex


async def main_async(args) -> int:
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    out = {
        "system": "memdb", "binary": args.bin, "sdk": M.sdk_version(), "python": sys.version.split()[0],
        "base_url": args.base_url, "data_dir": args.data,
        "started": dt.datetime.now(dt.timezone.utc).isoformat(),
        "errors": [], "call_log": [], "results": {}, "searches": [], "scoped": {}, "memory_usage": {},
        "optimize": [], "bad_calls": [],
    }
    cmd = [args.bin, "mcp", "--data", args.data, "--embedder", "openai", "--tools", "memorg"]
    env = dict(os.environ)
    env.update({"MEMDB_OPENAI_BASE_URL": args.base_url, "MEMDB_OPENAI_MODEL": "text-embedding-ada-002",
                "MEMDB_OPENAI_DIMENSION": "1536", "MEMDB_OPENAI_API_KEY": "x"})
    out["command"] = cmd
    errlog_path = os.path.join(os.path.dirname(args.out), "memdb_server.stderr")
    out["server_stderr"] = errlog_path
    rc = 0
    import anyio
    with open(errlog_path, "w") as errlog:
        try:
            async with stdio_client(M.stdio_params(cmd[0], cmd[1:], env), errlog=errlog) as streams:
                async with ClientSession(streams[0], streams[1]) as session:
                    try:
                        with anyio.fail_after(args.timeout):
                            init = await session.initialize()
                            tools = await session.list_tools()
                    except Exception as e:
                        raise Abort(f"initialize/list_tools failed: {type(e).__name__}: {e}") from e
                    si = M.field(init, "server_info", "serverInfo")
                    out["server_info"] = {"name": M.field(si, "name"), "version": M.field(si, "version"),
                                          "protocol_version": M.field(init, "protocol_version", "protocolVersion")}
                    out["tools"] = [M.tool_info(t) for t in tools.tools]
                    names = {t["name"] for t in out["tools"]}
                    out["missing_tools"] = [t for t in EXPECTED_TOOLS if t not in names]
                    if out["missing_tools"]:
                        out["errors"].append(f"server lacks tools {out['missing_tools']} (has {sorted(names)})")
                    runner = Runner(session, out, args.timeout)
                    try:
                        await workload(runner, out)
                    except Abort as e:
                        out["errors"].append(f"workload aborted: {e}")
                        rc = 3
        except Abort as e:
            out["errors"].append(str(e))
            rc = 2
        except BaseException as e:  # noqa: BLE001 - spawn failures, ExceptionGroups from the SDK
            if isinstance(e, KeyboardInterrupt):
                raise
            ls = leaves(e)
            if any(isinstance(x, Abort) for x in ls):
                out["errors"].append(describe(e))
            else:
                out["errors"].append(f"MCP session failed (server exited or broke the protocol?): {describe(e)}")
                out["traceback"] = traceback.format_exc()[-3000:]
            rc = rc or 2
    out["server_stderr_tail"] = tail(errlog_path)
    out["finished"] = dt.datetime.now(dt.timezone.utc).isoformat()
    with open(args.out, "w") as f:
        json.dump(out, f, indent=2, default=str)
    print(f"wrote {args.out}")
    for e in out["errors"]:
        print("ERROR:", e, file=sys.stderr)
    if rc and out["server_stderr_tail"]:
        print("--- memdb stderr (tail) ---\n" + out["server_stderr_tail"], file=sys.stderr)
    return rc


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("bin", nargs="?", default=os.environ.get("MEMDB_BIN"))
    ap.add_argument("--out", required=True)
    ap.add_argument("--base-url")
    ap.add_argument("--data", help="memdb data dir (default: fresh dir under /tmp; must not exist or be empty)")
    ap.add_argument("--timeout", type=float, default=60.0, help="per-call timeout, seconds")
    args = ap.parse_args()
    if not args.bin:
        print("run_memdb.py: give the memdb binary as the first argument or in $MEMDB_BIN", file=sys.stderr)
        return 2
    args.bin = os.path.abspath(args.bin) if os.sep in args.bin else (shutil.which(args.bin) or args.bin)
    if not (os.path.isfile(args.bin) and os.access(args.bin, os.X_OK)):
        print(f"run_memdb.py: memdb binary not found or not executable: {args.bin}", file=sys.stderr)
        return 2
    args.out = os.path.abspath(args.out)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    if args.data:
        if os.path.isdir(args.data) and os.listdir(args.data):
            shutil.rmtree(args.data)
        os.makedirs(args.data, exist_ok=True)
    else:
        args.data = tempfile.mkdtemp(prefix="memdb-diff-", dir="/tmp")
    fake = None
    if not args.base_url:
        import fake_openai
        fake, port = fake_openai.serve(quiet=True)
        args.base_url = f"http://127.0.0.1:{port}/v1"
    t0 = time.time()
    rc = asyncio.run(main_async(args))
    print(f"memdb run took {time.time() - t0:.1f}s")
    if fake:
        fake.shutdown()
    return rc


if __name__ == "__main__":
    sys.exit(main())
