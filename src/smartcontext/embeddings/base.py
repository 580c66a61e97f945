"""What every embedding model offers, and the small helpers they share."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from ..errors import EmbeddingError

if TYPE_CHECKING:  # loaded by what embeds or searches with numpy arrays, not by a registry lookup
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


class EmbedderBase:
    """What the built-in embedders share: the argument checks of ``embed`` and the
    one-text ``embed_query``; a subclass sets ``_name`` and gives ``dim`` and ``_embed``."""

    _name: str

    @property
    def dim(self) -> int:  # a property, so a subclass may find it lazily (ask the model)
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self._name!r})"

    @property
    def name(self) -> str:
        return self._name

    def embed(self, texts: list[str]) -> np.ndarray:
        if isinstance(texts, str):
            raise EmbeddingError("embed() takes a list of texts; use embed_query() for one text")
        if not texts:
            import numpy as np

            return np.zeros((0, self.dim), dtype=np.float32)
        return self._embed(list(texts))

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed([text])[0]

    def _embed(self, texts: list[str]) -> np.ndarray:
        raise NotImplementedError


def l2_normalise(matrix: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length, as float32 (an all-zero row stays zero)."""
    import numpy as np

    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.maximum(norms, 1e-12)


def prepare_embedder(embedder: Embedder, progress: Callable[[str, int, int], None] | None = None) -> None:
    """Load what ``embedder`` needs before its first text, building it when it is built on
    first use (the static model); ``progress("model", done, total)`` reports the build."""
    prepare = getattr(embedder, "prepare", None)
    if callable(prepare):
        prepare((lambda done, total: progress("model", done, total)) if progress else None)


def query_vector(embedder: Embedder, text: str):
    """``text``'s query vector for a vector index's ``search``: the embedder's
    ``query_vector`` when it has one (a float32 buffer made without numpy: the static
    model), else its ``embed_query``."""
    own = getattr(embedder, "query_vector", None)
    return own(text) if callable(own) else embedder.embed_query(text)
