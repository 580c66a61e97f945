"""The command line: parses arguments, calls the library, prints. Nothing else."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from .cli_sc import sc_app
from .cli_serve import serve_app
from .cli_tool import TOOL_CONTEXT, tool
from .errors import SmartContextError

app = typer.Typer(
    help="Smart Context: the best slice of a repository or notes vault for a question, "
    "within a token budget.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(serve_app, name="serve")
app.add_typer(sc_app, name="sc")
app.command("tool", context_settings=TOOL_CONTEXT)(tool)
err_console = Console(stderr=True)
out_console = Console()

PathArg = typer.Argument(Path("."), help="Workspace folder (a repository or a vault).")


def _fail(message: str, code: int = 1) -> None:
    err_console.print(f"[bold red]Error:[/] {message}", highlight=False)
    raise typer.Exit(code)


@contextmanager
def _errors() -> Iterator[None]:
    try:
        yield
    except SmartContextError as exc:
        _fail(str(exc))
    except KeyboardInterrupt:
        _fail("interrupted", 130)


@contextmanager
def _progress(enabled: bool):
    """A rich progress bar on stderr; yields a callback(phase, done, total)."""
    if not enabled or not sys.stderr.isatty():
        yield None
        return
    with Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=err_console, transient=True,
    ) as bar:
        tasks: dict[str, Any] = {}
        labels = {"parse": "Parsing files", "embed": "Embedding items"}

        def update(phase: str, done: int, total: int) -> None:
            if phase not in tasks:
                tasks[phase] = bar.add_task(labels.get(phase, phase), total=total)
            bar.update(tasks[phase], completed=done, total=total)

        yield update


def _open(path: Path):
    from .workspace import Workspace

    return Workspace.open(path)


def _print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2, default=str) + "\n")


@app.command()
def index(
    path: Path = PathArg,
    embeddings: Optional[bool] = typer.Option(
        None, "--embeddings/--no-embeddings", help="Compute vectors (default: when a model is configured)."
    ),
    rebuild: bool = typer.Option(False, "--rebuild", help="Discard the index and build it anew."),
    as_json: bool = typer.Option(False, "--json", help="Print statistics as JSON."),
) -> None:
    """Index a folder (only new and changed files are parsed)."""
    with _errors():
        ws = _open(path)
        with _progress(not as_json) as progress:
            stats = ws.index(embeddings=embeddings, progress=progress, rebuild=rebuild)
        if as_json:
            _print_json(stats.to_dict())
            return
        out_console.print(
            f"Indexed [bold]{ws.root}[/]: {stats.files_indexed} file(s) parsed, "
            f"{stats.files_unchanged} unchanged, {stats.files_deleted} removed; "
            f"{stats.items} items, {stats.edges} edges."
        )
        if stats.skipped:
            reasons = ", ".join(f"{n} {k}" for k, n in sorted(stats.skipped.items()))
            out_console.print(f"Skipped {stats.skipped_total}: {reasons}.")
        if stats.embedding_model:
            out_console.print(
                f"Embeddings ({stats.embedding_model}): {stats.embedded} item(s) embedded, "
                f"{stats.embed_cache_hits} from cache."
            )
        for w in stats.warnings[:10]:
            err_console.print(f"[yellow]warning:[/] {w}", highlight=False)
        if len(stats.warnings) > 10:
            err_console.print(f"[yellow]... and {len(stats.warnings) - 10} more warnings[/]")


@app.command()
def context(
    question: str = typer.Argument(..., help="The question, in plain language."),
    path: Path = PathArg,
    max_tokens: int = typer.Option(8000, "--max-tokens", "-t", help="Token budget (exact count)."),
    format: str = typer.Option("mu", "--format", "-f", help="mu, json or markdown."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Show extraction statistics."),
    no_imports: bool = typer.Option(False, "--no-imports", help="Leave out import lists."),
    depth: int = typer.Option(1, "--depth", help="Graph expansion depth (0-3)."),
    exclude_tests: bool = typer.Option(False, "--exclude-tests", help="Leave out test files."),
    scores: bool = typer.Option(False, "--scores", help="Annotate items with relevance scores."),
    copy: bool = typer.Option(False, "--copy", help="Also copy the context to the clipboard."),
    encoding: str = typer.Option("cl100k_base", "--encoding", help="cl100k_base or o200k_base."),
) -> None:
    """Print the most relevant code for QUESTION within --max-tokens."""
    with _errors():
        ws = _open(path)
        with _progress(True) as progress:
            result = ws.context(
                question, max_tokens=max_tokens, format=format, progress=progress,
                include_imports=not no_imports, expand_depth=depth, exclude_tests=exclude_tests,
                include_scores=scores, encoding=encoding,
            )
        if format == "json":
            _print_json(result.to_dict())
        else:
            sys.stdout.write(result.text)
        for w in result.warnings:
            err_console.print(f"[yellow]warning:[/] {w}", highlight=False)
        if result.nearest:
            err_console.print("Nearest candidates:")
            for n in result.nearest:
                err_console.print(f"  {n['id']} ({n['kind']}, score {n['score']})", highlight=False)
        if verbose:
            _print_stats(result)
        if copy:
            _copy_to_clipboard(result.text)


def _print_stats(result) -> None:
    s = result.stats
    t = Table(title="Extraction", show_header=False, box=None)
    t.add_row("entities", ", ".join(e.text for e in result.entities[:15]) or "-")
    for k, v in s.get("candidates", {}).items():
        t.add_row(f"candidates: {k}", str(v))
    t.add_row("signals used", ", ".join(s.get("signals", [])))
    if s.get("note"):
        t.add_row("note", s["note"])
    t.add_row("selected", str(s.get("selected")))
    t.add_row("tokens", f"{result.token_count} / {result.max_tokens}")
    for k, v in s.get("seconds", {}).items():
        t.add_row(f"time: {k}", f"{v * 1000:.1f} ms")
    if s.get("built_index"):
        b = s["built_index"]
        t.add_row("index built", f"{b['files_indexed']} files, {b['items']} items (no embeddings)")
    err_console.print(t)


def _copy_to_clipboard(text: str) -> None:
    for cmd in (["pbcopy"], ["wl-copy"], ["xclip", "-selection", "clipboard"], ["xsel", "-b", "-i"], ["clip"]):
        if shutil.which(cmd[0]):
            subprocess.run(cmd, input=text.encode("utf-8"), check=False)
            err_console.print("Copied to the clipboard.")
            return
    err_console.print(
        "[yellow]warning:[/] no clipboard tool found (pbcopy, wl-copy, xclip, xsel or clip); "
        "the context was printed only"
    )


@app.command()
def search(
    query: str = typer.Argument(..., help="What to look for."),
    path: Path = PathArg,
    mode: str = typer.Option("hybrid", "--mode", "-m", help="hybrid, keyword or semantic."),
    tag: list[str] = typer.Option([], "--tag", help="Only notes with this tag (repeatable)."),
    in_path: list[str] = typer.Option([], "--path", help="Only under this folder (repeatable)."),
    kind: list[str] = typer.Option([], "--kind", help="Only items of this kind (repeatable)."),
    limit: int = typer.Option(10, "--limit", "-n", help="Number of results."),
    min_score: float = typer.Option(0.0, "--min-score", help="Drop results scoring below this."),
    as_json: bool = typer.Option(False, "--json", help="Print results as JSON."),
) -> None:
    """Search the index: keyword (BM25), semantic (vectors) or hybrid."""
    with _errors():
        ws = _open(path)
        hits, info = ws.search_with_info(
            query, limit=limit, mode=mode, paths=in_path or None, tags=tag or None,
            kinds=kind or None, min_score=min_score,
        )
        if as_json:
            _print_json({"results": [h.to_dict() for h in hits], "count": len(hits), **info})
            return
        if info.get("note"):
            err_console.print(f"[yellow]note:[/] {info['note']}", highlight=False)
        if not hits:
            err_console.print("No results.")
            return
        for h in hits:
            where = f"{h.path}:{h.start_line}"
            label = h.heading or h.name
            out_console.print(
                f"[bold]{h.score:.3f}[/] {where} [cyan]{h.kind}[/] {label} "
                f"[dim]({'+'.join(h.signals)})[/]", highlight=False,
            )
            if h.snippet:
                out_console.print(f"    {h.snippet}", highlight=False, markup=False)


@app.command()
def similar(
    note: str = typer.Argument(..., help="A file or note, relative to the workspace."),
    path: Path = PathArg,
    limit: int = typer.Option(10, "--limit", "-n", help="Number of results."),
    as_json: bool = typer.Option(False, "--json", help="Print results as JSON."),
) -> None:
    """Notes (or files) most like NOTE, by their embeddings."""
    with _errors():
        ws = _open(path)
        hits = ws.similar(note, limit=limit)
        if as_json:
            _print_json({"results": [h.to_dict() for h in hits], "count": len(hits)})
            return
        for h in hits:
            out_console.print(f"[bold]{h.score:.3f}[/] {h.path}", highlight=False)


@app.command()
def status(
    path: Path = PathArg,
    as_json: bool = typer.Option(False, "--json", help="Print as JSON."),
) -> None:
    """Show what the index holds."""
    with _errors():
        ws = _open(path)
        st = ws.status()
        if as_json:
            _print_json(st.to_dict())
            return
        if not st.indexed:
            out_console.print(f"{st.root} has no index yet; run `smartcontext index {path}`.")
            return
        out_console.print(f"Index: {st.index_path}")
        out_console.print(f"Files {st.files}, items {st.items}, edges {st.edges}, vectors {st.vectors}")
        out_console.print("Kinds: " + ", ".join(f"{k} {v}" for k, v in sorted(st.kinds.items())))
        out_console.print(f"Embedding model: {st.embedding_model or 'none'}; stored: {st.vector_models or 'none'}")
        out_console.print(f"Last indexed: {st.last_indexed}; files with warnings: {st.warnings}")


def main() -> None:
    app()


if __name__ == "__main__":
    main()
