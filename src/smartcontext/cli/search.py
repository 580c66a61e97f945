"""``smartcontext search`` and ``smartcontext similar``: ranked search over the index."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.markup import escape

from .output import errors, out_console, print_json
from ..query.options import SEARCH_OPTIONS
from .declared import declare
from .questions import run_search
from .root import LimitOpt, PathArg, app, open_workspace


declare(
    "search", SEARCH_OPTIONS, run_search,
    """Search the index: keyword (BM25), semantic (vectors) or hybrid.

    Changed files are re-indexed first. Exits 1 when nothing is found, as rg and grep do.""",
)


@app.command()
def similar(
    note_path: str = typer.Argument(..., metavar="NOTE", help="A file or note: a path relative to the workspace, or a bare note name."),
    path: Optional[Path] = PathArg,
    limit: int = LimitOpt,
    as_json: bool = typer.Option(False, "--json", help="Print results as JSON."),
) -> None:
    """Notes (or files) most like NOTE, by their embeddings."""
    with errors():
        hits = open_workspace(path).similar(note_path, limit=limit)
        if as_json:
            from ..tools.workspace import similar_answer

            print_json(similar_answer(hits))  # the similar tool's answer, same shape
            return
        for h in hits:
            out_console.print(f"[bold]{h.score:.3f}[/] {escape(h.path)}", highlight=False)
