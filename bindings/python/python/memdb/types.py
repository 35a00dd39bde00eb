"""Typed results: the engine's answers as dataclasses, ids as ``uuid.UUID``,
timestamps as timezone-aware ``datetime`` (UTC).

The native module hands back plain dicts; :func:`build` turns one into the
dataclass named for it, field by field, by the field's annotation. Results
without a dataclass of their own come back as :class:`Record`, which reads
its keys as attributes and converts ids and timestamps by name.
"""

from __future__ import annotations

import dataclasses
import re
import sys
import uuid
from datetime import datetime, timezone
from typing import Any, Callable, Dict, List, Optional, Tuple, Union, get_type_hints

__all__ = [
    "Conversation",
    "ConversationPage",
    "ConversationWithMessages",
    "KnowledgeBase",
    "KbStatus",
    "Message",
    "Record",
    "SearchHit",
    "SearchResults",
    "Stats",
    "SyncReport",
    "VectorHit",
    "build",
    "parse_time",
    "format_time",
]


_TIME = re.compile(r"^(?P<main>[^.]*?)(?:\.(?P<frac>\d+))?(?P<zone>[Zz]|[+-]\d\d:\d\d)?$")


#: Python 3.11's ``fromisoformat`` reads every RFC 3339 form the engine
#: writes (``Z``, any fraction length); older ones take the regex path.
_FROMISOFORMAT_READS_RFC3339 = sys.version_info >= (3, 11)


def parse_time(text: str) -> datetime:
    """An RFC 3339 timestamp as an aware ``datetime`` (Python 3.9 and 3.10
    read neither ``Z`` nor fractions of other than 3 or 6 digits: both are
    normalised first). A timestamp without an offset is UTC."""
    if _FROMISOFORMAT_READS_RFC3339:
        try:
            t = datetime.fromisoformat(text)
        except ValueError:
            pass
        else:
            return t if t.tzinfo is not None else t.replace(tzinfo=timezone.utc)
    m = _TIME.match(text.strip())
    if not m:
        raise ValueError(f"not an RFC 3339 timestamp: {text!r}")
    frac = m.group("frac")
    zone = m.group("zone") or "+00:00"
    if zone in ("Z", "z"):
        zone = "+00:00"
    main = m.group("main") + ("." + (frac + "000000")[:6] if frac else "")
    return datetime.fromisoformat(main + zone)


def format_time(value: Union[datetime, str]) -> str:
    """A ``datetime`` as RFC 3339 for the engine; a naive one is UTC."""
    if isinstance(value, str):
        return value
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return value.isoformat()


_ID_KEYS = ("id", "record")
_TIME_KEYS = ("timestamp", "now", "since", "until")


def _looks_like_id(key: str) -> bool:
    return key in _ID_KEYS or key.endswith("_id")


def _looks_like_time(key: str) -> bool:
    return key in _TIME_KEYS or key.endswith("_at")


class Record:
    """A result without a dataclass of its own: its keys are attributes;
    ``*_id`` keys are ``uuid.UUID`` and ``*_at`` keys ``datetime``; nested
    dicts are Records too. ``to_dict()`` gives the plain data back."""

    __slots__ = ("_data",)

    def __init__(self, data: Dict[str, Any]):
        object.__setattr__(self, "_data", {k: _convert_by_name(k, v) for k, v in data.items()})

    def __getattr__(self, name: str) -> Any:
        try:
            return self._data[name]
        except KeyError:
            raise AttributeError(name) from None

    def __getitem__(self, name: str) -> Any:
        return self._data[name]

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("results are read-only")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Record) and other._data == self._data

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self._data.items())
        return f"Record({inner})"

    def __dir__(self) -> List[str]:
        return sorted(self._data)

    def keys(self):
        return self._data.keys()

    def to_dict(self) -> Dict[str, Any]:
        return {k: _plain(v) for k, v in self._data.items()}


def _plain(v: Any) -> Any:
    if isinstance(v, Record):
        return v.to_dict()
    if isinstance(v, list):
        return [_plain(x) for x in v]
    if isinstance(v, uuid.UUID):
        return str(v)
    if isinstance(v, datetime):
        return format_time(v)
    return v


#: Keys whose value is the caller's own free-form data: kept as given.
_PLAIN_KEYS = ("metadata", "system_config", "config", "filters")


def _convert_by_name(key: str, v: Any) -> Any:
    if key in _PLAIN_KEYS:
        return v
    if isinstance(v, str):
        if _looks_like_id(key):
            try:
                return uuid.UUID(v)
            except ValueError:
                return v
        if _looks_like_time(key):
            try:
                return parse_time(v)
            except ValueError:
                return v
        return v
    if isinstance(v, dict):
        return Record(v)
    if isinstance(v, list):
        if key.endswith("_ids"):
            return [_convert_by_name("id", x) for x in v]
        return [_convert_by_name(key, x) if not isinstance(x, dict) else Record(x) for x in v]
    return v


def _identity(value: Any) -> Any:
    return value


def _converter(hint: Any) -> Callable[[Any], Any]:
    """The function turning a native value into ``hint`` (None stays
    None), made once per hint and kept: results are built per hit, so the
    type hints are read when a class is first used, not per value."""
    conv = _CONVERTERS.get(hint)
    if conv is not None:
        return conv
    origin = getattr(hint, "__origin__", None)
    args = getattr(hint, "__args__", ())
    if origin is Union:
        inner = [a for a in args if a is not type(None)]
        conv = _converter(inner[0]) if len(inner) == 1 else _identity
    elif origin in (list, List):
        item = _converter(args[0]) if args else _identity

        def conv(v: Any) -> Any:
            return None if v is None else [item(x) for x in v]

    elif hint is uuid.UUID:

        def conv(v: Any) -> Any:
            return None if v is None else uuid.UUID(v)

    elif hint is datetime:

        def conv(v: Any) -> Any:
            return None if v is None else parse_time(v)

    elif dataclasses.is_dataclass(hint):

        def conv(v: Any) -> Any:
            return None if v is None else build(hint, v)

    else:
        conv = _identity
    _CONVERTERS[hint] = conv
    return conv


_CONVERTERS: Dict[Any, Callable[[Any], Any]] = {}
_PLANS: Dict[type, List[Tuple[str, Callable[[Any], Any]]]] = {}


def build(cls: type, data: Dict[str, Any]):
    """``data`` (a dict from the native module) as dataclass ``cls``; keys
    the class does not name are dropped (a newer engine may add fields)."""
    plan = _PLANS.get(cls)
    if plan is None:
        hints = get_type_hints(cls, vars(sys.modules[cls.__module__]))
        plan = [(f.name, _converter(hints[f.name])) for f in dataclasses.fields(cls)]
        _PLANS[cls] = plan
    return cls(**{name: conv(data[name]) for name, conv in plan if name in data})


@dataclasses.dataclass(frozen=True)
class Message:
    """A stored message. ``content`` is text, or the multi-part list the
    writer gave."""

    id: uuid.UUID
    conversation_id: uuid.UUID
    role: str
    content: Any
    timestamp: datetime
    metadata: Any = None
    embedding_id: Optional[str] = None

    @property
    def text(self) -> str:
        """The message's text (parts joined by newlines)."""
        if isinstance(self.content, str):
            return self.content
        parts = []
        for p in self.content or []:
            if isinstance(p, dict) and isinstance(p.get("text"), str):
                parts.append(p["text"])
        return "\n".join(parts)


@dataclasses.dataclass(frozen=True)
class Conversation:
    """A Sekha conversation (without its messages)."""

    id: uuid.UUID
    label: str
    folder: str
    status: str
    importance_score: int
    pinned: bool
    word_count: int
    session_count: int
    message_count: int
    created_at: datetime
    updated_at: datetime
    metadata: Any = None


@dataclasses.dataclass(frozen=True)
class ConversationWithMessages:
    """A conversation and its messages, oldest first."""

    conversation: Conversation
    messages: List[Message]

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "ConversationWithMessages":
        rest = {k: v for k, v in data.items() if k != "messages"}
        return cls(
            conversation=build(Conversation, rest),
            messages=[build(Message, m) for m in data.get("messages", [])],
        )

    @property
    def id(self) -> uuid.UUID:
        return self.conversation.id


@dataclasses.dataclass(frozen=True)
class ConversationPage:
    """One page of a listing and the total that matched."""

    conversations: List[Conversation]
    total: int
    offset: int
    limit: int


@dataclasses.dataclass(frozen=True)
class SearchHit:
    """A message that matched, with its conversation's label and folder;
    ``score`` is higher-is-better in every mode."""

    message: Message
    label: str
    folder: str
    score: float
    explain: Any = None


@dataclasses.dataclass(frozen=True)
class SearchResults:
    """Hits best first, the mode that ran, and the engine's notes."""

    hits: List[SearchHit]
    mode: str
    notes: List[Any] = dataclasses.field(default_factory=list)
    plan: List[Any] = dataclasses.field(default_factory=list)


@dataclasses.dataclass(frozen=True)
class Stats:
    """Totals over the conversations a filter selects."""

    total_conversations: int
    total_messages: int
    total_words: int
    active: int
    archived: int
    pinned: int
    average_importance: float
    by_folder: Dict[str, int]
    by_label: Dict[str, int]


@dataclasses.dataclass(frozen=True)
class KnowledgeBase:
    """A KuraDB knowledge base over its inbox folders."""

    name: str
    namespace: str
    inbox: List[str]
    created_at: datetime
    owner: str = ""


@dataclasses.dataclass(frozen=True)
class KbStatus:
    """What a knowledge base holds and what is still to embed."""

    name: str
    documents: int
    dismissed: int
    chunks: int
    embedded: int
    pending: int


@dataclasses.dataclass(frozen=True)
class SyncReport:
    """What one sync of a knowledge base did."""

    scanned: int
    parsed: int
    unchanged: int
    dismissed: int
    revived: int
    skipped: int
    failed: int
    chunks: int
    unreadable: int = 0


@dataclasses.dataclass(frozen=True)
class VectorHit:
    """A record near a query vector; ``similarity`` is higher-is-better."""

    id: uuid.UUID
    similarity: float
