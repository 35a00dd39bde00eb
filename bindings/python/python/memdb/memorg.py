"""Memorg's model: Session > Conversation > Topic > Exchange, memory items
with types, tags and parents, multi-factor ``search_context`` and
``search_memory``. Each method is one call of the engine's ``Memorg``
handle (SPEC §14); results are :class:`~memdb.types.Record` objects whose
ids are ``uuid.UUID`` and timestamps ``datetime``.

This is memdb's own synchronous API. The drop-in for PyPI ``memorg``'s
async ``MemorgSystem`` is not built yet (issue #58)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Dict, Iterable, List, Optional, Union

from .types import Record, format_time

__all__ = ["Memorg"]

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
            "scope": scope,
            "scope_id": _opt(scope_id),
            "max_results": max_results,
            "page": page,
            "now": format_time(now) if now is not None else None,
        }
        return Record(self._s.memorg_search_context(req))

    def memory_usage(self) -> Record:
        return Record(self._s.memorg_memory_usage())

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
