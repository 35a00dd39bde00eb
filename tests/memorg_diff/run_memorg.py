#!/usr/bin/env python3
"""Run the differential workload through memorg 0.1.2 and write what was observed.

Two runs on two fresh databases:
  * ``api``: the Python API (``MemorgSystem``), in-process;
  * ``mcp``: memorg's MCP server (``MemorgMCP``, fastmcp 0.1.0) over stdio with the
    official ``mcp`` client SDK. memorg has no topic tool, so topics are created
    with ``ContextStore.create_topic`` directly on the server's SQLite file.
Plus probes: the memory-item API, the print()-corrupts-stdio defect, the SSE
transport. Everything talks to fake_openai.py (deterministic embeddings).

Usage:
  run_memorg.py --out memorg.json [--base-url http://127.0.0.1:PORT/v1]
                [--workdir DIR] [--o200k FILE] [--skip-mcp] [--skip-probes] [-v]
Without --base-url an in-process fake server is started.

tiktoken: memorg calls ``tiktoken.encoding_for_model("gpt-4o-mini")`` (o200k_base)
in constructors, so *nothing* works without the BPE file. tiktoken 0.9 looks for
``$TIKTOKEN_CACHE_DIR/<sha1(blob url)>`` and checks its sha256; this script
puts the file there. Source of the file (first found): --o200k, $MEMORG_O200K_FILE,
``$CARGO_HOME/registry/src/*/tiktoken-rs-*/assets/o200k_base.tiktoken`` (the
tiktoken-rs crate from crates.io, a memdb dependency, bundles it byte-identical).
"""
from __future__ import annotations

import argparse
import ast
import asyncio
import contextlib
import dataclasses
import datetime as dt
import enum
import glob
import hashlib
import io
import json
import logging
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import workload as W  # noqa: E402
import mcp_util as M  # noqa: E402

O200K_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
O200K_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
CL100K_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"

log = logging.getLogger("run_memorg")


# --------------------------------------------------------------------------- setup
def find_bpe(name: str, explicit: str | None, env_var: str) -> str | None:
    cands = []
    if explicit:
        cands.append(explicit)
    if os.environ.get(env_var):
        cands.append(os.environ[env_var])
    cargo_home = os.environ.get("CARGO_HOME", os.path.expanduser("~/.cargo"))
    cands += sorted(glob.glob(os.path.join(cargo_home, "registry/src/*/tiktoken-rs-*/assets", name)), reverse=True)
    for c in cands:
        if c and os.path.isfile(c):
            return c
    return None


def ensure_tiktoken_cache(cache_dir: str, o200k: str | None) -> dict:
    """Place o200k_base (and cl100k_base if found) where tiktoken 0.9 will look."""
    os.makedirs(cache_dir, exist_ok=True)
    info = {"cache_dir": cache_dir}
    for name, url, sha, explicit, env_var in (
        ("o200k_base.tiktoken", O200K_URL, O200K_SHA256, o200k, "MEMORG_O200K_FILE"),
        ("cl100k_base.tiktoken", CL100K_URL, CL100K_SHA256, None, "MEMORG_CL100K_FILE"),
    ):
        dest = os.path.join(cache_dir, hashlib.sha1(url.encode()).hexdigest())
        if os.path.isfile(dest) and hashlib.sha256(open(dest, "rb").read()).hexdigest() == sha:
            info[name] = {"cache_file": dest, "source": "already cached"}
            continue
        src = find_bpe(name, explicit, env_var)
        if not src:
            info[name] = {"cache_file": None, "source": None}
            continue
        data = open(src, "rb").read()
        if hashlib.sha256(data).hexdigest() != sha:
            raise SystemExit(f"{src}: sha256 mismatch for {name}")
        with open(dest + ".tmp", "wb") as f:
            f.write(data)
        os.replace(dest + ".tmp", dest)
        info[name] = {"cache_file": dest, "source": src}
    if not info["o200k_base.tiktoken"]["cache_file"]:
        raise SystemExit(
            "o200k_base.tiktoken not found: pass --o200k FILE or set MEMORG_O200K_FILE "
            "(the tiktoken-rs crate ships it: `cargo fetch` in the memdb repo puts it under "
            "~/.cargo/registry/src/*/tiktoken-rs-*/assets/). memorg cannot even construct "
            "MemorgSystem without it.")
    os.environ["TIKTOKEN_CACHE_DIR"] = cache_dir
    return info


def fake_stats(base_url: str) -> dict:
    root = base_url[: -len("/v1")] if base_url.endswith("/v1") else base_url
    try:
        with urllib.request.urlopen(root + "/stats", timeout=5) as r:
            return json.loads(r.read())
    except Exception as e:
        return {"error": str(e)}


# --------------------------------------------------------------------------- encoding
def jsonable(obj, depth=0):
    """dataclass/enum/datetime -> JSON; long float lists (embeddings) summarised."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: jsonable(getattr(obj, f.name), depth + 1) for f in dataclasses.fields(obj)}
    if isinstance(obj, enum.Enum):
        return obj.value
    if isinstance(obj, (dt.datetime, dt.date)):
        return obj.isoformat()
    if isinstance(obj, dict):
        return {str(k): jsonable(v, depth + 1) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        if len(obj) > 16 and all(isinstance(x, (int, float)) for x in obj):
            return {"__vector__": len(obj)}
        return [jsonable(v, depth + 1) for v in obj]
    if isinstance(obj, (str, int, float, bool)) or obj is None:
        return obj
    return repr(obj)


def describe_return(obj) -> dict:
    """Type name + field -> python type name, for the API contract."""
    if dataclasses.is_dataclass(obj):
        return {
            "type": type(obj).__name__,
            "fields": {f.name: type(getattr(obj, f.name)).__name__ for f in dataclasses.fields(obj)},
        }
    return {"type": type(obj).__name__}


def ts_format(s: str) -> dict:
    """Describe an ISO timestamp string (offset form, fractional digits)."""
    if not isinstance(s, str):
        return {"value": s}
    frac = None
    if "." in s:
        frac = len(s.split(".", 1)[1].split("+")[0].split("-")[0].split("Z")[0])
    return {
        "value": s,
        "has_T": "T" in s,
        "offset": "+00:00" if s.endswith("+00:00") else ("Z" if s.endswith("Z") else "naive/other"),
        "fraction_digits": frac,
    }


def outcome(fn):
    """Run an async callable and record success/exception (never raises)."""
    async def run():
        try:
            v = await fn()
            return {"ok": True, "value": v}
        except Exception as e:
            return {"ok": False, "error_type": type(e).__name__, "error": str(e)[:500]}
    return run()


# --------------------------------------------------------------------------- storage readback
def read_rows(db: str) -> dict:
    con = sqlite3.connect(db)
    out = {}
    for c in ("sessions", "conversations", "topics", "exchanges"):
        out[c] = {rid: json.loads(data) for rid, data in con.execute(f"SELECT id, data FROM {c}")}
    out["vector_metadata"] = [
        {"id": r[0], "string_id": r[1], "metadata": json.loads(r[2]), "text_content": r[3], "is_deleted": r[4]}
        for r in con.execute("SELECT id, string_id, metadata, text_content, is_deleted FROM vector_metadata ORDER BY id")
    ]
    out["tables"] = sorted(r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'"))
    con.close()
    return out


def hierarchy_from_db(db: str, session_ids: list[str]) -> tuple[list, dict]:
    """Rebuild session -> conversations -> topics -> exchanges from the *real* rows.

    Children carry no parent id; the only links are the parents' denormalised
    child snapshots. We follow the snapshot ids into the real rows. Also return
    evidence about stale snapshots.
    """
    rows = read_rows(db)
    stale = {"session_snapshot_topic_counts": [], "conversation_snapshot_exchange_counts": []}
    tree = []
    for sid in session_ids:
        s = rows["sessions"].get(sid)
        if s is None:
            tree.append({"session_id": sid, "missing": True})
            continue
        sn = {"session_id": sid, "user_id": s["user_id"], "system_config": s["system_config"],
              "created_at": s["created_at"], "conversations": []}
        for csnap in s["conversations"]:
            c = rows["conversations"].get(csnap["id"], csnap)
            stale["session_snapshot_topic_counts"].append(
                {"conversation_id": csnap["id"], "in_session_snapshot": len(csnap.get("topics", [])),
                 "in_conversation_row": len(c.get("topics", []))})
            cn = {"conversation_id": c["id"], "title": c["title"], "summary": c["summary"],
                  "created_at": c["created_at"], "topics": []}
            for tsnap in c["topics"]:
                t = rows["topics"].get(tsnap["id"], tsnap)
                stale["conversation_snapshot_exchange_counts"].append(
                    {"topic_id": tsnap["id"], "in_conversation_snapshot": len(tsnap.get("exchanges", [])),
                     "in_topic_row": len(t.get("exchanges", []))})
                tn = {"topic_id": t["id"], "title": t["title"], "summary": t["summary"],
                      "created_at": t["created_at"], "exchanges": []}
                for e in t["exchanges"]:
                    real = rows["exchanges"].get(e["id"], e)
                    u = real["user_message"]["raw_content"]
                    tn["exchanges"].append({
                        "exchange_id": real["id"],
                        "key": W.key_for_user_message(u),
                        "user_message": u,
                        "system_message": real["system_message"]["raw_content"],
                        "importance_score": real["importance_score"],
                        "created_at": real["created_at"],
                        "embedding_len": len(real.get("embedding") or []),
                    })
                cn["topics"].append(tn)
            sn["conversations"].append(cn)
        tree.append(sn)
    counts = {k: len(v) for k, v in rows.items() if isinstance(v, dict)}
    counts["vector_metadata"] = len(rows["vector_metadata"])
    vec_topic = {v["string_id"]: v["metadata"].get("topic_id") for v in rows["vector_metadata"]}
    sample_ex = next(iter(rows["exchanges"].values()), None)
    return tree, {
        "row_counts": counts,
        "tables": rows["tables"],
        "stale_snapshots": stale,
        "vector_metadata_keys": sorted(rows["vector_metadata"][0]["metadata"].keys()) if rows["vector_metadata"] else [],
        "vector_text_content_sample": rows["vector_metadata"][0]["text_content"] if rows["vector_metadata"] else None,
        "exchange_row_keys": sorted(sample_ex.keys()) if sample_ex else [],
        "exchange_row_has_topic_id": bool(sample_ex and "topic_id" in sample_ex),
        "vector_topic_ids": vec_topic,
    }


# --------------------------------------------------------------------------- search result mapping
def entity_summary(entity) -> dict:
    """memorg SearchResult.entity (a dict) -> which exchange/what kind it is."""
    if isinstance(entity, dict):
        keys = sorted(entity.keys())
        if set(keys) == {"id", "content", "score", "metadata"}:  # vector hit dict (app/main.py:178)
            return {"kind": "vector_hit", "id": entity["id"], "key": W.key_for_text(entity["content"]),
                    "content": entity["content"], "vector_distance": entity["score"],
                    "metadata": entity["metadata"]}
        # raw FTS row JSON (a Session/Conversation/Topic/Exchange dict)
        kind = ("exchange" if "user_message" in entity else "topic" if "exchanges" in entity
                else "conversation" if "topics" in entity else "session" if "conversations" in entity else "?")
        key = W.key_for_user_message(entity["user_message"]["raw_content"]) if kind == "exchange" else None
        return {"kind": "fts_row_" + kind, "id": entity.get("id"), "key": key, "keys": keys}
    return {"kind": type(entity).__name__, "repr": repr(entity)[:200]}


def mcp_content_summary(content: str) -> dict:
    """memorg MCP search result 'content' is str(dict) (app/mcp/server.py:111)."""
    try:
        d = ast.literal_eval(content)
        s = entity_summary(d)
        s["content_is_python_repr"] = True
        s.pop("metadata", None)
        return s
    except Exception:
        return {"kind": "unparsed", "key": W.key_for_text(content), "content_is_python_repr": False}


# --------------------------------------------------------------------------- API run
async def api_run(workdir: str, base_url: str) -> dict:
    from openai import AsyncOpenAI
    from app.main import MemorgSystem
    from app.models import SearchScope
    from app.storage.sqlite_storage import SQLiteStorageAdapter
    from app.vector_store.usearch_vector_store import USearchVectorStore
    import tiktoken

    db = os.path.join(workdir, "memorg_api.db")
    system = MemorgSystem(SQLiteStorageAdapter(db), USearchVectorStore(db), AsyncOpenAI())
    enc = tiktoken.encoding_for_model("gpt-4o-mini")
    out = {"db": db, "returns": {}, "calls": [], "searches": [], "scoped_searches": [], "bad_calls": []}

    session_ids, topic_ids = [], {}
    for s in W.SESSIONS:
        sess = await system.create_session(s["user_id"], s["config"])
        out["returns"].setdefault("create_session", {**describe_return(sess), "sample": jsonable(sess)})
        session_ids.append(sess.id)
        for c in s["conversations"]:
            conv = await system.start_conversation(sess.id)
            out["returns"].setdefault("start_conversation", {**describe_return(conv), "sample": jsonable(conv)})
            for t in c["topics"]:
                top = await system.context_store.create_topic(conv.id, t["title"])
                out["returns"].setdefault("create_topic", {**describe_return(top), "sample": jsonable(top)})
                topic_ids[(s["user_id"], t["title"])] = top.id
                for key, u, m in t["exchanges"]:
                    ex = await system.add_exchange(top.id, u, m)
                    out["returns"].setdefault("add_exchange", {**describe_return(ex), "sample": jsonable(ex)})
                    out["calls"].append({"key": key, "exchange_id": ex.id, "importance_score": ex.importance_score,
                                         "created_at": ts_format(ex.created_at.isoformat()),
                                         "tzinfo": str(ex.created_at.tzinfo)})
    out["session_ids"] = session_ids
    out["topic_ids"] = {f"{u}/{t}": v for (u, t), v in topic_ids.items()}

    async def search(q, scope=SearchScope.ALL, max_results=10):
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            res = await system.search_context(q, scope, max_results)
        return res, buf.getvalue()

    for qd in W.QUERIES:
        res, printed = await search(qd["query"])
        out["searches"].append({
            "query": qd["query"], "scope": "ALL", "max_results": 10,
            "n_results": len(res),
            "results": [{"score": r.score, "match_type": r.match_type.value,
                         "entity_type": type(r.entity).__name__, **entity_summary(r.entity)} for r in res],
            "printed_to_stdout_chars": len(printed),
            "printed_prefix": printed[:120],
        })
    res, _ = await search(W.SMALL_LIMIT_QUERY["query"], max_results=W.SMALL_LIMIT_QUERY["max_results"])
    out["small_limit_search"] = {**W.SMALL_LIMIT_QUERY, "n_results": len(res)}
    res, _ = await search("postgres vacuum", max_results=20)
    out["fts_fallback_search"] = {"query": "postgres vacuum", "max_results": 20, "n_results": len(res),
                                  "kinds": [entity_summary(r.entity)["kind"] for r in res]}
    # The FTS phrase query by itself (what the fallback would add, page 2+)
    out["fts_phrase_hits"] = {}
    for coll in ("sessions", "conversations", "topics", "exchanges"):
        rows = await system.context_store.storage.query(coll, {"$text": {"$search": "postgres vacuum"}})
        out["fts_phrase_hits"][coll] = len(rows)
    rows = await system.context_store.storage.query("exchanges", {"$text": {"$search": "vacuum postgres"}})
    out["fts_phrase_hits"]["exchanges_reversed_word_order"] = len(rows)
    rows = await system.context_store.storage.query("exchanges", {"user_message": {"raw_content": W.SESSIONS[0]["conversations"][0]["topics"][0]["exchanges"][0][1]}})
    out["json_filter_query_hits"] = len(rows)

    for scope in (SearchScope.SESSION, SearchScope.CONVERSATION, SearchScope.TOPIC):
        res, _ = await search("postgres vacuum", scope=scope)
        out["scoped_searches"].append({"scope": scope.name, "n_results": len(res)})

    out["memory_usage"] = {"after_workload": await system.get_memory_usage()}

    for mt in (W.OPTIMIZE_SMALL, W.OPTIMIZE_LARGE):
        before = fake_stats(base_url).get("chat_requests")
        r = await system.optimize_context(W.LONG_TEXT, [], mt)
        after = fake_stats(base_url).get("chat_requests")
        out.setdefault("optimize", []).append({
            "max_tokens": mt, "result_type": type(r).__name__, "optimized_content": r,
            "original_length": len(W.LONG_TEXT), "optimized_length": len(r),
            "original_tokens_o200k": len(enc.encode(W.LONG_TEXT)), "optimized_tokens_o200k": len(enc.encode(r)),
            "llm_calls": (after - before) if isinstance(before, int) and isinstance(after, int) else None,
        })
    r = await system.optimize_context(W.UNICODE_TEXT, [], 4000)
    out["optimize_unicode"] = {"content": W.UNICODE_TEXT, "original_length_mcp_formula": len(W.UNICODE_TEXT),
                               "utf8_bytes": len(W.UNICODE_TEXT.encode()), "optimized_content": r}
    short = "Short note about redb."
    before = fake_stats(base_url).get("chat_requests")
    r = await system.optimize_context(short, [], 4000)
    after = fake_stats(base_url).get("chat_requests")
    out["optimize_short"] = {"content": short, "max_tokens": 4000, "optimized_content": r,
                             "original_length": len(short), "optimized_length": len(r),
                             "llm_calls": (after - before) if isinstance(before, int) and isinstance(after, int) else None}

    # hierarchy as persisted after the workload (before the bad calls add orphans)
    tree, evidence = hierarchy_from_db(db, session_ids)
    out["hierarchy"] = tree
    out["storage_evidence"] = evidence

    # bad calls (memorg accepts them all)
    bogus_topic = "00000000-0000-0000-0000-000000000000"
    o = await outcome(lambda: system.add_exchange(bogus_topic, "orphan question", "orphan answer"))
    out["bad_calls"].append({"call": "add_exchange(unknown topic)", "ok": o["ok"],
                             **({"error": o["error"]} if not o["ok"] else {"exchange_id": o["value"].id})})
    alice_db = topic_ids[("alice", "databases")]
    o = await outcome(lambda: system.add_exchange(alice_db, "", "reply to nothing"))
    out["bad_calls"].append({"call": "add_exchange(empty user_message)", "ok": o["ok"],
                             **({"error": o["error"]} if not o["ok"] else {"exchange_id": o["value"].id})})
    big = ("x" * 9 + " ") * (W.BAD_QUERY_BYTES // 10)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        o = await outcome(lambda: system.search_context(big, SearchScope.ALL, 10))
    out["bad_calls"].append({"call": "search_context(100 KB query)", "ok": o["ok"],
                             **({"error": o["error"]} if not o["ok"] else {"n_results": len(o["value"])})})
    o = await outcome(lambda: system.start_conversation("no-such-session"))
    out["bad_calls"].append({"call": "start_conversation(unknown session)", "ok": o["ok"],
                             **({"error": o["error"]} if not o["ok"] else {"conversation_id": o["value"].id})})
    out["memory_usage"]["after_bad_calls"] = await system.get_memory_usage()
    out["row_counts_after_bad_calls"] = hierarchy_from_db(db, session_ids)[1]["row_counts"]
    return out


# --------------------------------------------------------------------------- memory-item probes
async def memory_item_probes(workdir: str) -> dict:
    from openai import AsyncOpenAI
    from app.main import MemorgSystem
    from app.storage.sqlite_storage import SQLiteStorageAdapter
    from app.vector_store.usearch_vector_store import USearchVectorStore

    db = os.path.join(workdir, "memorg_items.db")
    system = MemorgSystem(SQLiteStorageAdapter(db), USearchVectorStore(db), AsyncOpenAI())
    out = {"db": db}
    sess = await system.create_session("probe", {})
    conv = await system.start_conversation(sess.id)
    top = await system.context_store.create_topic(conv.id, "probe topic")
    top_default = await system.context_store.create_topic(conv.id)
    out["create_topic_default_title"] = top_default.title
    orphan = await system.context_store.create_topic("no-such-conversation", "orphan topic")
    out["create_topic_unknown_conversation"] = {"ok": True, "topic_id": orphan.id,
                                                "returns": describe_return(orphan)}

    results = {}
    for item_type, content, kw in (
        ("exchange", "note stored as an exchange item", {"parent_id": top.id, "tags": ["a", "b"]}),
        ("document", "a research document about redb", {"parent_id": top.id, "metadata": {"author": "x"}, "tags": ["doc"]}),
        ("entity", "Lisbon", {}),
        ("note", "a custom note", {"tags": ["n"]}),
        ("session", "session via memory api", {"metadata": {"user_id": "carol", "config": {"k": 1}}}),
        ("topic", "topic via memory api", {"metadata": {"title": "t-mem"}}),
    ):
        o = await outcome(lambda: system.create_memory_item(content, item_type, **kw))
        if o["ok"]:
            item = o["value"]
            results[item_type] = {"ok": True, "returns": describe_return(item), "sample": jsonable(item)}
            back = await system.memory_store.retrieve(item.id)
            results[item_type]["retrieved"] = jsonable(back) if back else None
        else:
            results[item_type] = {"ok": False, "error_type": o["error_type"], "error": o["error"]}
    out["create_memory_item"] = results
    o = await outcome(lambda: system.search_memory("redb", item_types=["document"], tags=["doc"], limit=5))
    out["search_memory"] = {"ok": o["ok"], **({"error_type": o["error_type"], "error": o["error"]} if not o["ok"] else
                                              {"n": len(o["value"])})}
    if results.get("exchange", {}).get("ok"):
        eid = results["exchange"]["sample"]["id"]
        o = await outcome(lambda: system.get_item_context(eid, depth=3))
        out["get_item_context"] = {"ok": o["ok"], **({"error": o["error"]} if not o["ok"] else
                                                     {"n": len(o["value"]), "types": [i.type.value for i in o["value"]],
                                                      "contents": [i.content for i in o["value"]]})}
        o = await outcome(lambda: system.memory_manager.add_tags(eid, ["c"]))
        out["add_tags"] = {"ok": o["ok"], "value": o.get("value"), "error": o.get("error")}
        back = await system.memory_store.retrieve(eid)
        out["tags_after_add_tags"] = back.tags if back else None
        o = await outcome(lambda: system.optimize_memory_context([eid, "missing-id"], 100))
        out["optimize_memory_context"] = {"ok": o["ok"], **({"error": o["error"]} if not o["ok"] else
                                                            {"returned_items": len(o["value"])})}
    return out


# --------------------------------------------------------------------------- MCP run
def server_env(base_url: str, unbuffered: bool = True) -> dict:
    env = dict(os.environ)
    env["OPENAI_API_KEY"] = env.get("OPENAI_API_KEY") or "sk-fake"
    env["OPENAI_BASE_URL"] = base_url
    if unbuffered:
        env["PYTHONUNBUFFERED"] = "1"
    else:
        env.pop("PYTHONUNBUFFERED", None)
    return env


async def mcp_run(workdir: str, base_url: str, raw_stdout: bool = False, short: bool = False,
                  unbuffered: bool = True) -> dict:
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client
    from app.context_store import ContextStore
    from app.storage.sqlite_storage import SQLiteStorageAdapter

    tag = ("raw_unbuffered" if unbuffered else "raw_buffered") if raw_stdout else ""
    db = os.path.join(workdir, f"memorg_mcp_{tag}.db" if raw_stdout else "memorg_mcp.db")
    args = [os.path.join(HERE, "memorg_mcp_server.py"), "--db-path", db] + (["--raw-stdout"] if raw_stdout else [])
    params = M.stdio_params(sys.executable, args, server_env(base_url, unbuffered=unbuffered), cwd=workdir)
    errlog_path = os.path.join(workdir, f"memorg_mcp_{tag}.stderr" if raw_stdout else "memorg_mcp.stderr")
    out = {"db": db, "server_command": [sys.executable] + args, "sdk": M.sdk_version(),
           "results": {}, "searches": [], "scoped_searches": [], "bad_calls": [], "validation": []}
    with open(errlog_path, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as streams:
            read, write = streams[0], streams[1]
            async with ClientSession(read, write) as session:
                init = await session.initialize()
                si = M.field(init, "server_info", "serverInfo")
                out["server_info"] = {"name": M.field(si, "name"), "version": M.field(si, "version"),
                                      "protocol_version": M.field(init, "protocol_version", "protocolVersion")}
                tools = await session.list_tools()
                out["tools"] = [M.tool_info(t) for t in tools.tools]

                if short:  # raw-stdout probe: one session, one topic, one exchange, then search
                    r = await M.call(session, "create_session", {"user_id": "raw", "config": {}})
                    sid = r["value"]["session_id"]
                    c = await M.call(session, "start_conversation", {"session_id": sid})
                    top = await ContextStore(SQLiteStorageAdapter(db), None, None).create_topic(c["value"]["conversation_id"], "t")
                    await M.call(session, "add_exchange", {"topic_id": top.id, "user_message": "hello postgres", "system_message": "hi"})
                    for i in range(2):  # each search print()s its results onto the protocol stream
                        r = await M.call(session, "search_context", {"query": "postgres"}, timeout=10)
                        out["searches"].append({"i": i, "is_error": r["is_error"],
                                                "client_exception": r.get("client_exception"),
                                                "total_results": (r.get("value") or {}).get("total_results"),
                                                "result_kinds": [mcp_content_summary(x.get("content", ""))["kind"]
                                                                 for x in (r.get("value") or {}).get("results", [])]})
                    r2 = await M.call(session, "get_memory_usage", {}, timeout=15)
                    out["call_after_searches"] = {"is_error": r2["is_error"], "client_exception": r2.get("client_exception"),
                                                  "value": r2.get("value")}
                    return out

                store = ContextStore(SQLiteStorageAdapter(db), None, None)
                session_ids, topic_ids = [], {}
                for s in W.SESSIONS:
                    r = await M.call(session, "create_session", {"user_id": s["user_id"], "config": s["config"]})
                    out["results"].setdefault("create_session", r)
                    sid = r["value"]["session_id"]
                    session_ids.append(sid)
                    for c in s["conversations"]:
                        r = await M.call(session, "start_conversation", {"session_id": sid})
                        out["results"].setdefault("start_conversation", r)
                        cid = r["value"]["conversation_id"]
                        for t in c["topics"]:
                            top = await store.create_topic(cid, t["title"])
                            topic_ids[(s["user_id"], t["title"])] = top.id
                            for key, u, m in t["exchanges"]:
                                r = await M.call(session, "add_exchange",
                                                 {"topic_id": top.id, "user_message": u, "system_message": m})
                                out["results"].setdefault("add_exchange", r)
                out["session_ids"] = session_ids
                out["topic_ids"] = {f"{u}/{t}": v for (u, t), v in topic_ids.items()}

                for qd in W.QUERIES:
                    r = await M.call(session, "search_context", {"query": qd["query"], "scope": "ALL", "max_results": 10})
                    out["results"].setdefault("search_context", r)
                    v = r.get("value") or {}
                    out["searches"].append({
                        "query": qd["query"], "scope": "ALL", "max_results": 10, "is_error": r["is_error"],
                        "total_results": v.get("total_results"),
                        "results": [{"score": x.get("score"), "match_type": x.get("type"),
                                     **mcp_content_summary(x.get("content", ""))} for x in v.get("results", [])],
                    })
                r = await M.call(session, "search_context", {"query": W.SMALL_LIMIT_QUERY["query"],
                                                             "max_results": W.SMALL_LIMIT_QUERY["max_results"]})
                out["small_limit_search"] = {**W.SMALL_LIMIT_QUERY, "total_results": (r.get("value") or {}).get("total_results")}
                for scope in ("SESSION", "CONVERSATION", "TOPIC", "session", "all", "BOGUS"):
                    r = await M.call(session, "search_context", {"query": "postgres vacuum", "scope": scope})
                    out["scoped_searches"].append({"scope": scope, "is_error": r["is_error"],
                                                   "total_results": (r.get("value") or {}).get("total_results")})
                r = await M.call(session, "search_context", {"query": "postgres vacuum", "scope_id": "x"})
                out["validation"].append({"call": "search_context(scope_id=...)", "is_error": r["is_error"],
                                          "texts": [t[:300] for t in r["texts"]]})

                r = await M.call(session, "get_memory_usage", {})
                out["results"]["get_memory_usage"] = r
                out["memory_usage"] = {"after_workload": r.get("value")}

                for mt in (W.OPTIMIZE_SMALL, W.OPTIMIZE_LARGE):
                    r = await M.call(session, "optimize_context", {"content": W.LONG_TEXT, "max_tokens": mt})
                    out["results"].setdefault("optimize_context", r)
                    out.setdefault("optimize", []).append({"max_tokens": mt, "is_error": r["is_error"], "value": r.get("value")})

                tree, evidence = hierarchy_from_db(db, session_ids)
                out["hierarchy"] = tree
                out["storage_evidence"] = evidence

                # bad calls
                bogus = "00000000-0000-0000-0000-000000000000"
                for label, name, a in (
                    ("add_exchange(unknown topic)", "add_exchange",
                     {"topic_id": bogus, "user_message": "orphan question", "system_message": "orphan answer"}),
                    ("add_exchange(empty user_message)", "add_exchange",
                     {"topic_id": topic_ids[("alice", "databases")], "user_message": "", "system_message": "reply to nothing"}),
                    ("search_context(scope BOGUS)", "search_context", {"query": "postgres vacuum", "scope": "BOGUS"}),
                    ("search_context(100 KB query)", "search_context",
                     {"query": ("x" * 9 + " ") * (W.BAD_QUERY_BYTES // 10)}),
                    ("start_conversation(unknown session)", "start_conversation", {"session_id": "no-such-session"}),
                ):
                    r = await M.call(session, name, a)
                    out["bad_calls"].append({"call": label, "is_error": r["is_error"],
                                             "texts": [t[:300] for t in r["texts"]],
                                             "client_exception": r.get("client_exception")})
                r = await M.call(session, "get_memory_usage", {})
                out["memory_usage"]["after_bad_calls"] = r.get("value")

                # how errors are reported
                for label, name, a in (
                    ("create_session without config", "create_session", {"user_id": "x"}),
                    ("add_exchange missing system_message", "add_exchange", {"topic_id": "t", "user_message": "u"}),
                    ("optimize_context max_tokens='ten'", "optimize_context", {"content": "c", "max_tokens": "ten"}),
                    ("unknown tool", "create_topic", {"conversation_id": "c", "title": "t"}),
                    ("search_context max_results=0", "search_context", {"query": "postgres vacuum", "max_results": 0}),
                    ("optimize_context max_tokens=0", "optimize_context", {"content": "abc def", "max_tokens": 0}),
                ):
                    r = await M.call(session, name, a)
                    out["validation"].append({"call": label, "is_error": r["is_error"],
                                              "texts": [t[:300] for t in r["texts"]],
                                              "client_exception": r.get("client_exception")})

    # Summarise result text formatting (memorg: json.dumps(indent=2))
    any_r = out["results"].get("create_session")
    if any_r and any_r["texts"]:
        out["text_format"] = {"indent2": any_r["texts"][0].startswith("{\n  \""), "sample": any_r["texts"][0][:200]}
    out["row_counts_after_bad_calls"] = hierarchy_from_db(db, out.get("session_ids", []))[1]["row_counts"]
    return out


# --------------------------------------------------------------------------- tool-exception probe
async def mcp_error_probe(workdir: str) -> dict:
    """How a tool that *raises* is reported: point memorg at a dead OpenAI endpoint."""
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client
    port = free_port()  # nothing listens there
    db = os.path.join(workdir, "memorg_mcp_deadapi.db")
    env = server_env(f"http://127.0.0.1:{port}/v1")
    params = M.stdio_params(sys.executable, [os.path.join(HERE, "memorg_mcp_server.py"), "--db-path", db], env, cwd=workdir)
    out = {}
    with open(os.path.join(workdir, "memorg_mcp_deadapi.stderr"), "w") as errlog:
        async with stdio_client(params, errlog=errlog) as streams:
            async with ClientSession(streams[0], streams[1]) as session:
                await session.initialize()
                for label, name, a in (
                    ("add_exchange with embeddings API down", "add_exchange",
                     {"topic_id": "t", "user_message": "u", "system_message": "s"}),
                    ("search_context with embeddings API down", "search_context", {"query": "q"}),
                    ("get_memory_usage (no API needed)", "get_memory_usage", {}),
                ):
                    r = await M.call(session, name, a, timeout=60)
                    out[label] = {"is_error": r["is_error"], "texts": [t[:300] for t in r["texts"]],
                                  "client_exception": r.get("client_exception")}
    return out


# --------------------------------------------------------------------------- SSE probe
def free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


async def sse_probe(workdir: str, base_url: str) -> dict:
    from mcp import ClientSession
    from mcp.client.sse import sse_client
    port = free_port()
    db = os.path.join(workdir, "memorg_sse.db")
    errlog = open(os.path.join(workdir, "memorg_sse.stderr"), "w")
    proc = subprocess.Popen([sys.executable, os.path.join(HERE, "memorg_mcp_server.py"), "--db-path", db,
                             "--transport", "sse", "--host", "127.0.0.1", "--port", str(port)],
                            env=server_env(base_url), cwd=workdir, stdout=errlog, stderr=errlog)
    out = {"port": port, "endpoint": f"http://127.0.0.1:{port}/sse"}
    try:
        deadline = time.time() + 20
        while time.time() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                await asyncio.sleep(0.2)
        import anyio
        with anyio.fail_after(30):
            async with sse_client(out["endpoint"]) as streams:
                async with ClientSession(streams[0], streams[1]) as session:
                    await session.initialize()
                    tools = await session.list_tools()
                    out["tools"] = sorted(t.name for t in tools.tools)
                    r = await M.call(session, "create_session", {"user_id": "sse", "config": {}})
                    out["create_session"] = {"is_error": r["is_error"], "keys": sorted((r.get("value") or {}).keys())}
                    r = await M.call(session, "get_memory_usage", {})
                    out["get_memory_usage"] = r.get("value")
        out["ok"] = True
    except Exception as e:
        out["ok"] = False
        out["error"] = f"{type(e).__name__}: {e}"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        errlog.close()
    lines = open(os.path.join(workdir, "memorg_sse.stderr")).read().splitlines()
    out["server_errors"] = [l for l in lines if l.startswith(("RuntimeError", "TypeError", "OSError"))][:4]
    out["server_exit_code"] = proc.returncode
    return out


def shipped_entrypoints() -> dict:
    """What a user gets from the wheel: console scripts, cli.py, MemorgMCP.run."""
    out = {}
    try:
        from importlib.metadata import entry_points
        out["console_scripts"] = sorted(ep.name for ep in entry_points(group="console_scripts")
                                        if ep.value.startswith("app."))
    except Exception as e:
        out["console_scripts_error"] = str(e)
    r = subprocess.run([sys.executable, "-c", "import app.mcp.cli"], capture_output=True, text=True)
    out["import_app_mcp_cli"] = {"rc": r.returncode, "stderr_tail": r.stderr.strip().splitlines()[-1:] }
    code = ("from app.mcp.server import MemorgMCP\n"
            "MemorgMCP(db_path='probe.db').run(host='127.0.0.1', port=0)\n")
    tmp = tempfile.mkdtemp(prefix="memorg-run-")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp, timeout=60,
                       env={**os.environ, "OPENAI_API_KEY": "x"})
    out["MemorgMCP_run"] = {"rc": r.returncode, "stderr_tail": r.stderr.strip().splitlines()[-1:]}
    shutil.rmtree(tmp, ignore_errors=True)
    import fastmcp.server as fs
    import inspect
    out["fastmcp_run_signature"] = str(inspect.signature(fs.FastMCP.run))
    return out


# --------------------------------------------------------------------------- main
def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--base-url", help="fake OpenAI base url (…/v1); default: start one in-process")
    ap.add_argument("--workdir", help="where DB files go (default: a new dir under /tmp)")
    ap.add_argument("--o200k", help="path to o200k_base.tiktoken")
    ap.add_argument("--skip-mcp", action="store_true")
    ap.add_argument("--skip-probes", action="store_true")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()

    args.out = os.path.abspath(args.out)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    workdir = args.workdir or tempfile.mkdtemp(prefix="memorg-diff-", dir="/tmp")
    if os.path.isdir(workdir):
        for f in glob.glob(os.path.join(workdir, "memorg_*")):
            if os.path.isfile(f):
                os.remove(f)
    os.makedirs(workdir, exist_ok=True)
    tk = ensure_tiktoken_cache(os.environ.get("TIKTOKEN_CACHE_DIR") or os.path.join(workdir, "tiktoken-cache"), args.o200k)

    fake = None
    base_url = args.base_url
    if not base_url:
        import fake_openai
        fake, port = fake_openai.serve(quiet=not args.verbose)
        base_url = f"http://127.0.0.1:{port}/v1"
    os.environ["OPENAI_API_KEY"] = os.environ.get("OPENAI_API_KEY") or "sk-fake"
    os.environ["OPENAI_BASE_URL"] = base_url

    os.chdir(workdir)  # app.main writes memorg.log into the CWD at import
    import app.main  # noqa: F401  (configures logging: INFO to stderr + memorg.log)
    logging.getLogger().setLevel(logging.DEBUG if args.verbose else logging.WARNING)
    logging.basicConfig(level=logging.INFO)

    from importlib.metadata import version
    doc = {
        "system": "memorg",
        "versions": {p: version(p) for p in ("memorg", "fastmcp", "mcp", "openai", "tiktoken", "usearch", "aiosqlite")},
        "python": sys.version.split()[0],
        "workdir": workdir,
        "base_url": base_url,
        "tiktoken": tk,
    }
    t0 = time.time()
    doc["api"] = asyncio.run(api_run(workdir, base_url))
    log.warning("api run done in %.1fs", time.time() - t0)
    if not args.skip_probes:
        doc["memory_items"] = asyncio.run(memory_item_probes(workdir))
        doc["shipped_entrypoints"] = shipped_entrypoints()
    if not args.skip_mcp:
        t0 = time.time()
        try:
            doc["mcp"] = asyncio.run(mcp_run(workdir, base_url))
        except Exception as e:
            doc["mcp"] = {"failed": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc()[-2000:]}
        log.warning("mcp run done in %.1fs", time.time() - t0)
        if not args.skip_probes:
            doc["mcp_raw_stdout_probe"] = {}
            for label, unbuf in (("block_buffered_stdout", False), ("PYTHONUNBUFFERED=1", True)):
                try:
                    r = asyncio.run(asyncio.wait_for(
                        mcp_run(workdir, base_url, raw_stdout=True, short=True, unbuffered=unbuf), 90))
                    doc["mcp_raw_stdout_probe"][label] = {k: r.get(k) for k in ("searches", "call_after_searches")}
                except BaseException as e:  # noqa: BLE001 - the probe is expected to break
                    doc["mcp_raw_stdout_probe"][label] = {"failed": f"{type(e).__name__}: {e}"}
            try:
                doc["mcp_tool_exception_probe"] = asyncio.run(mcp_error_probe(workdir))
            except Exception as e:
                doc["mcp_tool_exception_probe"] = {"failed": f"{type(e).__name__}: {e}"}
            try:
                doc["sse_probe"] = asyncio.run(sse_probe(workdir, base_url))
            except Exception as e:
                doc["sse_probe"] = {"ok": False, "error": f"{type(e).__name__}: {e}"}
    doc["fake_server_stats"] = fake_stats(base_url)

    # Canonical views used by compare.py (from the MCP run when it worked).
    primary = doc.get("mcp") if doc.get("mcp") and "failed" not in doc["mcp"] else doc["api"]
    doc["canonical"] = {
        "source": "mcp" if primary is doc.get("mcp") else "api",
        "hierarchy": primary["hierarchy"],
        "tool_values": {k: v.get("value") for k, v in (doc.get("mcp") or {}).get("results", {}).items()},
        "searches": doc["api"]["searches"],
        "memory_usage": primary["memory_usage"],
    }
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=2, sort_keys=False, default=str)
    print(f"wrote {args.out} (workdir {workdir})")
    if fake:
        fake.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
