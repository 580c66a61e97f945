"""Embedding models (a static model distilled from the bundled MiniLM by default, MiniLM itself,
any local ONNX folder, any LiteLLM provider) and a cache by content hash."""

from .base import Embedder, l2_normalise
from .cache import CacheStats, EmbeddingCache, text_hash
from .local_onnx import DEFAULT_MODEL_NAME, OnnxEmbedder, default_embedder, folder_embedder
from .registry import get_embedder, known_specs, register_embedder, register_scheme
from .remote import LiteLLMEmbedder
from .static import StaticEmbedder, static_embedder

__all__ = [
    "CacheStats",
    "DEFAULT_MODEL_NAME",
    "Embedder",
    "EmbeddingCache",
    "LiteLLMEmbedder",
    "OnnxEmbedder",
    "StaticEmbedder",
    "default_embedder",
    "folder_embedder",
    "get_embedder",
    "known_specs",
    "l2_normalise",
    "register_embedder",
    "register_scheme",
    "static_embedder",
    "text_hash",
]
