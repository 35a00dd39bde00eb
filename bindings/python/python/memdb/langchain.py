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

from typing import Any, Iterable, List, Optional, Sequence, Tuple

from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.documents import Document
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.vectorstores import VectorStore

from . import Memdb, NotFound
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
        ids: Optional[List[str]] = None,
        **kwargs: Any,
    ) -> List[str]:
        """Stores each text as a memory item; returns memdb's ids (caller
        ids are refused: memdb assigns ids)."""
        if ids is not None:
            raise ValueError("memdb assigns document ids; add without ids and keep the ones returned")
        texts = list(texts)
        metadatas = metadatas or [{} for _ in texts]
        if len(metadatas) != len(texts):
            raise ValueError(f"{len(texts)} texts but {len(metadatas)} metadatas")
        out = []
        for text, meta in zip(texts, metadatas):
            item = self._db.memorg.create_memory_item(text, self._type, metadata=dict(meta))
            out.append(str(item.id))
        return out

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
        for i in ids or []:
            self._db.memorg.delete(i)
        return True

    def get_by_ids(self, ids: Sequence[str], /) -> List[Document]:
        out = []
        for i in ids:
            try:
                out.append(self._document(self._db.memorg.memory_item(i)))
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
        return Document(page_content=item.content, metadata=dict(item.metadata or {}), id=str(item.id))


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
