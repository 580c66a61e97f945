"""What every command prints: JSON for scripts, one-line errors, progress bars, and the
exit codes. Commands print through here so they all look and fail the same way.

The printing itself lives in ``plain`` (which loads rich only when it changes the
output), so the fast path of ``context`` and ``search`` prints the same bytes."""

from __future__ import annotations

from .plain import (  # noqa: F401  (re-exported for the commands)
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    EXIT_NO_MATCH,
    EXIT_OK,
    EXIT_USAGE,
    PHASE_LABELS,
    console,
    errors,
    fail,
    note,
    print_json,
    print_text,
    progress,
    warn,
)

err_console = console(stderr=True)
out_console = console(stderr=False)
