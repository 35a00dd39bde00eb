"""Named vector spaces: vectors of one dimension and metric, searched by an
HNSW index that survives crashes. Rows may be lists or NumPy arrays: a
float32 C-contiguous array is read straight from its buffer (other dtypes
and layouts are converted once by NumPy), lists element by element."""

from __future__ import annotations

import uuid
from typing import Any, Iterable, List, Optional, Sequence, Union

from .types import Record, VectorHit

__all__ = ["Vectors"]

Id = Union[uuid.UUID, str]


def _ndarray(value: Any, ndim: int) -> Any:
    """``value`` as a C-contiguous float32 NumPy array of ``ndim``
    dimensions (the same object when it already is one: no copy), or None
    when it is not a NumPy array of that shape (lists take the other path,
    and NumPy is never imported for them)."""
    if type(value).__module__ != "numpy":
        return None
    import numpy as np

    if not isinstance(value, np.ndarray) or value.ndim != ndim:
        return None
    return np.ascontiguousarray(value, dtype=np.float32)


def _rows(vectors: Any) -> List[List[float]]:
    if hasattr(vectors, "tolist"):
        vectors = vectors.tolist()
    return [list(map(float, v)) for v in vectors]


class Vectors:
    """The vector-space API of one store handle (``db.vectors``)."""

    def __init__(self, store):
        self._s = store

    def create_space(
        self,
        name: str,
        dimension: int,
        metric: str = "cosine",
        *,
        m: Optional[int] = None,
        ef_construction: Optional[int] = None,
    ) -> Record:
        """Creates a space; ``metric`` is ``"cosine"``, ``"dot"`` or ``"l2"``."""
        spec = {"name": name, "dimension": dimension, "metric": metric}
        if m is not None:
            spec["m"] = m
        if ef_construction is not None:
            spec["ef_construction"] = ef_construction
        return Record(self._s.create_vector_space(spec))

    def upsert(self, space: str, ids: Sequence[Id], vectors: Any) -> None:
        """Writes ``vectors[i]`` under ``ids[i]`` (a 2-D array or a list of
        rows), replacing what those ids held."""
        keys = [str(i) for i in ids]
        array = _ndarray(vectors, 2)
        if array is not None:
            self._s.upsert_vector_array(space, keys, array)
        else:
            self._s.upsert_vectors(space, keys, _rows(vectors))

    def search(
        self, space: str, query: Iterable[float], k: int = 10, *, ef: Optional[int] = None
    ) -> List[VectorHit]:
        """The ``k`` nearest ids to ``query``, best first."""
        array = _ndarray(query, 1)
        if array is not None:
            hits = self._s.search_vector_array(space, array, k, ef)
        else:
            q = query.tolist() if hasattr(query, "tolist") else list(query)
            hits = self._s.search_vectors(space, [float(x) for x in q], k, ef)
        return [VectorHit(id=uuid.UUID(i), similarity=s) for i, s in hits]
