"""``VaultTools``: every vault tool on one object, and ``call_tool`` for the MCP server,
the HTTP agent and the CLI, which only forward a name and JSON arguments."""

from __future__ import annotations

import json
from typing import Any

from .files import FileTools
from .links import LinkTools
from .memory import MemoryTools
from .properties import PropertyTools
from .responses import err
from .schema import SPECS_BY_NAME, TOOL_SPECS
from .search import SearchTools


class VaultTools(FileTools, LinkTools, PropertyTools, MemoryTools, SearchTools):
    """The vault tools over one vault folder.

    ``VaultTools(root, workspace=None, preferences_file=None, clock=None)``

    root:             the vault folder; every path a tool receives is confined to it.
    workspace:        an object with ``update_files(paths)`` (called with every path a
                      write changed) and ``search(query, limit=, mode=, tags=)``; without
                      one, writes notify nobody and the search tools answer an error.
    preferences_file: where preferences live (default ``.smartcontext/preferences.md``;
                      relative paths are taken from the vault root).
    clock:            returns the current aware ``datetime`` (tests fix the date with it).

    Every tool returns a JSON string, ``{"success": true, ...}`` or
    ``{"success": false, "error": "..."}``, and never raises.
    """

    specs = TOOL_SPECS

    def call_tool(self, name: str, arguments: dict[str, Any] | str | None = None) -> str:
        """Run tool ``name`` with JSON ``arguments`` (a dict, or the JSON text of one)."""
        if not isinstance(name, str) or name not in SPECS_BY_NAME:
            return err(f"Unknown tool: {name}. Available tools: {', '.join(SPECS_BY_NAME)}")
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments) if arguments.strip() else {}
            except json.JSONDecodeError as exc:
                return err(f"{name}: arguments are not valid JSON ({exc.msg})")
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            return err(f"{name}: arguments must be a JSON object")
        if any(not isinstance(key, str) for key in arguments):
            return err(f"{name}: argument names must be strings")
        props = SPECS_BY_NAME[name]["parameters"]["properties"]
        unknown = [key for key in arguments if key not in props]
        if unknown:
            expected = ", ".join(props) or "no arguments"
            return err(f"{name}: unknown argument(s) {', '.join(unknown)} (expected: {expected})")
        return getattr(self, name)(**arguments)
