"""Sekha's conversation memory: conversations and messages with labels,
folders, importance and pinning; search by keyword, meaning or both;
context assembly under a token budget; summaries, pruning, export and
import. Each method is one call of the engine's ``Sekha`` handle."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple, Union

from .types import (
    Conversation,
    ConversationPage,
    ConversationWithMessages,
    Message,
    Record,
    SearchResults,
    Stats,
    build,
    format_time,
)

__all__ = ["Sekha", "MessageLike"]

Id = Union[uuid.UUID, str]
#: A message to write: ``(role, content)``, ``(role, content, timestamp)``
#: or a dict ``{role, content, timestamp?, metadata?}``.
MessageLike = Union[Tuple[str, Any], Tuple[str, Any, datetime], Dict[str, Any]]


def _message(m: MessageLike) -> Dict[str, Any]:
    if isinstance(m, dict):
        out = dict(m)
    elif isinstance(m, (tuple, list)) and len(m) in (2, 3):
        out = {"role": m[0], "content": m[1]}
        if len(m) == 3 and m[2] is not None:
            out["timestamp"] = m[2]
    else:
        raise TypeError(f"a message is (role, content[, timestamp]) or a dict, not {m!r}")
    if isinstance(out.get("timestamp"), datetime):
        out["timestamp"] = format_time(out["timestamp"])
    return out


def _new_conversation(
    label: str,
    messages: Iterable[MessageLike],
    folder: Optional[str],
    importance: Optional[int],
    metadata: Optional[Dict[str, Any]],
) -> Dict[str, Any]:
    """The engine's ``NewConversation`` as the native module takes it."""
    new: Dict[str, Any] = {"label": label, "messages": [_message(m) for m in messages]}
    if folder is not None:
        new["folder"] = folder
    if importance is not None:
        new["importance_score"] = importance
    if metadata is not None:
        new["metadata"] = metadata
    return new


def _filter(
    folder: Optional[str] = None,
    label: Optional[str] = None,
    status: Optional[str] = None,
    pinned: Optional[bool] = None,
    min_importance: Optional[int] = None,
    max_importance: Optional[int] = None,
    since: Optional[Union[datetime, str]] = None,
    until: Optional[Union[datetime, str]] = None,
) -> Dict[str, Any]:
    f: Dict[str, Any] = {}
    for key, value in (
        ("folder", folder),
        ("label", label),
        ("status", status),
        ("pinned", pinned),
        ("min_importance", min_importance),
        ("max_importance", max_importance),
    ):
        if value is not None:
            f[key] = value
    if since is not None:
        f["since"] = format_time(since)
    if until is not None:
        f["until"] = format_time(until)
    return f


class Sekha:
    """Sekha's operations on one store handle (``db.sekha``).

    Filters are keyword arguments shared by :meth:`list`, :meth:`count`,
    :meth:`search`, :meth:`stats` and :meth:`export`: ``folder`` (a prefix:
    ``"/work"`` selects ``/work/rust``), ``label``, ``status``
    (``"active"``/``"archived"``), ``pinned``, ``min_importance``,
    ``max_importance``, ``since`` and ``until`` (on ``updated_at``).
    """

    def __init__(self, store):
        self._s = store

    # ----- conversations -------------------------------------------------

    def create_conversation(
        self,
        label: str,
        messages: Iterable[MessageLike],
        *,
        folder: Optional[str] = None,
        importance: Optional[int] = None,
        metadata: Optional[Dict[str, Any]] = None,
    ) -> ConversationWithMessages:
        """Creates a conversation with its messages (at least one)."""
        new = _new_conversation(label, messages, folder, importance, metadata)
        return ConversationWithMessages.from_dict(self._s.create_conversation(new))

    def create_conversations(self, conversations: Iterable[Dict[str, Any]]) -> List[uuid.UUID]:
        """Creates many conversations in one transaction (one fsync), all or
        nothing: on any error nothing is written and ``InvalidInput.field``
        names the item (``conversations[3].label``). Each item is a dict with
        ``label`` and ``messages`` and optionally ``folder``, ``importance``
        and ``metadata``, as :meth:`create_conversation` takes them. Returns
        the new ids in order (the bulk path does not read the rows back)."""
        batch = [
            _new_conversation(c["label"], c["messages"], c.get("folder"), c.get("importance"), c.get("metadata"))
            for c in conversations
        ]
        return [uuid.UUID(i) for i in self._s.create_conversations(batch)]

    def append(self, conversation_id: Id, messages: Iterable[MessageLike]) -> List[Message]:
        """Appends messages to a conversation; returns them as stored."""
        stored = self._s.append_messages(str(conversation_id), [_message(m) for m in messages])
        return [build(Message, m) for m in stored]

    def get(self, conversation_id: Id) -> Conversation:
        """A conversation, without its messages."""
        return build(Conversation, self._s.get_conversation(str(conversation_id), False))

    def get_with_messages(self, conversation_id: Id) -> ConversationWithMessages:
        """A conversation and its messages, oldest first."""
        return ConversationWithMessages.from_dict(
            self._s.get_conversation(str(conversation_id), True)
        )

    def get_message(self, message_id: Id) -> Message:
        """One message."""
        return build(Message, self._s.get_message(str(message_id)))

    def list(self, *, offset: int = 0, limit: int = 50, **filters) -> ConversationPage:
        """Conversations matching the filters, newest updated first."""
        return build(
            ConversationPage, self._s.list_conversations(_filter(**filters), offset, limit)
        )

    def count(self, **filters) -> int:
        """How many conversations match the filters."""
        return self._s.count_conversations(_filter(**filters))

    def update(
        self,
        conversation_id: Id,
        *,
        label: Optional[str] = None,
        folder: Optional[str] = None,
        status: Optional[str] = None,
        importance: Optional[int] = None,
        metadata: Optional[Dict[str, Any]] = None,
    ) -> Conversation:
        """Changes what is given and keeps the rest."""
        update: Dict[str, Any] = {}
        for key, value in (
            ("label", label),
            ("folder", folder),
            ("status", status),
            ("importance_score", importance),
            ("metadata", metadata),
        ):
            if value is not None:
                update[key] = value
        return build(Conversation, self._s.update_conversation(str(conversation_id), update))

    def pin(self, conversation_id: Id) -> Conversation:
        """Pins a conversation (importance 10, Sekha's definition)."""
        return build(Conversation, self._s.pin(str(conversation_id)))

    def archive(self, conversation_id: Id) -> Conversation:
        """Archives a conversation."""
        return build(Conversation, self._s.archive(str(conversation_id)))

    def delete(self, conversation_id: Id) -> int:
        """Deletes a conversation; returns how many messages went with it."""
        return self._s.delete_conversation(str(conversation_id))

    # ----- search and context --------------------------------------------

    def search(
        self,
        query: str,
        *,
        mode: str = "hybrid",
        limit: int = 10,
        offset: int = 0,
        explain: bool = False,
        conversation_id: Optional[Id] = None,
        role: Optional[str] = None,
        min_similarity: Optional[float] = None,
        language: Optional[str] = None,
        **filters,
    ) -> SearchResults:
        """Searches messages: ``mode`` is ``"keyword"`` (BM25),
        ``"semantic"`` (by meaning) or ``"hybrid"`` (both, fused; keyword
        alone when the store has no embedder, with a note saying so)."""
        req: Dict[str, Any] = {
            "query": query,
            "mode": mode,
            "limit": limit,
            "offset": offset,
            "explain": explain,
            "filter": _filter(**filters),
        }
        if conversation_id is not None:
            req["conversation_id"] = str(conversation_id)
        if role is not None:
            req["role"] = role
        if min_similarity is not None:
            req["min_similarity"] = min_similarity
        if language is not None:
            req["language"] = language
        return build(SearchResults, self._s.search(req))

    def context(
        self,
        query: str,
        *,
        budget: int = 4000,
        preferred_labels: Sequence[str] = (),
        excluded_folders: Sequence[str] = (),
        min_similarity: float = 0.0,
        now: Optional[datetime] = None,
    ) -> Record:
        """Assembles a context window for ``query`` under ``budget`` tokens
        (Sekha's four phases): ``.messages`` with their citations,
        ``.token_count``, ``.conversation_ids``, ``.labels``, ``.notes``."""
        req: Dict[str, Any] = {
            "query": query,
            "context_budget": budget,
            "preferred_labels": list(preferred_labels),
            "excluded_folders": list(excluded_folders),
            "min_similarity": min_similarity,
        }
        if now is not None:
            req["now"] = format_time(now)
        return Record(self._s.assemble_context(req))

    def stats(self, **filters) -> Stats:
        """Totals over the conversations matching the filters."""
        return build(Stats, self._s.stats(_filter(**filters)))

    # ----- summaries, pruning, export ------------------------------------

    def summarize(
        self, conversation_id: Id, level: str = "daily", *, now: Optional[datetime] = None
    ) -> Record:
        """A ``"daily"``, ``"weekly"`` or ``"monthly"`` summary of a
        conversation (extractive in process), stored and returned."""
        req: Dict[str, Any] = {"conversation_id": str(conversation_id), "level": level}
        if now is not None:
            req["now"] = format_time(now)
        return Record(self._s.summarize(req))

    def prune_suggestions(self, **request) -> Record:
        """Conversations the pruning rules would archive or delete
        (``threshold_days``, ``importance_threshold``, ...: the engine's
        ``PruneRequest``)."""
        return Record(self._s.prune_suggestions(request))

    def prune(self, conversation_ids: Iterable[Id], action: str = "archive") -> Record:
        """Archives (or, with ``action="delete"``, deletes) conversations."""
        return Record(self._s.prune_execute([str(i) for i in conversation_ids], action))

    def export(
        self, conversation_id: Optional[Id] = None, *, format: str = "json", **filters
    ) -> str:
        """One conversation, or every one matching the filters, as
        ``"json"`` (what :meth:`import_export` reads) or ``"markdown"``."""
        cid = str(conversation_id) if conversation_id is not None else None
        return self._s.export(_filter(**filters), cid, format)

    def import_export(self, data: str, *, skip_existing: bool = False, progress=None) -> Record:
        """Imports a JSON export, ids and timestamps kept; with
        ``skip_existing`` a conversation whose id exists is left alone."""
        return Record(self._s.import_export(data, skip_existing, progress))
