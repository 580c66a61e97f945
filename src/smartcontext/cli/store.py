"""``smartcontext store copy | list | drop``: move indexes between stores, and manage the
workspaces of a PostgreSQL database."""

from __future__ import annotations

import sys
from typing import Optional

import typer

from . import questions
from .root import app
from .output import EXIT_ERROR, errors, fail, note, out_console, print_json, progress

store_app = typer.Typer(help="Manage where indexes live (SQLite files, PostgreSQL).", no_args_is_help=True)
app.add_typer(store_app, name="store")

UrlArg = typer.Argument(
    None, metavar="[URL]", help="A postgresql:// URL.", show_default="--store or SMARTCONTEXT_STORE_URL",
)


@store_app.command("copy")
def copy(
    source: str = typer.Argument(..., help="A workspace folder, an index file or a postgresql:// URL."),
    destination: str = typer.Argument(..., help="Where to copy it: a folder, a file or a postgresql:// URL."),
    workspace: Optional[str] = typer.Option(
        None, "--workspace", help="The workspace's name in the database, where the URL names none.",
        show_default="the folder's name",
    ),
    force: bool = typer.Option(False, "--force", help="Replace the index the destination already holds."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Say what the copy would change; change nothing."),
    as_json: bool = typer.Option(False, "--json", help="Print what was copied (or would be) as JSON."),
) -> None:
    """Copy an index (files, items, edges, full text, vectors) without parsing or embedding again.

    A source that does not exist or is empty is refused, and so is a destination that
    already holds an index unless --force; nothing is created when a copy is refused.
    """
    from ..store.copy import copy_origin, copy_store, plan_copy

    with errors():
        if dry_run:
            plan = plan_copy(source, destination, workspace=workspace)
            if as_json:
                print_json(plan.to_dict())
            else:
                out_console.print(plan.describe(), markup=False)
            return
        with progress(not as_json) as report:
            stats = copy_store(source, destination, workspace=workspace, force=force, progress=report)
        if stats.previous_copy:
            note(f"an earlier copy into {stats.destination} had been cut short ({copy_origin(stats.previous_copy)}); "
                 f"this copy replaced it")
        if as_json:
            print_json(stats.to_dict())
            return
        vectors = ", ".join(f"{n} {m}" for m, n in stats.vectors.items()) or "none"
        out_console.print(
            f"Copied {stats.files} file(s), {stats.items} items, {stats.edges} edges and vectors "
            f"({vectors}) from {stats.source} to {stats.destination} in {stats.seconds:.1f}s.",
            markup=False,
        )


def _database(url: Optional[str]) -> str:
    url = url or questions.STORE_URL
    if not url:
        fail("give a postgresql:// URL (or --store URL, or SMARTCONTEXT_STORE_URL)")
    from ..store.postgres import is_postgres_url

    if not is_postgres_url(url):
        fail(f"{url} is not a postgresql:// URL; a folder's index is its .smartcontext/ folder")
    return url


@store_app.command("list")
def list_(url: Optional[str] = UrlArg, as_json: bool = typer.Option(False, "--json", help="Print as JSON.")) -> None:
    """List the workspaces of a PostgreSQL database, with their sizes."""
    from ..store.postgres import list_workspaces

    with errors():
        listed = list_workspaces(_database(url))
    if as_json:
        print_json([w.to_dict() for w in listed])
        return
    if not listed:
        out_console.print("No workspaces in this database.")
        return
    width = max(len(w.name) for w in listed)
    for w in listed:
        out_console.print(f"{w.name:<{width}}  {w.files:>8,} files  {w.items:>9,} items  (schema {w.schema})",
                          markup=False, highlight=False)


@store_app.command("drop")
def drop(
    name: str = typer.Argument(..., help="The workspace to delete (`smartcontext store list` shows them)."),
    url: Optional[str] = UrlArg,
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation."),
) -> None:
    """Delete a workspace's index from a PostgreSQL database (the shared embedding cache stays)."""
    from ..errors import did_you_mean
    from ..store.postgres import drop_workspace, list_workspaces, schema_name

    with errors():
        database = _database(url)
        listed = list_workspaces(database)
        info = next((w for w in listed if w.schema == schema_name(name)), None)
        if info is None:
            names = ", ".join(w.name for w in listed) or "none"
            fail(f"no workspace {name!r} in this database{did_you_mean(name, [w.name for w in listed])} "
                 f"(workspaces: {names})")
        if not yes:
            if not sys.stdin.isatty():
                fail(f"dropping workspace {name!r} ({info.files:,} files, {info.items:,} items) needs "
                     f"confirmation: add --yes")
            if not typer.confirm(f"Delete workspace {name!r} ({info.files:,} files, {info.items:,} items)?"):
                fail("nothing dropped", EXIT_ERROR)
        drop_workspace(database, name)
    out_console.print(f"Dropped workspace {name!r} ({info.files:,} files, {info.items:,} items).", markup=False)
