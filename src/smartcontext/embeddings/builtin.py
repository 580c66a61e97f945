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
    from .static import static_embedder

    local = {"local:minilm": default_embedder, "local:static": static_embedder}
    for spec, factory in local.items():
        register(spec, factory)
    register("default", local[DEFAULT_SPEC])
    register("onnx", folder_embedder, scheme=True)  # onnx:/path/to/folder
    register("litellm", LiteLLMEmbedder, scheme=True)  # litellm:<model>, and <provider>/<model>
