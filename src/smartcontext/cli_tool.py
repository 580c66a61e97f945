"""`smartcontext tool NAME [--arg value ...]`: call any MCP tool from the command line.

The same registry serves the MCP server, so the JSON printed here is exactly what an
assistant receives.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import typer

TOOL_CONTEXT = {"allow_extra_args": True, "ignore_unknown_options": True}


def _parse_tool_args(extra: list[str]) -> dict[str, Any]:
    """``--path note.md --limit 5 --tags a --tags b`` -> {"path": ..., "limit": "5", "tags": [...]}.

    Values stay strings (or lists of strings); the registry coerces them by the tool's
    schema, exactly as it does for loosely typed MCP clients. A value that parses as a
    JSON object or array is passed as JSON (for ``--updates '{"status": "done"}'``).
    """
    args: dict[str, Any] = {}
    i = 0
    while i < len(extra):
        token = extra[i]
        if not token.startswith("--") or len(token) < 3:
            raise typer.BadParameter(f"expected --name value, got {token!r}")
        key = token[2:].replace("-", "_")
        if "=" in key:
            key, value = key.split("=", 1)
            i += 1
        elif i + 1 < len(extra) and not extra[i + 1].startswith("--"):
            value = extra[i + 1]
            i += 2
        else:
            value = "true"
            i += 1
        if value[:1] in "[{":
            try:
                value = json.loads(value)
            except json.JSONDecodeError:
                pass
        if key in args:
            prev = args[key]
            args[key] = (prev if isinstance(prev, list) else [prev]) + [value]
        else:
            args[key] = value
    return args


def tool(
    ctx: typer.Context,
    name: str = typer.Argument("", help="Tool name; omit to list the tools."),
    vault: Path = typer.Option(Path("."), "--vault", "-C", help="Workspace or vault folder."),
    args_json: str = typer.Option("", "--json", help="All arguments as one JSON object."),
) -> None:
    """Call one tool: `smartcontext tool read_file --path note.md`."""
    from .errors import SmartContextError
    from .tools import ToolRegistry

    try:
        registry = ToolRegistry.open(vault)
    except SmartContextError as exc:
        sys.stderr.write(f"Error: {exc}\n")
        raise typer.Exit(1)
    try:
        if not name:
            for spec in registry.specs():
                first = spec.description.strip().splitlines()[0] if spec.description else ""
                sys.stdout.write(f"{spec.name:28s} {first}\n")
            return
        try:
            arguments = json.loads(args_json) if args_json else {}
        except json.JSONDecodeError as exc:
            sys.stderr.write(f"Error: --json is not valid JSON: {exc}\n")
            raise typer.Exit(1)
        if not isinstance(arguments, dict):
            sys.stderr.write("Error: --json must be a JSON object\n")
            raise typer.Exit(1)
        try:
            arguments.update(_parse_tool_args(list(ctx.args)))
        except typer.BadParameter as exc:
            sys.stderr.write(f"Error: {exc}\n")
            raise typer.Exit(1)
        answer = registry.call(name, arguments)
        sys.stdout.write(json.dumps(answer, ensure_ascii=False, indent=2, default=str) + "\n")
        if not answer.get("success"):
            raise typer.Exit(1)
    finally:
        registry.close()
