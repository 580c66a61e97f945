"""The bodies of ``context`` and ``search``, and opening the workspace a command names.

Nothing here imports typer or rich: the typer commands (``cli/context.py``,
``cli/search.py``) and the fast path (``cli/fast.py``) call the same functions, so the two
ways in print the same bytes and exit with the same codes.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from .plain import EXIT_NO_MATCH, console, errors, line, note, print_json, print_text, progress, warn

CLIPBOARD_TOOLS = (["pbcopy"], ["wl-copy"], ["xclip", "-selection", "clipboard"], ["xsel", "-b", "-i"], ["clip"])

# Set by the root --store option: a database URL that replaces the configured store.
STORE_URL: str | None = None


def workspace_root(path: Path | None) -> Path:
    """An explicit PATH as given; without one, the enclosing repository or vault (the
    nearest folder holding .git, .obsidian or .smartcontext), as git finds its root."""
    if path is not None:
        return path
    from ..workspace import find_root

    return find_root(Path.cwd())


def open_workspace(path: Path | None):
    from ..workspace import Workspace

    ws = Workspace.open(workspace_root(path))
    if STORE_URL:
        ws.config.store.url = STORE_URL
    return ws


def given(**options: object) -> dict[str, object]:
    """Only the options the user set: the rest fall back to the configuration."""
    return {k: v for k, v in options.items() if v is not None}


def run_context(
    question: str,
    path: Path | None = None,
    max_tokens: int | None = None,
    format: str = "mu",
    verbose: bool = False,
    no_imports: bool = False,
    depth: int | None = None,
    exclude_tests: bool | None = None,
    scores: bool = False,
    copy: bool = False,
    encoding: str | None = None,
    as_json: bool = False,
    explain: bool = False,
    paths: list[str] | None = None,
    exclude: list[str] | None = None,
) -> None:
    """``smartcontext context``: refresh what changed, answer, print."""
    with errors():
        if question == "-":
            question = sys.stdin.read()
        ws = open_workspace(path)
        with progress(True) as report:
            refreshed = ws.refresh(report)
            result = ws.context(
                question, max_tokens=max_tokens, format=format, progress=report,
                include_imports=not no_imports, include_scores=scores,
                # JSON always carries what was left out; printed text only on request.
                explain=explain or as_json or format == "json", paths=paths or None, exclude=exclude or None,
                **given(expand_depth=depth, exclude_tests=exclude_tests, encoding=encoding),
            )
        if refreshed.files_indexed or refreshed.files_deleted:
            result.stats["refreshed"] = refreshed.to_dict()
        if as_json:
            print_json(result.to_dict())  # warnings and nearest candidates are in it
        else:
            _print_context(result)
            if explain:
                _print_explanation(result)
        if verbose:
            _print_stats(result)
        if copy:
            _copy_to_clipboard(result.text)


def _print_context(result) -> None:
    print_text(result.text)
    for w in result.warnings:
        warn(w)
    if result.nearest:
        line("Nearest candidates:", stderr=True, rich=lambda c: c.print("Nearest candidates:"))
        for n in result.nearest:
            text = f"  {n['id']} ({n['kind']}, score {n['score']})"
            line(text, stderr=True, rich=lambda c, t=text: c.print(t, highlight=False, markup=False))


def _print_explanation(result) -> None:
    """After the context: on stdout in a terminal, on stderr when the context goes to a
    pipe or file (the explanation is for the person, not for the model)."""
    stream = sys.stdout if sys.stdout.isatty() else sys.stderr
    from ..context.explain import explanation

    stream.write("\n" + explanation(result))
    stream.flush()


def _print_stats(result) -> None:
    from rich.table import Table

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
    console(stderr=True).print(t)


def _copy_to_clipboard(text: str) -> None:
    """Try each installed clipboard tool until one succeeds (xclip fails without an X
    display while wl-copy may work); success is claimed only on a zero exit."""
    import shutil
    import subprocess

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
            done = f"Copied to the clipboard ({cmd[0]})."
            line(done, stderr=True, rich=lambda c: c.print(done))
            return
        reason = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        failures.append(f"{cmd[0]} exited {proc.returncode}" + (f": {reason[0]}" if reason else ""))
    if failures:
        warn("could not copy to the clipboard (" + "; ".join(failures) + "); the context was printed only")
    else:
        warn("no clipboard tool found (pbcopy, wl-copy, xclip, xsel or clip); the context was printed only")


def run_search(
    query: str,
    path: Path | None = None,
    mode: str = "hybrid",
    tag: list[str] | None = None,
    in_path: list[str] | None = None,
    kind: list[str] | None = None,
    limit: int = 10,
    min_score: float = 0.0,
    as_json: bool = False,
    exclude: list[str] | None = None,
) -> None:
    """``smartcontext search``: refresh what changed, search, print; exits 1 on no match."""
    with errors():
        ws = open_workspace(path)
        ws.refresh()
        hits, info = ws.search_with_info(
            query, limit=limit, mode=mode, paths=in_path or None, tags=tag or None,
            kinds=kind or None, min_score=min_score, exclude=exclude or None,
        )
        if as_json:
            from ..tools.workspace import search_answer

            print_json(search_answer(hits, info))  # the search tool's answer, same shape
            if not hits:
                raise SystemExit(EXIT_NO_MATCH)
            return
        if info.get("note"):
            note(info["note"])
        if not hits:
            line("No results.", stderr=True, rich=lambda c: c.print("No results."))
            raise SystemExit(EXIT_NO_MATCH)
        for h in hits:
            _print_hit(h)


def _print_hit(h: Any) -> None:
    where = f"{h.path}:{h.start_line}"
    label = h.heading or h.name
    signals = "+".join(h.signals)
    head = f"{h.score:.3f} {where} {h.kind} {label} ({signals})"

    def through_rich(c: Any) -> None:
        from rich.markup import escape

        c.print(
            f"[bold]{h.score:.3f}[/] {escape(where)} [cyan]{h.kind}[/] {escape(label)} "
            f"[dim]({signals})[/]", highlight=False,
        )

    line(head, stderr=False, rich=through_rich)
    if h.snippet:
        snippet = f"    {h.snippet}"
        line(snippet, stderr=False, rich=lambda c: c.print(snippet, highlight=False, markup=False))
