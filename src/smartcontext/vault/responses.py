"""The one answer shape of every vault tool, as the seed defines it:
``{"success": true, "message"?: ..., **fields}`` or ``{"success": false, "error": ...}``.

A tool method builds its data with ``ok(...)`` and refuses by raising ``ToolError``;
whoever serves it adds the flag: the tool registry (MCP, HTTP, the agents), or the
``@tool`` guard when Python calls the method directly. So every tool answers dicts, and
only the front ends turn them into JSON text.
"""

from __future__ import annotations

from typing import Any


def ok(message: str | None = None, **fields: Any) -> dict[str, Any]:
    """The data of a successful answer: an optional message, then the fields."""
    data: dict[str, Any] = {}
    if message is not None:
        data["message"] = message
    data.update(fields)
    return data


def answered(data: dict[str, Any]) -> dict[str, Any]:
    """A successful answer carrying ``data``."""
    return {"success": True, **data}


def err(message: str) -> dict[str, Any]:
    """A failed answer."""
    return {"success": False, "error": message}
