"""Exact cosine search over an in-memory float32 matrix (vectors are unit length)."""

from __future__ import annotations

import numpy as np

from ..store.base import Store


class VectorIndex:
    def __init__(self, store: Store, model: str):
        self.model = model
        self.generation = store.generation()
        self.rowids, self.matrix = store.load_vectors(model)
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
        if q.shape[0] != self.matrix.shape[1]:
            # Never compare vectors of two different models.
            return []
        scores = self.matrix @ q
        if allowed is not None:
            mask = np.isin(self.rowids, np.fromiter(allowed, dtype=np.int64, count=len(allowed)))
            scores = np.where(mask, scores, -np.inf)
            k = min(k, int(mask.sum()))
            if k <= 0:
                return []
        k = min(k, len(scores))
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.argsort(-scores[top])]
        return [(int(self.rowids[i]), float(scores[i])) for i in top]

    def vector_of(self, rowid: int) -> np.ndarray | None:
        i = self._pos.get(int(rowid))
        return None if i is None else self.matrix[i]

    def similar_to(self, rowid: int, k: int = 10) -> list[tuple[int, float]]:
        v = self.vector_of(rowid)
        if v is None:
            return []
        return [(r, s) for r, s in self.search(v, k + 1) if r != rowid][:k]
