"""The built-in embedders, registered through the same hook as a plugin's."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..plugins import hookimpl


@hookimpl(tryfirst=True)
def register_embedders(register: Callable[..., Any]) -> None:
    # Imported when an embedder is wanted: the plugin manager loads this module for any
    # registry, and a keyword-only question should not load numpy.
    from .local_onnx import default_embedder, folder_embedder
    from .registry import DEFAULT_SPEC
    from .remote import LiteLLMEmbedder

    register("default", default_embedder)
    register(DEFAULT_SPEC, default_embedder)
    register("onnx", folder_embedder, scheme=True)  # onnx:/path/to/folder
    register("litellm", LiteLLMEmbedder, scheme=True)  # litellm:<model>, and <provider>/<model>
