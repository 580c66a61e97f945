"""``smartcontext context``: the most relevant code for a question, within a budget.

Options that smartcontext.toml's ``[context]`` table sets default to None here, so only
what the user typed reaches ``Workspace.context`` and the configuration supplies the rest.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from .app import CONTEXT_DEFAULTS, PathArg, app, from_config, given, open_workspace
from .output import err_console, errors, print_json, print_text, progress, warn

CLIPBOARD_TOOLS = (["pbcopy"], ["wl-copy"], ["xclip", "-selection", "clipboard"], ["xsel", "-b", "-i"], ["clip"])


@app.command()
def context(
    question: str = typer.Argument(..., help="The question, in plain language; - reads it from stdin."),
    path: Optional[Path] = PathArg,
    max_tokens: Optional[int] = typer.Option(
        None, "--max-tokens", "-t", help="Token budget (exact count).",
        show_default=from_config(CONTEXT_DEFAULTS, "max_tokens"),
    ),
    format: str = typer.Option("mu", "--format", "-f", help="mu (sigils, fewest tokens), json (for programs) or markdown (fenced code)."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Show extraction statistics on stderr."),
    no_imports: bool = typer.Option(False, "--no-imports", help="Leave out import lists (the @ lines of MU)."),
    depth: Optional[int] = typer.Option(
        None, "--depth", help="Graph expansion depth, 0-3 (0 turns the graph off).",
        show_default=from_config(CONTEXT_DEFAULTS, "expand_depth"),
    ),
    exclude_tests: Optional[bool] = typer.Option(
        None, "--exclude-tests/--include-tests", help="Leave out (or keep) test files.",
        show_default=from_config(CONTEXT_DEFAULTS, "exclude_tests"),
    ),
    scores: bool = typer.Option(False, "--scores", help="Annotate items with relevance scores (:: relevance=0.85)."),
    copy: bool = typer.Option(False, "--copy", help="Also copy the context to the clipboard."),
    encoding: Optional[str] = typer.Option(
        None, "--encoding", help="cl100k_base or o200k_base.",
        show_default=from_config(CONTEXT_DEFAULTS, "encoding"),
    ),
    as_json: bool = typer.Option(
        False, "--json",
        help="Print the whole result as JSON (text, token counts, files, items with their text, "
             "stats): the shape of the MCP context tool.",
    ),
) -> None:
    """Print the most relevant code for QUESTION within --max-tokens.

    Files changed since the last run are re-indexed first, so the answer is never stale."""
    with errors():
        if question == "-":
            question = sys.stdin.read()
        ws = open_workspace(path)
        with progress(True) as report:
            refreshed = ws.refresh(report)
            result = ws.context(
                question, max_tokens=max_tokens, format=format, progress=report,
                include_imports=not no_imports, include_scores=scores,
                **given(expand_depth=depth, exclude_tests=exclude_tests, encoding=encoding),
            )
        if refreshed.files_indexed or refreshed.files_deleted:
            result.stats["refreshed"] = refreshed.to_dict()
        if as_json:
            print_json(result.to_dict())  # warnings and nearest candidates are in it
        else:
            _print_text(result)
        if verbose:
            _print_stats(result)
        if copy:
            _copy_to_clipboard(result.text)


def _print_text(result) -> None:
    print_text(result.text)
    for w in result.warnings:
        warn(w)
    if result.nearest:
        err_console.print("Nearest candidates:")
        for n in result.nearest:
            err_console.print(f"  {n['id']} ({n['kind']}, score {n['score']})", highlight=False, markup=False)


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
    t.add_row("tokens", f"{result.token_count} / {result.max_tokens} ({result.counts})")
    for k, v in s.get("seconds", {}).items():
        t.add_row(f"time: {k}", f"{v * 1000:.1f} ms")
    if s.get("refreshed"):
        b = s["refreshed"]
        t.add_row("index updated", f"{b['files_indexed']} file(s) parsed, {b['files_deleted']} removed")
    err_console.print(t)


def _copy_to_clipboard(text: str) -> None:
    """Try each installed clipboard tool until one succeeds (xclip fails without an X
    display while wl-copy may work); success is claimed only on a zero exit."""
    failures = []
    for cmd in CLIPBOARD_TOOLS:
        if not shutil.which(cmd[0]):
            continue
        try:
            proc = subprocess.run(cmd, input=text.encode("utf-8"), capture_output=True, timeout=10)
        except (OSError, subprocess.SubprocessError) as exc:
            failures.append(f"{cmd[0]}: {exc}")
            continue
        if proc.returncode == 0:
            err_console.print(f"Copied to the clipboard ({cmd[0]}).")
            return
        reason = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        failures.append(f"{cmd[0]} exited {proc.returncode}" + (f": {reason[0]}" if reason else ""))
    if failures:
        warn("could not copy to the clipboard (" + "; ".join(failures) + "); the context was printed only")
    else:
        warn("no clipboard tool found (pbcopy, wl-copy, xclip, xsel or clip); the context was printed only")
