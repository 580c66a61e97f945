"""``smartcontext tool NAME [--arg value ...]``: call any MCP tool from the command line.

The same registry serves the MCP server, so the JSON printed here is exactly what an
assistant receives.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from .app import app
from .output import EXIT_ERROR, errors, fail, print_json, print_text

TOOL_CONTEXT = {"allow_extra_args": True, "ignore_unknown_options": True}


def parse_tool_args(extra: list[str]) -> dict[str, Any]:
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


def _arguments(args_json: str, extra: list[str]) -> dict[str, Any]:
    try:
        arguments = json.loads(args_json) if args_json else {}
    except json.JSONDecodeError as exc:
        fail(f"--json is not valid JSON: {exc}")
    if not isinstance(arguments, dict):
        fail("--json must be a JSON object")
    try:
        arguments.update(parse_tool_args(extra))
    except typer.BadParameter as exc:
        fail(str(exc))
    return arguments


@app.command("tool", context_settings=TOOL_CONTEXT)
def tool(
    ctx: typer.Context,
    name: str = typer.Argument("", help="Tool name; omit to list the tools."),
    vault: Path = typer.Option(Path("."), "--vault", "-C", help="Workspace or vault folder."),
    args_json: str = typer.Option("", "--json", help="All arguments as one JSON object."),
) -> None:
    """Call one tool: `smartcontext tool read_file --path note.md`."""
    from ..tools import ToolRegistry

    with errors():
        registry = ToolRegistry.open(vault)
    try:
        if not name:
            print_text("".join(f"{spec.name:28s} {_first_line(spec.description)}\n" for spec in registry.specs()))
            return
        answer = registry.call(name, _arguments(args_json, list(ctx.args)))
        print_json(answer)
        if not answer.get("success"):
            raise typer.Exit(EXIT_ERROR)
    finally:
        registry.close()


def _first_line(text: str) -> str:
    lines = text.strip().splitlines() if text else []
    return lines[0] if lines else ""
