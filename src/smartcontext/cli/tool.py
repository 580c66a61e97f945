"""``smartcontext tool NAME [--arg value ...]``: call any MCP tool from the command line.

The same registry serves the MCP server, so the JSON printed here is exactly what an
assistant receives.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

import typer

from ..errors import did_you_mean
from .root import FOUND_ROOT, app, workspace_root
from .output import errors, fail, print_json, print_text

# click's own --help is turned off: `tool NAME --help` describes the tool NAME (from its
# JSON schema), and `tool --help` this command.
TOOL_CONTEXT = {"allow_extra_args": True, "ignore_unknown_options": True, "help_option_names": []}


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
    vault: Optional[Path] = typer.Option(
        None, "--vault", "-C", help="Workspace or vault folder.", show_default=FOUND_ROOT,
    ),
    args_json: str = typer.Option("", "--json", help="All arguments as one JSON object."),
    show_help: bool = typer.Option(
        False, "--help", "-h", help="Show this help; with NAME, the tool's arguments.",
    ),
) -> None:
    """Call one tool: `smartcontext tool read_file --path note.md`."""
    from ..tools import ToolRegistry

    if show_help and not name:
        print_text(ctx.get_help())
        return
    with errors():
        registry = ToolRegistry.open(workspace_root(vault))
    try:
        if not name:
            print_text("".join(f"{spec.name:28s} {_first_line(spec.description)}\n" for spec in registry.specs()))
            return
        if show_help:
            specs = {spec.name: spec for spec in registry.specs()}
            if name not in specs:
                fail(f"no tool {name!r}{did_you_mean(name, specs)}; `smartcontext tool` lists them")
            print_text(tool_help(specs[name]))
            return
        answer = registry.call(name, _arguments(args_json, list(ctx.args)))
        print_json(answer)  # the tool's answer as a program receives it, failed or not
        if not answer.get("success"):
            fail(" ".join(str(answer.get("error") or f"{name} failed").split()))
    finally:
        registry.close()


def tool_help(spec: Any) -> str:
    """A tool's usage and arguments, read from its JSON schema (what an assistant sees)."""
    schema = spec.input_schema or {}
    props: dict[str, Any] = schema.get("properties", {})
    required = set(schema.get("required", []))
    usage = " ".join(
        [f"smartcontext tool {spec.name}"]
        + [f"--{k} {_metavar(v)}" if k in required else f"[--{k} {_metavar(v)}]" for k, v in props.items()]
    )
    lines = [f"Usage: {usage}", "", spec.description.strip(), ""]
    if props:
        lines.append("Arguments:")
        width = max(len(k) for k in props) + 2
        var_width = max(len(_metavar(v)) for v in props.values()) + 2
        for key, prop in props.items():
            notes = []
            if key in required:
                notes.append("required")
            if "enum" in prop:
                notes.append("one of " + ", ".join(map(str, prop["enum"])))
            if "default" in prop:
                notes.append(f"default {json.dumps(prop['default'])}")
            if "minimum" in prop or "maximum" in prop:
                notes.append(f"{prop.get('minimum', '')}..{prop.get('maximum', '')}")
            if prop.get("type") == "array":
                notes.append("repeat the option for several values")
            tail = f" ({'; '.join(notes)})" if notes else ""
            lines.append(f"  --{key:<{width}}{_metavar(prop):<{var_width}}{prop.get('description', '')}{tail}")
    else:
        lines.append("No arguments.")
    return "\n".join(lines) + "\n"


def _metavar(prop: dict[str, Any]) -> str:
    kind = prop.get("type", "value")
    if kind == "array":
        kind = prop.get("items", {}).get("type", "value")
    return {"string": "TEXT", "integer": "N", "number": "X", "boolean": "BOOL", "object": "JSON"}.get(
        str(kind), "VALUE"
    )


def _first_line(text: str) -> str:
    lines = text.strip().splitlines() if text else []
    return lines[0] if lines else ""
