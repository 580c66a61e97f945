"""The root command and what its commands share: the workspace argument and opening it."""

from __future__ import annotations

from pathlib import Path

import typer

from ..config import ContextDefaults

app = typer.Typer(
    help="Smart Context: the best slice of a repository or notes vault for a question, "
    "within a token budget.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

PathArg = typer.Argument(Path("."), help="Workspace folder (a repository or a vault).")
LimitOpt = typer.Option(10, "--limit", "-n", help="Number of results.")
JsonOpt = typer.Option(False, "--json", help="Print as JSON.")


def from_config(section: object, key: str) -> str:
    """The help text's default for an option the configuration sets, e.g.
    ``from config, 8000``: the flag wins, else smartcontext.toml, else the built-in value."""
    value = getattr(section, key)
    shown = str(value).lower() if isinstance(value, bool) else value  # as written in TOML
    return f"from config, {shown}"


CONTEXT_DEFAULTS = ContextDefaults()


# Set by the root --store option: a database URL that replaces the configured store.
STORE_URL: str | None = None


@app.callback()
def root(
    store: str = typer.Option(
        None, "--store", metavar="URL", envvar="SMARTCONTEXT_STORE_URL",
        help="Where the index lives: postgresql://user@host/db for a shared PostgreSQL "
        "index (default: the store url of smartcontext.toml, else .smartcontext/index.db).",
    ),
) -> None:
    global STORE_URL
    STORE_URL = store


def open_workspace(path: Path):
    from ..workspace import Workspace

    ws = Workspace.open(path)
    if STORE_URL:
        ws.config.store.url = STORE_URL
    return ws


def given(**options: object) -> dict[str, object]:
    """Only the options the user set: the rest fall back to the configuration."""
    return {k: v for k, v in options.items() if v is not None}
