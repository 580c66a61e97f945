"""The SQLite index's vectors of one model, saved beside it as one file that a process maps.

Reading 37,000 vectors out of SQLite (a BLOB each, joined into one matrix) took a process
about 0.4 s and three copies of the matrix in memory. This file holds the same matrix as
``load_vectors`` returns it (row ids by row id, float32 rows), so a new process maps it
and searches the mapping: nothing is decoded, and the pages are the page cache's.

The file says which state of the index it reflects: the index's id, its ``generation``
and ``vector_generation``, and how many times the embedding cache was cleared. A file of
another state is stale; while the model, the index id and the clearings match, it is
*patched* rather than rebuilt: an item's vector is the cached vector of its content
hash, which a row keeps for its life, so a row whose row id and content hash are both in
the file keeps its vector, and only new rows are read from SQLite.

Layout: a magic line, a fixed header (the CRC-32 of the JSON, the row ids and the keys;
the length of the JSON description), the JSON, padding to 64 bytes, then ``n`` row ids
(int64), ``n`` content keys (int64: the first 16 hex digits of the content hash) and the
``n x dim`` float32 matrix. A torn, damaged or foreign file reads as missing: the JSON
holds the XOR of the matrix's 64-bit words (32-bit when their count is odd), which any
flipped bit or zeroed page changes. Checking it reads the matrix, which a search reads
anyway, in a fifth of the time a CRC-32 of the matrix took (a tenth of the vector part
of a one-question process).

The vector counts by model (asked before every question on an index with vectors, a
join over every item) are saved the same way, in their own small sealed file.
"""

from __future__ import annotations

import json
import struct
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..sealed import load_sealed, map_read_only, save_sealed, write_parts

if TYPE_CHECKING:
    import numpy as np

_MAGIC = b"smartcontext vectors 2\n"
_HEAD = struct.Struct("<II")  # CRC-32 of the JSON, row ids and keys; length of the JSON
_ALIGN = 64
_COUNTS_MAGIC = b"smartcontext vector counts 1\n"

# (index id, generation, vector generation, cache clearings): the state a file reflects.
State = tuple[str, int, int, int]


def vectors_path(index: Path) -> Path:
    return index.with_name(index.name + ".vectors")


def counts_path(index: Path) -> Path:
    return index.with_name(index.name + ".vcounts")


def content_key(content_hash: str) -> int:
    """A row's content hash as an int64 (its first 64 bits)."""
    try:
        return int.from_bytes(bytes.fromhex(content_hash[:16]).ljust(8, b"\0"), "little", signed=True)
    except ValueError:  # not hex: a key of its text
        return int.from_bytes(zlib.crc32(content_hash.encode()).to_bytes(4, "little") * 2, "little", signed=True)


class Mapped:
    """A saved file's arrays (read-only views of one mapping) and what it reflects."""

    def __init__(self, state: State, model: str, rowids: np.ndarray, keys: np.ndarray, matrix: np.ndarray):
        self.state, self.model = state, model
        self.rowids, self.keys, self.matrix = rowids, keys, matrix


def read(path: Path, model: str) -> Mapped | None:
    """The file at ``path`` when it holds ``model``'s vectors and is whole, else None."""
    import numpy as np

    mapping = map_read_only(path, len(_MAGIC) + _HEAD.size)
    if mapping is None:
        return None
    view = memoryview(mapping)
    try:
        if view[: len(_MAGIC)] != _MAGIC:
            return None
        crc, length = _HEAD.unpack_from(view, len(_MAGIC))
        start = len(_MAGIC) + _HEAD.size
        meta = json.loads(bytes(view[start : start + length]))
        n, dim = int(meta["n"]), int(meta["dim"])
        body = _aligned(start + length)
        if meta.get("model") != model or len(mapping) != body + n * (16 + 4 * dim):
            return None
        if zlib.crc32(view[body : body + 16 * n], zlib.crc32(view[start : start + length])) != crc:
            return None
        state = (str(meta["index_id"]), int(meta["generation"]), int(meta["vector_generation"]), int(meta["cleared"]))
        fold = int(meta["fold"])
    except (ValueError, KeyError, TypeError, struct.error):
        return None
    finally:
        view.release()
    rowids = np.frombuffer(mapping, dtype="<i8", count=n, offset=body)
    keys = np.frombuffer(mapping, dtype="<i8", count=n, offset=body + 8 * n)
    matrix = np.frombuffer(mapping, dtype="<f4", count=n * dim, offset=body + 16 * n).reshape(n, dim)
    if _fold(matrix) != fold:
        return None
    return Mapped(state, model, rowids, keys, matrix)


def write(path: Path, state: State, model: str, rowids: np.ndarray, keys: np.ndarray, matrix: np.ndarray) -> None:
    """Save these arrays at ``path`` atomically (temporary file, then rename); raises
    OSError. Named as ``sealed`` names its temporary files, so one left by a killed
    process is removed the same way."""
    import numpy as np

    n = int(len(rowids))
    dim = int(matrix.shape[1]) if matrix.ndim == 2 and n else 0
    matrix = np.ascontiguousarray(matrix, dtype="<f4").reshape(n, dim)
    meta = json.dumps({"model": model, "n": n, "dim": dim, "index_id": state[0], "generation": state[1],
                       "vector_generation": state[2], "cleared": state[3], "fold": _fold(matrix)}).encode()
    start = len(_MAGIC) + _HEAD.size
    pad = b"\0" * (_aligned(start + len(meta)) - start - len(meta))
    ids = np.ascontiguousarray(rowids, dtype="<i8").tobytes() + np.ascontiguousarray(keys, dtype="<i8").tobytes()
    crc = zlib.crc32(ids, zlib.crc32(meta))
    write_parts(path, _MAGIC + _HEAD.pack(crc, len(meta)), [meta, pad, ids, matrix.tobytes()])


def _fold(matrix: np.ndarray) -> int:
    """The XOR of the (contiguous) matrix's bytes as 64-bit words, or as 32-bit words
    when their count is odd."""
    import numpy as np

    flat = matrix.reshape(-1)
    words = flat.view("<u8") if flat.size % 2 == 0 else flat.view("<u4")
    return int(np.bitwise_xor.reduce(words)) if words.size else 0


def _aligned(offset: int) -> int:
    return -(-offset // _ALIGN) * _ALIGN


def patch(
    old: Mapped, rows: Sequence[tuple[int, str]], fetch: Callable[[list[str]], dict[str, Any]]
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """``(rowids, keys, matrix)`` of the items ``rows`` (rowid, content hash; by row id)
    that have a vector: a row the file holds with the same content keeps its vector, the
    others get ``fetch(hashes)`` (hash -> float32 vector, absent when not cached). None
    when a fetched vector is not of the file's size (the caller reads everything)."""
    import numpy as np

    n = len(rows)
    rowids = np.fromiter((r for r, _ in rows), dtype=np.int64, count=n)
    keys = np.fromiter((content_key(h) for _, h in rows), dtype=np.int64, count=n)
    dim = old.matrix.shape[1]
    at = np.searchsorted(old.rowids, rowids)
    at_ok = np.minimum(at, max(len(old.rowids) - 1, 0))
    kept = (at < len(old.rowids)) & (old.rowids[at_ok] == rowids) & (old.keys[at_ok] == keys) if len(old.rowids) else np.zeros(n, dtype=bool)
    fresh = np.flatnonzero(~kept)
    found = fetch(list(dict.fromkeys(rows[i][1] for i in fresh.tolist()))) if len(fresh) else {}
    has = kept.copy()
    matrix = np.empty((n, dim), dtype=np.float32)
    matrix[kept] = old.matrix[at_ok[kept]]
    for i in fresh.tolist():
        vec = found.get(rows[i][1])
        if vec is None:
            continue
        if len(vec) != dim:
            return None
        matrix[i] = vec
        has[i] = True
    return rowids[has], keys[has], matrix[has]


def read_counts(index: Path, state: State) -> dict[str, int] | None:
    saved = load_sealed(counts_path(index), _COUNTS_MAGIC)
    if not isinstance(saved, dict) or tuple(saved.get("state", ())) != state:
        return None
    counts = saved.get("counts")
    return dict(counts) if isinstance(counts, dict) else None


def write_counts(index: Path, state: State, counts: dict[str, int]) -> None:
    try:
        save_sealed(counts_path(index), _COUNTS_MAGIC, {"state": list(state), "counts": dict(counts)})
    except OSError:  # a read-only folder: counted again next time
        pass
