"""Semantic search over the workspace's item vectors (unit length), keyed by row id.

Two implementations of one interface (``search``, ``vector_of``, ``similar_to``, ``len``):

- ``VectorIndex``: exact cosine search in memory. The vectors sit in the shared
  ``VectorMatrix`` (the Smart Connections cache uses the same class), loaded once per
  index generation. The right choice for SQLite: numpy over 100k vectors takes
  milliseconds, faster than any query through the database.
- ``StoreVectorIndex``: asks a store that searches its own vectors (PostgreSQL's pgvector
  HNSW), so a process never holds a million vectors it does not need.

``vector_index(store, model)`` picks the one the store is built for. Both note the store's
``generation`` and ``vector_generation`` they reflect; a background embedder hands each
stored batch to ``extend``, so readers see new vectors as they land without a reload.
"""

from __future__ import annotations

import threading

import numpy as np

from ..store.base import Store
from .matrix import VectorMatrix


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
        self.rowids, vectors = store.load_vectors(model)
        # Used in place (a store may hand out a read-only mapping of its saved vectors:
        # a one-question process then never copies the matrix).
        self._matrix = VectorMatrix.wrap(vectors) if len(self.rowids) else VectorMatrix()
        self._pos_map: dict[int, int] | None = None
        # Searches and extensions may come from different threads (readers and the
        # background embedder): a search sees the matrix before or after a batch.
        self._lock = threading.Lock()

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
            if self._matrix.dim is not None and vectors.shape[1] != self._matrix.dim:
                return  # another model's size: never mixed into this matrix
            fresh_ids, fresh_rows = [], []
            for i, r in enumerate(int(x) for x in rowids):
                if r not in self._pos:
                    fresh_ids.append(r)
                    fresh_rows.append(i)
            if not fresh_ids:
                return
            rows = self._matrix.add(vectors[fresh_rows])
            n = self._matrix.n_rows
            if len(self.rowids) < n or not self.rowids.flags.writeable:
                grown = np.zeros(max(n, len(self.rowids)), dtype=np.int64)
                grown[: len(self.rowids)] = self.rowids
                self.rowids = grown
            self.rowids[rows] = np.asarray(fresh_ids, dtype=np.int64)
            for row, r in zip(rows.tolist(), fresh_ids):
                self._pos[r] = row

    def search(
        self, query: np.ndarray, k: int = 200, allowed: set[int] | None = None
    ) -> list[tuple[int, float]]:
        """(rowid, cosine) of the ``k`` nearest items, best first; ``allowed`` restricts
        the search to those row ids before the top ``k`` are cut."""
        with self._lock:
            if not len(self.rowids):
                return []
            q = np.asarray(query, dtype=np.float32).reshape(-1)
            if q.shape[0] != self._matrix.dim:
                # Never compare vectors of two different models.
                return []
            mask = None
            if allowed is not None:
                mask = np.isin(self.rowids, np.fromiter(allowed, dtype=np.int64, count=len(allowed)))
            rows, scores = self._matrix.top_k(q, k, mask)
            return [(int(self.rowids[i]), float(s)) for i, s in zip(rows.tolist(), scores.tolist())]

    def vector_of(self, rowid: int) -> np.ndarray | None:
        with self._lock:
            i = self._pos.get(int(rowid))
            return None if i is None else self._matrix.row(i).copy()

    def vectors_of(self, rowids: list[int]) -> dict[int, np.ndarray]:
        """The vectors of those items that have one."""
        return {int(r): v for r in rowids if (v := self.vector_of(r)) is not None}
