"""A growable float32 matrix of unit vectors with exact cosine top-k.

Rows live in slots: ``remove`` frees a row and the next ``add`` reuses it, so updating
a few vectors never rebuilds the matrix. It grows by doubling (or to a size the caller
reserves), and ``compact`` closes the gaps when more than half of it is free, returning
where each surviving row went so the caller can move its own per-row data the same way.

Search is exact: one matrix-vector product, then ``argpartition`` for the top k among
the rows a mask allows (filters are resolved to rows before ranking, so a rare filter
never comes back empty because the global top hits did not pass it).
"""

from __future__ import annotations

import numpy as np

MIN_CAPACITY = 256
# Rows per matrix-vector block (see VectorMatrix.dot).
DOT_BLOCK = 1024


class VectorMatrix:
    """Vectors in rows ``0 .. n_rows-1`` (dead rows included; ``alive()`` masks them).

    ``dim`` is fixed by the first ``add`` unless given here.
    """

    def __init__(self, dim: int | None = None):
        self.dim = dim
        self._m = np.zeros((0, dim or 0), dtype=np.float32)
        self._alive = np.zeros(0, dtype=bool)
        self._free: list[int] = []
        self._n = 0

    @classmethod
    def wrap(cls, vectors: np.ndarray) -> "VectorMatrix":
        """A matrix whose rows are ``vectors`` (n x dim), used in place: a read-only
        (mapped) array is copied only when a change first needs to write it."""
        out = cls(int(vectors.shape[1]))
        out._m = vectors
        out._alive = np.ones(vectors.shape[0], dtype=bool)
        out._n = int(vectors.shape[0])
        return out

    def _writable(self) -> None:
        if not self._m.flags.writeable:
            self.resize(self.capacity)

    # -- shape ---------------------------------------------------------------------------

    @property
    def n_rows(self) -> int:
        """High-water mark of used rows; rows past it are never alive."""
        return self._n

    @property
    def capacity(self) -> int:
        return self._m.shape[0]

    @property
    def free_rows(self) -> int:
        return len(self._free)

    @property
    def nbytes(self) -> int:
        return int(self._m.nbytes + self._alive.nbytes)

    def __len__(self) -> int:
        """Alive rows."""
        return self._n - len(self._free)

    def matrix(self) -> np.ndarray:
        """The used part of the matrix (a view; dead rows hold stale values)."""
        return self._m[: self._n]

    def alive(self) -> np.ndarray:
        return self._alive[: self._n]

    def row(self, i: int) -> np.ndarray:
        return self._m[i]

    # -- changes -------------------------------------------------------------------------

    def add(self, vectors: np.ndarray) -> np.ndarray:
        """Store ``vectors`` (k x dim, or one vector); returns their row numbers."""
        vectors = np.asarray(vectors, dtype=np.float32)
        if vectors.ndim == 1:
            vectors = vectors.reshape(1, -1)
        k = vectors.shape[0]
        if k == 0:
            return np.zeros(0, dtype=np.int64)
        if self.dim is None:
            self.dim = int(vectors.shape[1])
            self._m = np.zeros((self._m.shape[0], self.dim), dtype=np.float32)
        elif vectors.shape[1] != self.dim:
            raise ValueError(f"vectors have {vectors.shape[1]} dimensions, the matrix has {self.dim}")
        self._writable()
        take = min(k, len(self._free))
        rows = [self._free.pop() for _ in range(take)]
        if take < k:
            need = k - take
            if self._n + need > self.capacity:
                self.resize(max(MIN_CAPACITY, self.capacity * 2, self._n + need))
            rows.extend(range(self._n, self._n + need))
            self._n += need
        idx = np.asarray(rows, dtype=np.int64)
        self._m[idx] = vectors
        self._alive[idx] = True
        return idx

    def remove(self, rows) -> None:
        """Free these rows (their slots are reused by later adds)."""
        for r in np.atleast_1d(np.asarray(rows, dtype=np.int64)).tolist():
            if 0 <= r < self._n and self._alive[r]:
                self._alive[r] = False
                self._free.append(r)

    def reserve(self, rows: int) -> None:
        """Make room for ``rows`` rows at once (one copy instead of repeated doubling)."""
        if rows > self.capacity:
            self.resize(rows)

    def fit(self) -> None:
        """Drop spare capacity beyond a little headroom (after a bulk load)."""
        fit = max(MIN_CAPACITY, self._n + self._n // 8)
        if self.capacity > fit:
            self.resize(fit)

    def resize(self, capacity: int) -> None:
        capacity = max(capacity, self._n)
        m = np.zeros((capacity, self.dim or 0), dtype=np.float32)
        m[: self._n] = self._m[: self._n]
        alive = np.zeros(capacity, dtype=bool)
        alive[: self._n] = self._alive[: self._n]
        self._m, self._alive = m, alive

    def compact(self, min_free: int | None = None) -> np.ndarray | None:
        """Move alive rows to the front when at least ``min_free`` rows are free (default:
        half the used rows, and at least ``MIN_CAPACITY``). Returns the old row number of
        each new row (``new_row -> old_row``), or None when nothing moved."""
        threshold = max(MIN_CAPACITY, self._n // 2) if min_free is None else min_free
        if not self._free or len(self._free) < threshold:
            return None
        live = np.flatnonzero(self._alive[: self._n])
        self._writable()
        self._m[: live.size] = self._m[live]
        self._alive[: live.size] = True
        self._alive[live.size :] = False
        self._n = int(live.size)
        self._free = []
        capacity = max(MIN_CAPACITY, 1 << max(0, self._n - 1).bit_length())
        if capacity < self.capacity // 2:
            self.resize(capacity)
        return live

    def clear(self) -> None:
        VectorMatrix.__init__(self, None)

    # -- search --------------------------------------------------------------------------

    def dot(self, vector: np.ndarray) -> np.ndarray:
        """``matrix() @ vector`` (cosines for unit vectors), one BLAS thread's worth at a time.

        OpenBLAS splits a large matrix-vector product over all cores; for one query that
        costs more in thread wake-ups than it saves (12 ms instead of 1.5 ms for 24,000
        x 384 on a busy two-core machine). Blocks of ``DOT_BLOCK`` rows stay under its
        threading threshold, without touching the process-wide thread setting.
        """
        return blocked_dot(self._m[: self._n], vector)

    def top_k(self, vector: np.ndarray, k: int, allowed: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``(rows, scores)`` of the ``k`` alive rows most similar to ``vector``, best first;
        ``allowed`` (a bool mask over ``n_rows``) restricts the rows considered."""
        mask = self.alive() if allowed is None else (self.alive() & allowed[: self._n])
        return top_k(self.dot(vector), k, mask)


def blocked_dot(matrix: np.ndarray, vector: np.ndarray) -> np.ndarray:
    """``matrix @ vector`` in blocks of ``DOT_BLOCK`` rows (see ``VectorMatrix.dot``)."""
    vector = np.ascontiguousarray(vector, dtype=np.float32).reshape(-1)
    n = matrix.shape[0]
    out = np.empty(n, dtype=np.float32)
    for start in range(0, n, DOT_BLOCK):
        stop = min(start + DOT_BLOCK, n)
        np.dot(matrix[start:stop], vector, out=out[start:stop])
    return out


def top_k(scores: np.ndarray, k: int, allowed: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(indexes, scores)`` of the ``k`` highest finite ``scores`` where ``allowed``, best
    first; of equal scores the lower indexes come first and are the ones kept (as a
    stable sort would keep them: the Python ranking of a mapped file, retrieval/vector.py,
    gives the same)."""
    scores = np.asarray(scores, dtype=np.float32)
    masked = scores if allowed is None else np.where(allowed, scores, -np.inf)
    eligible = np.flatnonzero(np.isfinite(masked))
    if k <= 0 or eligible.size == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
    if eligible.size > k:
        values = masked[eligible]
        kth = values[np.argpartition(-values, k - 1)[k - 1]]
        # The partition keeps any of the scores equal to the k-th: take the lowest indexes.
        above = eligible[values > kth]
        eligible = np.concatenate([above, eligible[values == kth][: k - above.size]])
    order = np.lexsort((eligible, -masked[eligible]))
    rows = eligible[order]
    return rows, masked[rows]
