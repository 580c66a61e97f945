"""The tools layer: every tool the MCP server, the CLI and the HTTP API offer.

``spec``      ToolSpec (name, description, argument schema, handler) and ToolContext
``registry``  ToolRegistry, provider registration (the ``register_tools`` plugin hook)
``workspace``, ``vault``, ``smart_connections``: the built-in tool sets (``builtin``)

The one argument check (JSON Schema, with lenient conversions) is ``smartcontext.validate``,
below both this package and ``vault``, which use it.

The names load on first use (PEP 562): the plugin manager imports ``tools.builtin`` for
every registry, and a CLI question that needs no tool should not pay for jsonschema.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_names

_WHERE = {
    "MAX_ARGUMENTS_CHARS": ".registry", "ToolRegistry": ".registry", "answer_data": ".registry",
    "register_provider": ".registry", "registered_providers": ".registry", "spec_tools": ".registry",
    "DEFAULT_REFRESH_INTERVAL": ".spec", "ToolContext": ".spec", "ToolSpec": ".spec",
    "ToolError": "..validate", "check_arguments": "..validate", "scalar_from_text": "..validate",
}

__all__ = sorted(_WHERE)


__getattr__, __dir__ = lazy_names(__name__, _WHERE)


if TYPE_CHECKING:
    from ..validate import ToolError, check_arguments, scalar_from_text
    from .registry import (
        MAX_ARGUMENTS_CHARS,
        ToolRegistry,
        answer_data,
        register_provider,
        registered_providers,
        spec_tools,
    )
    from .spec import DEFAULT_REFRESH_INTERVAL, ToolContext, ToolSpec
