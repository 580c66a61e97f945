"""``smartcontext search`` and ``smartcontext similar``: ranked search over the index."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.markup import escape

from .app import LimitOpt, PathArg, app, open_workspace
from .output import EXIT_NO_MATCH, err_console, errors, note, out_console, print_json


@app.command()
def search(
    query: str = typer.Argument(..., help="What to look for."),
    path: Optional[Path] = PathArg,
    mode: str = typer.Option("hybrid", "--mode", "-m", help="hybrid (BM25 and vectors fused by reciprocal rank), keyword or semantic."),
    tag: list[str] = typer.Option([], "--tag", help="Only notes with this tag (# optional; nested tags tag/sub match their parent)."),
    in_path: list[str] = typer.Option([], "--path", help="Only under this folder or file."),
    kind: list[str] = typer.Option([], "--kind", help="Only items of this kind: module, class, function, method, section or text."),
    limit: int = LimitOpt,
    min_score: float = typer.Option(0.0, "--min-score", help="Drop results scoring below this."),
    as_json: bool = typer.Option(False, "--json", help="Print results as JSON, with the signals that answered."),
) -> None:
    """Search the index: keyword (BM25), semantic (vectors) or hybrid.

    Changed files are re-indexed first. Exits 1 when nothing is found, as rg and grep do."""
    from ..tools.workspace import search_answer

    with errors():
        ws = open_workspace(path)
        ws.refresh()
        hits, info = ws.search_with_info(
            query, limit=limit, mode=mode, paths=in_path or None, tags=tag or None,
            kinds=kind or None, min_score=min_score,
        )
        if as_json:
            print_json(search_answer(hits, info))  # the search tool's answer, same shape
            if not hits:
                raise typer.Exit(EXIT_NO_MATCH)
            return
        if info.get("note"):
            note(info["note"])
        if not hits:
            err_console.print("No results.")
            raise typer.Exit(EXIT_NO_MATCH)
        for h in hits:
            where = f"{h.path}:{h.start_line}"
            label = h.heading or h.name
            out_console.print(
                f"[bold]{h.score:.3f}[/] {escape(where)} [cyan]{h.kind}[/] {escape(label)} "
                f"[dim]({'+'.join(h.signals)})[/]", highlight=False,
            )
            if h.snippet:
                out_console.print(f"    {h.snippet}", highlight=False, markup=False)


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
