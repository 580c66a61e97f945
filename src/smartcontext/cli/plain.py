"""What every command prints and how it fails, without importing rich unless it matters.

Importing rich (and typer, which brings click and pydantic) is a quarter of a `context`
process. Output that goes to a pipe or a file is plain text, and for most text rich would
print exactly what it was given; then it is written directly. Text that rich would change
(markup, ``:emoji:`` codes, control characters, tabs) and any stream rich treats as a
terminal go through rich's own console, so the bytes are the same either way.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, NoReturn

from ..errors import SmartContextError

EXIT_OK = 0
EXIT_ERROR = 1  # a typed library error, a failed tool call, an unconfigured plugin
EXIT_NO_MATCH = 1  # a search that found nothing, as rg and grep report it
EXIT_USAGE = 2  # the command line itself is wrong (unknown option, missing argument)
EXIT_INTERRUPTED = 130  # Ctrl-C, as shells report SIGINT

PHASE_LABELS = {"parse": "Parsing files", "model": "Building the embedding model (once)", "embed": "Embedding items"}

# Set when a command stops on Ctrl-C or SIGTERM (see ``cli.main``).
interrupted = False

# What rich would not print as given: markup brackets and escapes, emoji codes such as
# :smile:, the control characters its Text strips (and any other below a space), tabs it
# expands. Conservative: a match only sends the line through rich.
_RICH_CHANGES = re.compile(r"[\[\\\x00-\x1f\x7f]|:\S*?:")

_consoles: dict[bool, Any] = {}


def console(stderr: bool) -> Any:
    """The process's rich console for stderr or stdout, made on first use. soft_wrap: a
    long line stays one line (piped output has no width, and rich's fallback of 80 columns
    would break paths and suggested commands in two)."""
    found = _consoles.get(stderr)
    if found is None:
        from rich.console import Console

        found = _consoles[stderr] = Console(stderr=stderr, soft_wrap=True)
    return found


def _rich_terminal(stream: Any) -> bool:
    """Whether rich would treat ``stream`` as a terminal (``Console.is_terminal``): then
    it adds colours, so rich prints."""
    compatible = os.environ.get("TTY_COMPATIBLE", "")
    if compatible in ("0", "1"):
        return compatible == "1"
    force = os.environ.get("FORCE_COLOR")
    if force is not None:
        return force != ""
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except ValueError:  # a closed stream: let rich decide
        return True


def line(text: str, *, stderr: bool, rich: Callable[[Any], None]) -> None:
    """Write ``text`` and a newline as rich would print it; ``rich(console)`` prints it
    through rich when rich might print something else."""
    stream = sys.stderr if stderr else sys.stdout
    if _rich_terminal(stream) or _RICH_CHANGES.search(text):
        rich(console(stderr))
        return
    stream.write(text + "\n")
    stream.flush()


def labelled(label: str, style: str, message: str) -> None:
    """``label message`` on stderr with the label coloured on a terminal."""

    def through_rich(c: Any) -> None:
        from rich.text import Text

        c.print(Text.assemble((label, style), " ", message), soft_wrap=True)

    line(f"{label} {message}", stderr=True, rich=through_rich)


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2, default=str) + "\n")


def print_text(text: str) -> None:
    """Library-rendered text (context, reports), written as is: no markup, no wrapping."""
    sys.stdout.write(text if text.endswith("\n") or not text else text + "\n")


def warn(message: str) -> None:
    labelled("warning:", "yellow", message)


def note(message: str) -> None:
    labelled("note:", "yellow", message)


def fail(message: str, code: int = EXIT_ERROR) -> NoReturn:
    """One line on stderr, no traceback, a non-zero exit. ``message`` is never read as
    markup: library messages quote paths and options that may hold brackets."""
    labelled("Error:", "bold red", str(message))
    raise SystemExit(code)


@contextmanager
def errors(*extra: type[BaseException]) -> Iterator[None]:
    """Typed library errors (and ``extra`` ones, e.g. OSError for a taken port) become
    ``fail``; Ctrl-C exits 130."""
    caught: tuple[type[BaseException], ...] = (SmartContextError, *extra)
    try:
        yield
    except caught as exc:
        fail(str(exc))
    except KeyboardInterrupt:
        global interrupted
        interrupted = True
        fail("interrupted", EXIT_INTERRUPTED)


@contextmanager
def progress(enabled: bool) -> Iterator[Callable[[str, int, int], None] | None]:
    """A rich progress bar on stderr when it is a terminal; yields callback(phase, done, total).
    The bar (and rich) is made on the first update, so a question that parses nothing
    never loads it."""
    if not enabled or not sys.stderr.isatty():
        yield None
        return
    bar: Any = None
    tasks: dict[str, Any] = {}

    def update(phase: str, done: int, total: int) -> None:
        nonlocal bar
        if bar is None:
            if not total:
                return
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            bar = Progress(
                TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                TextColumn("eta"), TimeRemainingColumn(),
                console=console(True), transient=True,
            )
            bar.start()
        if phase not in tasks:
            tasks[phase] = bar.add_task(PHASE_LABELS.get(phase, phase), total=total)
        bar.update(tasks[phase], completed=done, total=total)

    try:
        yield update
    finally:
        if bar is not None:
            bar.stop()
