"""End-to-end test of memdb-server's OpenAI-compatible proxy with the
official `openai` Python client.

The client is pointed at memdb-server's /v1 with a memdb API key; behind
it, memdb-server forwards to a local fake OpenAI-compatible upstream that
tests/suite/proxy.rs started (and whose received requests it checks after
this script). Here: the model list passes through; a non-streamed and a
streamed answer arrive unchanged with `sekha_metadata` citing the stored
conversation the context came from; `X-Memdb-Context: off` turns the
injection off; the exchanges are stored and searchable afterwards.
Run with MEMDB_URL and MEMDB_KEY set. Exits non-zero on failure.
"""

import os
import sys

import httpx
from openai import OpenAI

URL = os.environ["MEMDB_URL"]
KEY = os.environ["MEMDB_KEY"]

CHECKS = 0


def check(cond, what):
    global CHECKS
    if not cond:
        print(f"FAILED: {what}", file=sys.stderr)
        sys.exit(1)
    CHECKS += 1


def extra(model):
    return getattr(model, "model_extra", None) or {}


def main():
    client = OpenAI(base_url=f"{URL}/v1", api_key=KEY, max_retries=0)

    models = client.models.list()
    check([m.id for m in models.data] == ["fake-model"], f"models: {models}")

    # Non-streamed, after a system message of the client's own.
    raw = client.chat.completions.with_raw_response.create(
        model="fake-model",
        messages=[
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "When do we deploy the cluster?"},
        ],
    )
    check(int(raw.headers.get("x-memdb-context-count", "0")) >= 1, f"count header: {raw.headers}")
    r = raw.parse()
    check(r.choices[0].message.content == "The cluster deploys on Fridays.", f"answer: {r}")
    meta = extra(r).get("sekha_metadata")
    check(meta is not None, f"sekha_metadata missing: {r}")
    check(meta["injected"] is True and meta["context_count"] >= 1, f"metadata: {meta}")
    cited = [(c["folder"], c["label"]) for c in meta["context_used"]]
    check(("/work", "Deploy plan") in cited, f"citations: {cited}")
    check(all(c["timestamp"] and c["message_id"] for c in meta["context_used"]), f"citation fields: {meta}")
    first_id = meta["stored_conversation_id"]
    check(first_id, f"not stored: {meta}")

    # Streamed, into a folder of the request's choosing (sekha-proxy's body field).
    stream = client.chat.completions.create(
        model="fake-model",
        messages=[{"role": "user", "content": "Remind me: when is the cluster deployed, again? Which day?"}],
        stream=True,
        extra_body={"folder": "/chat/e2e"},
    )
    text, meta, chunks = "", None, 0
    for chunk in stream:
        chunks += 1
        if chunk.choices:
            text += chunk.choices[0].delta.content or ""
        if "sekha_metadata" in extra(chunk):
            meta = extra(chunk)["sekha_metadata"]
    check(text == "Fridays at ten, as agreed.", f"streamed text: {text!r}")
    check(chunks >= 5, f"chunks: {chunks}")
    check(meta is not None and meta["injected"] is True, f"stream metadata: {meta}")
    check(any(c["label"] == "Deploy plan" for c in meta["context_used"]), f"stream citations: {meta}")
    second_id = meta["stored_conversation_id"]
    check(second_id and second_id != first_id, f"stream not stored: {meta}")

    # Injection off for one request.
    r = client.chat.completions.create(
        model="fake-model",
        messages=[{"role": "user", "content": "Without memory: when do we deploy?"}],
        extra_headers={"X-Memdb-Context": "off"},
    )
    meta = extra(r)["sekha_metadata"]
    check(meta["injected"] is False and meta["context_used"] == [], f"off: {meta}")
    check(any("X-Memdb-Context" in n for n in meta["notes"]), f"off note: {meta}")

    # Stored and searchable.
    h = {"Authorization": f"Bearer {KEY}"}
    with httpx.Client(base_url=URL, headers=h, timeout=30) as http:
        conv = http.get(f"/api/v1/conversations/{first_id}").json()
        check(conv["label"] == "When do we deploy the cluster?", f"label: {conv}")
        check(conv["folder"] == "/auto-captured", f"folder: {conv}")
        roles = [m["role"] for m in conv["messages"]]
        check(roles == ["user", "assistant"], f"roles: {conv}")
        check(conv["messages"][1]["content"] == "The cluster deploys on Fridays.", f"answer stored: {conv}")
        check(conv["messages"][0]["metadata"].get("source") == "proxy", f"source: {conv}")
        conv = http.get(f"/api/v1/conversations/{second_id}").json()
        check(conv["label"] == "Remind me: when is the cluster deployed, again? Wh...", f"label: {conv}")
        check(conv["folder"] == "/chat/e2e", f"folder: {conv}")
        check(conv["messages"][1]["content"] == "Fridays at ten, as agreed.", f"stream stored: {conv}")
        fts = http.post("/api/v1/search/fts", json={"query": "agreed", "limit": 10}).json()
        check(second_id in [x["conversation_id"] for x in fts["results"]], f"fts: {fts}")
        q = http.post("/api/v1/query", json={"query": "cluster deploys fridays", "limit": 10}).json()
        check(first_id in [x["conversation_id"] for x in q["results"]], f"query: {q}")
        listed = http.get("/api/v1/conversations", params={"folder": "/auto-captured"}).json()
        check(listed["total"] == 2, f"auto-captured: {listed}")

    print(f"{CHECKS} checks passed")


if __name__ == "__main__":
    main()
