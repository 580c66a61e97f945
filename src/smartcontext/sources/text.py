"""Plain-text source: reST, .txt and AsciiDoc files, and the fallback for any file a
structured source cannot read, as fixed windows of lines so long files stay findable
piece by piece."""

from __future__ import annotations

import os

from ..model import Item, ItemKind, ParsedFile
from .base import BaseSource, decode

WINDOW_LINES = 60
# A line this long is machine-made (a minified bundle, a data dump, data pasted into a
# notebook cell): its symbols are not worth reading, and a parser's item for it would be
# one unreadable block, so the file is read as windows instead.
MINIFIED_LINE_CHARS = 20_000
# A window also ends at this many characters, and a longer line is cut into pieces (at a
# space where there is one), so a one-line file of megabytes is still found and shown
# piece by piece, each piece small enough for a context budget.
WINDOW_CHARS = 4000
TEXT_SOURCE = "text"


def text_windows(path: str, text: str) -> ParsedFile:
    """``text`` items of at most ``WINDOW_LINES`` lines and about ``WINDOW_CHARS``
    characters; the first one's id is the path."""
    parsed = ParsedFile(path=path, language="text")
    stem = os.path.splitext(os.path.basename(path))[0]
    for first, last, body in _windows(text.splitlines() or [""]):
        suffix = "" if not parsed.items else f"@{first}" + (f".{len(parsed.items)}" if first == last else "")
        parsed.items.append(
            Item(
                id=f"{path}{suffix}", path=path, kind=ItemKind.TEXT, name=stem, qualname=stem,
                start_line=first, end_line=last, text=body, language="text",
            )
        )
    return parsed


def _windows(lines: list[str]):
    """(first line, last line, text) of each window, lines numbered from 1."""
    chunk: list[str] = []
    start = size = 0
    for n, line in enumerate(lines, start=1):
        if len(line) > WINDOW_CHARS:
            if chunk:
                yield start, n - 1, "\n".join(chunk)
                chunk, size = [], 0
            for piece in _pieces(line):
                yield n, n, piece
            continue
        if chunk and (len(chunk) >= WINDOW_LINES or size + len(line) > WINDOW_CHARS):
            yield start, n - 1, "\n".join(chunk)
            chunk, size = [], 0
        if not chunk:
            start = n
        chunk.append(line)
        size += len(line) + 1
    if chunk:
        yield start, start + len(chunk) - 1, "\n".join(chunk)


def _pieces(line: str):
    i = 0
    while i < len(line):
        end = min(len(line), i + WINDOW_CHARS)
        if end < len(line):
            cut = line.rfind(" ", i + WINDOW_CHARS // 2, end)
            end = cut + 1 if cut > 0 else end
        yield line[i:end]
        i = end


class TextSource(BaseSource):
    name = TEXT_SOURCE
    optional = True  # off with ``text_files = false``
    extensions = frozenset({".rst", ".txt", ".adoc"})
    language = "text"

    def parse(self, path: str, data: bytes, language: str) -> ParsedFile:
        return text_windows(path, decode(data))
