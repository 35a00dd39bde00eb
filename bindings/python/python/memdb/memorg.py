"""Memorg's model: Session > Conversation > Topic > Exchange, memory items
with types, tags and parents, multi-factor ``search_context`` and
``search_memory``. Each method is one call of the engine's ``Memorg``
handle (SPEC §14); results are :class:`~memdb.types.Record` objects whose
ids are ``uuid.UUID`` and timestamps ``datetime``.

:class:`Memorg` is memdb's own synchronous API. Below it, the drop-in for
PyPI ``memorg`` 0.1.2: :class:`MemorgSystem` (async, memorg's constructor
and method signatures), ``SQLiteStorageAdapter``, ``USearchVectorStore``
and memorg's model classes, over the same engine calls."""

from __future__ import annotations

import asyncio
import dataclasses as _dc
import os
import threading
import uuid
import weakref
from enum import Enum
from pathlib import Path
from datetime import datetime
from typing import Any, Dict, Iterable, List, Optional, Union

from ._native import InvalidInput, NotFound
from .types import Record, format_time

__all__ = [
    "Memorg",
    "MemorgSystem",
    "SQLiteStorageAdapter",
    "USearchVectorStore",
    "Session",
    "Conversation",
    "Topic",
    "Exchange",
    "Message",
    "ParsedContent",
    "Entity",
    "EntityType",
    "SearchResult",
    "SearchScope",
    "MatchType",
    "MemoryItem",
    "MemoryType",
    "MemoryScope",
    "MemorySearchResult",
]

Id = Union[uuid.UUID, str]


def _opt(i: Optional[Id]) -> Optional[str]:
    return None if i is None else str(i)


class Memorg:
    """Memorg's operations on one store handle (``db.memorg``)."""

    def __init__(self, store):
        self._s = store

    # ----- the hierarchy -------------------------------------------------

    def create_session(
        self,
        user_id: str,
        config: Optional[Dict[str, Any]] = None,
        metadata: Optional[Dict[str, Any]] = None,
    ) -> Record:
        """A session for ``user_id`` with its ``system_config``."""
        return Record(self._s.memorg_create_session(user_id, config, metadata))

    def sessions(self, user_id: Optional[str] = None) -> List[Record]:
        return [Record(x) for x in self._s.memorg_sessions(user_id)]

    def start_conversation(self, session_id: Id, title: Optional[str] = None) -> Record:
        return Record(self._s.memorg_start_conversation(str(session_id), title))

    def create_topic(self, conversation_id: Id, title: str, summary: Optional[str] = None) -> Record:
        return Record(self._s.memorg_create_topic(str(conversation_id), title, summary))

    def add_exchange(
        self,
        topic_id: Id,
        user_message: str,
        system_message: str,
        metadata: Optional[Dict[str, Any]] = None,
    ) -> Record:
        """An exchange (a user message and the system's answer), scored for
        importance as Memorg scores it."""
        return Record(
            self._s.memorg_add_exchange(str(topic_id), user_message, system_message, metadata)
        )

    def topic_exchanges(self, topic_id: Id) -> List[Record]:
        return [Record(x) for x in self._s.memorg_topic_exchanges(str(topic_id))]

    def delete(self, record_id: Id) -> int:
        """Deletes a session, conversation, topic, exchange or memory item
        and what hangs under it; returns how many records went."""
        return self._s.memorg_delete(str(record_id))

    def search_context(
        self,
        query: str,
        scope: str = "all",
        scope_id: Optional[Id] = None,
        max_results: int = 10,
        page: int = 1,
        now: Optional[datetime] = None,
    ) -> Record:
        """Memorg's ``search_context``: ``.results`` ranked by its
        multi-factor scorer, with the query's parsed ``.metadata``."""
        req = {
            "query": query,
            # Memorg's scope names in any case (`ALL`, `Topic`), as its MCP tool takes them.
            "scope": (scope.value if isinstance(scope, Enum) else str(scope)).lower(),
            "scope_id": _opt(scope_id),
            "max_results": max_results,
            "page": page,
            "now": format_time(now) if now is not None else None,
        }
        return Record(self._s.memorg_search_context(req))

    def memory_usage(self) -> Record:
        return Record(self._s.memorg_memory_usage())

    def optimize_context(
        self,
        content: str,
        max_tokens: int,
        entities: Iterable[str] = (),
        template: Optional[str] = None,
    ) -> Record:
        """Fits ``content`` into ``max_tokens`` (o200k tokens): untouched
        when it fits, else an extractive summary, then a head/tail cut; the
        result never exceeds the budget. ``entities`` are names to keep;
        ``template`` (``"default"`` or ``"summary"``) renders one of
        Memorg's prompt templates around the result. Returns
        ``.optimized_content``, ``.original_length`` and
        ``.optimized_length`` (tokens) and ``.context`` (the optimizer's
        details)."""
        return Record(self._s.memorg_optimize_context(content, max_tokens, list(entities), template))

    # ----- memory items --------------------------------------------------

    def create_memory_item(
        self,
        content: str,
        item_type: str,
        *,
        parent_id: Optional[Id] = None,
        metadata: Optional[Dict[str, Any]] = None,
        tags: Iterable[str] = (),
        importance: Optional[float] = None,
    ) -> Record:
        return Record(
            self._s.memorg_create_memory_item(
                content, item_type, _opt(parent_id), metadata, list(tags), importance
            )
        )

    def create_memory_item_as(
        self,
        item_id: Id,
        content: str,
        item_type: str,
        *,
        metadata: Optional[Dict[str, Any]] = None,
        tags: Iterable[str] = (),
    ) -> Record:
        """:meth:`create_memory_item` under a caller-chosen id (no parent);
        :class:`~memdb.Conflict` when the id is taken."""
        return Record(self._s.memorg_create_memory_item_as(str(item_id), content, item_type, metadata, list(tags)))

    def memory_item(self, item_id: Id) -> Record:
        return Record(self._s.memorg_memory_item(str(item_id)))

    def update_memory_item(
        self,
        item_id: Id,
        *,
        content: Optional[str] = None,
        metadata: Optional[Dict[str, Any]] = None,
        importance: Optional[float] = None,
        tags: Optional[Iterable[str]] = None,
    ) -> Record:
        return Record(
            self._s.memorg_update_memory_item(
                str(item_id),
                content,
                metadata,
                importance,
                list(tags) if tags is not None else None,
            )
        )

    def add_tags(self, item_id: Id, tags: Iterable[str]) -> Record:
        return Record(self._s.memorg_add_item_tags(str(item_id), list(tags)))

    def remove_tags(self, item_id: Id, tags: Iterable[str]) -> Record:
        return Record(self._s.memorg_remove_item_tags(str(item_id), list(tags)))

    def search_memory(
        self,
        query: str,
        *,
        scope: Optional[str] = None,
        scope_id: Optional[Id] = None,
        item_types: Iterable[str] = (),
        tags: Iterable[str] = (),
        filters: Optional[Dict[str, Any]] = None,
        limit: int = 10,
    ) -> List[Record]:
        """Memory items by meaning and words, filtered by type, tags (all of
        them) and a Chroma-style ``where`` over metadata."""
        req = {
            "query": query,
            "scope": scope,
            "scope_id": _opt(scope_id),
            "item_types": list(item_types),
            "tags": list(tags),
            "filters": filters,
            "limit": limit,
        }
        return [Record(x) for x in self._s.memorg_search_memory(req)]

    def item_context(self, item_id: Id, depth: int = 1, include_siblings: bool = False) -> Record:
        """An item with its ancestors (up to ``depth``) and siblings."""
        return Record(self._s.memorg_item_context(str(item_id), depth, include_siblings))


# ----- the drop-in for PyPI memorg 0.1.2 ----------------------------------
#
# A memorg program changes `from app.main import MemorgSystem` (and its other
# `app.*` imports) to `from memdb.memorg import ...` and keeps the rest: the
# constructor takes the same three arguments, the methods are async with the
# same names and signatures, and results are memorg's own model classes.



class EntityType(Enum):
    PERSON = "person"
    ORGANIZATION = "organization"
    LOCATION = "location"
    CONCEPT = "concept"
    EVENT = "event"
    OTHER = "other"


class SearchScope(Enum):
    SESSION = "session"
    CONVERSATION = "conversation"
    TOPIC = "topic"
    ALL = "all"


class MatchType(Enum):
    KEYWORD = "keyword"
    SEMANTIC = "semantic"
    TEMPORAL = "temporal"
    HYBRID = "hybrid"
    IMPORTANCE = "importance"


class MemoryType(Enum):
    SESSION = "session"
    CONVERSATION = "conversation"
    TOPIC = "topic"
    EXCHANGE = "exchange"
    DOCUMENT = "document"
    ENTITY = "entity"
    CUSTOM = "custom"


class MemoryScope(Enum):
    GLOBAL = "global"
    SESSION = "session"
    CONVERSATION = "conversation"
    TOPIC = "topic"
    CUSTOM = "custom"


@_dc.dataclass
class Entity:
    name: str
    type: EntityType
    salience: float
    metadata: Dict[str, Any]


@_dc.dataclass
class ParsedContent:
    entities: List[Entity]
    intents: List[str]
    sentiment: Dict[str, float]


@_dc.dataclass
class Message:
    raw_content: str
    parsed_content: ParsedContent
    embedding: List[float]


@_dc.dataclass
class Exchange:
    id: str
    created_at: datetime
    updated_at: datetime
    user_message: Message
    system_message: Message
    importance_score: float
    embedding: List[float]
    metadata: Dict[str, Any]


@_dc.dataclass
class Topic:
    id: str
    created_at: datetime
    updated_at: datetime
    title: str
    summary: str
    exchanges: List[Exchange]
    embedding: List[float]
    key_entities: List[Entity]
    metadata: Dict[str, Any]


@_dc.dataclass
class Conversation:
    id: str
    created_at: datetime
    updated_at: datetime
    title: str
    summary: str
    topics: List[Topic]
    embedding: List[float]
    metadata: Dict[str, Any]


@_dc.dataclass
class Session:
    id: str
    created_at: datetime
    updated_at: datetime
    user_id: str
    system_config: Dict[str, Any]
    conversations: List[Conversation]
    metadata: Dict[str, Any]


@_dc.dataclass
class SearchResult:
    entity: Any
    score: float
    match_type: MatchType


@_dc.dataclass
class MemoryItem:
    id: str
    type: MemoryType
    content: str
    metadata: Dict[str, Any]
    created_at: datetime
    updated_at: datetime
    embedding: Optional[List[float]] = None
    importance_score: float = 0.0
    parent_id: Optional[str] = None
    tags: Optional[List[str]] = None


@_dc.dataclass
class MemorySearchResult:
    """memorg's ``app.memory.core.SearchResult``."""

    item: MemoryItem
    score: float
    match_type: str


def _entity(e: Record) -> Entity:
    try:
        kind = EntityType(str(e.type))
    except ValueError:
        kind = EntityType.OTHER
    return Entity(e.name, kind, float(e.salience), dict(getattr(e, "metadata", {}) or {}))


def _message(m: Record) -> Message:
    p = m.parsed_content
    parsed = ParsedContent(
        [_entity(e) for e in p.entities],
        list(p.intents),
        p.sentiment.to_dict() if isinstance(p.sentiment, Record) else dict(p.sentiment),
    )
    return Message(m.raw_content, parsed, [])


def _exchange(x: Record) -> Exchange:
    return Exchange(
        str(x.id),
        x.created_at,
        x.updated_at,
        _message(x.user_message),
        _message(x.system_message),
        float(x.importance_score),
        [],
        dict(x.metadata or {}),
    )


def _memory_item(r: Record) -> MemoryItem:
    metadata = dict(r.metadata or {})
    custom = r.to_dict().get("custom_type")
    if custom is not None:
        metadata.setdefault("custom_type", custom)
    return MemoryItem(
        id=str(r.id),
        type=MemoryType(str(r.type)),
        content=r.content,
        metadata=metadata,
        created_at=r.created_at,
        updated_at=r.updated_at,
        importance_score=float(r.importance_score),
        parent_id=str(r.parent_id) if r.parent_id is not None else None,
        tags=list(r.tags),
    )


class SQLiteStorageAdapter:
    """Stands where memorg's SQLite adapter stood: it names the store. The
    data lives in a memdb directory beside ``db_path`` (``memorg.db`` ->
    ``memorg.memdb/``), never in the SQLite file."""

    def __init__(self, db_path: str = "memorg.db"):
        self.db_path = db_path

    @property
    def store_dir(self) -> str:
        p = Path(os.fspath(self.db_path))
        return str(p.with_suffix(".memdb") if p.suffix else p.with_name(p.name + ".memdb"))


class USearchVectorStore:
    """Accepted for memorg's constructor; memdb keeps the vectors in its own
    HNSW index, so the arguments are not used."""

    def __init__(self, *args: Any, **kwargs: Any):
        self.args = args
        self.kwargs = kwargs


class _ContextStore:
    """The part of memorg's ``ContextStore`` its examples call."""

    def __init__(self, m: Memorg):
        self._m = m

    async def create_topic(self, conversation_id: str, title: Optional[str] = None) -> Topic:
        t = await asyncio.to_thread(self._m.create_topic, conversation_id, title or "Untitled")
        return Topic(
            str(t.id),
            t.created_at,
            t.updated_at,
            t.title,
            t.summary,
            [],
            [],
            [_entity(e) for e in t.key_entities],
            dict(t.metadata or {}),
        )


#: The memdb handles MemorgSystems of this process opened, by directory:
#: memorg lets two systems share one SQLite file (its README opens a second
#: on the same path while the first is in use), and a memdb directory is
#: opened once per process, so a later system gets a sibling handle on the
#: same engine (``Memdb.namespace``) instead of ``Locked``.
_open_systems: Dict[str, List["weakref.ref[Any]"]] = {}
_open_lock = threading.Lock()


def _shared_store(store_dir: str) -> Any:
    from . import open as _open

    key = os.path.realpath(store_dir)
    with _open_lock:
        live = [d for d in (r() for r in _open_systems.get(key, [])) if d is not None and not d.closed]
        db = live[0].namespace(live[0].namespace_name) if live else _open(store_dir, embedder="auto")
        _open_systems[key] = [weakref.ref(d) for d in live] + [weakref.ref(db)]
        return db


class MemorgSystem:
    """PyPI memorg 0.1.2's ``MemorgSystem`` on memdb: the same constructor and
    async methods. ``openai_client`` is accepted and unused (memdb embeds
    with its local model when installed; keyword search otherwise)."""

    def __init__(self, storage: SQLiteStorageAdapter, vector_store: Any = None, openai_client: Any = None):
        self.openai_client = openai_client
        self._db = _shared_store(storage.store_dir)
        self._m = self._db.memorg
        self.context_store = _ContextStore(self._m)

    def close(self) -> None:
        """Closes the memdb store (memorg has no close; call it when done)."""
        self._db.close()

    async def create_session(self, user_id: str, config: Dict[str, Any]) -> Session:
        s = await asyncio.to_thread(self._m.create_session, user_id, config)
        return Session(str(s.id), s.created_at, s.updated_at, s.user_id, dict(s.system_config), [], dict(s.metadata or {}))

    async def start_conversation(self, session_id: str) -> Conversation:
        c = await asyncio.to_thread(self._m.start_conversation, session_id)
        return Conversation(
            str(c.id), c.created_at, c.updated_at, c.title, c.summary, [], [], dict(c.metadata or {})
        )

    async def add_exchange(self, topic_id: str, user_message: str, system_message: str) -> Exchange:
        x = await asyncio.to_thread(self._m.add_exchange, topic_id, user_message, system_message)
        return _exchange(x)

    async def search_context(self, query: str, scope: SearchScope = SearchScope.ALL, max_results: int = 10) -> list:
        scope_name = scope.value if isinstance(scope, SearchScope) else str(scope)
        r = await asyncio.to_thread(self._m.search_context, query, scope_name, None, max_results)
        return [
            SearchResult(_exchange(h.exchange), float(h.score), MatchType(str(h.match_type)))
            for h in r.results
        ]

    async def optimize_context(self, content: str, entities: list, max_tokens: int) -> str:
        """memorg's ``optimize_context``: the content fitted into
        ``max_tokens`` and rendered into memorg's default prompt template
        (a string, as memorg returns). ``entities`` are memorg ``Entity``
        objects or names."""
        names = [e if isinstance(e, str) else str(getattr(e, "name", e)) for e in entities]
        r = await asyncio.to_thread(self._m.optimize_context, content, max_tokens, names, "default")
        return str(r.optimized_content)

    async def get_memory_usage(self) -> Dict[str, int]:
        u = await asyncio.to_thread(self._m.memory_usage)
        return {k: int(getattr(u, k)) for k in ("total_tokens", "active_items", "compressed_items", "vector_count", "index_size")}

    async def create_memory_item(
        self,
        content: str,
        item_type: str,
        parent_id: Optional[str] = None,
        metadata: Optional[Dict[str, Any]] = None,
        tags: Optional[List[str]] = None,
    ) -> MemoryItem:
        r = await asyncio.to_thread(
            lambda: self._m.create_memory_item(content, item_type, parent_id=parent_id, metadata=metadata, tags=tags or ())
        )
        return _memory_item(r)

    async def search_memory(
        self,
        query: str,
        scope: str = "global",
        item_types: Optional[List[str]] = None,
        tags: Optional[List[str]] = None,
        limit: int = 10,
    ) -> List[MemorySearchResult]:
        hits = await asyncio.to_thread(
            lambda: self._m.search_memory(query, scope=scope, item_types=item_types or (), tags=tags or (), limit=limit)
        )
        return [MemorySearchResult(_memory_item(h.item), float(h.score), str(h.match_type)) for h in hits]

    async def get_item_context(self, item_id: str, depth: int = 3, include_siblings: bool = False) -> List[MemoryItem]:
        c = await asyncio.to_thread(self._m.item_context, item_id, depth, include_siblings)
        items = [c.item, *c.ancestors]
        if include_siblings:
            items.extend(c.children)
        return [_memory_item(i) for i in items]

    async def optimize_memory_context(self, item_ids: List[str], max_tokens: int) -> List[MemoryItem]:
        """memorg's ``optimize_memory_context``: the items of ``item_ids``
        that exist, in that order (unknown ids are skipped), as memorg
        returns them. Like memorg, it fits the items' text
        (``"type: content"`` paragraphs) into ``max_tokens`` and returns the
        items, not that text: call :meth:`Memorg.optimize_context` for it."""

        def run() -> List[Record]:
            items = []
            for i in item_ids:
                try:
                    items.append(self._m.memory_item(i))
                except (NotFound, InvalidInput):
                    continue
            text = "\n\n".join(f"{r.type}: {r.content}" for r in items)
            self._m.optimize_context(text, max_tokens)
            return items

        return [_memory_item(r) for r in await asyncio.to_thread(run)]
