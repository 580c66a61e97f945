"""``smartcontext store copy SRC DST``: move an index between stores."""

from __future__ import annotations

from typing import Optional

import typer

from .root import app
from .output import errors, out_console, print_json, progress

store_app = typer.Typer(help="Manage where indexes live (SQLite files, PostgreSQL).", no_args_is_help=True)
app.add_typer(store_app, name="store")


@store_app.command("copy")
def copy(
    source: str = typer.Argument(..., help="A workspace folder, an index file or a postgresql:// URL."),
    destination: str = typer.Argument(..., help="Where to copy it: a folder, a file or a postgresql:// URL."),
    workspace: Optional[str] = typer.Option(
        None, "--workspace", help="The workspace's name in the database.",
        show_default="the folder's name",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print what was copied as JSON."),
) -> None:
    """Copy an index (files, items, edges, full text, vectors) without parsing or embedding again."""
    from ..store.copy import copy_store

    with errors():
        with progress(not as_json) as report:
            stats = copy_store(source, destination, workspace=workspace, progress=report)
        if as_json:
            print_json(stats.to_dict())
            return
        vectors = ", ".join(f"{n} {m}" for m, n in stats.vectors.items()) or "none"
        out_console.print(
            f"Copied {stats.files} file(s), {stats.items} items, {stats.edges} edges and vectors "
            f"({vectors}) from {stats.source} to {stats.destination} in {stats.seconds:.1f}s."
        )
