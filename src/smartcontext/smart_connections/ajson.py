"""Parse one Smart Connections ``.ajson`` file into its final records.

An ``.ajson`` file is an append-only log of ``"collection:key": {json},`` entries, normally
one per line (the plugin's own rewrites sometimes put several on one line). A later entry
for a key replaces the earlier one and a ``null`` value deletes the key. The plugin reads
a file by wrapping it in braces and parsing it as one JSON object, which gives exactly
those semantics (the last duplicate key wins); so do we, because it is by far the fastest
way: one C-level parse per file.

When a file is not valid as a whole (an append cut short, a stray line, a doubled comma)
the plugin drops the file; here it is read entry by entry instead: an entry that cannot
be decoded is counted in ``bad_lines`` and skipped to the next line, and the rest of the
file still counts.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from itertools import chain
from types import ModuleType
from typing import Any

import numpy as np

_fastjson: ModuleType | None
try:  # ~5x faster than the standard library on these number-heavy files
    import orjson as _fastjson
except ImportError:  # pragma: no cover - exercised only where orjson is absent
    _fastjson = None

SOURCE = 0
BLOCK = 1

# Old plugin versions named collections after item classes; the plugin maps them the same way.
_COLLECTIONS = {
    "smart_sources": SOURCE,
    "SmartSource": SOURCE,
    "SmartNote": SOURCE,
    "smart_blocks": BLOCK,
    "SmartBlock": BLOCK,
}
_LEGACY_PREFIXES = ("SmartSource:", "SmartNote:", "SmartBlock:")

# Inside a JSON string every quote is escaped, so `"vec": [` can only be structure. The
# numbers may not span a line break: a torn vector then fails as JSON instead of
# swallowing the entries after it.
_VEC_RE = re.compile(r'"vec"\s*:\s*\[([^\]\n]*)\]')
_SEPARATORS = re.compile(r"[\s,]*")
_COLON = re.compile(r"\s*:\s*")
_scan = json.JSONDecoder().scan_once  # type: ignore[attr-defined]  # set by JSONDecoder.__init__; typeshed omits it


@dataclass(slots=True)
class Record:
    """One note (source) or block with a vector for the active model.

    key:     the plugin's item key without collection, e.g. ``notes/a.md#Heading#Sub``.
    kind:    SOURCE or BLOCK.
    path:    the note path relative to the vault root.
    lines:   ``(start, end)``, 1-based inclusive, for blocks (as the plugin stored them).
    """

    key: str
    kind: int
    path: str
    lines: tuple[int, int] | None


@dataclass
class FileParse:
    """The final state of one ``.ajson`` file for one model.

    records[i] owns row i of ``vectors`` (float32, L2-normalised). ``tombstones`` are
    keys whose newest entry is ``null``: they delete the key even if another file has it.
    ``mentioned`` is every key the file decides: records, tombstones and notes without a
    vector (a newer "not embedded yet" hides an older vector in another file). Blocks
    without a vector are left out: there are many and no other file competes for them.
    ``model_counts`` counts items per model that has a vector, over every model.
    """

    records: list[Record] = field(default_factory=list)
    vectors: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=np.float32))
    tombstones: list[str] = field(default_factory=list)
    mentioned: list[str] = field(default_factory=list)
    model_counts: Counter = field(default_factory=Counter)
    entries: int = 0  # distinct keys in the file's final state, any collection
    bad_lines: int = 0
    no_vector: int = 0
    stale_blocks: int = 0
    bad_vectors: int = 0
    other_collections: int = 0


def item_key(full_key: str) -> tuple[int, str] | None:
    """``"smart_blocks:a.md#H"`` -> ``(BLOCK, "a.md#H")``; None for other collections."""
    collection, sep, key = full_key.partition(":")
    kind = _COLLECTIONS.get(collection)
    if not sep or kind is None or not key:
        return None
    return kind, key


def parse_ajson(data: str | bytes, model_key: str | None, dim: int | None = None) -> FileParse:
    """Final records of one file, keeping vectors stored under ``model_key`` only.

    ``data`` is the file's text or its raw bytes (UTF-8; bytes skip a decode on the fast
    path). ``dim``, when given, is the vector size already in use; vectors of another
    size are counted in ``bad_vectors`` and dropped, so one matrix never mixes two sizes.
    """
    out = FileParse()
    vec_pool: list[str] = []
    final = _whole_file(data, out)
    if final is None:
        out = FileParse()
        text = data.decode("utf-8", errors="replace") if isinstance(data, bytes) else data
        final = _entry_by_entry(text.removeprefix("\ufeff"), vec_pool, out)
    return _build(final, vec_pool, model_key, dim, out)


def _whole_file(data: str | bytes, out: FileParse) -> dict[tuple[int, str], Any] | None:
    if isinstance(data, bytes):
        raw = data.removeprefix(b"\xef\xbb\xbf").strip().rstrip(b", \t\r\n")
        body: str | bytes = raw
        wrapped: str | bytes = b"{" + raw + b"}"
    else:
        body = data.removeprefix("\ufeff").strip().rstrip(", \t\r\n")
        wrapped = "{" + body + "}"
    if not body:
        return {}
    try:
        obj = _fastjson.loads(wrapped) if _fastjson else json.loads(wrapped)
    except (ValueError, UnicodeDecodeError):  # orjson.JSONDecodeError is a ValueError too
        return None
    final: dict[tuple[int, str], Any] = {}
    legacy: dict[tuple[int, str], Any] = {}
    for full_key, value in obj.items():
        out.entries += 1
        parsed = item_key(full_key)
        if parsed is None:
            out.other_collections += 1
        elif full_key.startswith(_LEGACY_PREFIXES):
            legacy[parsed] = value
        else:
            final[parsed] = value
    # A dict forgets which of two spellings came last; the current spelling is the one
    # newer plugin versions write, so it wins over a legacy one for the same item.
    for parsed, value in legacy.items():
        final.setdefault(parsed, value)
    return final


def _entry_by_entry(text: str, vec_pool: list[str], out: FileParse) -> dict[tuple[int, str], Any]:
    """Every entry decoded in order; an unreadable stretch is skipped to the next line."""

    def hold(m: re.Match) -> str:
        vec_pool.append(m.group(1))
        return f'"vec":{len(vec_pool) - 1}'

    # Vectors become small integers first, so old entries only cost their metadata.
    body = _VEC_RE.sub(hold, text)
    final: dict[tuple[int, str], Any] = {}
    others: set[str] = set()
    pos, size = 0, len(body)
    while True:
        separators = _SEPARATORS.match(body, pos)
        assert separators is not None  # the pattern matches the empty string
        pos = separators.end()
        if pos >= size:
            break
        start = pos
        try:
            raw_key, pos = _scan(body, pos)
            if not isinstance(raw_key, str):
                raise ValueError("the key is not a string")
            colon = _COLON.match(body, pos)
            if colon is None or body[colon.start() : colon.end()].strip() != ":":
                raise ValueError("no colon after the key")
            value, pos = _scan(body, colon.end())
        except (ValueError, StopIteration, IndexError):
            # Entries never contain a raw line break, so the next line is the next chance.
            out.bad_lines += 1
            nl = body.find("\n", start)
            if nl < 0:
                break
            pos = nl + 1
            continue
        parsed = item_key(raw_key)
        if parsed is None:
            others.add(raw_key)
            continue
        final.pop(parsed, None)  # keep the order of the newest writes
        final[parsed] = value
    out.other_collections = len(others)
    out.entries = len(final) + len(others)
    return final


def _build(
    final: dict[tuple[int, str], Any], vec_pool: list[str], model_key: str | None,
    dim: int | None, out: FileParse,
) -> FileParse:
    raw_vectors: list[Any] = []
    block_maps: dict[str, set[str]] = {}
    for (kind, key), obj in final.items():
        if obj is None or obj is False:
            out.mentioned.append(key)
            out.tombstones.append(key)
            continue
        if not isinstance(obj, dict):
            out.bad_lines += 1
            continue
        if kind == SOURCE:
            out.mentioned.append(key)
            blocks = obj.get("blocks")
            if isinstance(blocks, dict):
                block_maps[key] = set(blocks)
        elif not obj.get("embeddings"):
            # Most blocks are too short to embed; they cost nothing more than this check.
            out.no_vector += 1
            continue
        vec = _model_vector(obj, vec_pool, model_key, out)
        if vec is None:
            out.no_vector += 1
            continue
        if kind == BLOCK:
            out.mentioned.append(key)
        path = key.split("#", 1)[0] if kind == BLOCK else key
        if not path:
            out.bad_lines += 1
            continue
        lines = _lines(obj.get("lines")) if kind == BLOCK else None
        out.records.append(Record(key, kind, path, lines))
        raw_vectors.append(vec)

    _drop_stale_blocks(out, raw_vectors, block_maps)
    out.vectors = _to_matrix(raw_vectors, out, dim)
    return out


def _model_vector(obj: dict, vec_pool: list[str], model_key: str | None, out: FileParse) -> Any:
    """The stored vector (a list, or number text) for ``model_key``; counts every model."""
    embeddings = obj.get("embeddings")
    if not isinstance(embeddings, dict):
        return None
    found = None
    for name, entry in embeddings.items():
        vec = entry.get("vec") if isinstance(entry, dict) else None
        if isinstance(vec, int) and not isinstance(vec, bool) and 0 <= vec < len(vec_pool):
            vec = vec_pool[vec]
            if not vec.strip():
                continue
        elif not isinstance(vec, list) or not vec:
            continue
        out.model_counts[name] += 1
        if name == model_key:
            found = vec
    return found


def _lines(value: Any) -> tuple[int, int] | None:
    if (
        isinstance(value, list)
        and len(value) == 2
        and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
        and 1 <= value[0] <= value[1]
    ):
        return value[0], value[1]
    return None


def _drop_stale_blocks(out: FileParse, raw_vectors: list[Any], block_maps: dict[str, set[str]]) -> None:
    # A note's newest entry lists its current blocks. A block entry the plugin has not yet
    # deleted after an edit points at lines that no longer hold that heading.
    keep = []
    for i, rec in enumerate(out.records):
        if rec.kind == BLOCK:
            current = block_maps.get(rec.path)
            if current is not None and rec.key[len(rec.path) :] not in current:
                out.stale_blocks += 1
                continue
        keep.append(i)
    if len(keep) != len(out.records):
        out.records = [out.records[i] for i in keep]
        raw_vectors[:] = [raw_vectors[i] for i in keep]


def _vector_length(vec: Any) -> int:
    return len(vec) if isinstance(vec, list) else vec.count(",") + 1


def _one_vector(vec: Any, want: int) -> np.ndarray | None:
    try:
        if isinstance(vec, list):
            row = np.asarray(vec, dtype=np.float32)
        else:
            row = np.fromstring(vec, dtype=np.float32, sep=",")
    except (ValueError, TypeError):
        return None
    if row.ndim != 1 or row.size != want:
        return None
    return row


def _to_matrix(raw_vectors: list[Any], out: FileParse, dim: int | None) -> np.ndarray:
    if not raw_vectors:
        return np.zeros((0, dim or 0), dtype=np.float32)
    lengths = [_vector_length(v) for v in raw_vectors]
    want = dim or Counter(lengths).most_common(1)[0][0]
    matrix = None
    if all(n == want for n in lengths):
        try:  # the common case: one conversion for the whole file
            if all(isinstance(v, list) for v in raw_vectors):
                # fromiter over one chained iterator: ~35% less CPU than asarray(list of lists).
                matrix = np.fromiter(
                    chain.from_iterable(raw_vectors), dtype=np.float32, count=want * len(raw_vectors)
                ).reshape(len(raw_vectors), want)
            elif all(isinstance(v, str) for v in raw_vectors):
                flat = np.fromstring(",".join(raw_vectors), dtype=np.float32, sep=",")
                matrix = flat.reshape(len(raw_vectors), want) if flat.size == want * len(raw_vectors) else None
        except (ValueError, TypeError):
            matrix = None
    if matrix is not None and matrix.shape == (len(raw_vectors), want):
        keep = np.isfinite(matrix).all(axis=1)
    else:
        matrix = np.zeros((len(raw_vectors), want), dtype=np.float32)
        keep = np.zeros(len(raw_vectors), dtype=bool)
        for i, vec in enumerate(raw_vectors):
            row = _one_vector(vec, want) if lengths[i] == want else None
            if row is not None and np.isfinite(row).all():
                matrix[i] = row
                keep[i] = True
    norms = np.linalg.norm(matrix, axis=1)
    keep &= norms > 0
    if not keep.all():
        out.bad_vectors += int((~keep).sum())
        out.records = [r for r, k in zip(out.records, keep) if k]
        matrix = matrix[keep]
        norms = norms[keep]
    matrix /= norms[:, None]
    return np.ascontiguousarray(matrix, dtype=np.float32)
