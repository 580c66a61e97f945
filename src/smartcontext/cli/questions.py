"""The bodies of ``context`` and ``search``, and opening the workspace a command names.

Nothing here imports typer or rich: the typer commands (``cli/context.py``,
``cli/search.py``) and the fast path (``cli/fast.py``) call the same functions, so the two
ways in print the same bytes and exit with the same codes.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from ..query import Query
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


def open_workspace(path: Path | None, lean: bool = False):
    """The workspace at ``path``; ``lean`` for a command that asks it one question."""
    from ..workspace import Workspace

    ws = Workspace.open(workspace_root(path))
    ws.lean = lean
    if STORE_URL:
        ws.config.store.url = STORE_URL
    return ws


def typed(options: dict[str, Any]) -> dict[str, Any]:
    """Only the options the user typed (an empty list is a list option not given): the
    rest fall back to the configuration, then the declared default."""
    return {k: v for k, v in options.items() if v is not None and v != []}


def run_context(
    question: str,
    path: Path | None = None,
    verbose: bool = False,
    copy: bool = False,
    as_json: bool = False,
    show_explanation: bool = False,
    **given: Any,
) -> None:
    """``smartcontext context``: refresh what changed, answer, print; exits 1 when nothing
    was selected. ``given``: the code-context options as typed (None or [] = not given)."""
    with errors():
        if question == "-":
            question = sys.stdin.read()
        # Closed before the process ends: the index's write-ahead log is folded into it
        # then, not left for the collector (which a one-question process skips at exit).
        with open_workspace(path, lean=True) as ws:
            given = typed(given)
            # What was left out is recorded for JSON and --explain only: the printed context
            # alone does not pay for it.
            given["explain"] = show_explanation or as_json or given.get("format") == "json"
            query = Query.build("code-context", question, defaults=ws.config.context, **given)
            with progress(True) as report:
                refreshed = ws.refresh(report)
                if refreshed.stale:
                    warn(refreshed.stale)
                result = ws.answer_context(query, report)
            if refreshed.files_indexed or refreshed.files_deleted:
                result.stats["refreshed"] = refreshed.to_dict()
            if as_json:
                print_json(result.to_dict())  # warnings and nearest candidates are in it
            else:
                _print_context(result)
                if show_explanation:
                    _print_explanation(result)
            if verbose:
                _print_stats(result)
            if copy:
                _copy_to_clipboard(result.text)
            if not result.items:  # nothing matched (or fitted): the warning above says which
                raise SystemExit(EXIT_NO_MATCH)


def _print_context(result) -> None:
    print_text(result.text)
    for w in result.warnings:
        warn(w)
    if result.nearest:
        line("Nearest candidates:", stderr=True, rich=lambda c: c.print("Nearest candidates:"))
        for n in result.nearest:
            text = f"  {n['id']} ({n['kind']}, score {n['score']})"
            line(text, stderr=True, rich=lambda c: c.print(text, highlight=False, markup=False))


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
    if s.get("tests_demoted"):
        # Short: the table cuts a long cell at the terminal's width.
        t.add_row("tests demoted", f"{s['tests_demoted']} below the source (--exclude-tests drops them)")
    if s.get("report_named_tests"):
        named = s["report_named_tests"]
        t.add_row("tests the report names", ", ".join(named[:3]) + (f" (+{len(named) - 3})" if len(named) > 3 else "")
                  + ": demoted too, a long report's fix is in the source")
    if s.get("docstring_demoted"):
        n = s["docstring_demoted"]
        t.add_row("docstring demoted", f"{n} function{'s that are' if n != 1 else ' that is'} mostly docstring")
    if s.get("translations_demoted"):
        n = s["translations_demoted"]
        t.add_row("translations demoted", f"{n} page{'s' if n != 1 else ''} below {'their' if n != 1 else 'its'} English copy")
    if s.get("title_files"):
        t.add_row("named by the title", ", ".join(s["title_files"][:5]))
    if s.get("message_sources"):
        t.add_row("prints the pasted log", ", ".join(s["message_sources"]))
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


def run_search(query: str, path: Path | None = None, as_json: bool = False, **given: Any) -> None:
    """``smartcontext search``: refresh what changed, search, print; exits 1 on no match."""
    with errors():
        checked = Query.build("search", query, **typed(given))
        with open_workspace(path, lean=True) as ws:  # closed as run_context's is
            stale = ws.refresh().stale
            if stale:
                warn(stale)
            hits, info = ws.answer_search(checked)
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
