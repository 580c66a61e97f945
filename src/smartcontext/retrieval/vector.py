"""Exact cosine search over the workspace's item vectors (unit length), keyed by row id.

The vectors sit in the shared ``VectorMatrix`` (the Smart Connections cache uses the same
class), loaded once per index generation; this class maps the store's item row ids to
matrix rows and back.
"""

from __future__ import annotations

import numpy as np

from ..store.base import Store
from .matrix import VectorMatrix


class VectorIndex:
    def __init__(self, store: Store, model: str):
        self.model = model
        self.generation = store.generation()
        self.rowids, vectors = store.load_vectors(model)
        self._matrix = VectorMatrix()
        if len(self.rowids):
            self._matrix.reserve(len(self.rowids))
            self._matrix.add(vectors)
        self._pos = {int(r): i for i, r in enumerate(self.rowids)}

    def __len__(self) -> int:
        return len(self.rowids)

    def search(
        self, query: np.ndarray, k: int = 200, allowed: set[int] | None = None
    ) -> list[tuple[int, float]]:
        """(rowid, cosine) of the ``k`` nearest items, best first; ``allowed`` restricts
        the search to those row ids before the top ``k`` are cut."""
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
        i = self._pos.get(int(rowid))
        return None if i is None else self._matrix.row(i)

    def similar_to(self, rowid: int, k: int = 10) -> list[tuple[int, float]]:
        v = self.vector_of(rowid)
        if v is None:
            return []
        return [(r, s) for r, s in self.search(v, k + 1) if r != rowid][:k]
