"""Item text stored once per file.

Items nest (a module holds its classes, a class its methods), so storing each item's
text repeats most of a file several times. Instead a file keeps one text, made of the
distinct stretches its items need (usually just the whole file, held by its module
item), and each item records where its text lies in it.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Sequence
from itertools import accumulate

from ..model import Item

_ENCODING = "utf-8"
_ERRORS = "surrogatepass"
# Measured on a vault and a repository: level 4 is within 1-5% of level 6's size and
# compresses 15-40% faster (it runs in the indexing process for every file).
_LEVEL = 4
# Compact JSON, built once (json.dumps with options builds an encoder per call).
JSON = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, default=str)


class _Stretch:
    """A piece of the file text that item texts are looked up in."""

    __slots__ = ("start_line", "end_line", "offset", "text", "_line_starts")

    def __init__(self, start_line: int, offset: int, text: str):
        self.start_line = start_line
        self.end_line = start_line + text.count("\n")
        self.offset = offset  # where it begins in the file text
        self.text = text
        self._line_starts: list[int] | None = None

    def find(self, text: str, line: int) -> int | None:
        """Where ``text`` starts within this stretch, if it starts on ``line``."""
        if self._line_starts is None:
            self._line_starts = list(accumulate((len(x) + 1 for x in self.text.split("\n")), initial=0))
        starts = self._line_starts
        i = line - self.start_line
        if i < 0 or i + 1 >= len(starts):
            return None
        # Bounded: the text must start on that line (a method's text may skip its indent).
        at = self.text.find(text, starts[i], starts[i + 1] + len(text))
        return None if at < 0 else at


def pack_rows(rows: Sequence[tuple]) -> tuple[bytes, list[tuple[int, int]], list[tuple[int, int]]]:
    """``pack_file`` of a file's item rows (``(item, ...)``, as ``replace_file`` takes them)."""
    return pack_file([row[0] for row in rows])


def pack_file(
    items: Sequence[Item],
) -> tuple[bytes, list[tuple[int, int]], list[tuple[int, int]]]:
    """The file's stored form, and each item's text span and details span in it.

    The stored form is one zlib stream of one string: the file text, then each item's
    details (``[signature, docstring, meta]`` as JSON) one after another. Spans are
    ``(offset, length)`` in characters, so a reader decodes only the details it needs;
    compressed together, a note's frontmatter in its text and in its sections' meta
    costs little.

    The file text is made of stretches: longest item texts first, so containers become
    stretches and their members point into them; a text found in no stretch (on its
    start line) becomes a stretch of its own.
    """
    spans: list[tuple[int, int]] = [(0, 0)] * len(items)
    stretches: list[_Stretch] = []
    size = 0
    for i in sorted(range(len(items)), key=lambda k: -len(items[k].text)):
        text, line = items[i].text, items[i].start_line
        if not text:
            continue
        where = None
        for s in stretches:
            if s.start_line <= line <= s.end_line:
                at = s.find(text, line)
                if at is not None:
                    where = s.offset + at
                    break
        if where is None:
            stretches.append(_Stretch(line, size, text))
            where = size
            size += len(text)
        spans[i] = (where, len(text))
    parts = [s.text for s in stretches]
    detail_spans = []
    for it in items:
        details = JSON.encode([it.signature, it.docstring, it.meta])
        detail_spans.append((size, len(details)))
        parts.append(details)
        size += len(details)
    return zlib.compress("".join(parts).encode(_ENCODING, _ERRORS), _LEVEL), spans, detail_spans


class FileData:
    """A file's stored form, decoded; items read their text and details as slices."""

    __slots__ = ("text", "_details")

    def __init__(self, text: str):
        self.text = text
        # Decoded details by offset: the file stays cached across questions, and decoding
        # the same JSON again was a tenth of a busy server's time.
        self._details: dict[int, list] = {}

    @classmethod
    def unpack(cls, blob: bytes | None) -> "FileData":
        return cls(zlib.decompress(blob).decode(_ENCODING, _ERRORS) if blob else "")

    def slice(self, at: int, length: int) -> str:
        return self.text[at : at + length]

    def details(self, at: int, length: int) -> list:
        """``[signature, docstring, meta]`` of the item whose details are at this span
        (meta is the caller's own copy)."""
        hit = self._details.get(at)
        if hit is None:
            hit = self._details[at] = json.loads(self.text[at : at + length])
        sig, doc, meta = hit
        return [sig, doc, dict(meta) if isinstance(meta, dict) else meta]
