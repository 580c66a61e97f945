"""Embeddings from any provider LiteLLM speaks to (OpenAI, Ollama, Azure, ...).

LiteLLM is an optional dependency (``pip install 'smartcontext[remote]'``) and is only
imported when a remote model is first used.
"""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING, Any

from ..errors import EmbeddingError
from ..lazy import LazyModule
from .base import EmbedderBase, l2_normalise

if TYPE_CHECKING:
    import numpy as np
else:  # registered with the built-ins, which a question's lookup of its model loads
    np = LazyModule("numpy")

DEFAULT_BATCH_SIZE = 64
# OpenAI's embedding models reject inputs over 8191 tokens instead of cutting them.
DEFAULT_MAX_INPUT_TOKENS = 8191


class LiteLLMEmbedder(EmbedderBase):
    """A remote embedding model called through ``litellm.embedding``.

    Parameters:
        model: the LiteLLM model string, e.g. ``openai/text-embedding-3-small`` or
            ``ollama/nomic-embed-text``.
        api_base: the endpoint, for self-hosted or OpenAI-compatible servers.
        api_key: the provider key; when omitted LiteLLM reads the usual environment variable.
        batch_size: texts per request.
        dimensions: ask models that support it for shorter vectors.
        timeout: seconds per request.
        max_retries: retries of a failed request, done by the provider's client (LiteLLM
            1.x reads 0 as "use the default" for OpenAI-style providers).
        max_input_tokens: texts are cut to this many (cl100k_base) tokens before sending,
            so an over-long text is truncated rather than refused; None sends them whole.
    """

    def __init__(
        self,
        model: str,
        *,
        api_base: str | None = None,
        api_key: str | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        dimensions: int | None = None,
        timeout: float = 60.0,
        max_retries: int = 2,
        max_input_tokens: int | None = DEFAULT_MAX_INPUT_TOKENS,
    ):
        model = (model or "").strip()
        if not model:
            raise EmbeddingError("a remote embedding model needs a model name, e.g. 'openai/text-embedding-3-small'")
        if int(batch_size) < 1:
            raise EmbeddingError(f"batch_size must be at least 1, got {batch_size}")
        self.model = model
        self.api_base = api_base or None
        self._api_key = api_key or None
        self.batch_size = int(batch_size)
        self.dimensions = dimensions
        self.timeout = timeout
        self.max_retries = max_retries
        self.max_input_tokens = max_input_tokens
        self._dim: int | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"LiteLLMEmbedder(model={self.model!r}, api_base={self.api_base!r})"

    @property
    def name(self) -> str:
        return f"litellm:{self.model}" + (f"@{self.dimensions}" if self.dimensions else "")

    @property
    def dim(self) -> int:
        """The vector size; asks the model once if nothing was embedded yet."""
        if self._dim is None:
            self._embed_batch(["dimension probe"])
        assert self._dim is not None
        return self._dim

    def _embed(self, texts: list[str]) -> np.ndarray:
        parts = [self._embed_batch(list(texts[i : i + self.batch_size])) for i in range(0, len(texts), self.batch_size)]
        return np.vstack(parts)

    # -- internals ------------------------------------------------------------------

    def _where(self) -> str:
        return f"embedding model {self.model!r}" + (f" at {self.api_base}" if self.api_base else "")

    def _prepare(self, texts: list[str]) -> list[str]:
        if self.max_input_tokens is not None:
            from ..tokens import truncate

            texts = [truncate(t, self.max_input_tokens) for t in texts]
        # OpenAI refuses empty strings; a space embeds as "nothing" just as well.
        return [t if t.strip() else " " for t in texts]

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        litellm = _import_litellm()
        kwargs: dict[str, Any] = {"timeout": self.timeout, "max_retries": self.max_retries}
        if self.api_base:
            kwargs["api_base"] = self.api_base
        if self._api_key:
            kwargs["api_key"] = self._api_key
        if self.dimensions:
            kwargs["dimensions"] = self.dimensions
        try:
            response = litellm.embedding(model=self.model, input=self._prepare(texts), **kwargs)
        except Exception as exc:  # LiteLLM maps every provider failure to its own classes
            raise EmbeddingError(f"{self._where()} failed: {_reason(exc)}") from exc
        matrix = self._parse(response, len(texts))
        with self._lock:
            if self._dim is None:
                self._dim = matrix.shape[1]
        if matrix.shape[1] != self._dim:
            raise EmbeddingError(
                f"{self._where()} answered {matrix.shape[1]}-dimensional vectors after {self._dim}-dimensional ones"
            )
        return matrix

    def _parse(self, response: Any, expected: int) -> np.ndarray:
        data = _field(response, "data")
        if not isinstance(data, list) or len(data) != expected:
            got = len(data) if isinstance(data, list) else type(data).__name__
            raise EmbeddingError(f"{self._where()} answered {got} vectors for {expected} texts")
        rows: list[Any] = [None] * expected
        for position, entry in enumerate(data):
            index = _field(entry, "index")
            index = position if index is None else int(index)
            if not 0 <= index < expected or rows[index] is not None:
                raise EmbeddingError(f"{self._where()} answered a vector with a bad index {index}")
            rows[index] = _field(entry, "embedding")
        try:
            matrix = np.asarray(rows, dtype=np.float32)
        except (TypeError, ValueError) as exc:
            raise EmbeddingError(f"{self._where()} answered vectors that are not lists of numbers: {exc}") from exc
        if matrix.ndim != 2 or matrix.shape[1] == 0:
            raise EmbeddingError(f"{self._where()} answered vectors of uneven or zero length")
        if not np.isfinite(matrix).all():
            raise EmbeddingError(f"{self._where()} answered vectors with NaN or infinite values")
        if (np.linalg.norm(matrix, axis=1) == 0).any():
            raise EmbeddingError(f"{self._where()} answered an all-zero vector, which has no direction")
        return l2_normalise(matrix)


def _field(obj: Any, key: str) -> Any:
    if isinstance(obj, dict):
        return obj.get(key)
    return getattr(obj, key, None)


def _reason(exc: Exception) -> str:
    text = " ".join(str(exc).split()) or "no details"
    if len(text) > 500:
        text = text[:500] + "..."
    return f"{type(exc).__name__}: {text}"


def _import_litellm() -> Any:
    # LiteLLM fetches a price list from GitHub on import unless told otherwise; a
    # local-first tool must not phone out just to embed.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    try:
        import litellm
    except ImportError as exc:
        raise EmbeddingError(
            "remote embedding models need LiteLLM; install it with `pip install 'smartcontext[remote]'`"
        ) from exc
    # Failures reach the user as EmbeddingError; LiteLLM's own "Give Feedback" banner on
    # stdout would only corrupt CLI output and MCP's stdio stream.
    litellm.suppress_debug_info = True
    return litellm
