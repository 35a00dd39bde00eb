"""LangChain integration (needs ``langchain-core``): :class:`MemdbVectorStore`,
a ``VectorStore`` over memdb's memory items, and
:class:`MemdbChatMessageHistory`, a chat history kept as a Sekha
conversation. A LangChain program swaps memdb in for Chroma with one line::

    store = MemdbVectorStore.from_texts(texts, embedding=None, metadatas=metas, path="./mem")

memdb embeds with its own model (the local ONNX model when installed), so
the ``embedding`` argument is accepted and not used; search is memdb's
``search_memory`` (meaning and words, metadata filters in Chroma's
``where`` form)."""

from __future__ import annotations

import uuid
from typing import Any, Iterable, List, Optional, Sequence, Tuple

from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.documents import Document
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.vectorstores import VectorStore

from . import Conflict, Memdb, NotFound
from . import open as _open

__all__ = ["MemdbChatMessageHistory", "MemdbVectorStore"]


class MemdbVectorStore(VectorStore):
    """Documents as memdb memory items of one type (``"document"``)."""

    def __init__(self, db: Memdb, item_type: str = "document", embedding: Any = None):
        self._db = db
        self._type = item_type
        self._embedding = embedding

    @property
    def embeddings(self) -> Any:
        """The embedding object given (memdb embeds with its own model)."""
        return self._embedding

    def add_texts(
        self,
        texts: Iterable[str],
        metadatas: Optional[List[dict]] = None,
        *,
        ids: Optional[List[Optional[str]]] = None,
        **kwargs: Any,
    ) -> List[str]:
        """Stores each text as a memory item and returns the documents'
        ids: the caller's where given (an id already stored is replaced:
        its text, re-embedded, and its metadata), else memdb's own."""
        texts = list(texts)
        metadatas = metadatas or [{} for _ in texts]
        ids = list(ids) if ids is not None else [None for _ in texts]
        if len(metadatas) != len(texts) or len(ids) != len(texts):
            raise ValueError(f"{len(texts)} texts, {len(metadatas)} metadatas and {len(ids)} ids")
        out = []
        for text, meta, doc_id in zip(texts, metadatas, ids):
            meta = dict(meta)
            if _ID_KEY in meta:
                raise ValueError(f"metadata key {_ID_KEY!r} is reserved")
            if doc_id is None:
                item = self._db.memorg.create_memory_item(text, self._type, metadata=meta)
                out.append(str(item.id))
                continue
            doc_id = str(doc_id)
            key = _key(doc_id)
            if str(key) != doc_id:
                meta[_ID_KEY] = doc_id
            self._put(key, text, meta)
            out.append(doc_id)
        return out

    def _put(self, key: uuid.UUID, text: str, meta: dict) -> None:
        m = self._db.memorg
        for _ in range(2):
            try:
                old = m.memory_item(key)
            except NotFound:
                try:
                    m.create_memory_item_as(key, text, self._type, metadata=meta)
                    return
                except Conflict:
                    continue  # written meanwhile: replace it
            if str(old.type) != self._type and old.to_dict().get("custom_type") != self._type:
                raise Conflict(f"id {key} holds a memory item of another type ({old.type})")
            m.update_memory_item(key, content=text, metadata=meta)
            return
        raise Conflict(f"id {key} changed twice while it was written")

    def similarity_search_with_score(
        self, query: str, k: int = 4, filter: Optional[dict] = None, **kwargs: Any
    ) -> List[Tuple[Document, float]]:
        """The ``k`` best documents for ``query`` with memdb's score
        (higher is better); ``filter`` is a Chroma-style ``where``."""
        hits = self._db.memorg.search_memory(
            query, item_types=[self._type], filters=filter, limit=k
        )
        return [(self._document(h.item), float(h.score)) for h in hits]

    def similarity_search(
        self, query: str, k: int = 4, filter: Optional[dict] = None, **kwargs: Any
    ) -> List[Document]:
        return [d for d, _ in self.similarity_search_with_score(query, k, filter)]

    def delete(self, ids: Optional[List[str]] = None, **kwargs: Any) -> Optional[bool]:
        """Deletes the documents of ``ids``; ids not stored are ignored."""
        for i in ids or []:
            try:
                self._db.memorg.delete(_key(str(i)))
            except NotFound:
                continue
        return True

    def get_by_ids(self, ids: Sequence[str], /) -> List[Document]:
        """The stored documents of ``ids``, in that order; missing ids are
        skipped."""
        out = []
        for i in ids:
            try:
                out.append(self._document(self._db.memorg.memory_item(_key(str(i)))))
            except NotFound:
                continue
        return out

    @classmethod
    def from_texts(
        cls,
        texts: List[str],
        embedding: Any = None,
        metadatas: Optional[List[dict]] = None,
        *,
        ids: Optional[List[str]] = None,
        db: Optional[Memdb] = None,
        path: Optional[str] = None,
        item_type: str = "document",
        **kwargs: Any,
    ) -> "MemdbVectorStore":
        """A store over ``db`` (or the memdb store at ``path``, opened with
        ``embedder="auto"``) holding ``texts``."""
        if db is None:
            if path is None:
                raise ValueError("give db= (an open memdb store) or path= (its directory)")
            db = _open(path, embedder=kwargs.pop("embedder", "auto"))
        store = cls(db, item_type=item_type, embedding=embedding)
        store.add_texts(texts, metadatas, ids=ids)
        return store

    @staticmethod
    def _document(item: Any) -> Document:
        meta = dict(item.metadata or {})
        doc_id = meta.pop(_ID_KEY, None) or str(item.id)
        return Document(page_content=item.content, metadata=meta, id=doc_id)


#: Where a caller's document id that is not a UUID is kept (the item's own
#: id is derived from it, :func:`_key`); hidden from the document's metadata.
_ID_KEY = "_memdb_document_id"
_ID_NAMESPACE = uuid.UUID("5f0b6c1e-8f5e-4d8a-9a53-6d656d64620a")


def _key(doc_id: str) -> uuid.UUID:
    """The memory item id of a document id: the id itself when it is a UUID,
    else a name-based UUID (uuid5) of it, so one document id always names
    one item."""
    try:
        return uuid.UUID(doc_id)
    except ValueError:
        return uuid.uuid5(_ID_NAMESPACE, doc_id)


_TO_ROLE = {"human": "user", "ai": "assistant", "system": "system"}
_FROM_ROLE = {"user": HumanMessage, "assistant": AIMessage, "system": SystemMessage}


class MemdbChatMessageHistory(BaseChatMessageHistory):
    """The messages of one chat session, kept as the Sekha conversation
    labelled ``session_id`` in ``folder`` (created by the first message)."""

    def __init__(self, db: Memdb, session_id: str, folder: str = "/langchain"):
        self._db = db
        self.session_id = session_id
        self.folder = folder

    def _conversation_id(self) -> Optional[str]:
        page = self._db.sekha.list(label=self.session_id, folder=self.folder, limit=1)
        return str(page.conversations[0].id) if page.conversations else None

    @property
    def messages(self) -> List[BaseMessage]:  # type: ignore[override]
        cid = self._conversation_id()
        if cid is None:
            return []
        out: List[BaseMessage] = []
        for m in self._db.sekha.get_with_messages(cid).messages:
            cls = _FROM_ROLE.get(m.role, HumanMessage)
            out.append(cls(content=m.text))
        return out

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        rows = [
            (_TO_ROLE.get(m.type, m.type), m.content if isinstance(m.content, str) else str(m.text))
            for m in messages
        ]
        if not rows:
            return
        cid = self._conversation_id()
        if cid is None:
            self._db.sekha.create_conversation(self.session_id, rows, folder=self.folder)
        else:
            self._db.sekha.append(cid, rows)

    def clear(self) -> None:
        cid = self._conversation_id()
        if cid is not None:
            self._db.sekha.delete(cid)
