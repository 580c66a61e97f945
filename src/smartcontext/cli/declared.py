"""Typer commands generated from the declared options of a question (``query.options``).

``declare`` turns a command's ``Option`` declarations into the parameters typer reads
(flags, help, defaults, the configuration's default in the help), so the CLI offers
exactly what the declaration says; the fast path (``cli/fast.py``) reads the same
declarations, and the tools' schemas too (``tools/workspace.py``).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Optional

import typer

from ..query.options import Option
from .root import CONTEXT_DEFAULTS, PathArg, app, from_config

_TYPES: dict[str, Any] = {"str": Optional[str], "int": Optional[int], "float": Optional[float],
                          "bool": Optional[bool], "list": list[str]}


def _typer_option(o: Option) -> Any:
    if o.config_key:
        shown: Any = from_config(CONTEXT_DEFAULTS, o.config_key)
    elif o.kind == "list" or o.default is None:
        shown = False
    else:
        shown = str(o.default).lower() if isinstance(o.default, bool) else str(o.default)
    help_text = o.help
    if o.choices and o.kind == "str" and "," not in help_text and " or " not in help_text:
        help_text = f"{help_text} One of: {', '.join(o.choices)}."
    if o.kind == "bool":
        flags = [f"{o.flags[0]}/{o.off_flag}" if o.off_flag else o.flags[0], *o.flags[1:]]
        # A flag without an opposite is off unless given; one with an opposite is None
        # (not given) so the configuration decides.
        default: Any = None if o.off_flag else False
        if o.off_flag and o.default is True and not o.config_key:
            default = True
        return typer.Option(default, *flags, help=help_text, show_default=shown if o.off_flag else False)
    if o.kind == "list":
        return typer.Option([], *o.flags, help=help_text, metavar=o.metavar, show_default=False)
    return typer.Option(None, *o.flags, help=help_text, show_default=shown, metavar=o.metavar)


def declare(name: str, options: Sequence[Option], run: Callable[..., None], doc: str) -> None:
    """Register ``smartcontext NAME`` with a positional text argument (the first option),
    the folder PATH, and the CLI side of ``options``; ``run`` receives them by name."""
    text, *rest = options
    params = [
        inspect.Parameter(text.name, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                          default=typer.Argument(..., help=f"{text.help} {text.cli_note}".strip()),
                          annotation=str),
        inspect.Parameter("path", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=PathArg,
                          annotation=Optional[Path]),
    ]
    for o in rest:
        if o.on_cli:
            params.append(inspect.Parameter(o.name, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                            default=_typer_option(o), annotation=_TYPES[o.kind]))

    def entry(**values: Any) -> None:
        run(**values)

    entry.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    entry.__annotations__ = {p.name: p.annotation for p in params}
    entry.__doc__ = doc
    entry.__name__ = name
    app.command(name)(entry)
