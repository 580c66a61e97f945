"""Read the vault's notes for what the vectors lack: tags and snippets.

Paths come from ``.ajson`` keys, which anyone can edit, so every read goes through the
vault tools' path rules (``vault.paths.resolve_in_vault``: inside the vault, symlinks
resolved, no hidden folders) and is refused otherwise. Tags come from the notes core
(``smartcontext.notes``), the scanner the index and the vault tools use, so
``semantic_search tags=`` names the same notes as ``search --tag``. Facts are cached per
note by (mtime, size), so a filter over thousands of notes reads each note once.
"""

from __future__ import annotations

import os
import re
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..safeio import read_regular
from ..errors import SmartContextError
from ..notes import normalise_tag, scan_note, split_frontmatter
from ..notes.syntax import heading_text
from ..vault.paths import resolve_in_vault

_WS = re.compile(r"\s+")
# Snippets kept, each valid while its note's (mtime, size) stand: results repeat across
# queries, and a stat costs a fraction of reading, splitting and cleaning the note again.
SNIPPET_CACHE = 4096
TEXT_SUFFIXES = (".md", ".markdown", ".txt", ".canvas")


@dataclass(frozen=True)
class NoteStamp:
    """What one note file says about itself, as of (mtime_ns, size); tags normalised."""

    mtime_ns: int
    size: int
    tags: frozenset[str]


class VaultNotes:
    """Path-safe, mtime-cached access to note files under one vault root."""

    def __init__(self, root: str | Path, clock: Callable[[], float] = time.monotonic, resolve_ttl: float = 1.0):
        self.root = Path(root).resolve()
        self.clock = clock
        self.resolve_ttl = resolve_ttl
        self._facts: dict[str, tuple[NoteStamp, float]] = {}
        self._resolved: dict[str, tuple[Path, float]] = {}
        self._snippets: OrderedDict[tuple, tuple[tuple[int, int], tuple[str, tuple[int, int] | None]]] = OrderedDict()
        self.reads = 0

    def resolve(self, rel: str) -> Path:
        """The real path of ``rel`` inside the vault; raises PathOutsideWorkspace (or
        InvalidArgument for an empty path).

        Resolving follows every symlink (a few system calls per path component), so a
        result is reused for ``resolve_ttl`` seconds: a search touches the same notes
        again and again.
        """
        now = self.clock()
        hit = self._resolved.get(rel)
        if hit is not None and now - hit[1] < self.resolve_ttl:
            return hit[0]
        resolved = resolve_in_vault(self.root, rel)
        if len(self._resolved) > 50_000:
            self._resolved.clear()
        self._resolved[rel] = (resolved, now)
        return resolved

    def exists(self, rel: str) -> bool:
        try:
            return self.resolve(rel).is_file()
        except (SmartContextError, OSError):
            return False

    def read_text(self, rel: str) -> str | None:
        """The note's text, or None when it is missing, unreadable or outside the vault."""
        try:
            data = read_regular(self.resolve(rel))
        except (SmartContextError, OSError):
            return None
        self.reads += 1
        return data.decode("utf-8", errors="replace")

    def stat(self, rel: str) -> os.stat_result | None:
        try:
            return self.resolve(rel).stat()
        except (SmartContextError, OSError):
            return None

    def facts(self, rel: str, max_age: float = 0.0) -> NoteStamp | None:
        """The note's tags; re-read only when the file changed.

        ``max_age``: trust facts checked against disk less than this many seconds ago
        without a stat (filters over thousands of notes then cost no system call).
        """
        now = self.clock()
        entry = self._facts.get(rel)
        if entry is not None and now - entry[1] < max_age:
            return entry[0]
        st = self.stat(rel)
        if st is None:
            self._facts.pop(rel, None)
            return None
        cached = entry[0] if entry else None
        if cached is not None and (cached.mtime_ns, cached.size) == (st.st_mtime_ns, st.st_size):
            self._facts[rel] = (cached, now)
            return cached
        text = self.read_text(rel) if rel.lower().endswith(TEXT_SUFFIXES) else ""
        if text is None:
            return None
        tags = frozenset(normalise_tag(t) for t in scan_note(text).tags())
        facts = NoteStamp(st.st_mtime_ns, st.st_size, tags)
        self._facts[rel] = (facts, now)
        return facts

    def snippet(
        self, rel: str, lines: tuple[int, int] | None, anchor: str | None, max_chars: int
    ) -> tuple[str, tuple[int, int] | None]:
        """Text for a result and the lines it came from.

        For a block: its stored lines; when the block is a heading section (``anchor`` is
        its heading) and the note was edited since the plugin stored them, the span moves
        to where that heading is now. For a note: the start of the text after frontmatter.
        """
        st = self.stat(rel)
        if st is None:
            return "", lines
        key = (rel, lines, anchor, max_chars)
        stamp = (st.st_mtime_ns, st.st_size)
        hit = self._snippets.get(key)
        if hit is not None and hit[0] == stamp:
            self._snippets.move_to_end(key)
            return hit[1]
        answer = self._snippet(rel, lines, anchor, max_chars)
        self._snippets[key] = (stamp, answer)
        if len(self._snippets) > SNIPPET_CACHE:
            self._snippets.popitem(last=False)
        return answer

    def _snippet(
        self, rel: str, lines: tuple[int, int] | None, anchor: str | None, max_chars: int
    ) -> tuple[str, tuple[int, int] | None]:
        text = self.read_text(rel) if rel.lower().endswith(TEXT_SUFFIXES) else None
        if text is None:
            return "", lines
        all_lines = text.splitlines()
        if lines is None:
            span = (split_frontmatter(text)[2] + 1, len(all_lines))
        else:
            span = _anchor(all_lines, lines, anchor)
        start, end = span
        chunk = all_lines[start - 1 : end]
        while chunk and not chunk[0].strip():
            chunk = chunk[1:]
        # The heading (or note title) is reported separately; the snippet is what follows.
        if len(chunk) > 1 and heading_text(chunk[0]) is not None:
            chunk = chunk[1:]
        chunk = [line for line in chunk if line.strip() not in ("---", "...")]
        return shorten(" ".join(chunk), max_chars), (span if lines is not None else None)


def heading_parts(key: str) -> list[str]:
    """``"a.md#H1#H2#{1}"`` -> ``["H1", "H2"]``: the headings, without paragraph indexes."""
    parts = key.split("#")[1:]
    out = []
    for part in parts:
        if part.startswith("{") and part.endswith("}"):
            continue
        out.append("frontmatter" if part == "---frontmatter---" else part)
    return out


def anchor_heading(key: str) -> str | None:
    """The heading a block starts with, or None for paragraph and frontmatter blocks."""
    last = key.rsplit("#", 1)[-1] if "#" in key else ""
    if not last or (last.startswith("{") and last.endswith("}")) or last == "---frontmatter---":
        return None
    return last.strip()


def shorten(text: str, max_chars: int) -> str:
    # Collapse whitespace in a prefix only: a snippet never needs the rest of a long note.
    head = _WS.sub(" ", text[: max_chars * 4]).strip()
    text = head if len(head) > max_chars or len(text) <= max_chars * 4 else _WS.sub(" ", text).strip()
    if len(text) <= max_chars:
        return text
    cut = text[:max_chars].rsplit(" ", 1)[0] if " " in text[:max_chars] else text[:max_chars]
    return cut.rstrip(" ,;:") + "…"


def _anchor(lines: list[str], span: tuple[int, int], heading: str | None) -> tuple[int, int]:
    start, end = span
    n = len(lines)
    if heading and not _is_heading(lines, start, heading):
        for i, line in enumerate(lines, start=1):
            h = heading_text(line)
            if h and h[1] == heading:
                end, start = i + (end - start), i
                break
    start = min(max(1, start), max(1, n))
    return start, min(max(start, end), max(start, n))


def _is_heading(lines: list[str], line_no: int, want: str) -> bool:
    if not 1 <= line_no <= len(lines):
        return False
    h = heading_text(lines[line_no - 1])
    return bool(h and h[1] == want)
