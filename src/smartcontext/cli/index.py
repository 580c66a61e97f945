"""``smartcontext index`` and ``smartcontext status``: build the index, say what it holds."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Optional

import typer

from .root import JsonOpt, PathArg, app, open_workspace
from .output import err_console, errors, fail, out_console, print_json, progress, warn

MAX_WARNINGS_SHOWN = 10


class EmbedEstimate:
    """A progress callback that passes every update on to ``bar`` and, once the rate of
    embedding is measured, says how long the whole embedding will take.

    The first batch also pays for loading the model, so the rate is measured from the end
    of the first batch to the end of the next one."""

    def __init__(self, bar: Callable[[str, int, int], None] | None):
        self.bar = bar
        self.first: tuple[int, float] | None = None
        self.said = False

    def __call__(self, phase: str, done: int, total: int) -> None:
        if self.bar is not None:
            self.bar(phase, done, total)
        if phase != "embed" or self.said or not done:
            return
        now = time.monotonic()
        if self.first is None:
            self.first = (done, now)
            return
        rate = (done - self.first[0]) / max(now - self.first[1], 1e-6)
        self.said = True
        if rate > 0 and done < total:
            err_console.print(
                f"Embedding {total:,} items, about {duration(total / rate)} at ~{rate:,.0f} items/s "
                f"({total - done:,} to go)", highlight=False,
            )


def duration(seconds: float) -> str:
    """"40 s", "4 min", "1 h 5 min": an estimate, rounded as one."""
    if seconds < 90:
        return f"{max(1, round(seconds))} s"
    minutes = round(seconds / 60)
    if minutes < 60:
        return f"{minutes} min"
    return f"{minutes // 60} h {minutes % 60} min"


@app.command()
def index(
    path: Optional[Path] = PathArg,
    embeddings: Optional[bool] = typer.Option(
        None, "--embeddings/--no-embeddings",
        help="Compute vectors (an estimate of the time is printed after the first batches). "
             "--no-embeddings: keyword + graph only; embeddings.enabled = false in smartcontext.toml does the same.",
        show_default="when a model is configured",
    ),
    rebuild: bool = typer.Option(False, "--rebuild", help="Discard the index and build it anew (for a corrupt index)."),
    as_json: bool = typer.Option(False, "--json", help="Print statistics as JSON (files parsed, unchanged, deleted; skipped by reason; items, edges, embedded, cache hits, seconds per phase)."),
) -> None:
    """Index a folder (only new and changed files are parsed)."""
    with errors():
        ws = open_workspace(path)
        with progress(not as_json) as bar:
            report = bar if as_json else EmbedEstimate(bar)
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
            out_console.print(f"Skipped {stats.skipped_total}: {reasons} (`smartcontext files --skipped` lists them).")
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
    """Show what the index holds; exits 1 when something stops it from answering as it
    should (an unfinished copy, an unknown embedding model), said in one line on stderr."""
    with errors():
        st = open_workspace(path).status()
        if as_json:
            print_json(st.to_dict())
        elif not st.indexed:
            out_console.print(f"{st.root} has no index yet; run `smartcontext index {path}`.")
        else:
            out_console.print(f"Index: {st.index_path}")
            out_console.print(f"Files {st.files}, items {st.items}, edges {st.edges}, vectors {st.embedding.vectors}")
            out_console.print("Kinds: " + ", ".join(f"{k} {v}" for k, v in sorted(st.kinds.items())))
            stored = ", ".join(f"{m} ({n})" for m, n in sorted(st.vector_models.items())) or "none"
            out_console.print(f"Embedding model: {st.embedding.model or 'none'}; vectors stored: {stored}")
            out_console.print(f"Last indexed: {st.last_indexed}; files with warnings: {st.warnings}")
            if st.skipped:
                reasons = ", ".join(f"{n} {k}" for k, n in st.skipped.items())
                out_console.print(f"Skipped: {reasons} (smartcontext files --skipped lists them)")
    if st.problems:
        fail("; ".join(st.problems))
