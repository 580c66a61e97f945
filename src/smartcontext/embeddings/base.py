"""What every embedding model offers, and the small helpers they share."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class Embedder(Protocol):
    """A model that turns texts into unit-length float32 vectors.

    ``name`` is the stable key under which vectors are cached and stored: two embedders
    with the same name must produce interchangeable vectors. Inputs longer than the
    model accepts are truncated by the model's tokenizer, never rejected.
    """

    @property
    def name(self) -> str: ...

    @property
    def dim(self) -> int: ...

    def embed(self, texts: list[str]) -> np.ndarray:
        """float32 array of shape ``(len(texts), dim)`` with L2-normalised rows, in input order."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """float32 vector of shape ``(dim,)`` for one search query."""
        ...


def l2_normalise(matrix: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length, as float32 (an all-zero row stays zero)."""
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.maximum(norms, 1e-12)
