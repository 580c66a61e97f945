"""``smartcontext files`` and ``smartcontext config show``: what the index covers, and
the settings it was built with."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.markup import escape

from .output import errors, out_console, print_json
from .root import JsonOpt, app, open_workspace, workspace_root

config_app = typer.Typer(help="The workspace's settings.", no_args_is_help=True)
app.add_typer(config_app, name="config")


@app.command()
def files(
    path: Optional[str] = typer.Argument(
        None, help="A folder or file (its workspace is the repository or vault holding it; the list "
                   "is limited to it), or a glob ('*.md') within the current workspace.",
        show_default="the repository or vault holding the current folder",
    ),
    skipped: bool = typer.Option(False, "--skipped", help="Only the files left out of the index, with why."),
    as_json: bool = JsonOpt,
) -> None:
    """List the indexed files (source, items, tokens, vectors) and the skipped ones with
    their reason (ignored, binary, generated, too large, unreadable, parse error)."""
    with errors():
        folder, where = _listing_scope(path)
        ws = open_workspace(folder)
        found = ws.files(where, indexed=not skipped)
        if as_json:
            from ..tools.workspace import files_answer

            print_json(files_answer(found))
            return
        if not skipped:
            for f in found.files:
                out_console.print(
                    f"{escape(f.path)}  [dim]{f.source}/{f.language}[/]  {f.items} items  "
                    f"{f.tokens:,} tokens  {f.vectors} vectors", highlight=False,
                )
            out_console.print(f"[bold]{len(found.files)}[/] file(s) indexed", highlight=False)
        for s in found.skipped:
            out_console.print(f"{escape(s.path)}  [yellow]skipped: {escape(s.reason)}[/]", highlight=False)
        if found.summary:
            reasons = ", ".join(f"{n} {k}" for k, n in found.summary.items())
            out_console.print(f"[bold]{sum(found.summary.values())}[/] left out in all: {reasons}", highlight=False)
        elif skipped:
            out_console.print("Nothing was left out.")


def _listing_scope(path: str | None) -> tuple[Path | None, str | None]:
    """(folder to open, what to list in it) for ``files PATH``: a PATH on disk is listed
    inside the repository or vault that holds it; any other PATH is a glob."""
    from ..workspace import find_root

    given = Path(path).expanduser() if path else None
    if given is None or not given.exists():
        return None, path
    target = given.resolve()
    top = find_root(target if target.is_dir() else target.parent)
    rel = target.relative_to(top).as_posix()
    return top, None if rel == "." else rel


@config_app.command("show")
def config_show(
    folder: Optional[Path] = typer.Argument(None, help="Workspace folder.", show_default="the repository or vault holding the current folder"),
    as_json: bool = JsonOpt,
) -> None:
    """Every effective setting, its value and where it came from (default,
    smartcontext.toml, .vault.toml, environment or flag)."""
    import os

    from ..config import config_sources
    from . import questions

    with errors():
        # --store reads SMARTCONTEXT_STORE_URL too: only a value typed on the line is a flag.
        flag = questions.STORE_URL if questions.STORE_URL != os.environ.get("SMARTCONTEXT_STORE_URL") else None
        settings = config_sources(workspace_root(folder), {"store.url": flag})
        if as_json:
            print_json({"settings": [s.to_dict() for s in settings]})
            return
        width = max(len(s.key) for s in settings)
        for s in settings:
            where = f"{s.source} ({s.detail})" if s.detail else s.source
            value = s.value if not isinstance(s.value, str) else repr(s.value)
            out_console.print(f"{escape(s.key.ljust(width))}  {escape(str(value))}  [dim]{escape(where)}[/]", highlight=False)
