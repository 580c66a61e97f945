"""Embed each distinct text once per model: vectors are cached by the sha256 of the text."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

import numpy as np

from ..errors import EmbeddingError
from ..store.base import Store
from .base import Embedder

Progress = Callable[[int, int], None]

DEFAULT_BATCH_SIZE = 64


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
    """Vectors by (model name, text hash), kept by a store (its embedding cache)."""

    def __init__(self, store: Store):
        self.store = store
        self.stats = CacheStats()

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
        return self.store.clear_cached_vectors(model)

    # -- internals ------------------------------------------------------------------

    def _lookup(self, model: str, hashes: list[str]) -> dict[str, np.ndarray]:
        return self.store.cached_vectors(model, hashes)

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
            # One atomic write per batch: an interrupted run keeps what it finished.
            self.store.cache_vectors(embedder.name, [(h, matrix[i]) for i, (h, _) in enumerate(batch)])
            for i, (h, _) in enumerate(batch):
                out[h] = matrix[i].copy()
            if progress:
                progress(min(start + len(batch), total), total)
        return out
