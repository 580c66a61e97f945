"""``smartcontext search`` and ``smartcontext similar``: ranked search over the index."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.markup import escape

from .output import errors, out_console, print_json
from .questions import run_search
from .root import LimitOpt, PathArg, app, open_workspace


@app.command()
def search(
    query: str = typer.Argument(..., help="What to look for."),
    path: Optional[Path] = PathArg,
    mode: str = typer.Option("hybrid", "--mode", "-m", help="hybrid (BM25 and vectors fused by reciprocal rank), keyword or semantic."),
    tag: list[str] = typer.Option([], "--tag", help="Only notes with this tag (# optional; nested tags tag/sub match their parent)."),
    in_path: list[str] = typer.Option([], "--path", "--paths", help="Only under this folder, file or glob ('*.md')."),
    exclude: list[str] = typer.Option([], "--exclude", help="Leave out this folder, file or glob."),
    kind: list[str] = typer.Option([], "--kind", help="Only items of this kind: module, class, function, method, section or text."),
    limit: int = LimitOpt,
    min_score: float = typer.Option(0.0, "--min-score", help="Drop results scoring below this."),
    as_json: bool = typer.Option(False, "--json", help="Print results as JSON, with the signals that answered."),
) -> None:
    """Search the index: keyword (BM25), semantic (vectors) or hybrid.

    Changed files are re-indexed first. Exits 1 when nothing is found, as rg and grep do."""
    run_search(query, path, mode, tag, in_path, kind, limit, min_score, as_json, exclude)


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
            print_json({"results": [h.to_dict() for h in hits], "count": len(hits)})
            return
        for h in hits:
            out_console.print(f"[bold]{h.score:.3f}[/] {escape(h.path)}", highlight=False)
