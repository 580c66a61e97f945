"""The root command and what its commands share: the workspace argument and opening it."""

from __future__ import annotations

from typing import Optional

import typer

from ..config import ContextDefaults
from . import questions
from .questions import open_workspace, workspace_root  # noqa: F401  (for the commands)

app = typer.Typer(
    help="Smart Context: the best slice of a repository or notes vault for a question, "
    "within a token budget.",
    no_args_is_help=True,
    # typer's --install-completion / --show-completion (bash, zsh, fish, PowerShell).
    add_completion=True,
    pretty_exceptions_enable=False,
)

FOUND_ROOT = "the repository or vault holding the current folder"
PathArg = typer.Argument(
    None, help="Workspace folder (a repository or a vault).", show_default=FOUND_ROOT,
)


def _print_version(value: bool) -> None:
    if value:
        from .. import __version__

        typer.echo(f"smartcontext {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    version: Optional[bool] = typer.Option(
        None, "--version", callback=_print_version, is_eager=True, help="Print the version and exit.",
    ),
    store: str = typer.Option(
        None, "--store", metavar="URL", envvar="SMARTCONTEXT_STORE_URL",
        help="Where the index lives: postgresql://user@host/db for a shared PostgreSQL "
        "index (default: the store url of smartcontext.toml, else .smartcontext/index.db).",
    ),
) -> None:
    """Smart Context: the best slice of a repository or notes vault for a question,
    within a token budget."""
    questions.STORE_URL = store
LimitOpt = typer.Option(10, "--limit", "-n", help="Number of results.")
JsonOpt = typer.Option(False, "--json", help="Print as JSON.")


def from_config(section: object, key: str) -> str:
    """The help text's default for an option the configuration sets, e.g.
    ``from config, 8000``: the flag wins, else smartcontext.toml, else the built-in value."""
    value = getattr(section, key)
    shown = str(value).lower() if isinstance(value, bool) else value  # as written in TOML
    return f"from config, {shown}"


CONTEXT_DEFAULTS = ContextDefaults()
