"""Embed each distinct text once per model: vectors are cached by the sha256 of the text."""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import asdict, dataclass

import numpy as np

from ..errors import EmbeddingError
from .base import Embedder

Progress = Callable[[int, int], None]

DEFAULT_BATCH_SIZE = 64
# Stay well under SQLite's bound-parameter limit on older builds (999).
_LOOKUP_CHUNK = 500

_SCHEMA = """
CREATE TABLE IF NOT EXISTS embedding_cache (
    model TEXT NOT NULL,
    hash TEXT NOT NULL,
    dim INTEGER NOT NULL,
    vec BLOB NOT NULL,
    PRIMARY KEY (model, hash)
)
"""


def text_hash(text: str) -> str:
    """The cache key of ``text``: sha256 of its UTF-8 bytes, in hex."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass
class CacheStats:
    """What the last ``embed_cached`` call did.

    ``hits`` and ``misses`` count input texts (a repeated text counts each time);
    ``embedded`` counts the distinct texts sent to the model.
    """

    hits: int = 0
    misses: int = 0
    embedded: int = 0

    def to_dict(self) -> dict[str, int]:
        return asdict(self)


class EmbeddingCache:
    """Vectors by (model name, text hash) in the ``embedding_cache`` table of ``conn``.

    ``lock``, when given, is held around every database access (not around the model
    call), for connections shared between threads.
    """

    def __init__(self, conn: sqlite3.Connection, lock: threading.RLock | threading.Lock | None = None):
        self.conn = conn
        self._lock: AbstractContextManager = lock if lock is not None else nullcontext()
        self.stats = CacheStats()
        with self._lock:
            conn.execute(_SCHEMA)

    def embed_cached(
        self,
        embedder: Embedder,
        texts: Sequence[str],
        batch_size: int = DEFAULT_BATCH_SIZE,
        progress: Progress | None = None,
    ) -> np.ndarray:
        """Vectors for ``texts`` in input order, embedding only those the cache lacks.

        New vectors are stored batch by batch, each batch in one transaction, so an
        interrupted run keeps what it finished. ``progress(done, total)`` counts the
        distinct texts that needed the model.
        """
        if batch_size < 1:
            raise EmbeddingError(f"batch_size must be at least 1, got {batch_size}")
        model = embedder.name
        hashes = [text_hash(t) for t in texts]
        first: dict[str, int] = {}
        for i, h in enumerate(hashes):
            first.setdefault(h, i)
        vectors = self._lookup(model, list(first))
        if len({v.shape[0] for v in vectors.values()}) > 1:
            vectors = {}  # mixed sizes under one model key: re-embed rather than guess
        missing = [h for h in first if h not in vectors]
        stats = CacheStats(
            hits=sum(1 for h in hashes if h in vectors),
            misses=sum(1 for h in hashes if h not in vectors),
        )
        fresh = self._embed_and_store(embedder, [(h, texts[first[h]]) for h in missing], batch_size, progress)
        stats.embedded = len(fresh)
        if fresh and vectors:
            fresh_dim = next(iter(fresh.values())).shape[0]
            stale = [h for h, v in vectors.items() if v.shape[0] != fresh_dim]
            if stale:
                # The model behind this key changed size (e.g. a provider option): refresh.
                fresh.update(self._embed_and_store(embedder, [(h, texts[first[h]]) for h in stale], batch_size, None))
                stats.embedded += len(stale)
        vectors.update(fresh)
        self.stats = stats
        if not hashes:
            return np.zeros((0, embedder.dim), dtype=np.float32)
        return np.stack([vectors[h] for h in hashes]).astype(np.float32, copy=False)

    def clear(self, model: str | None = None) -> int:
        """Delete cached vectors (of one model, or all); returns how many rows went."""
        with self._lock, _transaction(self.conn):
            if model is None:
                cur = self.conn.execute("DELETE FROM embedding_cache")
            else:
                cur = self.conn.execute("DELETE FROM embedding_cache WHERE model = ?", (model,))
        return cur.rowcount

    # -- internals ------------------------------------------------------------------

    def _lookup(self, model: str, hashes: list[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        with self._lock:
            for start in range(0, len(hashes), _LOOKUP_CHUNK):
                chunk = hashes[start : start + _LOOKUP_CHUNK]
                marks = ",".join("?" * len(chunk))
                rows = self.conn.execute(
                    f"SELECT hash, dim, vec FROM embedding_cache WHERE model = ? AND hash IN ({marks})",
                    (model, *chunk),
                ).fetchall()
                for h, dim, blob in rows:
                    # A truncated or foreign blob is treated as absent and rewritten.
                    if dim and blob is not None and len(blob) == 4 * dim:
                        found[h] = np.frombuffer(blob, dtype=np.float32)
        return found

    def _embed_and_store(
        self,
        embedder: Embedder,
        todo: list[tuple[str, str]],
        batch_size: int,
        progress: Progress | None,
    ) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        total = len(todo)
        for start in range(0, total, batch_size):
            batch = todo[start : start + batch_size]
            matrix = np.asarray(embedder.embed([text for _, text in batch]), dtype=np.float32)
            if matrix.ndim != 2 or matrix.shape[0] != len(batch):
                raise EmbeddingError(
                    f"embedding model {embedder.name!r} returned shape {matrix.shape} for {len(batch)} texts"
                )
            dim = matrix.shape[1]
            rows = [(embedder.name, h, dim, matrix[i].tobytes()) for i, (h, _) in enumerate(batch)]
            with self._lock, _transaction(self.conn):
                self.conn.executemany(
                    "INSERT OR REPLACE INTO embedding_cache(model, hash, dim, vec) VALUES (?, ?, ?, ?)",
                    rows,
                )
            for i, (h, _) in enumerate(batch):
                out[h] = matrix[i].copy()
            if progress:
                progress(min(start + len(batch), total), total)
        return out


class _transaction:
    """A savepoint: atomic on its own, and nested safely inside a caller's transaction."""

    def __init__(self, conn: sqlite3.Connection):
        self.conn = conn

    def __enter__(self) -> sqlite3.Connection:
        self.conn.execute("SAVEPOINT embedding_cache_write")
        return self.conn

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is not None:
            self.conn.execute("ROLLBACK TO embedding_cache_write")
        self.conn.execute("RELEASE embedding_cache_write")
