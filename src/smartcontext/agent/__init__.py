"""The agent: a language model with the workspace and vault tools, in persisted sessions.

``compaction``  the tool-result stubs shared by every front end (the seed's module)
``models``      the model: LiteLLM tool calling, or the optional local GGUF
``loop``        one user turn: history filter, model call, tool calls, compaction
``sessions``    ``AgentSessions``: create, list, get, send, delete (CLI agent, HTTP sessions)
"""

from __future__ import annotations

from typing import Any

# Loaded on first use: the CLI reads the loop's defaults while building its commands, and
# `smartcontext --version` must not pay for the chat layer (numpy) that sessions pull in.
_EXPORTS = {
    "AgentLoop": "loop", "TurnResult": "loop", "AgentSessions": "sessions",
    "build_tool_stub": "compaction", "compact_tool_messages": "compaction",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(f".{_EXPORTS[name]}", __name__), name)
