"""Semantic search over the workspace's item vectors (unit length), keyed by row id.

Two implementations of one interface (``search``, ``vector_of``, ``similar_to``, ``len``):

- ``VectorIndex``: exact cosine search in memory. The vectors sit in the store's mapped
  vector file (SQLite's, as it is on disk) or in the shared ``VectorMatrix`` (the Smart
  Connections cache uses the same class), loaded once per index generation. The right
  choice for SQLite: a scan of 100k vectors takes milliseconds, faster than any query
  through the database. Every search scores with one kernel (``simsimd``'s dot product,
  which reads any buffer: a mapping or a numpy array), so a one-question process that
  searches the mapping needs no numpy, whose import cost it more than the search, and a
  server holding a numpy matrix gives the very same scores.
- ``StoreVectorIndex``: asks a store that searches its own vectors (PostgreSQL's pgvector
  HNSW), so a process never holds a million vectors it does not need.

``vector_index(store, model)`` picks the one the store is built for. Both note the store's
``generation`` and ``vector_generation`` they reflect; a background embedder hands each
stored batch to ``extend``, so readers see new vectors as they land without a reload.
"""

from __future__ import annotations

import heapq
import math
import sys
import threading
from array import array
from typing import TYPE_CHECKING, Any

from ..lazy import LazyModule
from ..store.base import Store

if TYPE_CHECKING:
    import numpy as np

    from .matrix import VectorMatrix
else:  # a one-question process searching the mapped vector file loads none of it
    np = LazyModule("numpy")


class _Similar:
    """``similar_to`` for both indexes, from their ``vector_of`` and ``search``."""

    def similar_to(self, rowid: int, k: int = 10) -> list[tuple[int, float]]:
        v = self.vector_of(rowid)  # type: ignore[attr-defined]
        if v is None:
            return []
        return [(r, s) for r, s in self.search(v, k + 1) if r != rowid][:k]  # type: ignore[attr-defined]


def vector_index(store: Store, model: str) -> "VectorIndex | StoreVectorIndex":
    """The semantic index of ``model``'s vectors the store is built for."""
    if getattr(store, "searches_vectors", False):
        return StoreVectorIndex(store, model)
    return VectorIndex(store, model)


class StoreVectorIndex(_Similar):
    """Semantic search answered by the store's own vector index, nothing held in memory."""

    def __init__(self, store: Store, model: str):
        self.store = store
        self.model = model
        self.generation = store.generation()
        self.vector_generation = store.vector_generation()
        self._count = int(store.vector_models().get(model, 0))

    def __len__(self) -> int:
        return self._count

    def extend(self, rowids, vectors: np.ndarray) -> None:
        """The store holds the new vectors already; only the count moves."""
        self._count += len(rowids)

    def search(
        self, query: np.ndarray, k: int = 200, allowed: set[int] | None = None
    ) -> list[tuple[int, float]]:
        if not self._count or (allowed is not None and not allowed):
            return []
        return self.store.nearest(self.model, np.asarray(query, dtype=np.float32).reshape(-1), k, among=allowed)

    def vector_of(self, rowid: int) -> np.ndarray | None:
        return self.store.vectors_for(self.model, [rowid]).get(int(rowid))

    def vectors_of(self, rowids: list[int]) -> dict[int, np.ndarray]:
        """The vectors of those items that have one (one query for all)."""
        return self.store.vectors_for(self.model, rowids)


class VectorIndex(_Similar):
    def __init__(self, store: Store, model: str):
        self.model = model
        self.generation = store.generation()
        self.vector_generation = store.vector_generation()
        mapped = getattr(store, "mapped_vectors", None)
        views = mapped(model) if mapped is not None else None
        # ``_view``: the mapped file's rows (a read-only memoryview, n x dim), searched in
        # place until a change needs ``_matrix`` (then numpy's, copied when first written).
        self._view: memoryview[Any] | None = None
        self._matrix: VectorMatrix | None = None
        if views is not None:
            self.rowids, self._view = views
        else:
            self.rowids, vectors = store.load_vectors(model)
            self._wrap(vectors)
        self._pos_map: dict[int, int] | None = None
        # Searches and extensions may come from different threads (readers and the
        # background embedder): a search sees the matrix before or after a batch.
        self._lock = threading.Lock()

    def _wrap(self, vectors: np.ndarray) -> None:
        from .matrix import VectorMatrix

        # Used in place (a store may hand out a read-only mapping of its saved vectors).
        self._matrix = VectorMatrix.wrap(vectors) if len(self.rowids) else VectorMatrix()

    def _in_numpy(self) -> VectorMatrix:
        """The vectors as a ``VectorMatrix`` (the mapped rows wrapped, not copied)."""
        if self._matrix is None:
            view, self._view = self._view, None
            assert view is not None
            self.rowids = np.frombuffer(self.rowids, dtype=np.int64)
            self._wrap(np.frombuffer(view, dtype=np.float32).reshape(view.shape))
        assert self._matrix is not None
        return self._matrix

    @property
    def _dim(self) -> int | None:
        if self._view is not None:
            shape = self._view.shape
            assert shape is not None
            return shape[1]
        return self._matrix.dim if self._matrix is not None else None

    def __len__(self) -> int:
        return len(self.rowids)

    @property
    def _pos(self) -> dict[int, int]:
        """Row of each row id; built when first asked (a search needs none)."""
        if self._pos_map is None:
            self._pos_map = {int(r): i for i, r in enumerate(self.rowids.tolist())}
        return self._pos_map

    def extend(self, rowids, vectors: np.ndarray) -> None:
        """Add the vectors of these items (an item already here keeps its vector: its
        content, and so its vector, changes only with a new row id)."""
        vectors = np.asarray(vectors, dtype=np.float32)
        if vectors.ndim != 2 or not len(vectors):
            return
        with self._lock:
            matrix = self._in_numpy()
            if matrix.dim is not None and vectors.shape[1] != matrix.dim:
                return  # another model's size: never mixed into this matrix
            fresh_ids, fresh_rows = [], []
            for i, r in enumerate(int(x) for x in rowids):
                if r not in self._pos:
                    fresh_ids.append(r)
                    fresh_rows.append(i)
            if not fresh_ids:
                return
            rows = matrix.add(vectors[fresh_rows])
            n = matrix.n_rows
            if len(self.rowids) < n or not self.rowids.flags.writeable:
                grown = np.zeros(max(n, len(self.rowids)), dtype=np.int64)
                grown[: len(self.rowids)] = self.rowids
                self.rowids = grown
            self.rowids[rows] = np.asarray(fresh_ids, dtype=np.int64)
            for row, r in zip(rows.tolist(), fresh_ids):
                self._pos[r] = row

    def search(
        self, query: Any, k: int = 200, allowed: set[int] | None = None
    ) -> list[tuple[int, float]]:
        """(rowid, cosine) of the ``k`` nearest items, best first (ties by row); ``allowed``
        restricts the search to those row ids before the top ``k`` are cut. ``query``: a
        float32 vector (a numpy array or any buffer or sequence of floats)."""
        with self._lock:
            if not len(self.rowids):
                return []
            q = _float32(query)
            if len(q) != self._dim:
                # Never compare vectors of two different models.
                return []
            if self._view is not None:
                if "numpy" not in sys.modules:
                    return self._search_view(q, k, allowed)
                # A process that has numpy (a server) ranks with it, several times faster
                # than in Python: the same scores, the same order (tests hold them equal).
                self._in_numpy()
            matrix = self._matrix
            assert matrix is not None
            from .matrix import top_k

            scores = np.frombuffer(dot_scores(matrix.matrix(), q), dtype=np.float32)
            mask = matrix.alive()
            if allowed is not None:
                mask = mask & np.isin(self.rowids[: matrix.n_rows],
                                      np.fromiter(allowed, dtype=np.int64, count=len(allowed)))
            rows, best = top_k(scores, k, mask)
            return [(int(self.rowids[i]), float(s)) for i, s in zip(rows.tolist(), best.tolist())]

    def _search_view(self, q: memoryview[Any], k: int, allowed: set[int] | None) -> list[tuple[int, float]]:
        """``search`` over the mapped rows, ranked as ``matrix.top_k`` ranks (the
        ``k`` highest finite scores, best first, ties by row) without numpy."""
        assert self._view is not None
        scores = dot_scores(self._view, q).tolist()
        ids = self.rowids.tolist()
        rows: Any = range(len(scores))
        if allowed is not None:
            rows = [i for i in rows if ids[i] in allowed]
        if not math.isfinite(math.fsum(scores[i] for i in rows) if allowed is not None else math.fsum(scores)):
            rows = [i for i in rows if math.isfinite(scores[i])]
        if k <= 0:
            return []
        # nlargest keeps equal scores in row order (as sorted(..., reverse=True) does).
        return [(ids[i], scores[i]) for i in heapq.nlargest(k, rows, key=scores.__getitem__)]

    def vector_of(self, rowid: int) -> np.ndarray | None:
        with self._lock:
            i = self._pos.get(int(rowid))
            if i is None:
                return None
            if self._view is not None:
                return np.frombuffer(self._view, dtype=np.float32).reshape(self._view.shape)[i].copy()
            return self._matrix.row(i).copy()  # type: ignore[union-attr]

    def vectors_of(self, rowids: list[int]) -> dict[int, np.ndarray]:
        """The vectors of those items that have one."""
        return {int(r): v for r in rowids if (v := self.vector_of(r)) is not None}


def _float32(query: Any) -> memoryview[Any]:
    """``query`` as a flat float32 buffer (converted, as ``astype(float32)`` rounds, when
    it is not one already)."""
    try:
        view = memoryview(query)
    except TypeError:
        view = None
    if view is None or view.format != "f" or not view.c_contiguous:
        view = memoryview(array("f", np.asarray(query, dtype=np.float32).reshape(-1).tobytes())
                          if view is not None else array("f", query))
    return view.cast("B").cast("f")


def dot_scores(matrix: Any, q: memoryview[Any]) -> memoryview[Any]:
    """``matrix @ q`` as float32 (cosines for unit rows): ``matrix`` any C-contiguous
    float32 buffer of n rows (a mapping's memoryview or a numpy array), one thread."""
    import simsimd

    cdist: Any = simsimd.cdist  # its stubs name numpy arrays; it reads any buffer
    return memoryview(cdist(q.cast("B").cast("f", [1, len(q)]), matrix, metric="dot",
                            out_dtype="float32")).cast("B").cast("f")
