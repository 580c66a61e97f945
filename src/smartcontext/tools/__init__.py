"""The tools layer: every tool the MCP server, the CLI and the HTTP API offer.

``spec``      ToolSpec (name, description, argument schema, handler) and ToolContext
``registry``  ToolRegistry, provider registration (the ``register_tools`` plugin hook)
``workspace``, ``vault``, ``smart_connections``: the built-in tool sets (``builtin``)

The one argument check (JSON Schema, with lenient conversions) is ``smartcontext.validate``,
below both this package and ``vault``, which use it.
"""

from .registry import (
    MAX_ARGUMENTS_CHARS,
    ToolRegistry,
    answer_data,
    register_provider,
    registered_providers,
    spec_tools,
)
from .spec import DEFAULT_REFRESH_INTERVAL, ToolContext, ToolSpec
from ..validate import ToolError, check_arguments, scalar_from_text

__all__ = [
    "DEFAULT_REFRESH_INTERVAL",
    "MAX_ARGUMENTS_CHARS",
    "ToolContext",
    "ToolError",
    "ToolRegistry",
    "ToolSpec",
    "answer_data",
    "check_arguments",
    "register_provider",
    "registered_providers",
    "scalar_from_text",
    "spec_tools",
]
