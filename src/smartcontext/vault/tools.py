"""``VaultTools``: every vault tool on one object, and ``call_tool`` for the MCP server,
the HTTP agent and the CLI, which only forward a name and JSON arguments."""

from __future__ import annotations

from typing import Any

from ..validate import ToolError, check_arguments
from .base import tool_validator
from .files import FileTools
from .links import LinkTools
from .memory import MemoryTools
from .properties import PropertyTools
from .responses import answered, err
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

    Every tool returns a dict, ``{"success": true, ...}`` or
    ``{"success": false, "error": "..."}``, and never raises (JSON text is the front
    ends' business).
    """

    specs = TOOL_SPECS

    def call_tool(self, name: str, arguments: dict[str, Any] | str | None = None) -> dict[str, Any]:
        """Run tool ``name`` with JSON ``arguments`` (a dict, or the JSON text of one)."""
        if not isinstance(name, str) or name not in SPECS_BY_NAME:
            return err(f"Unknown tool: {name}. Available tools: {', '.join(SPECS_BY_NAME)}")
        try:
            clean = check_arguments(name, tool_validator(name), arguments)
        except ToolError as exc:
            return err(str(exc))
        try:
            return answered(self.call_checked(name, clean))
        except ToolError as exc:
            return err(str(exc))

    def call_checked(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """The data of tool ``name`` on arguments already checked against its schema (the
        tool registry checks every call once, before this, and adds ``success``); raises
        ToolError with the message a caller reads."""
        return getattr(type(self), name).checked(self, arguments)
