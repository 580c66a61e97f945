"""What every command prints: JSON for scripts, one-line errors, progress bars, and the
exit codes. Commands print through here so they all look and fail the same way."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Callable, NoReturn

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from ..errors import SmartContextError

EXIT_OK = 0
EXIT_ERROR = 1  # a typed library error, a failed tool call, an unconfigured plugin
EXIT_NO_MATCH = 1  # a search that found nothing, as rg and grep report it
EXIT_INTERRUPTED = 130  # Ctrl-C, as shells report SIGINT

# soft_wrap: a long line stays one line. Piped output has no terminal width, and rich's
# fallback of 80 columns would break paths and suggested commands in two.
err_console = Console(stderr=True, soft_wrap=True)
out_console = Console(soft_wrap=True)

PHASE_LABELS = {"parse": "Parsing files", "model": "Building the embedding model (once)", "embed": "Embedding items"}


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2, default=str) + "\n")


def print_text(text: str) -> None:
    """Library-rendered text (context, reports), written as is: no markup, no wrapping."""
    sys.stdout.write(text if text.endswith("\n") or not text else text + "\n")


def warn(message: str) -> None:
    err_console.print(Text.assemble(("warning:", "yellow"), " ", message), soft_wrap=True)


def note(message: str) -> None:
    err_console.print(Text.assemble(("note:", "yellow"), " ", message), soft_wrap=True)


def fail(message: str, code: int = EXIT_ERROR) -> NoReturn:
    """One line on stderr, no traceback, a non-zero exit. ``message`` is never read as
    markup: library messages quote paths and options that may hold brackets."""
    err_console.print(Text.assemble(("Error:", "bold red"), " ", str(message)), soft_wrap=True)
    raise typer.Exit(code)


@contextmanager
def errors(*extra: type[BaseException]) -> Iterator[None]:
    """Typed library errors (and ``extra`` ones, e.g. OSError for a taken port) become
    ``fail``; Ctrl-C exits 130."""
    try:
        yield
    except (SmartContextError, *extra) as exc:
        fail(str(exc))
    except KeyboardInterrupt:
        global interrupted
        interrupted = True
        fail("interrupted", EXIT_INTERRUPTED)


# Set when a command stops on Ctrl-C or SIGTERM (see ``cli.main``).
interrupted = False


@contextmanager
def progress(enabled: bool) -> Iterator[Callable[[str, int, int], None] | None]:
    """A rich progress bar on stderr when it is a terminal; yields callback(phase, done, total)."""
    if not enabled or not sys.stderr.isatty():
        yield None
        return
    with Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        TextColumn("eta"), TimeRemainingColumn(),
        console=err_console, transient=True,
    ) as bar:
        tasks: dict[str, Any] = {}

        def update(phase: str, done: int, total: int) -> None:
            if phase not in tasks:
                tasks[phase] = bar.add_task(PHASE_LABELS.get(phase, phase), total=total)
            bar.update(tasks[phase], completed=done, total=total)

        yield update
