"""memdb's Memorg tools driven by the official MCP Python SDK (PyPI `mcp`).

Usage:
  memorg_mcp_e2e.py stdio COMMAND [ARGS...]   spawn COMMAND (`memdb mcp --tools memorg ...`)
  memorg_mcp_e2e.py http URL                  connect with MEMDB_KEY (read-write) and
                                              MEMDB_RO_KEY (read-only)

Lists the tools (exactly Memorg's set), calls every one of them with
assertions on the structured content, checks that bad calls (unknown topic,
empty message, bad scope, over-long input, unknown argument) are tool errors
that write nothing, and over HTTP that a read-only key may call only the read
tools. Prints "checks passed" at the end.
"""

import asyncio
import os
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamablehttp_client

MEMORG_TOOLS = {
    "create_session", "start_conversation", "create_topic", "add_exchange", "search_context",
    "get_memory_usage", "optimize_context", "get_session", "create_memory_item",
    "get_memory_item", "update_memory_item", "delete_memory_item", "add_memory_tags",
    "remove_memory_tags", "search_memory", "get_item_context",
}
READS = {"search_context", "get_memory_usage", "optimize_context", "get_session",
         "get_memory_item", "search_memory", "get_item_context"}

CHECKS = 0


def check(cond, what):
    global CHECKS
    if not cond:
        raise AssertionError(what)
    CHECKS += 1


def is_error(r):
    return getattr(r, "isError", None) or getattr(r, "is_error", False)


def data(r):
    d = getattr(r, "structuredContent", None)
    return d if d is not None else getattr(r, "structured_content", None)


def text(r):
    return " ".join(getattr(c, "text", "") for c in r.content)


async def ok(s, tool, args):
    r = await s.call_tool(tool, args)
    check(not is_error(r), f"{tool}({args}) failed: {text(r)}")
    return data(r)


async def err(s, tool, args, needle):
    r = await s.call_tool(tool, args)
    check(is_error(r), f"{tool}({args}) should fail, got {text(r)[:200]}")
    check(needle in text(r), f"{tool}: {needle!r} not in {text(r)!r}")


async def exercise(s):
    await s.initialize()
    tools = {t.name: t for t in (await s.list_tools()).tools}
    check(set(tools) == MEMORG_TOOLS, f"tools {sorted(tools)}")
    for name, t in tools.items():
        schema = getattr(t, "inputSchema", None) or getattr(t, "input_schema", None)
        check(schema and schema.get("type") == "object", f"{name} schema")
        ann = t.annotations
        ro = getattr(ann, "readOnlyHint", None)
        if ro is None:
            ro = getattr(ann, "read_only_hint", None)
        check(ro == (name in READS), f"{name} readOnlyHint {ro}")

    sess = await ok(s, "create_session", {"user_id": "alice", "config": {"model": "m"}})
    check(sess["user_id"] == "alice" and sess["system_config"] == {"model": "m"}, str(sess))
    check(sess["created_at"].endswith("+00:00"), sess["created_at"])
    conv = await ok(s, "start_conversation", {"session_id": sess["session_id"]})
    check(conv["title"] == "" and conv["summary"] == "", str(conv))
    db = await ok(s, "create_topic", {"conversation_id": conv["conversation_id"],
                                       "title": "databases"})
    tr = await ok(s, "create_topic", {"conversation_id": conv["conversation_id"],
                                       "title": "travel", "summary": "trips"})
    vac = await ok(s, "add_exchange", {"topic_id": db["topic_id"],
                                        "user_message": "How do I tune Postgres autovacuum?",
                                        "system_message": "Lower the scale factor."})
    check(vac["importance_score"] > 0, str(vac))
    await ok(s, "add_exchange", {"topic_id": tr["topic_id"],
                                  "user_message": "What should I see in Lisbon?",
                                  "system_message": "Alfama and Belem."})
    found = await ok(s, "search_context", {"query": "postgres autovacuum"})
    check(found["results"][0]["id"] == vac["exchange_id"], str(found)[:300])
    check(found["results"][0]["score"] > 0, "scores are real")
    check(found["results"][0]["type"] in {"keyword", "semantic", "temporal", "hybrid",
                                          "importance"}, str(found["results"][0]))
    scoped = await ok(s, "search_context", {"query": "postgres lisbon", "scope": "topic",
                                             "scope_id": tr["topic_id"]})
    check(all(h["topic_id"] == tr["topic_id"] for h in scoped["results"]), "topic scope")
    tree = await ok(s, "get_session", {"session_id": sess["session_id"]})
    topics = tree["conversations"][0]["topics"]
    check([t["title"] for t in topics] == ["databases", "travel"], str(topics))
    check(len(topics[0]["exchanges"]) == 1, "exchanges by query")
    usage = await ok(s, "get_memory_usage", {})
    check(usage["active_items"] == 6 and usage["vector_count"] == 2, str(usage))
    opt = await ok(s, "optimize_context", {"content": "word " * 500, "max_tokens": 20})
    check(opt["optimized_tokens"] <= 20 and opt["original_length"] == 2500, str(opt)[:200])

    note = await ok(s, "create_memory_item", {"content": "Alice likes window seats",
                                               "item_type": "note", "parent_id": sess["session_id"],
                                               "metadata": {"category": "travel"},
                                               "tags": ["prefs"]})
    check(note["type"] == "custom" and note["custom_type"] == "note", str(note))
    check((await ok(s, "get_memory_item", {"item_id": note["id"]}))["content"]
          == "Alice likes window seats", "get item")
    tagged = await ok(s, "add_memory_tags", {"item_id": note["id"], "tags": ["seat"]})
    check(tagged["tags"] == ["prefs", "seat"], str(tagged))
    tagged = await ok(s, "remove_memory_tags", {"item_id": note["id"], "tags": ["prefs"]})
    check(tagged["tags"] == ["seat"], str(tagged))
    upd = await ok(s, "update_memory_item", {"item_id": note["id"], "importance_score": 0.9})
    check(upd["importance_score"] > 0.89, str(upd))
    hits = await ok(s, "search_memory", {"query": "window seats",
                                          "filters": {"category": {"$in": ["travel"]}}})
    check([h["item"]["id"] for h in hits["results"]] == [note["id"]], str(hits)[:300])
    none = await ok(s, "search_memory", {"query": "window seats",
                                          "filters": {"category": "food"}})
    check(none["results"] == [], "metadata filter excludes")
    ctx = await ok(s, "get_item_context", {"item_id": note["id"], "include_siblings": True})
    check(ctx["ancestors"][0]["id"] == sess["session_id"], str(ctx)[:300])
    check(any(x["id"] == conv["conversation_id"] for x in ctx["siblings"]), "siblings")

    before = (await ok(s, "get_memory_usage", {}))["active_items"]
    await err(s, "add_exchange", {"topic_id": "00000000-0000-0000-0000-000000000000",
                                  "user_message": "x", "system_message": "y"}, "not found")
    await err(s, "add_exchange", {"topic_id": db["topic_id"], "user_message": "   ",
                                  "system_message": "y"}, "user_message")
    await err(s, "search_context", {"query": "x", "scope": "BOGUS"}, "scope")
    await err(s, "search_context", {"query": "x" * 100_000}, "query")
    await err(s, "search_context", {"query": "x", "scope_Id": "y"}, "unknown field")
    await err(s, "create_topic", {"conversation_id": db["topic_id"], "title": "t"}, "not found")
    check((await ok(s, "get_memory_usage", {}))["active_items"] == before, "bad calls wrote nothing")
    deleted = await ok(s, "delete_memory_item", {"item_id": note["id"]})
    check(deleted == {"deleted": True, "removed": 1}, str(deleted))
    return sess


async def readonly(url, key):
    async with streamablehttp_client(url, headers={"Authorization": f"Bearer {key}"}) as (r, w, _):
        async with ClientSession(r, w) as s:
            await s.initialize()
            usage = await ok(s, "get_memory_usage", {})
            check(usage["active_items"] == 6, str(usage))
            await err(s, "create_session", {"user_id": "mallory"}, "read-only")
            check((await ok(s, "get_memory_usage", {}))["active_items"] == 6, "nothing written")


async def main():
    mode = sys.argv[1]
    if mode == "stdio":
        params = StdioServerParameters(command=sys.argv[2], args=sys.argv[3:],
                                       env=dict(os.environ))
        async with stdio_client(params) as (r, w):
            async with ClientSession(r, w) as s:
                await exercise(s)
    elif mode == "http":
        url = sys.argv[2]
        headers = {"Authorization": f"Bearer {os.environ['MEMDB_KEY']}"}
        async with streamablehttp_client(url, headers=headers) as (r, w, _):
            async with ClientSession(r, w) as s:
                await exercise(s)
        await readonly(url, os.environ["MEMDB_RO_KEY"])
    else:
        raise SystemExit(f"unknown mode {mode}")
    print(f"{CHECKS} checks passed")


if __name__ == "__main__":
    asyncio.run(main())
