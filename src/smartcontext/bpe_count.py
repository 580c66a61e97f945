"""Exact cl100k_base token counts without building tiktoken's encoder.

Building the encoder (importing tiktoken, loading 100k ranks, its Rust set-up) cost a
``context`` process about a fifth of its time, to count one text of a few thousand tokens.
For text of printable ASCII, tabs and line breaks (nearly every code answer), the count
is done here instead, the way tiktoken does it: the encoding's own pattern splits the text
into pieces (on that alphabet Python's ``re`` reads the pattern as tiktoken's engine does,
once ``\\p{L}``, ``\\p{N}`` and ``$`` are spelled out), a piece that is a token counts one,
and any other is merged pair by pair, lowest rank first, as tiktoken's byte-pair merge.

Other text (a vault's accents, emoji, CJK) is split by a second spelling of the pattern,
in Python's Unicode classes: ``\\p{L}`` is ``[^\\W\\d_]`` and ``\\p{N}`` is ``\\d``, which
read alike on every character except those of categories Nl and No (Roman numerals,
superscripts), characters Python's Unicode tables do not know, lone surrogates, the
information separators ``\\x1c``-``\\x1f`` (whitespace to Python only) and the letters that
fold to ASCII under case-insensitive matching (``ſ``, ``K``, ``İ``, ``ı``): a text with any of
those is left to the encoder. Pieces are merged on their UTF-8 bytes, as tiktoken does.

The ranks come from a table the first full build writes to the cache folder: a hash table
of small marshalled buckets, mapped, so a count reads only the buckets of its pieces. Text
the patterns cannot split as tiktoken does, a very long piece, or no table yet: ``count``
returns None and the caller builds the encoder as before. Tests hold this count equal to
tiktoken's.
"""

from __future__ import annotations

import marshal
import mmap
import os
import re
import sys
import zlib
from array import array
from pathlib import Path
from typing import Any

from .cachedir import cache_dir
from .sealed import load_sealed, save_sealed, write_sealed

ENCODING = "cl100k_base"
_MAGIC = b"smartcontext rank table 1\n"
_PLAIN = re.compile(r"[\t\n\r\x20-\x7e]*")
# Characters on which the Unicode spelling of the pattern could read differently (see
# above); categories Nl, No, Cn (unassigned here) and Cs are checked apart.
_UNICODE_UNSAFE = re.compile("[\x1c-\x1f\u017f\u212a\u0130\u0131]")
_UNSAFE_CATEGORIES = frozenset(("Nl", "No", "Cn", "Cs"))
# Merging is quadratic in a piece's length; tiktoken's encoder takes the rare long ones.
_LONGEST_PIECE = 256
_BUCKET_SIZE = 2  # ranks per bucket, on average


def table_file(rank_file: Path) -> Path | None:
    """Where the rank table of ``rank_file`` is kept: named by that file's and the
    pattern's source's size and modification time, so either changing makes a new one."""
    try:
        from importlib.util import find_spec

        spec = find_spec("tiktoken_ext.openai_public")
        if spec is None or not spec.origin:
            return None
        st, pat = rank_file.stat(), os.stat(spec.origin)
    except (OSError, ImportError, ValueError):
        return None
    name = f"{ENCODING}-{st.st_size}-{st.st_mtime_ns}-{pat.st_size}-{pat.st_mtime_ns}.table"
    return cache_dir() / "tokens" / name


def save_table(path: Path, ranks: dict[bytes, int], pat_str: str) -> None:
    """Write the table of ``ranks`` (checked official ones) and ``pat_str``; best effort."""
    n = max(1, len(ranks) // _BUCKET_SIZE)
    buckets: list[dict[bytes, int]] = [{} for _ in range(n)]
    for key, rank in ranks.items():
        buckets[zlib.crc32(key) % n][key] = rank
    blobs = [marshal.dumps(b) for b in buckets]
    offsets = array("Q", [0] * (n + 1))
    at = 0
    for i, blob in enumerate(blobs):
        offsets[i] = at
        at += len(blob)
    offsets[n] = at
    head = marshal.dumps({"pat_str": pat_str, "n": n, "byteorder": sys.byteorder})
    payload = len(head).to_bytes(4, "big") + head + offsets.tobytes() + b"".join(blobs)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_sealed(path, _MAGIC, payload)
    except OSError:
        pass


class _Table:
    def __init__(self, data: mmap.mmap, head: dict[str, Any], offsets: memoryview, blobs_at: int):
        self._data, self._offsets, self._blobs_at = data, offsets, blobs_at
        self._n = head["n"]
        # The ranks of the buckets read so far, merged: half of a count's lookups repeat a
        # key (common pairs), which then cost one dict lookup. A key that is no token is not
        # kept (a server counting for days would keep every byte pair it ever tried): its
        # bucket, once read, answers None without being read again.
        self._ranks: dict[bytes, int] = {}
        self._read: set[int] = set()
        self._pat_str = head["pat_str"]
        self.pattern = re.compile(_ascii_pattern(self._pat_str))
        self._unicode: re.Pattern[str] | None = None

    @property
    def unicode_pattern(self) -> re.Pattern[str]:
        if self._unicode is None:
            self._unicode = re.compile(_unicode_pattern(self._pat_str))
        return self._unicode

    def rank(self, key: bytes) -> int | None:
        ranks = self._ranks
        if key in ranks:
            return ranks[key]
        i = zlib.crc32(key) % self._n
        if i in self._read:
            return None
        start = self._blobs_at + self._offsets[i]
        ranks.update(marshal.loads(self._data[start:self._blobs_at + self._offsets[i + 1]]))
        self._read.add(i)
        return ranks.get(key)


def _ascii_pattern(pat_str: str) -> str:
    """``pat_str`` as Python's ``re`` reads it identically on printable ASCII, tabs and
    line breaks: letters and digits spelled out, ``$`` as the end of the text only."""
    out = pat_str
    for prop, chars in (("\\p{L}", "A-Za-z"), ("\\p{N}", "0-9")):
        # Inside a class the property's characters join it; elsewhere they make one.
        def in_class(m: re.Match[str], prop: str = prop, chars: str = chars) -> str:
            return "[" + m.group(1).replace(prop, chars) + "]"

        out = re.sub(r"\[([^\]]*)\]", in_class, out)
        out = out.replace(prop, f"[{chars}]")
    out = out.replace("$", r"\Z")
    if "\\p" in out or "\\P" in out:
        raise ValueError("a Unicode property is left in the pattern")
    return out


def _unicode_pattern(pat_str: str) -> str:
    """``pat_str`` as Python's ``re`` reads it identically on text that ``_unicode_safe``
    accepts: a negated class holding both properties becomes "not in the class nor a
    word character, or an underscore"; a letter is a word character that is neither a
    digit nor an underscore; a number is a digit; ``$`` is the end of the text only."""
    both = "\\p{L}\\p{N}"

    def negated(m: re.Match[str]) -> str:
        inner = m.group(1)
        if both not in inner:
            raise ValueError(f"a class this spelling cannot carry: [^{inner}]")
        return f"(?:[^{inner.replace(both, '')}\\w]|_)"

    out = re.sub(r"\[\^([^\]]*\\p\{[LN]\}[^\]]*)\]", negated, pat_str)
    out = out.replace("\\p{L}", "[^\\W\\d_]").replace("\\p{N}", "\\d").replace("$", r"\Z")
    if "\\p" in out or "\\P" in out:
        raise ValueError("a Unicode property is left in the pattern")
    return out


def _unicode_safe(text: str) -> bool:
    """Whether ``_unicode_pattern`` splits ``text`` as tiktoken's pattern does."""
    if _UNICODE_UNSAFE.search(text):
        return False
    import unicodedata

    category = unicodedata.category
    return not any(category(c) in _UNSAFE_CATEGORIES for c in set(text) if c > "\x7f")


_tables: dict[Path, _Table | None] = {}
_pieces: dict[str, int] = {}

# The pieces earlier processes counted, kept beside the table (``<table>.pieces``): the
# merges of an answer's some 2,000 distinct pieces were most of a one-question process's
# count, and the next answer repeats most of them. Read on the first count, written at
# exit when this process counted new ones; the newest ``_PIECES_KEPT`` are kept.
_PIECES_MAGIC = b"smartcontext piece counts 1\n"
_PIECES_KEPT = 50_000
_memo: dict[Path, int] = {}  # table -> how many pieces were known once its memo was read


def forget() -> None:
    """Drop the pieces counted so far and the tables' decoded buckets."""
    _pieces.clear()
    _tables.clear()
    _memo.clear()


def pieces_path(table_path: Path) -> Path:
    return table_path.with_name(table_path.name + ".pieces")


def _read_memo(table_path: Path) -> None:
    saved = load_sealed(pieces_path(table_path), _PIECES_MAGIC)
    if isinstance(saved, dict):
        if _pieces:  # pieces this process counted before the read keep their count and order
            for piece, n in saved.items():
                _pieces.setdefault(piece, n)
        else:  # the usual case, one call in C: the loop was half of reading 50,000 pieces
            _pieces.update(saved)
    if not _memo:
        import atexit

        atexit.register(save_memo)
    _memo[table_path] = len(_pieces)


def save_memo() -> None:
    """Keep the pieces counted (the newest ``_PIECES_KEPT``) beside each table whose memo
    this process read, when it counted new ones; a folder that cannot be written is no
    error."""
    for table_path, known in list(_memo.items()):
        if len(_pieces) <= known:
            continue
        kept = _pieces if len(_pieces) <= _PIECES_KEPT else dict(list(_pieces.items())[-_PIECES_KEPT:])
        try:
            save_sealed(pieces_path(table_path), _PIECES_MAGIC, kept)
        except OSError:
            pass
        _memo[table_path] = len(_pieces)


def _open(path: Path) -> _Table | None:
    if path in _tables:
        return _tables[path]
    table = None
    try:
        with open(path, "rb") as f:
            data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        head_at = len(_MAGIC) + 4
        if data[:len(_MAGIC)] == _MAGIC and zlib.crc32(memoryview(data)[head_at:]) == int.from_bytes(
                data[len(_MAGIC):head_at], "big"):
            size = int.from_bytes(data[head_at:head_at + 4], "big")
            head = marshal.loads(data[head_at + 4:head_at + 4 + size])
            if head.get("byteorder") == sys.byteorder:
                at = head_at + 4 + size
                offsets = memoryview(data)[at:at + 8 * (head["n"] + 1)].cast("Q")
                table = _Table(data, head, offsets, at + 8 * (head["n"] + 1))
    except (OSError, ValueError, EOFError, TypeError, KeyError, re.error):
        table = None
    _tables[path] = table
    return table


def count(text: str, table_path: Path | None) -> int | None:
    """The cl100k_base token count of ``text``, or None when it cannot be counted here
    (characters the patterns may split otherwise, a very long piece, no table)."""
    if table_path is None:
        return None
    plain = _PLAIN.fullmatch(text) is not None
    if not plain and not _unicode_safe(text):
        return None
    table = _open(table_path)
    if table is None:
        return None
    try:
        pattern = table.pattern if plain else table.unicode_pattern
    except (ValueError, re.error):
        return None
    if table_path not in _memo:
        _read_memo(table_path)
    known = _pieces
    total = 0
    for piece in pattern.findall(text):
        n = known.get(piece)
        if n is None:
            data = piece.encode("utf-8")
            if len(data) > _LONGEST_PIECE:
                return None
            n = known[piece] = _piece_tokens(data, table)
        total += n
    return total


def _piece_tokens(piece: bytes, table: _Table) -> int:
    """How many tokens tiktoken's byte-pair merge makes of ``piece``."""
    if len(piece) == 1 or table.rank(piece) is not None:
        return 1
    # As tiktoken's _byte_pair_merge: parts[i] = (start, rank of the pair starting there);
    # merge the lowest-ranked pair (the leftmost of equals) until none is a token.
    none = 1 << 62
    rank = table.rank
    parts = [[i, rank(piece[i:i + 2])] for i in range(len(piece) - 1)]
    parts += [[len(piece) - 1, None], [len(piece), None]]

    def pair_rank(i: int) -> int | None:
        return rank(piece[parts[i][0]:parts[i + 3][0]]) if i + 3 < len(parts) else None

    while True:
        best, at = none, -1
        for i in range(len(parts) - 1):
            r = parts[i][1]
            if r is not None and r < best:
                best, at = r, i
        if at < 0:
            return len(parts) - 1
        if at > 0:
            parts[at - 1][1] = pair_rank(at - 1)
        parts[at][1] = pair_rank(at)
        del parts[at + 1]
