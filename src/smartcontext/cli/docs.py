"""The CLI reference in docs/cli.md, generated from the command tree itself.

docs/cli.md calls ``reference("context")`` (and so on) inside cog blocks; ``cog -r
docs/cli.md`` rewrites them and ``cog --check docs/cli.md`` (run by the tests) fails when
a command, argument, option, help text or default changed without the doc. The output is
plain Markdown that does not depend on the terminal's width.
"""

from __future__ import annotations

from collections.abc import Iterator
from enum import Enum
from typing import Any

import typer.main

from ..errors import InvalidArgument
from . import load_app

app = load_app()  # every command registered, as `smartcontext --help` lists them

PROGRAM = "smartcontext"
# The value placeholder shown after an option, by the type typer reports.
METAVARS = {"int": "N", "int range": "N", "float": "X", "float range": "X", "str": "TEXT",
            "list[str]": "TEXT", "path": "PATH"}


def _root() -> tuple[Any, Any]:
    command = typer.main.get_command(app)
    return command, command.context_class(command, info_name=PROGRAM)


def commands() -> Iterator[tuple[str, Any, Any]]:
    """(path such as ``"serve mcp"``, command, its context) of every leaf command, in help order."""
    root, root_ctx = _root()

    def walk(group: Any, ctx: Any, prefix: str) -> Iterator[tuple[str, Any, Any]]:
        for name in group.list_commands(ctx):
            cmd = group.get_command(ctx, name)
            sub_ctx = cmd.context_class(cmd, info_name=name, parent=ctx)
            path = f"{prefix} {name}".strip()
            if hasattr(cmd, "list_commands"):
                yield from walk(cmd, sub_ctx, path)
            else:
                yield path, cmd, sub_ctx

    yield from walk(root, root_ctx, "")


def command_paths() -> list[str]:
    return [path for path, _, _ in commands()]


def reference(path: str) -> str:
    """Markdown for one command: usage, help, then tables of arguments and options."""
    for name, cmd, ctx in commands():
        if name == path:
            return _render(name, cmd, ctx)
    raise InvalidArgument(f"no command {path!r}; commands: {', '.join(command_paths())}")


def _render(path: str, cmd: Any, ctx: Any) -> str:
    arguments = [p for p in cmd.params if p.param_type_name == "argument"]
    options = [p for p in cmd.params if p.param_type_name == "option" and not p.hidden]
    words = [PROGRAM, path, "[OPTIONS]", *(_argument_usage(p) for p in arguments)]
    if cmd.context_settings.get("allow_extra_args"):
        words.append("[--NAME VALUE]...")  # passed through to the command (tool arguments)
    usage = " ".join(words)
    out = [f"```text\n{usage}\n```", "", _clean(cmd.help or ""), ""]
    if arguments:
        out += ["| argument | meaning |", "|---|---|"]
        out += [f"| `{_argument_name(p)}` | {_cell(_with_default(p, ctx))} |" for p in arguments]
        out.append("")
    if options:
        out += ["| option | meaning |", "|---|---|"]
        out += [f"| `{_cell(_option_names(p, ctx))}` | {_cell(_with_default(p, ctx))} |" for p in options]
        out.append("")
    return "\n".join(out)


def _argument_name(param: Any) -> str:
    return param.metavar or param.name.upper()


def _argument_usage(param: Any) -> str:
    name = _argument_name(param)
    return name if param.required else f"[{name}]"


def _option_names(param: Any, ctx: Any) -> str:
    names = ", ".join(param.opts)
    if param.secondary_opts:
        names += " / " + ", ".join(param.secondary_opts)
    if getattr(param, "is_flag", False):
        return names
    kind = param.display_type(ctx).strip("<>")
    return f"{names} {METAVARS.get(kind.lower(), kind)}"


def _with_default(param: Any, ctx: Any) -> str:
    text = _clean(param.help or "")
    if param.required:
        return f"{text} Required".strip()
    default = _default(param)
    if default is not None:
        text = f"{text} Default: {default}".strip()
    if getattr(param, "multiple", False):
        text = f"{text} Repeatable".strip()
    return text


def _default(param: Any) -> str | None:
    """The default as help shows it; a string ``show_default`` (``from config, 8000``) wins."""
    if isinstance(param.show_default, str):
        return param.show_default
    value = param.default
    if param.show_default is False or value in (None, "", [], ()):
        return None
    if getattr(param, "is_flag", False):
        if not param.secondary_opts:
            return None  # a plain switch is off unless given
        return param.opts[0] if value else param.secondary_opts[0]
    if isinstance(value, Enum):
        value = value.value
    return f"`{value}`"


def _clean(text: str) -> str:
    return " ".join(text.split())


def _cell(text: str) -> str:
    return text.replace("|", "\\|")
