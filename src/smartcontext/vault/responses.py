"""The one response shape every vault tool answers with (the MCP server and the CLI
rely on it): ``{"success": true, "message"?: ..., **fields}`` or
``{"success": false, "error": ...}``."""

from __future__ import annotations

import json
from typing import Any


def ok(message: str | None = None, **fields: Any) -> str:
    data: dict[str, Any] = {"success": True}
    if message is not None:
        data["message"] = message
    data.update(fields)
    return json.dumps(data, ensure_ascii=False, default=str)


def err(message: str) -> str:
    return json.dumps({"success": False, "error": message}, ensure_ascii=False)
