"""Embedding models (local ONNX by default, any LiteLLM provider) and a cache by content hash."""

from .base import Embedder, l2_normalise
from .cache import CacheStats, EmbeddingCache, text_hash
from .local_onnx import DEFAULT_MODEL_NAME, OnnxEmbedder, default_embedder, folder_embedder
from .registry import get_embedder, known_specs, register_embedder, register_scheme
from .remote import LiteLLMEmbedder

__all__ = [
    "CacheStats",
    "DEFAULT_MODEL_NAME",
    "Embedder",
    "EmbeddingCache",
    "LiteLLMEmbedder",
    "OnnxEmbedder",
    "default_embedder",
    "folder_embedder",
    "get_embedder",
    "known_specs",
    "l2_normalise",
    "register_embedder",
    "register_scheme",
    "text_hash",
]
