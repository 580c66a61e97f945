"""``smartcontext index`` and ``smartcontext status``: build the index, say what it holds."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from .app import JsonOpt, PathArg, app, open_workspace
from .output import err_console, errors, out_console, print_json, progress, warn

MAX_WARNINGS_SHOWN = 10


@app.command()
def index(
    path: Optional[Path] = PathArg,
    embeddings: Optional[bool] = typer.Option(
        None, "--embeddings/--no-embeddings", help="Compute vectors.",
        show_default="when a model is configured",
    ),
    rebuild: bool = typer.Option(False, "--rebuild", help="Discard the index and build it anew (for a corrupt index)."),
    as_json: bool = typer.Option(False, "--json", help="Print statistics as JSON (files parsed, unchanged, deleted; skipped by reason; items, edges, embedded, cache hits, seconds per phase)."),
) -> None:
    """Index a folder (only new and changed files are parsed)."""
    with errors():
        ws = open_workspace(path)
        with progress(not as_json) as report:
            stats = ws.index(embeddings=embeddings, progress=report, rebuild=rebuild)
        if as_json:
            print_json(stats.to_dict())
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
        for w in stats.warnings[:MAX_WARNINGS_SHOWN]:
            warn(w)
        if len(stats.warnings) > MAX_WARNINGS_SHOWN:
            err_console.print(f"[yellow]... and {len(stats.warnings) - MAX_WARNINGS_SHOWN} more warnings[/]")


@app.command()
def status(path: Optional[Path] = PathArg, as_json: bool = JsonOpt) -> None:
    """Show what the index holds."""
    with errors():
        st = open_workspace(path).status()
        if as_json:
            print_json(st.to_dict())
            return
        if not st.indexed:
            out_console.print(f"{st.root} has no index yet; run `smartcontext index {path}`.")
            return
        out_console.print(f"Index: {st.index_path}")
        out_console.print(f"Files {st.files}, items {st.items}, edges {st.edges}, vectors {st.vectors}")
        out_console.print("Kinds: " + ", ".join(f"{k} {v}" for k, v in sorted(st.kinds.items())))
        stored = ", ".join(f"{m} ({n})" for m, n in sorted(st.vector_models.items())) or "none"
        out_console.print(f"Embedding model: {st.embedding_model or 'none'}; vectors stored: {stored}")
        out_console.print(f"Last indexed: {st.last_indexed}; files with warnings: {st.warnings}")
