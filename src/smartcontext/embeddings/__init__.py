"""Embedding models (a static model distilled from the bundled MiniLM by default, MiniLM itself,
any local ONNX folder, any LiteLLM provider) and a cache by content hash.

The names load on first use (PEP 562): the plugin manager imports ``embeddings.builtin``
for every registry, and a keyword-only question should not load numpy for it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_names

_WHERE = {
    "Embedder": ".base", "l2_normalise": ".base",
    "CacheStats": ".cache", "EmbeddingCache": ".cache", "text_hash": ".cache",
    "DEFAULT_MODEL_NAME": ".local_onnx", "OnnxEmbedder": ".local_onnx",
    "default_embedder": ".local_onnx", "folder_embedder": ".local_onnx",
    "get_embedder": ".registry", "known_specs": ".registry", "register_embedder": ".registry",
    "register_scheme": ".registry",
    "LiteLLMEmbedder": ".remote",
    "StaticEmbedder": ".static", "static_embedder": ".static",
}

__all__ = sorted(_WHERE)


__getattr__, __dir__ = lazy_names(__name__, _WHERE)


if TYPE_CHECKING:
    from .base import Embedder, l2_normalise
    from .cache import CacheStats, EmbeddingCache, text_hash
    from .local_onnx import DEFAULT_MODEL_NAME, OnnxEmbedder, default_embedder, folder_embedder
    from .registry import get_embedder, known_specs, register_embedder, register_scheme
    from .remote import LiteLLMEmbedder
    from .static import StaticEmbedder, static_embedder
