"""``smartcontext search`` and ``smartcontext similar``: ranked search over the index."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape

from .app import LimitOpt, PathArg, app, open_workspace
from .output import err_console, errors, note, out_console, print_json


@app.command()
def search(
    query: str = typer.Argument(..., help="What to look for."),
    path: Path = PathArg,
    mode: str = typer.Option("hybrid", "--mode", "-m", help="hybrid (BM25 and vectors fused by reciprocal rank), keyword or semantic."),
    tag: list[str] = typer.Option([], "--tag", help="Only notes with this tag (# optional; nested tags tag/sub match their parent)."),
    in_path: list[str] = typer.Option([], "--path", help="Only under this folder or file."),
    kind: list[str] = typer.Option([], "--kind", help="Only items of this kind: module, class, function, method, section or text."),
    limit: int = LimitOpt,
    min_score: float = typer.Option(0.0, "--min-score", help="Drop results scoring below this."),
    as_json: bool = typer.Option(False, "--json", help="Print results as JSON, with the signals that answered."),
) -> None:
    """Search the index: keyword (BM25), semantic (vectors) or hybrid."""
    from ..tools.workspace import search_answer

    with errors():
        hits, info = open_workspace(path).search_with_info(
            query, limit=limit, mode=mode, paths=in_path or None, tags=tag or None,
            kinds=kind or None, min_score=min_score,
        )
        if as_json:
            print_json(search_answer(hits, info))  # the search tool's answer, same shape
            return
        if info.get("note"):
            note(info["note"])
        if not hits:
            err_console.print("No results.")
            return
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
    note_path: str = typer.Argument(..., metavar="NOTE", help="A file or note, relative to the workspace."),
    path: Path = PathArg,
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
