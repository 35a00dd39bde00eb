"""Tests of the memdb Python package against the real engine (built by
pip from the checkout): Sekha, KuraDB and vectors through the typed API,
the error classes, the GIL released across threads, progress callbacks,
and the real local embedding model (installed by scripts/install-model.sh).

Run: scripts/test-python.sh (part of scripts/test.sh), which runs them
with pytest.
"""

import os
import tempfile
import threading
import time
import unittest
import uuid
from datetime import datetime, timedelta, timezone

import memdb
from memdb import types


class Store(unittest.TestCase):
    embedder = "hashing"

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.db = memdb.open(os.path.join(self.tmp.name, "store"), embedder=self.embedder)

    def tearDown(self):
        self.db.close()
        self.tmp.cleanup()


class SekhaTests(Store):
    def test_create_get_list_update_delete(self):
        s = self.db.sekha
        ts = datetime(2026, 3, 1, 9, 30, tzinfo=timezone.utc)
        c = s.create_conversation(
            "Rust",
            [("user", "How do lifetimes work?", ts), {"role": "assistant", "content": "Scopes."}],
            folder="/work/rust",
            importance=7,
            metadata={"source": "test"},
        )
        self.assertIsInstance(c.id, uuid.UUID)
        self.assertIsInstance(c.conversation.created_at, datetime)
        self.assertEqual(c.conversation.created_at.tzinfo, timezone.utc)
        self.assertEqual([m.role for m in c.messages], ["user", "assistant"])
        self.assertEqual(c.messages[0].timestamp, ts)
        self.assertEqual(c.messages[0].text, "How do lifetimes work?")
        self.assertEqual(c.conversation.metadata, {"source": "test"})

        got = s.get(c.id)
        self.assertEqual(got, c.conversation)
        self.assertIn("Conversation(", repr(got))
        added = s.append(str(c.id), [("user", "Thanks!")])
        self.assertEqual(added[0].conversation_id, c.id)
        self.assertEqual(len(s.get_with_messages(c.id).messages), 3)
        self.assertEqual(s.get_message(added[0].id).text, "Thanks!")

        s.create_conversation("Cooking", [("user", "Paella rice")], folder="/home")
        page = s.list(folder="/work")
        self.assertEqual(page.total, 1)
        self.assertEqual(page.conversations[0].label, "Rust")
        self.assertEqual(s.count(), 2)
        self.assertEqual(s.count(folder="/home"), 1)

        u = s.update(c.id, label="Rust ownership")
        self.assertEqual(u.label, "Rust ownership")
        self.assertEqual(u.folder, "/work/rust")
        self.assertTrue(s.pin(c.id).pinned)
        self.assertEqual(s.archive(c.id).status, "archived")
        self.assertEqual(s.count(status="archived"), 1)
        stats = s.stats()
        self.assertEqual(stats.total_conversations, 2)
        self.assertEqual(stats.total_messages, 4)

        self.assertEqual(s.delete(c.id), 3)
        with self.assertRaises(memdb.NotFound) as e:
            s.get(c.id)
        self.assertEqual(e.exception.what, "conversation")
        self.assertEqual(e.exception.id, str(c.id))

    def test_bulk_create_is_all_or_nothing(self):
        ids = self.db.sekha.create_conversations(
            [
                {"label": f"bulk {i}", "messages": [("user", f"bulk message {i}")], "folder": "/bulk", "importance": 3}
                for i in range(50)
            ]
        )
        self.assertEqual(len(ids), 50)
        self.assertTrue(all(isinstance(i, uuid.UUID) for i in ids))
        self.assertEqual(self.db.sekha.get(ids[7]).label, "bulk 7")
        self.assertEqual(self.db.sekha.get(ids[7]).importance_score, 3)
        before = self.db.sekha.count()
        with self.assertRaises(memdb.InvalidInput) as e:
            self.db.sekha.create_conversations(
                [{"label": "fine", "messages": [("user", "ok")]}, {"label": "bad", "messages": [("user", "")]}]
            )
        self.assertTrue(e.exception.field.startswith("conversations[1]"), e.exception.field)
        self.assertEqual(self.db.sekha.count(), before)

    def test_search_modes_and_filters(self):
        s = self.db.sekha
        s.create_conversation("Trips", [("user", "Lisbon in March, book the flights")], folder="/home")
        s.create_conversation("Work", [("user", "The quarterly report is due Friday")], folder="/work")
        kw = s.search("Lisbon", mode="keyword")
        self.assertEqual(kw.mode, "keyword")
        self.assertEqual([h.label for h in kw.hits], ["Trips"])
        self.assertIsInstance(kw.hits[0].message.id, uuid.UUID)
        self.assertGreater(kw.hits[0].score, 0)
        hy = s.search("Lisbon flights", mode="hybrid", explain=True)
        self.assertEqual(hy.hits[0].label, "Trips")
        self.assertIsNotNone(hy.hits[0].explain)
        self.assertEqual(s.search("report", mode="keyword", folder="/home").hits, [])
        self.assertEqual(len(s.search("report", mode="keyword", folder="/work").hits), 1)

    def test_context_export_import_summary_prune(self):
        s = self.db.sekha
        c = s.create_conversation(
            "Trips",
            [("user", "Lisbon in March"), ("assistant", "Book the flights early.")],
        )
        ctx = s.context("Lisbon", budget=500)
        self.assertLessEqual(ctx.token_count, 500)
        self.assertIn(c.id, ctx.conversation_ids)
        self.assertTrue(any("Lisbon" in str(m.content) for m in ctx.messages))

        data = s.export(c.id)
        md = s.export(format="markdown")
        self.assertIn("Lisbon", md)
        other = memdb.open(os.path.join(self.tmp.name, "copy"), embedder="none")
        try:
            report = other.sekha.import_export(data)
            self.assertEqual(report.imported, 1)
            copied = other.sekha.get_with_messages(c.id)
            self.assertEqual([m.text for m in copied.messages], [m.text for m in c.messages])
            again = other.sekha.import_export(data, skip_existing=True)
            self.assertEqual(again.imported, 0)
            self.assertEqual(again.skipped, 1)
        finally:
            other.close()

        summary = s.summarize(c.id, "daily")
        self.assertEqual(summary.conversation_id, c.id)
        self.assertTrue(summary.summary)
        report = s.prune([c.id], "archive")
        self.assertEqual(s.get(c.id).status, "archived")
        self.assertIsInstance(report, types.Record)

    def test_namespaces_are_separate(self):
        a = self.db.namespace("tenant-a")
        a.sekha.create_conversation("Secret", [("user", "only for tenant a")])
        self.assertEqual(a.namespace_name, "tenant-a")
        self.assertEqual(a.sekha.count(), 1)
        self.assertEqual(self.db.sekha.count(), 0)
        self.assertEqual(self.db.sekha.search("tenant", mode="keyword").hits, [])


class MemorgTests(Store):
    def test_hierarchy_and_search_context(self):
        m = self.db.memorg
        session = m.create_session("alice", {"model": "gpt"}, {"team": "a"})
        self.assertIsInstance(session.id, uuid.UUID)
        self.assertEqual(session.system_config, {"model": "gpt"})
        self.assertEqual(session.metadata, {"team": "a"})
        conv = m.start_conversation(session.id, "Holidays")
        topic = m.create_topic(conv.id, "Lisbon trip")
        ex = m.add_exchange(topic.id, "Which district in Lisbon for food?", "Try Alfama and Bairro Alto.")
        self.assertEqual(ex.topic_id, topic.id)
        self.assertEqual(ex.user_message.raw_content, "Which district in Lisbon for food?")
        self.assertIsInstance(ex.created_at, datetime)
        m.add_exchange(topic.id, "And the weather in March?", "Mild, some rain.")
        self.assertEqual(len(m.topic_exchanges(topic.id)), 2)
        self.assertEqual([s.id for s in m.sessions("alice")], [session.id])
        self.assertEqual(m.sessions("bob"), [])
        found = m.search_context("Lisbon food district")
        self.assertGreater(len(found.results), 0)
        self.assertEqual(found.results[0].exchange.id, ex.id)
        self.assertGreater(m.memory_usage().total_tokens, 0)
        with self.assertRaises(memdb.InvalidInput) as e:
            m.add_exchange(topic.id, "  ", "x")
        self.assertEqual(e.exception.field, "user_message")
        self.assertGreaterEqual(m.delete(session.id), 5)
        with self.assertRaises(memdb.NotFound):
            m.start_conversation(session.id)

    def test_memory_items_tags_and_filters(self):
        m = self.db.memorg
        parent = m.create_memory_item("Project Apollo", "project", tags=["work"])
        task = m.create_memory_item(
            "Write the launch checklist",
            "task",
            parent_id=parent.id,
            metadata={"priority": "high"},
            tags=["work", "urgent"],
        )
        m.create_memory_item("Buy a birthday cake", "task", tags=["home"])
        self.assertEqual(task.parent_id, parent.id)
        self.assertEqual(task.metadata, {"priority": "high"})
        hits = m.search_memory("checklist", tags=["urgent"])
        self.assertEqual([h.item.id for h in hits], [task.id])
        self.assertEqual(m.search_memory("cake", tags=["work"]), [])
        self.assertEqual(
            [h.item.id for h in m.search_memory("launch", filters={"priority": "high"})], [task.id]
        )
        self.assertEqual(sorted(m.add_tags(task.id, ["q3"]).tags), ["q3", "urgent", "work"])
        self.assertEqual(sorted(m.remove_tags(task.id, ["urgent"]).tags), ["q3", "work"])
        updated = m.update_memory_item(task.id, content="Write and review the launch checklist")
        self.assertEqual(updated.content, "Write and review the launch checklist")
        ctx = m.item_context(task.id, depth=1)
        self.assertEqual([a.id for a in ctx.ancestors], [parent.id])


class MemorgDropInTests(unittest.TestCase):
    """PyPI memorg 0.1.2's own example (`app/main.py`'s `main()`), with its
    imports changed to memdb.memorg and nothing else."""

    def test_memorg_main_example_runs_unchanged(self):
        import asyncio

        from memdb.memorg import (
            Exchange,
            MemoryItem,
            MemorgSystem,
            SearchScope,
            Session,
            SQLiteStorageAdapter,
            USearchVectorStore,
        )

        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "memorg.db")

            async def main():
                system = MemorgSystem(
                    storage=SQLiteStorageAdapter(path),
                    vector_store=USearchVectorStore(path),
                    openai_client=None,
                )
                try:
                    session = await system.create_session("user123", {"max_tokens": 4096})
                    self.assertIsInstance(session, Session)
                    self.assertEqual(session.system_config, {"max_tokens": 4096})
                    conversation = await system.start_conversation(session.id)
                    topic = await system.context_store.create_topic(conversation.id, "Initial Discussion")
                    self.assertEqual(topic.title, "Initial Discussion")
                    exchange = await system.add_exchange(
                        topic.id,
                        "Hello, how can you help me with my Python project?",
                        "I'm here to assist you with any questions or tasks you have.",
                    )
                    self.assertIsInstance(exchange, Exchange)
                    self.assertEqual(
                        exchange.user_message.raw_content,
                        "Hello, how can you help me with my Python project?",
                    )
                    results = await system.search_context("Python project", scope=SearchScope.ALL)
                    self.assertEqual(results[0].entity.id, exchange.id)
                    usage = await system.get_memory_usage()
                    self.assertGreater(usage["total_tokens"], 0)
                    item = await system.create_memory_item(
                        "Remember to write tests", "task", tags=["dev"]
                    )
                    self.assertIsInstance(item, MemoryItem)
                    # As memorg does: "task" is no MemoryType, so the item is
                    # CUSTOM with its type name in metadata.
                    self.assertEqual(item.type.value, "custom")
                    self.assertEqual(item.metadata["custom_type"], "task")
                    found = await system.search_memory("tests", tags=["dev"])
                    self.assertEqual([r.item.id for r in found], [item.id])
                    ctx = await system.get_item_context(item.id)
                    self.assertEqual(ctx[0].id, item.id)
                finally:
                    system.close()

            asyncio.run(main())
            # The data lives in a memdb directory beside the SQLite path.
            self.assertTrue(os.path.isdir(os.path.join(tmp, "memorg.memdb")))
            self.assertFalse(os.path.exists(path))


# memorg 0.1.2's README, "Library Usage", verbatim but for the imports and
# the model configuration (memdb needs no OpenAI client).
MEMORG_README_LIBRARY_USAGE = '''
from memdb.memorg import MemorgSystem
from memdb.memorg import SQLiteStorageAdapter
from memdb.memorg import USearchVectorStore
AsyncOpenAI = lambda: None

async def setup_memorg():
    # Initialize components
    storage = SQLiteStorageAdapter("memorg.db")
    vector_store = USearchVectorStore("memorg.db")
    openai_client = AsyncOpenAI()

    # Create system instance
    system = MemorgSystem(storage, vector_store, openai_client)

    # Create a session with token budget
    session = await system.create_session("user123", {"max_tokens": 4096})

    # Start a conversation
    conversation = await system.start_conversation(session.id)

    # Create a topic
    topic = await system.context_store.create_topic(conversation.id, "Project Discussion")

    # Add an exchange (interaction)
    exchange = await system.add_exchange(
        topic.id,
        "What are the key features?",
        "The system provides hierarchical storage, intelligent context management, and efficient retrieval."
    )

    # Search through context
    results = await system.search_context("key features")

    # Monitor memory usage
    memory_usage = await system.get_memory_usage()
    return system, session, conversation, topic

# Generic Memory Usage (for non-chat workflows)
async def document_analysis_workflow():
    # Initialize the same way as above
    storage = SQLiteStorageAdapter("memorg.db")
    vector_store = USearchVectorStore("memorg.db")
    openai_client = AsyncOpenAI()
    system = MemorgSystem(storage, vector_store, openai_client)

    # Create a session for document analysis
    session = await system.create_session("analyst_123", {"workflow": "document_analysis"})

    # Create custom memory items for documents
    document_item = await system.create_memory_item(
        content="This is a research document about AI advancements.",
        item_type="document",  # Can be any type, not just conversation-related
        parent_id=session.id,
        metadata={"author": "Research Team", "category": "AI"},
        tags=["research", "AI", "document"]
    )

    # Search across all memory, not just conversations
    results = await system.search_memory(
        query="AI research",
        item_types=["document"],  # Filter by type
        tags=["research"],        # Filter by tags
        limit=5
    )

    return results
'''


class MemorgReadmeTests(unittest.TestCase):
    """memorg 0.1.2's documented library usage runs against memdb.memorg."""

    def test_readme_library_usage(self):
        import asyncio

        from memdb.memorg import MemorySearchResult, Session, Topic

        with tempfile.TemporaryDirectory() as tmp:
            cwd = os.getcwd()
            os.chdir(tmp)
            try:
                ns = {}
                exec(compile(MEMORG_README_LIBRARY_USAGE, "memorg-README", "exec"), ns)
                system, session, conversation, topic = asyncio.run(ns["setup_memorg"]())
                self.assertIsInstance(session, Session)
                self.assertIsInstance(topic, Topic)
                results = asyncio.run(system.search_context("key features"))
                self.assertEqual(results[0].entity.user_message.raw_content, "What are the key features?")
                # The second workflow opens the same store while the first
                # system is still open, as the README does.
                found = asyncio.run(ns["document_analysis_workflow"]())
                self.assertEqual(len(found), 1)
                self.assertIsInstance(found[0], MemorySearchResult)
                self.assertEqual(found[0].item.content, "This is a research document about AI advancements.")
                self.assertEqual(found[0].item.metadata["author"], "Research Team")
                system.close()
            finally:
                os.chdir(cwd)

    def test_optimize_context_and_memory_context(self):
        import asyncio

        from memdb.memorg import Entity, EntityType, MemorgSystem, SQLiteStorageAdapter

        long_text = " ".join(
            f"Sentence {i} talks about Lisbon trams, Porto trains and the Douro river at length." for i in range(60)
        )
        with tempfile.TemporaryDirectory() as tmp:
            system = MemorgSystem(SQLiteStorageAdapter(os.path.join(tmp, "m.db")))
            try:
                # memorg returns its default prompt template around the fitted text.
                out = asyncio.run(
                    system.optimize_context(long_text, [Entity("Lisbon", EntityType.LOCATION, 1.0, {})], 50)
                )
                self.assertIsInstance(out, str)
                self.assertIn("Context:", out)
                self.assertIn("Lisbon", out)
                self.assertLess(len(out), len(long_text) // 3)
                # memdb's own API says how many tokens came out.
                r = system._m.optimize_context(long_text, 50)
                self.assertLessEqual(r.optimized_length, 50)
                self.assertGreater(r.original_length, 50)
                short = system._m.optimize_context("A short note.", 50)
                self.assertEqual(short.optimized_content, "A short note.")
                with self.assertRaises(memdb.InvalidInput) as e:
                    system._m.optimize_context(long_text, 0)
                self.assertEqual(e.exception.field, "max_tokens")
                with self.assertRaises(memdb.InvalidInput):
                    system._m.optimize_context(long_text, 50, template="fancy")
                a = asyncio.run(system.create_memory_item("first note about redb", "note"))
                b = asyncio.run(system.create_memory_item("second note about tantivy", "document"))
                missing = "00000000-0000-0000-0000-000000000000"
                items = asyncio.run(system.optimize_memory_context([b.id, missing, "not-a-uuid", a.id], 100))
                self.assertEqual([i.id for i in items], [b.id, a.id])
                with self.assertRaises(memdb.InvalidInput):
                    asyncio.run(system.optimize_memory_context([a.id], 0))
            finally:
                system.close()


class LangChainTests(Store):
    def test_vector_store_add_search_filter_delete(self):
        from langchain_core.documents import Document
        from langchain_core.vectorstores import VectorStore

        from memdb.langchain import MemdbVectorStore

        store = MemdbVectorStore(self.db)
        self.assertIsInstance(store, VectorStore)
        ids = store.add_texts(
            ["Paella needs bomba rice", "The borrow checker rejects dangling references", "Sourdough needs a starter"],
            [{"topic": "food"}, {"topic": "rust"}, {"topic": "food"}],
        )
        docs = store.similarity_search("borrow checker references", k=1)
        self.assertIsInstance(docs[0], Document)
        self.assertEqual(docs[0].id, ids[1])
        self.assertEqual(docs[0].metadata, {"topic": "rust"})
        food = store.similarity_search("rice", k=3, filter={"topic": "food"})
        self.assertTrue(food and all(d.metadata["topic"] == "food" for d in food))
        self.assertEqual(food[0].id, ids[0])
        scored = store.similarity_search_with_score("sourdough starter", k=2)
        self.assertEqual(scored[0][0].id, ids[2])
        self.assertGreaterEqual(scored[0][1], scored[-1][1])
        store.delete([ids[1]])
        self.assertEqual([d.id for d in store.get_by_ids(ids)], [ids[0], ids[2]])

    def test_vector_store_with_caller_ids(self):
        from langchain_core.documents import Document

        from memdb.langchain import MemdbVectorStore

        store = MemdbVectorStore(self.db)
        given = str(uuid.uuid4())
        ids = store.add_documents(
            [
                Document(page_content="Paella needs bomba rice", metadata={"n": 1}),
                Document(page_content="Sourdough needs a starter", metadata={"n": 2}, id="doc-2"),
                Document(page_content="Tram 28 climbs to the castle", metadata={"n": 3}),
            ],
            ids=["doc-1", "doc-2", given],
        )
        self.assertEqual(ids, ["doc-1", "doc-2", given])
        got = store.get_by_ids(["doc-2", "missing", given, "doc-1"])
        self.assertEqual([d.id for d in got], ["doc-2", given, "doc-1"])
        self.assertEqual(got[0], Document(page_content="Sourdough needs a starter", metadata={"n": 2}, id="doc-2"))
        # Adding under a stored id replaces the document (no duplicate).
        store.add_documents([Document(page_content="Paella needs saffron", metadata={"n": 10})], ids=["doc-1"])
        hits = store.similarity_search("paella saffron", k=5)
        self.assertEqual(hits[0], Document(page_content="Paella needs saffron", metadata={"n": 10}, id="doc-1"))
        self.assertEqual(sum(1 for d in hits if d.id == "doc-1"), 1)
        # Deleting ids that were never stored is not an error.
        store.delete(["doc-1", "never-stored"])
        self.assertEqual([d.id for d in store.get_by_ids(["doc-1", "doc-2"])], ["doc-2"])
        with self.assertRaises(ValueError):
            store.add_texts(["x"], metadatas=[{"_memdb_document_id": "sneaky"}])

    def test_from_texts_and_chat_history(self):
        from langchain_core.messages import AIMessage, HumanMessage

        from memdb.langchain import MemdbChatMessageHistory, MemdbVectorStore

        path = os.path.join(self.tmp.name, "lc")
        store = MemdbVectorStore.from_texts(["one fish", "two fish"], None, path=path, embedder="hashing")
        self.assertEqual(len(store.similarity_search("fish", k=5)), 2)
        store._db.close()

        history = MemdbChatMessageHistory(self.db, "session-42")
        self.assertEqual(history.messages, [])
        history.add_messages([HumanMessage(content="Hi, I'm Ana."), AIMessage(content="Hello Ana!")])
        history.add_message(HumanMessage(content="What's my name?"))
        again = MemdbChatMessageHistory(self.db, "session-42")
        self.assertEqual(
            [(type(m).__name__, m.content) for m in again.messages],
            [("HumanMessage", "Hi, I'm Ana."), ("AIMessage", "Hello Ana!"), ("HumanMessage", "What's my name?")],
        )
        self.assertEqual(MemdbChatMessageHistory(self.db, "other").messages, [])
        again.clear()
        self.assertEqual(history.messages, [])


class CrossSurfaceTests(Store):
    """One format: a store written from Python is read by the `memdb` CLI
    and its server (`memdb serve`), and what they write is read from Python ($MEMDB_BIN, which
    scripts/test-python.sh points at the workspace's build)."""

    def memdb_cli(self, *args, stdin=None):
        import json
        import shutil
        import subprocess

        exe = os.environ.get("MEMDB_BIN") or shutil.which("memdb")
        self.assertTrue(exe, "set MEMDB_BIN to the memdb CLI (scripts/test-python.sh does)")
        out = subprocess.run(
            [exe, "--data", self.db.path, "--embedder", "none", *args, "--json"],
            input=stdin,
            capture_output=True,
            text=True,
            check=True,
        )
        return json.loads(out.stdout)

    def test_python_writes_the_cli_reads_and_back(self):
        c = self.db.sekha.create_conversation("Trips", [("user", "Lisbon in March")], folder="/home")
        self.db.close()
        found = self.memdb_cli("query", "Lisbon", "--mode", "keyword")
        self.assertEqual(found["results"][0]["conversation_id"], str(c.id))
        self.assertEqual(found["results"][0]["label"], "Trips")
        stored = self.memdb_cli(
            "store",
            stdin='{"label": "From CLI", "folder": "/cli", "messages": [{"role": "user", "content": "written by the command line"}]}',
        )
        self.db = memdb.open(self.db.path, embedder="hashing")
        got = self.db.sekha.get_with_messages(stored["id"])
        self.assertEqual(got.conversation.label, "From CLI")
        self.assertEqual(got.messages[0].text, "written by the command line")
        self.assertEqual(self.db.sekha.count(), 2)


    def test_python_writes_the_server_reads_and_back(self):
        import json
        import shutil
        import signal
        import socket
        import subprocess
        import urllib.request

        c = self.db.sekha.create_conversation("Trips", [("user", "Porto by train in April")], folder="/home")
        session = self.db.memorg.create_session("alice", {"max_tokens": 4096})
        self.db.close()
        exe = os.environ.get("MEMDB_BIN") or shutil.which("memdb")
        self.assertTrue(exe, "set MEMDB_BIN to the memdb CLI (scripts/test-python.sh does)")
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        key = "python-cross-surface-key-0123456789abcdef"
        env = {k: v for k, v in os.environ.items() if not k.startswith("MEMDB_")}
        env["MEMDB_API_KEY"] = key
        server = subprocess.Popen(
            [exe, "--data", self.db.path, "--embedder", "none", "serve", "--listen", f"127.0.0.1:{port}"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        base = f"http://127.0.0.1:{port}"

        def call(method, path, body=None):
            req = urllib.request.Request(
                base + path,
                method=method,
                data=None if body is None else json.dumps(body).encode(),
                headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
            )
            with urllib.request.urlopen(req, timeout=10) as r:
                return json.loads(r.read())

        try:
            for _ in range(300):
                try:
                    with urllib.request.urlopen(base + "/health", timeout=1):
                        break
                except OSError:
                    self.assertIsNone(server.poll(), "the server exited early")
                    time.sleep(0.1)
            got = call("GET", f"/api/v1/conversations/{c.id}")
            self.assertEqual(got["label"], "Trips")
            self.assertEqual(got["folder"], "/home")
            found = call("POST", "/api/v1/query", {"query": "Porto train", "mode": "keyword"})
            self.assertEqual(found["results"][0]["conversation_id"], str(c.id))
            written = call(
                "POST",
                "/api/v1/conversations",
                {"label": "From REST", "folder": "/rest", "messages": [{"role": "user", "content": "written over HTTP"}]},
            )
        finally:
            server.send_signal(signal.SIGTERM)
            _, err = server.communicate(timeout=30)
        self.assertEqual(server.returncode, 0, err.decode(errors="replace")[-2000:])
        self.db = memdb.open(self.db.path, embedder="hashing")
        back = self.db.sekha.get_with_messages(written["id"])
        self.assertEqual(back.conversation.label, "From REST")
        self.assertEqual(back.messages[0].text, "written over HTTP")
        self.assertEqual([s.id for s in self.db.memorg.sessions("alice")], [session.id])


class ErrorTests(Store):
    def test_invalid_input_names_its_field(self):
        with self.assertRaises(memdb.InvalidInput) as e:
            self.db.sekha.create_conversation("x", [("user", "")])
        self.assertEqual(e.exception.field, "messages[0].content")
        self.assertIsInstance(e.exception, memdb.MemdbError)
        self.assertEqual(memdb.InvalidInput.__module__, "memdb")
        with self.assertRaises(memdb.InvalidInput) as e:
            self.db.sekha.get("not-a-uuid")
        self.assertEqual(e.exception.field, "conversation_id")
        with self.assertRaises(memdb.InvalidInput):
            self.db.sekha.search("x", mode="sideways")
        with self.assertRaises(memdb.InvalidInput):
            self.db.sekha.search("   ")

    def test_openai_settings_come_from_the_environment(self):
        keys = ("MEMDB_OPENAI_BASE_URL", "MEMDB_OPENAI_MODEL", "MEMDB_OPENAI_DIMENSION")
        saved = {k: os.environ.get(k) for k in keys}
        try:
            with tempfile.TemporaryDirectory() as tmp:
                os.environ.update({"MEMDB_OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
                                   "MEMDB_OPENAI_MODEL": "m", "MEMDB_OPENAI_DIMENSION": "many"})
                with self.assertRaises(memdb.InvalidInput) as e:
                    memdb.open(os.path.join(tmp, "a"), embedder="openai")
                self.assertEqual(e.exception.field, "MEMDB_OPENAI_DIMENSION")
                del os.environ["MEMDB_OPENAI_MODEL"]
                os.environ["MEMDB_OPENAI_DIMENSION"] = "8"
                with self.assertRaises(memdb.InvalidInput) as e:
                    memdb.open(os.path.join(tmp, "b"), embedder="openai")
                self.assertIn("MEMDB_OPENAI_MODEL", str(e.exception))
                self.assertNotIn("MEMDB_OPENAI_BASE_URL", str(e.exception))
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v

    def test_bad_input_loses_nothing(self):
        c = self.db.sekha.create_conversation("Keep", [("user", "still here")])
        with self.assertRaises(memdb.InvalidInput):
            self.db.sekha.append(c.id, [("user", "ok"), ("user", "")])
        self.assertEqual(len(self.db.sekha.get_with_messages(c.id).messages), 1)

    def test_locked_and_closed(self):
        with self.assertRaises(memdb.Locked):
            memdb.open(self.db.path, embedder="none")
        self.db.close()
        self.assertTrue(self.db.closed)
        with self.assertRaises(memdb.Closed):
            self.db.sekha.count()
        self.db.close()  # twice is fine
        reopened = memdb.open(self.db.path, embedder="none")
        reopened.close()

    def test_closing_one_handle_leaves_its_namespace_siblings_working(self):
        ns = self.db.namespace("tenant")
        ns.sekha.create_conversation("a", [("user", "first")])
        self.db.close()
        with self.assertRaises(memdb.Closed):
            self.db.sekha.count()
        ns.sekha.create_conversation("b", [("user", "second")])
        self.assertEqual(ns.sekha.count(), 2)
        with self.assertRaises(memdb.Locked):
            memdb.open(self.db.path, embedder="none")
        ns.close()
        reopened = memdb.open(self.db.path, embedder="none", namespace="tenant")
        try:
            self.assertEqual(reopened.sekha.count(), 2)
        finally:
            reopened.close()

    def test_conflict(self):
        inbox = os.path.join(self.tmp.name, "inbox")
        os.makedirs(inbox)
        self.db.kuradb.add("notes", [inbox])
        with self.assertRaises(memdb.Conflict):
            self.db.kuradb.add("notes", [inbox])


class KuraDBTests(Store):
    def test_add_sync_search_status(self):
        inbox = os.path.join(self.tmp.name, "inbox")
        os.makedirs(inbox)
        with open(os.path.join(inbox, "pasta.md"), "w") as f:
            f.write("# Carbonara\n\nGuanciale, eggs, pecorino and black pepper.\n")
        with open(os.path.join(inbox, "bread.txt"), "w") as f:
            f.write("Sourdough needs a lively starter and a long proof.\n")
        kb = self.db.kuradb.add("recipes", [inbox])
        self.assertEqual(kb.name, "recipes")
        self.assertIsInstance(kb.created_at, datetime)
        seen = []
        report = self.db.kuradb.sync("recipes", progress=lambda done, total: seen.append((done, total)))
        self.assertEqual(report.parsed, 2)
        self.assertTrue(seen and seen[-1][0] == seen[-1][1])
        self.assertEqual(self.db.kuradb.status("recipes").documents, 2)
        res = self.db.kuradb.search("recipes", "guanciale", target="keyword")
        self.assertTrue(res.keyword[0].source.endswith("pasta.md"))
        self.assertEqual([k.name for k in self.db.kuradb.list()], ["recipes"])
        self.assertEqual(self.db.kuradb.rename("recipes", "food").name, "food")
        with self.assertRaises(memdb.NotFound):
            self.db.kuradb.status("recipes")

    def test_a_raising_progress_callback_stops_the_sync(self):
        inbox = os.path.join(self.tmp.name, "inbox")
        os.makedirs(inbox)
        for i in range(5):
            with open(os.path.join(inbox, f"n{i}.txt"), "w") as f:
                f.write(f"note number {i}\n")
        self.db.kuradb.add("notes", [inbox])

        class Stop(Exception):
            pass

        def progress(done, total):
            raise Stop()

        with self.assertRaises(Stop):
            self.db.kuradb.sync("notes", progress=progress)


class VectorTests(Store):
    def test_space_upsert_search(self):
        self.db.vectors.create_space("toy", 3, "cosine")
        a, b = uuid.uuid4(), uuid.uuid4()
        self.db.vectors.upsert("toy", [a, b], [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
        hits = self.db.vectors.search("toy", [0.9, 0.1, 0.0], k=2)
        self.assertEqual([h.id for h in hits], [a, b])
        self.assertGreater(hits[0].similarity, hits[1].similarity)
        with self.assertRaises(memdb.InvalidInput):
            self.db.vectors.upsert("toy", [a], [[1.0, 0.0]])
        with self.assertRaises(memdb.InvalidInput):
            self.db.vectors.upsert("toy", [a, b], [[1.0, 0.0, 0.0]])

    def test_numpy_rows(self):
        import numpy as np

        self.db.vectors.create_space("np", 4, "l2")
        ids = [uuid.uuid4() for _ in range(3)]
        self.db.vectors.upsert("np", ids, np.eye(3, 4, dtype=np.float32))
        hits = self.db.vectors.search("np", np.array([0, 1, 0, 0], dtype=np.float32), k=1)
        self.assertEqual(hits[0].id, ids[1])
        # float64, a transposed (Fortran-ordered) view and a strided query
        # are converted once by NumPy and give the same answers.
        more = [uuid.uuid4() for _ in range(2)]
        rows = np.array([[0, 0, 5, 0], [0, 0, 0, 5]], dtype=np.float64)
        self.db.vectors.upsert("np", more, np.asfortranarray(rows))
        hits = self.db.vectors.search("np", np.array([0, 0, 0, 0, 0, 0, 9, 0], dtype=np.float32)[::2], k=1)
        self.assertEqual(hits[0].id, more[1])
        hits = self.db.vectors.search("np", np.array([0.0, 0.0, 4.0, 0.0]), k=1)
        self.assertEqual(hits[0].id, more[0])
        # Shape errors are InvalidInput, and nothing is written.
        with self.assertRaises(memdb.InvalidInput):
            self.db.vectors.upsert("np", [uuid.uuid4()], np.zeros((2, 4), dtype=np.float32))
        with self.assertRaises(memdb.InvalidInput):
            self.db.vectors.upsert("np", [uuid.uuid4()], np.zeros((1, 3), dtype=np.float32))
        with self.assertRaises(memdb.InvalidInput):
            self.db.vectors.search("np", np.zeros(3, dtype=np.float32))
        self.assertEqual(len(self.db.vectors.search("np", np.ones(4, dtype=np.float32), k=10)), 5)


class ThreadTests(Store):
    def test_one_handle_many_threads(self):
        errors = []

        def writer(n):
            try:
                for i in range(10):
                    self.db.sekha.create_conversation(f"t{n}", [("user", f"thread {n} note {i}")])
            except Exception as e:  # noqa: BLE001 - collected and asserted below
                errors.append(e)

        threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])
        self.assertEqual(self.db.sekha.count(), 40)
        self.assertEqual(len(self.db.sekha.search("note", mode="keyword", limit=100).hits), 40)

    def test_the_gil_is_released_during_a_call(self):
        # A sync reading many files runs in the engine; a Python thread that
        # only counts must keep running meanwhile.
        inbox = os.path.join(self.tmp.name, "inbox")
        os.makedirs(inbox)
        for i in range(300):
            with open(os.path.join(inbox, f"doc{i}.txt"), "w") as f:
                f.write(("memdb releases the GIL while it works. " * 40) + str(i))
        self.db.kuradb.add("many", [inbox])
        ticks = []
        stop = threading.Event()

        def counter():
            while not stop.is_set():
                ticks.append(time.perf_counter())
                time.sleep(0.001)

        t = threading.Thread(target=counter)
        t.start()
        try:
            start = time.perf_counter()
            self.db.kuradb.sync("many")
            end = time.perf_counter()
        finally:
            stop.set()
            t.join()
        during = [x for x in ticks if start <= x <= end]
        # With the GIL held for the whole sync the counter would not tick
        # at all inside it.
        self.assertGreater(len(during), 5, f"counter ticked {len(during)} times in {end - start:.2f}s")


class LocalModelTests(Store):
    """The real ONNX model through ort + tokenizers (scripts/install-model.sh)."""

    embedder = "local"

    def test_semantic_search_finds_meaning_not_words(self):
        self.assertTrue(self.db.has_embedder)
        s = self.db.sekha
        s.create_conversation("Pets", [("user", "My dog loves running in the park")])
        s.create_conversation("Money", [("user", "The bank raised interest rates again")])
        s.create_conversation("Food", [("user", "Fresh basil makes the tomato sauce")])
        self.db.embed_pending()
        res = s.search("a puppy playing outside", mode="semantic", limit=3)
        self.assertEqual(res.mode, "semantic")
        self.assertEqual(res.hits[0].label, "Pets")


class TimeTests(unittest.TestCase):
    def test_parse_time_reads_what_the_engine_writes(self):
        t = types.parse_time("2026-12-07T14:33:49.1234Z")
        self.assertEqual(t, datetime(2026, 12, 7, 14, 33, 49, 123400, tzinfo=timezone.utc))
        self.assertEqual(
            types.parse_time("2026-12-07T14:33:49-05:00").utcoffset(), timedelta(hours=-5)
        )
        with self.assertRaises(ValueError):
            types.parse_time("yesterday")


if __name__ == "__main__":
    unittest.main()
