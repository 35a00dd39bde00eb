"""memdb: an embedded long-term memory database for LLM agents, in process.

One engine holds Sekha's conversation memory (``db.sekha``), Memorg's
sessions, topics, exchanges and memory items (``db.memorg``), KuraDB's
knowledge bases over folders (``db.kuradb``) and named vector spaces
(``db.vectors``), searchable by keyword, by meaning and by time, and
assembled into a context window under a token budget::

    import memdb

    with memdb.open("/tmp/agent-memory", embedder="hashing") as db:
        conv = db.sekha.create_conversation(
            "Trips", [("user", "Lisbon in March?"), ("assistant", "Book early.")]
        )
        for hit in db.sekha.search("Lisbon trip").hits:
            print(hit.score, hit.label, hit.message.text)

Every storage, search and embedding call releases the GIL, and one handle
may be shared by many threads. Errors are :class:`MemdbError` subclasses
mirroring the engine's (:class:`NotFound`, :class:`InvalidInput` with
``.field``, :class:`Conflict`, :class:`Locked`, ...).
"""

from __future__ import annotations

import os
from typing import Optional, Union

from . import types
from ._native import (
    Cancelled,
    Closed,
    Conflict,
    Corrupted,
    InvalidInput,
    Locked,
    MemdbError,
    ModelError,
    NotFound,
    RemoteError,
    StorageError,
    Store as _Store,
    __version__,
)
from .kuradb import KuraDB
from .memorg import Memorg
from .sekha import Sekha
from .vectors import Vectors

__all__ = [
    "Cancelled",
    "Closed",
    "Conflict",
    "Corrupted",
    "InvalidInput",
    "KuraDB",
    "Locked",
    "Memdb",
    "MemdbError",
    "Memorg",
    "ModelError",
    "NotFound",
    "RemoteError",
    "Sekha",
    "StorageError",
    "Vectors",
    "open",
    "types",
    "__version__",
]


class Memdb:
    """An open memdb store, seen from one namespace.

    ``sekha``, ``memorg``, ``kuradb`` and ``vectors`` are its faces; each call
    goes straight to the engine. Use it as a context manager, or call
    :meth:`close`; the directory stays locked until every handle made from
    it with :meth:`namespace` is closed too.
    """

    def __init__(self, store: _Store):
        self._store = store
        self.sekha = Sekha(store)
        self.memorg = Memorg(store)
        self.kuradb = KuraDB(store)
        self.vectors = Vectors(store)

    @property
    def path(self) -> str:
        """The data directory."""
        return str(self._store.path)

    @property
    def namespace_name(self) -> str:
        """The namespace this handle reads and writes (``"default"``)."""
        return self._store.namespace_name

    @property
    def has_embedder(self) -> bool:
        """Whether semantic and hybrid search have a model to embed with."""
        return self._store.has_embedder

    @property
    def embedder_note(self) -> Optional[str]:
        """Why ``embedder="auto"`` found no model, when it did not."""
        return self._store.embedder_note

    @property
    def closed(self) -> bool:
        return self._store.closed

    def namespace(self, name: str) -> "Memdb":
        """A handle on namespace ``name`` of the same store."""
        return Memdb(self._store.namespace(name))

    def flush(self) -> None:
        """Checkpoints the text index (every returned write is already durable)."""
        self._store.flush()

    def embed_pending(self, progress=None) -> int:
        """Embeds everything the embedding queue holds, calling
        ``progress(done, total)``; returns how many items were embedded."""
        return self._store.embed_pending(progress)

    def close(self) -> None:
        """Closes the store; later calls raise :class:`Closed`."""
        self._store.close()

    def __enter__(self) -> "Memdb":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"memdb.{self._store!r}"


def open(
    path: Union[str, "os.PathLike[str]"],
    embedder: str = "auto",
    namespace: Optional[str] = None,
    models_dir: Optional[Union[str, "os.PathLike[str]"]] = None,
) -> Memdb:
    """Opens (creating if needed) the store in ``path``.

    ``embedder`` is ``"auto"`` (the local ONNX model when installed, else
    keyword search only: see :attr:`Memdb.embedder_note`), ``"local"`` (the
    model, or an error), ``"hashing"`` (a model-free lexical embedder),
    ``"none"`` or ``"openai"`` (configured by the ``MEMDB_OPENAI_*``
    environment variables). ``namespace`` picks the tenant this handle sees.
    One process at a time may open a directory (:class:`Locked` otherwise).
    """
    store = _Store.open(
        os.fspath(path),
        embedder,
        namespace,
        os.fspath(models_dir) if models_dir is not None else None,
    )
    return Memdb(store)
