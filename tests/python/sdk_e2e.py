"""End-to-end test: Sekha's real clients against a running memdb-server.

Drives every method of sekha-python-sdk 0.2.0's SekhaClient and of its
unified MCPClient, every sekha-mcp 0.2.0 tool (through its own HTTP client)
and the two /mcp/tools/* routes sekha-mcp does not call itself, asserting
on results. (The unified SekhaClient's other parts talk to Sekha's LLM
bridge, which memdb does not replace.)
Run by tests/suite/server_e2e.rs with MEMDB_URL, MEMDB_KEY,
CONTROLLER_URL and CONTROLLER_API_KEY set. Exits non-zero on failure.
"""

import asyncio
import json
import os
import sys
import uuid
from datetime import datetime, timedelta, timezone

import httpx

URL = os.environ["MEMDB_URL"]
KEY = os.environ["MEMDB_KEY"]

from sekha.client import SekhaClient  # noqa: E402
from sekha.errors import SekhaError, SekhaNotFoundError  # noqa: E402
from sekha.models import NewConversation, MessageDto  # noqa: E402
from sekha.types import ClientConfig  # noqa: E402
from sekha.unified import MCPClient  # noqa: E402

from sekha_mcp.tools import (  # noqa: E402
    memory_export_tool,
    memory_get_context_tool,
    memory_prune_tool,
    memory_search_tool,
    memory_stats_tool,
    memory_store_tool,
    memory_update_tool,
)

CHECKS = 0


def check(cond, what):
    global CHECKS
    CHECKS += 1
    if not cond:
        raise AssertionError(what)


def text_of(result):
    check(isinstance(result, list) and len(result) == 1, f"tool result shape: {result!r}")
    return result[0].text


async def sdk(c: SekhaClient):
    # -- create (TypedDict body and pydantic body) --
    rust = await c.create_conversation(
        {
            "label": "Rust ownership",
            "folder": "/work/rust",
            "messages": [
                {"role": "user", "content": "How does the borrow checker treat lifetimes?"},
                {"role": "assistant", "content": "Lifetimes name how long references stay valid."},
            ],
        }
    )
    rid = rust["id"]
    check(rust["conversation_id"] == rid and rust["label"] == "Rust ownership", f"create: {rust}")
    check(rust["message_count"] == 2, f"message_count: {rust}")
    bread = await c.create_conversation(
        NewConversation(
            label="Sourdough",
            folder="/home/cooking",
            importance_score=3,
            messages=[MessageDto(role="user", content="Feeding a sourdough starter twice daily")],
        )
    )
    bid = bread["id"]
    check(bread["importance_score"] == 3, f"importance: {bread}")

    # -- get, list, count --
    got = await c.get_conversation(rid)
    check(got["label"] == "Rust ownership" and len(got["messages"]) == 2, f"get: {got}")
    try:
        await c.get_conversation(str(uuid.uuid4()))
        check(False, "unknown id must raise")
    except SekhaNotFoundError:
        pass
    listed = await c.list_conversations(page_size=10)
    check(listed["total"] == 2 and len(listed["results"]) == 2, f"list: {listed}")
    check((await c.list_conversations(folder="/work"))["total"] == 1, "list by folder")
    check(await c.count_conversations() == 2, "count")
    check(await c.count_conversations(label="Sourdough") == 1, "count by label")
    check(await c.count_conversations(folder="/home") == 1, "count by folder")

    # -- label, folder, pin, archive show up in get/list/count --
    await c.update_label(rid, "Rust lifetimes", "/work/rust")
    await c.update_folder(rid, "/work/systems")
    got = await c.get_conversation(rid)
    check(got["label"] == "Rust lifetimes", f"folder update kept the label: {got}")
    check(got["folder"] == "/work/systems", f"folder: {got}")
    check(await c.count_conversations(folder="/work/systems") == 1, "count after move")
    check(await c.count_conversations(folder="/work/rust") == 0, "old folder empty")
    await c.pin_conversation(rid)
    check((await c.get_conversation(rid))["pinned"] is True, "pinned")
    pinned = await c.list_conversations(pinned=True)
    check([x["id"] for x in pinned["results"]] == [rid], f"list pinned: {pinned}")
    await c.archive_conversation(bid)
    check((await c.get_conversation(bid))["status"] == "archived", "archived")
    archived = await c.list_conversations(archived=True)
    check([x["id"] for x in archived["results"]] == [bid], f"list archived: {archived}")
    check((await c.list_conversations(archived=False))["total"] == 1, "list active")

    # -- query and full-text search find the stored conversation --
    q = await c.query("borrow checker lifetimes", limit=5)
    check(q["results"] and q["results"][0]["conversation_id"] == rid, f"query: {q}")
    scores = [r["score"] for r in q["results"]]
    check(scores == sorted(scores, reverse=True), f"scores descend (higher is better): {scores}")
    q = await c.smart_query("sourdough", limit=5, filters={"folder": "/home"})
    check([r["conversation_id"] for r in q["results"]] == [bid], f"smart_query filtered: {q}")
    # The folder filter excludes the cooking conversation. (With the local
    # model, the server's default, hybrid search may still return /work's
    # nearest messages by meaning; none may come from another folder.)
    q = await c.query("sourdough", filters={"folder": "/work"})
    check(all(r["folder"].startswith("/work") for r in q["results"])
          and bid not in [r["conversation_id"] for r in q["results"]], f"filter excludes: {q}")
    fts = await c.full_text_search("sourdough OR lifetimes", limit=10)
    check(fts["total"] == 3, f"fts: {fts}")
    check({r["conversation_id"] for r in fts["results"]} == {rid, bid}, "fts ids")
    await c.rebuild_embeddings()

    # -- export round trip --
    md = await c.export(label="Rust lifetimes")
    check(md.startswith("# Rust lifetimes"), f"markdown export: {md[:80]!r}")
    doc = json.loads(await c.export(folder="/work", format="json"))
    check([x["id"] for x in doc["conversations"]] == [rid], f"json export: {doc}")
    check(len(doc["conversations"][0]["messages"]) == 2, "export messages")

    # -- MCP tool list --
    tools = await c.get_mcp_tools()
    names = [t["name"] for t in tools]
    check(names == ["memory_store", "memory_search", "memory_update", "memory_get_context",
                    "memory_prune", "memory_export", "memory_stats"], f"tools: {names}")

    await orchestration(c, rid, bid)

    # -- delete --
    await c.delete_conversation(bid)
    check(await c.count_conversations() == 2, "count after delete")
    try:
        await c.delete_conversation(bid)
        check(False, "deleting twice must raise")
    except SekhaNotFoundError:
        pass
    return rid


async def orchestration(c: SekhaClient, rid: str, bid: str) -> str:
    """Context, summaries, pruning, labels, scoring (engine orchestration)."""
    budget = 2000
    ctx = await c.assemble_context(
        "borrow checker lifetimes", preferred_labels=["Rust lifetimes"], context_budget=budget
    )
    check(rid in ctx["conversation_ids"], f"context recalls the conversation: {ctx}")
    check(0 < ctx["token_count"] <= int(budget * 0.85), f"within budget: {ctx['token_count']}")
    cited = [m for m in ctx["messages"] if m["conversation_id"] == rid]
    check(cited and cited[0]["metadata"]["citation"]["label"] == "Rust lifetimes", f"citation: {cited}")
    check(cited[0]["metadata"]["citation"]["folder"] == "/work/systems", "citation folder")
    check("Rust lifetimes" in ctx["labels"], "labels")
    ids = [m["id"] for m in ctx["messages"]]
    check(len(ids) == len(set(ids)), "context is de-duplicated")

    daily = await c.summarize(rid, level="daily")
    check(daily["level"] == "daily" and daily["summary"] and daily["persisted"], f"daily: {daily}")
    check(daily["conversation_id"] == rid and daily["token_count"] > 0, "daily fields")
    weekly = await c.generate_summary(rid, level="weekly")
    check(weekly["level"] == "weekly" and weekly["persisted"] and weekly["source_count"] >= 1, f"weekly: {weekly}")
    try:
        await c.summarize(rid, level="hourly")
        check(False, "unknown level must fail")
    except SekhaError:
        pass

    # Crafted ages and importances: 200 days idle with importance 2.
    old_time = (datetime.now(timezone.utc) - timedelta(days=200)).isoformat()
    old = (await c.create_conversation({
        "label": "Old scratch notes",
        "folder": "/scratch",
        "importance_score": 2,
        "messages": [{"role": "user", "content": "temporary scratch note about nothing", "timestamp": old_time}],
    }))["id"]
    report = await c.prune_dry_run(threshold_days=90)
    by_id = {x["conversation_id"]: x for x in report["suggestions"]}
    check(old in by_id, f"old conversation suggested: {report}")
    check(by_id[old]["recommendation"] in ("archive", "delete"), f"recommendation: {by_id[old]}")
    check(by_id[old]["days_since_access"] >= 199, f"age: {by_id[old]}")
    check(rid not in by_id or by_id[rid]["recommendation"] == "keep", f"pinned recent kept: {by_id.get(rid)}")
    check(report["estimated_token_savings"] >= by_id[old]["token_estimate"] > 0, "savings")
    # threshold_days=0 (the SDK sends it for "everything older than now"):
    # accepted, and every conversation counts as old.
    everything = await c.prune_dry_run(threshold_days=0)
    every_id = {x["conversation_id"] for x in everything["suggestions"]}
    check(old in every_id and len(every_id) >= len(by_id), f"threshold 0: {everything}")
    alias = await c.get_pruning_suggestions(threshold_days=90)
    check([x["conversation_id"] for x in alias["suggestions"]] == [x["conversation_id"] for x in report["suggestions"]], "alias")
    await c.prune_execute([old])
    check((await c.get_conversation(old))["status"] == "archived", "prune_execute archives")

    labels = await c.suggest_labels(rid)
    check(labels["conversation_id"] == rid and labels["suggestions"], f"labels: {labels}")
    check(all(0.0 <= x["confidence"] <= 1.0 for x in labels["suggestions"]), "confidence range")
    applied = await c.auto_label(old, threshold=0.0)
    check(applied and (await c.get_conversation(old))["label"] == applied, f"auto_label: {applied}")

    first = (await c.get_conversation(rid))["messages"][0]["id"]
    score = await c.score_message_importance(first)
    check(score["message_id"] == first and 1.0 <= score["importance_score"] <= 10.0, f"score: {score}")
    check(isinstance(score["factors"], dict) and score["reasoning"], "score factors")
    return old


async def mcp(rid: str):
    out = text_of(await memory_store_tool({
        "label": "Kyoto trip",
        "folder": "/personal/travel",
        "importance_score": 8.0,
        "messages": [
            {"role": "user", "content": "Plan three days in Kyoto with temples"},
            {"role": "assistant", "content": "Day one: Fushimi Inari at dawn."},
        ],
    }))
    check(out.startswith("✅"), f"memory_store: {out}")
    kid = out.split("ID: ")[1].split("\n")[0].strip()
    uuid.UUID(kid)
    check("Messages: 2" in out, out)

    out = text_of(await memory_search_tool({"query": "Kyoto temples", "limit": 5}))
    # Keyword search finds one conversation; hybrid (the default server has
    # the local model) may add neighbours by meaning, ranked after it.
    check("relevant conversation" in out and kid in out
          and out.split("1. **", 1)[-1].startswith("Kyoto trip"), f"memory_search: {out}")
    out = text_of(await memory_search_tool({"query": "Kyoto", "filter_labels": ["Nope"]}))
    check("No matching conversations" in out, f"memory_search filtered: {out}")

    out = text_of(await memory_update_tool({"conversation_id": kid, "label": "Kyoto 2027", "importance_score": 9}))
    check("Fields changed: label, importance_score" in out, f"memory_update: {out}")

    out = text_of(await memory_get_context_tool({"conversation_id": kid}))
    check("Kyoto 2027" in out and "/personal/travel" in out and "Messages: 2" in out, f"memory_get_context: {out}")
    check("**USER**: Plan three days in Kyoto" in out, out)

    out = text_of(await memory_export_tool({"conversation_id": kid, "format": "markdown"}))
    check(out.startswith("# Kyoto 2027") and "### 2. Assistant" in out, f"memory_export md: {out}")
    doc = json.loads(text_of(await memory_export_tool({"conversation_id": kid, "format": "json"})))
    check(doc["conversation_id"] == kid and len(doc["messages"]) == 2, f"memory_export json: {doc}")
    check(doc["metadata"]["word_count"] > 0, "export metadata")

    out = text_of(await memory_stats_tool({}))
    check("Total Conversations: 3" in out and "/personal/travel" in out, f"memory_stats: {out}")
    out = text_of(await memory_stats_tool({"folder": "/personal"}))
    check("Total Conversations: 1" in out, f"memory_stats folder: {out}")

    out = text_of(await memory_prune_tool({"threshold_days": 30, "importance_threshold": 9.5}))
    # Kyoto (importance 9 < 9.5, fresh) is flagged by the importance rule.
    check(out.startswith("🗑") and "Kyoto 2027" in out and "Reason:" in out, f"memory_prune: {out}")

    # The two tool routes sekha-mcp does not call itself.
    headers = {"Authorization": f"Bearer {KEY}"}
    async with httpx.AsyncClient(base_url=URL, headers=headers) as h:
        r = await h.post("/mcp/tools/memory_export", json={"conversation_id": kid, "format": "json"})
        check(r.status_code == 200, r.text)
        env = r.json()
        check(env["success"] is True and env["error"] is None, f"export envelope: {env}")
        check(json.loads(env["data"]["content"])["conversation_id"] == kid, "export content")
        r = await h.post("/mcp/tools/memory_stats", json={"folder": "/work"})
        env = r.json()
        check(env["success"] and env["data"]["total_conversations"] == 1, f"stats envelope: {env}")
        r = await h.post("/mcp/tools/memory_get_context", json={"conversation_id": str(uuid.uuid4())})
        check(r.status_code == 404 and r.json()["success"] is False, f"unknown id: {r.text}")
        r = await h.post("/mcp/tools/memory_store", json={"label": "x"}, headers={"Authorization": "Bearer wrong"})
        check(r.status_code == 401 and "error" in r.json(), f"bad key: {r.text}")

    # The SDK's unified MCPClient (/mcp/memory/*).
    async with MCPClient(URL, KEY) as m:
        st = await m.memory_stats({})
        check(st["total_conversations"] == 3, f"MCPClient.memory_stats: {st}")
        st = await m.memory_stats({"folders": ["/personal"]})
        check(st["total_conversations"] == 1, f"MCPClient.memory_stats folders: {st}")
        res = await m.memory_search("Kyoto temples", limit=5)
        check(res["results"] and res["results"][0]["label"] == "Kyoto 2027", f"MCPClient.memory_search: {res}")
        check(res["results"][0]["score"] > 0, "score")
        res = await m.memory_search("Kyoto", filters={"labels": ["Nope"]})
        check(res["results"] == [], f"MCPClient.memory_search filtered: {res}")


async def main():
    config = ClientConfig(api_key=KEY, base_url=URL)
    async with SekhaClient(config) as c:
        rid = await sdk(c)
    await mcp(rid)
    print(f"sdk_e2e: {CHECKS} checks passed")


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except Exception as e:  # report and fail
        import traceback

        traceback.print_exc()
        print(f"sdk_e2e FAILED after {CHECKS} checks: {e}", file=sys.stderr)
        sys.exit(1)
