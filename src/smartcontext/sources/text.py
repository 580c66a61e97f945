"""Plain-text source: reST, .txt and AsciiDoc files, and the fallback for any file a
structured source cannot read, as fixed windows of lines so long files stay findable
piece by piece."""

from __future__ import annotations

import os

from ..model import Item, ItemKind, ParsedFile
from .base import BaseSource, decode

WINDOW_LINES = 60
TEXT_SOURCE = "text"


def text_windows(path: str, text: str) -> ParsedFile:
    """One ``text`` item per window of ``WINDOW_LINES`` lines; the first one's id is the path."""
    lines = text.splitlines() or [""]
    parsed = ParsedFile(path=path, language="text")
    stem = os.path.splitext(os.path.basename(path))[0]
    for start in range(0, len(lines), WINDOW_LINES):
        chunk = lines[start : start + WINDOW_LINES]
        suffix = "" if start == 0 else f"@{start + 1}"
        parsed.items.append(
            Item(
                id=f"{path}{suffix}", path=path, kind=ItemKind.TEXT, name=stem, qualname=stem,
                start_line=start + 1, end_line=start + len(chunk), text="\n".join(chunk),
                language="text",
            )
        )
    return parsed


class TextSource(BaseSource):
    name = TEXT_SOURCE
    optional = True  # off with ``text_files = false``
    extensions = frozenset({".rst", ".txt", ".adoc"})
    language = "text"

    def parse(self, path: str, data: bytes, language: str) -> ParsedFile:
        return text_windows(path, decode(data))
