"""memdb's native MCP server driven by the official MCP Python SDK (PyPI `mcp`).

Usage:
  mcp_e2e.py stdio COMMAND [ARGS...]   spawn COMMAND (e.g. `memdb mcp --data DIR`)
  mcp_e2e.py http URL                  connect to URL with MEMDB_KEY (read-write)
                                       and MEMDB_RO_KEY (read-only)

Lists the tools (and compares their input schemas with sekha-mcp 0.2.0's),
calls each tool with assertions on text and structured content, checks
that errors are tool errors (or JSON-RPC errors for unknown tools) and that
the session keeps serving afterwards. Prints "checks passed" at the end.
"""

import asyncio
import json
import os
import sys
from datetime import datetime, timedelta, timezone

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamablehttp_client
from mcp.shared.exceptions import McpError

os.environ.setdefault("CONTROLLER_URL", "http://127.0.0.1:9")
os.environ.setdefault("CONTROLLER_API_KEY", "x" * 40)
from sekha_mcp.tools import (  # noqa: E402  (sekha-mcp reads its settings on import)
    MEMORY_EXPORT_TOOL,
    MEMORY_GET_CONTEXT_TOOL,
    MEMORY_PRUNE_TOOL,
    MEMORY_SEARCH_TOOL,
    MEMORY_STATS_TOOL,
    MEMORY_STORE_TOOL,
    MEMORY_UPDATE_TOOL,
)

SEKHA_TOOLS = [
    MEMORY_STORE_TOOL,
    MEMORY_SEARCH_TOOL,
    MEMORY_UPDATE_TOOL,
    MEMORY_GET_CONTEXT_TOOL,
    MEMORY_PRUNE_TOOL,
    MEMORY_EXPORT_TOOL,
    MEMORY_STATS_TOOL,
]
# The schema keywords that must agree with sekha-mcp's.
KEYWORDS = ["type", "minimum", "maximum", "minLength", "maxLength", "minItems",
            "pattern", "default", "enum", "format"]

CHECKS = 0


def check(cond, what):
    global CHECKS
    if not cond:
        raise AssertionError(what)
    CHECKS += 1


def text_of(result):
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


def compare_schema(ours, theirs, path):
    for kw in KEYWORDS:
        if kw in theirs:
            check(ours.get(kw) == theirs[kw],
                  f"{path}.{kw}: ours {ours.get(kw)!r} != sekha {theirs[kw]!r}")
    if "required" in theirs:
        # memdb's one deliberate difference (SPEC §19.4): memory_store
        # suggests a label (and a folder) when the client sends none.
        want = [r for r in theirs["required"]
                if not (path == "memory_store" and r in ("label", "folder"))]
        check(sorted(ours.get("required", [])) == sorted(want),
              f"{path}.required: {ours.get('required')} != {want}")
    for name, sub in theirs.get("properties", {}).items():
        check(name in ours.get("properties", {}), f"{path}: property {name} missing")
        compare_schema(ours["properties"][name], sub, f"{path}.{name}")
    if "items" in theirs:
        compare_schema(ours.get("items", {}), theirs["items"], f"{path}[]")


async def call_ok(session, tool, args):
    r = await session.call_tool(tool, args)
    check(not r.isError, f"{tool} {args} failed: {text_of(r)}")
    check(isinstance(r.structuredContent, dict), f"{tool}: no structured content")
    return r


async def call_err(session, tool, args, needle):
    r = await session.call_tool(tool, args)
    check(r.isError, f"{tool} {args} should fail, got {text_of(r)[:200]}")
    t = text_of(r)
    check(needle in t, f"{tool} {args}: error {t!r} does not mention {needle!r}")
    return r


async def exercise(session, label_suffix):
    init = await session.initialize()
    check(init.serverInfo.name == "memdb", f"server name {init.serverInfo.name}")
    check(init.capabilities.tools is not None, "tools capability")

    tools = (await session.list_tools()).tools
    by_name = {t.name: t for t in tools}
    check(sorted(by_name) == sorted(t.name for t in SEKHA_TOOLS), f"tools {sorted(by_name)}")
    for sekha in SEKHA_TOOLS:
        ours = by_name[sekha.name]
        check(ours.description and len(ours.description) > 60, f"{sekha.name} description")
        compare_schema(ours.inputSchema, sekha.inputSchema, sekha.name)

    now = datetime.now(timezone.utc)
    old = (now - timedelta(days=200)).isoformat()
    # A recent, important conversation and an old, unimportant one.
    recent = await call_ok(session, "memory_store", {
        "label": f"Kubernetes rollout {label_suffix}",
        "folder": "/work/infra",
        "importance_score": 8,
        "messages": [
            {"role": "user", "content": "How do we roll out the kubernetes deployment safely?"},
            {"role": "assistant", "content": "Use a canary with a 10% traffic split first."},
        ],
    })
    recent_id = recent.structuredContent["conversation_id"]
    check("Stored conversation" in text_of(recent) and recent_id in text_of(recent),
          text_of(recent))
    check(recent.structuredContent["message_count"] == 2, recent.structuredContent)
    stale = await call_ok(session, "memory_store", {
        "label": f"Old lunch chat {label_suffix}",
        "folder": "/personal",
        "importance_score": 2,
        "messages": [
            {"role": "user", "content": "Where should we eat lunch today?", "timestamp": old},
            {"role": "assistant", "content": "The noodle place downstairs.", "timestamp": old,
             "metadata": {"source": "e2e"}},
            {"role": "user", "content": "Fine.", "timestamp": old},
        ],
    })
    stale_id = stale.structuredContent["conversation_id"]

    # Store, then search finds it.
    found = await call_ok(session, "memory_search", {"query": "kubernetes deployment", "limit": 5})
    hits = found.structuredContent["results"]
    check(hits and hits[0]["conversation_id"] == recent_id, f"search hits {hits}")
    check(all(h["conversation_id"] != stale_id for h in hits), "unrelated hit")
    check("kubernetes" in text_of(found).lower() and recent_id in text_of(found), text_of(found))
    filtered = await call_ok(session, "memory_search", {
        "query": "lunch", "filter_labels": [f"Old lunch chat {label_suffix}"]})
    check([h["conversation_id"] for h in filtered.structuredContent["results"]][:1] == [stale_id],
          filtered.structuredContent)

    # Update changes what get_context shows.
    ctx = await call_ok(session, "memory_get_context", {"conversation_id": recent_id})
    check(ctx.structuredContent["label"] == f"Kubernetes rollout {label_suffix}", ctx.structuredContent)
    check(len(ctx.structuredContent["messages"]) == 2, "two messages")
    check("canary" in text_of(ctx), text_of(ctx))
    upd = await call_ok(session, "memory_update", {
        "conversation_id": recent_id, "label": f"K8s canary plan {label_suffix}",
        "folder": "/work/platform", "importance_score": 9})
    check(sorted(upd.structuredContent["updated_fields"]) == ["folder", "importance_score", "label"],
          upd.structuredContent)
    ctx = await call_ok(session, "memory_get_context", {"conversation_id": recent_id})
    check(ctx.structuredContent["label"] == f"K8s canary plan {label_suffix}", ctx.structuredContent)
    check(ctx.structuredContent["folder"] == "/work/platform", ctx.structuredContent)
    check(ctx.structuredContent["importance_score"] == 9, ctx.structuredContent)
    check(f"K8s canary plan {label_suffix}" in text_of(ctx), text_of(ctx))

    # Export as JSON and Markdown.
    ej = await call_ok(session, "memory_export", {"conversation_id": stale_id, "format": "json"})
    doc = json.loads(ej.structuredContent["content"])
    check(doc["conversation_id"] == stale_id and len(doc["messages"]) == 3, f"json export {doc}")
    check(json.loads(text_of(ej)) == doc, "the text is the export itself, as sekha-mcp answers")
    check(ej.structuredContent["format"] == "json", ej.structuredContent)
    em = await call_ok(session, "memory_export", {"conversation_id": stale_id, "format": "markdown"})
    md = em.structuredContent["content"]
    check(md.lstrip().startswith("#") and f"Old lunch chat {label_suffix}" in md, md[:300])
    check("noodle place" in md and "noodle place" in text_of(em), "markdown has messages")

    # Stats count right.
    st = await call_ok(session, "memory_stats", {})
    check(st.structuredContent["total_conversations"] == 2, st.structuredContent)
    check(st.structuredContent["total_messages"] == 5, st.structuredContent)
    check(st.structuredContent["by_folder"] == {"/personal": 1, "/work/platform": 1},
          st.structuredContent)
    check("2 conversations" in text_of(st), text_of(st))
    sf = await call_ok(session, "memory_stats", {"folder": "/work"})
    check(sf.structuredContent["total_conversations"] == 1, sf.structuredContent)

    # Prune suggests the old unimportant conversation, not the recent one.
    pr = await call_ok(session, "memory_prune", {"threshold_days": 30, "importance_threshold": 5})
    sugg = {s["conversation_id"]: s for s in pr.structuredContent["suggestions"]}
    check(stale_id in sugg, f"prune suggestions {pr.structuredContent}")
    check(recent_id not in sugg, f"recent conversation suggested: {sugg.get(recent_id)}")
    check(sugg[stale_id]["recommendation"] in ("archive", "delete"), sugg[stale_id])
    check(stale_id in text_of(pr), text_of(pr))

    # Bad input: tool errors with clear messages; unknown tool: JSON-RPC error.
    await call_err(session, "memory_search", {}, "query")
    await call_err(session, "memory_search", {"query": "x", "limit": 500}, "limit")
    await call_err(session, "memory_search", {"query": "x", "limit": "ten"}, "invalid arguments")
    await call_err(session, "memory_prune", {"threshold_days": 0}, "threshold_days")
    await call_err(session, "memory_store", {"label": "x", "folder": "/a", "messages": []},
                   "messages")
    await call_err(session, "memory_get_context",
                   {"conversation_id": "00000000-0000-4000-8000-000000000000"}, "not found")
    await call_err(session, "memory_update", {"conversation_id": "not-a-uuid", "label": "y"},
                   "conversation_id")
    await call_err(session, "memory_export", {"conversation_id": recent_id, "format": "pdf"},
                   "format")
    try:
        await session.call_tool("memory_teleport", {})
        check(False, "unknown tool accepted")
    except McpError as e:
        check("unknown tool" in str(e), str(e))
    # The session still serves.
    st = await call_ok(session, "memory_stats", {})
    check(st.structuredContent["total_conversations"] == 2, "still serving")


async def readonly_session(url, key, recent_label):
    async with streamablehttp_client(url, headers={"Authorization": f"Bearer {key}"}) as (r, w, _):
        async with ClientSession(r, w) as s:
            await s.initialize()
            found = await call_ok(s, "memory_search", {"query": "lunch"})
            check(found.structuredContent["results"], "read-only key can search")
            r = await s.call_tool("memory_store", {
                "label": "nope", "folder": "/x", "messages": [{"role": "user", "content": "hi"}]})
            check(r.isError and "read-only" in text_of(r), text_of(r))
            st = await call_ok(s, "memory_stats", {})
            check(st.structuredContent["total_conversations"] == 2, "read-only store wrote nothing")


async def main():
    mode = sys.argv[1]
    if mode == "stdio":
        params = StdioServerParameters(command=sys.argv[2], args=sys.argv[3:],
                                       env=dict(os.environ))
        async with stdio_client(params) as (r, w):
            async with ClientSession(r, w) as s:
                await exercise(s, "stdio")
    elif mode == "http":
        url = sys.argv[2]
        key = os.environ["MEMDB_KEY"]
        async with streamablehttp_client(url, headers={"Authorization": f"Bearer {key}"}) as (r, w, sid):
            async with ClientSession(r, w) as s:
                await exercise(s, "http")
                check(sid() is not None, "streamable HTTP session id")
        await readonly_session(url, os.environ["MEMDB_RO_KEY"], "http")
    else:
        raise SystemExit(f"unknown mode {mode}")
    print(f"{CHECKS} checks passed")


if __name__ == "__main__":
    asyncio.run(main())
