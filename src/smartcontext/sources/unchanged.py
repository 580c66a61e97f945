"""The refresh before a question when nothing changed: one comparison of the files' stamps
instead of a read of the index's.

A refresh stats every file the walk lists (an edit in place moves only that file's stamps,
and no folder's) and compares each with the index's ``files`` row: on a 6,571-note vault,
reading those rows and comparing them was half of the refresh. When a run finds every
file as the index has it and writes nothing, it keeps what it saw beside the index: every
file's stamps (mtime, size, ctime) in walk order, with what they were checked against.
A later refresh that sees the very same stamps, on the same walk, index, generation and
racy window, would find the same, so it skips the index's rows.

What this relies on is what the full comparison relies on: a change of a file's content
moves its ctime, which no program can set back (``touch -r`` restores mtime, not ctime),
so the same stamps mean the same file; a file added or removed changes the walk (a
folder's mtime) or the number of stamps; every write of a file's rows moves the index's
generation, and a rebuilt index has another ``index_id``. Stamps the full comparison
would not trust (written within the racy window of the last run) never get here: a run
that met one hashed it, and the racy window is part of what is compared.
"""

from __future__ import annotations

from array import array
from pathlib import Path
from typing import Any

from ..sealed import load_sealed, save_sealed
from .discover import DiscoveredFile

# Bump when the saved shape or its meaning changes; an unknown file is ignored.
_MAGIC = b"smartcontext unchanged 1\n"


def stamps(files: list[DiscoveredFile]) -> bytes:
    """The files' stamps, in order, as one byte string to compare."""
    return array("q", [v for f in files for v in (f.mtime_ns, f.size, f.ctime_ns)]).tobytes()


def load(path: Path | None, checked: tuple, seen: bytes) -> dict[str, Any] | None:
    """What the run that saved ``path`` found, when it checked the same stamps against the
    same state (``checked``); else None (compare with the index)."""
    if path is None:
        return None
    state = load_sealed(path, _MAGIC)  # None when missing, torn or damaged
    if not isinstance(state, dict) or state.get("checked") != checked or state.get("stamps") != seen:
        return None
    return state


def save(path: Path | None, checked: tuple, seen: bytes, unchanged: int, skipped: dict[str, int]) -> None:
    """Best effort: a read-only index folder only costs the next refresh the comparison."""
    if path is None:
        return
    try:
        save_sealed(path, _MAGIC, {"checked": checked, "stamps": seen, "unchanged": unchanged,
                                   "skipped": dict(skipped)})
    except OSError:
        pass
