"""KuraDB's knowledge bases: named bases over watched inbox folders, parsed
into chunks, synced on demand, searched by keyword and meaning with hits
grouped by source file. Each method is one call of the engine's ``KuraDb``
handle."""

from __future__ import annotations

import os
from typing import Callable, Iterable, List, Optional, Union

from .types import KbStatus, KnowledgeBase, Record, SyncReport, build

__all__ = ["KuraDB"]

PathLike = Union[str, "os.PathLike[str]"]


class KuraDB:
    """KuraDB's operations on one store handle (``db.kuradb``)."""

    def __init__(self, store):
        self._s = store

    def add(self, name: str, inbox: Iterable[PathLike]) -> KnowledgeBase:
        """Registers knowledge base ``name`` over the ``inbox`` folders (read
        at the next :meth:`sync`)."""
        return build(KnowledgeBase, self._s.kb_add(name, [os.fspath(p) for p in inbox]))

    def list(self) -> List[KnowledgeBase]:
        """The knowledge bases of this namespace."""
        return [build(KnowledgeBase, kb) for kb in self._s.kb_list()]

    def get(self, name: str) -> KnowledgeBase:
        return build(KnowledgeBase, self._s.kb_get(name))

    def rename(self, old: str, new: str) -> KnowledgeBase:
        return build(KnowledgeBase, self._s.kb_rename(old, new))

    def remove(self, name: str) -> int:
        """Removes a knowledge base and its documents (the files stay)."""
        return self._s.kb_remove(name)

    def status(self, name: str) -> KbStatus:
        """Documents, chunks and the embedding backlog."""
        return build(KbStatus, self._s.kb_status(name))

    def sync(
        self, name: str, progress: Optional[Callable[[int, int], None]] = None
    ) -> SyncReport:
        """Reads new and changed files of the inbox, drops deleted ones;
        ``progress(done, total)`` is called as files are read (an exception
        it raises stops the sync and is raised here)."""
        return build(SyncReport, self._s.kb_sync(name, progress))

    def search(
        self, name: str, query: str, *, target: Optional[str] = None, limit: int = 10
    ) -> Record:
        """Keyword and semantic hits (``target`` ``"keyword"`` or
        ``"semantic"`` for one side), each side grouped by source file:
        ``.keyword`` and ``.semantic``, lists of ``{source, matches}``."""
        return Record(self._s.kb_search(name, query, target, limit))
