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
flipped bit or zeroed page changes. Checking it reads the whole matrix (38 MB on a vault
of 37,000 vectors, with numpy), so a file is checked once: its stamp (device, inode, size,
modification and change times) is kept beside it (``.checked``) by the process that wrote
it, after its pages reached the disk (fsync before the rename: a crash cannot leave the
stamp over unwritten pages), or by the first reader whose check passed, once the file's
times are older than ``RACY_NS`` (a second write within the file system's clock tick
could leave all of them as they were). A write in place, or a file renamed over it,
changes the change time (which no program can set back) or the inode.

The vector counts by model (asked before every question on an index with vectors, a
join over every item) are saved the same way, in their own small sealed file.
"""

from __future__ import annotations

import json
import os
import struct
import sys
import time
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..sealed import load_sealed, map_with_stat, save_sealed, write_parts

if TYPE_CHECKING:
    import numpy as np

_MAGIC = b"smartcontext vectors 2\n"
_HEAD = struct.Struct("<II")  # CRC-32 of the JSON, row ids and keys; length of the JSON
_ALIGN = 64
_COUNTS_MAGIC = b"smartcontext vector counts 1\n"
# A file changed less than this long ago is checked whole on every read (see above).
RACY_NS = 2_000_000_000

# (index id, generation, vector generation, cache clearings): the state a file reflects.
State = tuple[str, int, int, int]


def vectors_path(index: Path) -> Path:
    return index.with_name(index.name + ".vectors")


def checked_path(vectors: Path) -> Path:
    return vectors.with_name(vectors.name + ".checked")


def counts_path(index: Path) -> Path:
    return index.with_name(index.name + ".vcounts")


def content_key(content_hash: str) -> int:
    """A row's content hash as an int64 (its first 64 bits)."""
    try:
        return int.from_bytes(bytes.fromhex(content_hash[:16]).ljust(8, b"\0"), "little", signed=True)
    except ValueError:  # not hex: a key of its text
        return int.from_bytes(zlib.crc32(content_hash.encode()).to_bytes(4, "little") * 2, "little", signed=True)


class Mapped:
    """A saved file's rows and what it reflects: ``rowids``, ``keys`` and ``matrix`` as
    read-only numpy views of the mapping, or ``views()`` as memoryviews (no numpy)."""

    def __init__(self, state: State, model: str, mapping: Any, body: int, n: int, dim: int):
        self.state, self.model = state, model
        self._mapping, self._body, self.n, self.dim = mapping, body, n, dim

    @property
    def rowids(self) -> np.ndarray:
        import numpy as np

        return np.frombuffer(self._mapping, dtype="<i8", count=self.n, offset=self._body)

    @property
    def keys(self) -> np.ndarray:
        import numpy as np

        return np.frombuffer(self._mapping, dtype="<i8", count=self.n, offset=self._body + 8 * self.n)

    @property
    def matrix(self) -> np.ndarray:
        import numpy as np

        return np.frombuffer(self._mapping, dtype="<f4", count=self.n * self.dim,
                             offset=self._body + 16 * self.n).reshape(self.n, self.dim)

    def views(self) -> tuple[memoryview[Any], memoryview[Any]] | None:
        """(row ids, n x dim rows) as memoryviews of the mapping (native order: None on a
        big-endian machine, which reads the numpy views)."""
        if sys.byteorder != "little":
            return None
        whole = memoryview(self._mapping)
        ids = whole[self._body : self._body + 8 * self.n].cast("q")
        start = self._body + 16 * self.n
        return ids, whole[start : start + 4 * self.n * self.dim].cast("f", [self.n, self.dim])


def read(path: Path, model: str) -> Mapped | None:
    """The file at ``path`` when it holds ``model``'s vectors and is whole, else None."""
    mapped = map_with_stat(path, len(_MAGIC) + _HEAD.size)
    if mapped is None:
        return None
    mapping, st = mapped
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
    saved = Mapped(state, model, mapping, body, n, dim)
    stamp = _stamp(st)
    if not _checked_before(path, stamp):
        if _fold(saved.matrix) != fold:
            return None
        _remember_checked(path, stamp, st)
    return saved


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
    st = write_parts(path, _MAGIC + _HEAD.pack(crc, len(meta)), [meta, pad, ids, matrix.tobytes()], durable=True)
    if st is not None:  # on disk as computed here: the next reader need not check it whole
        _remember_checked(path, _stamp(st), st, fresh=True)


def _fold(matrix: np.ndarray) -> int:
    """The XOR of the (contiguous) matrix's bytes as 64-bit words, or as 32-bit words
    when their count is odd."""
    import numpy as np

    flat = matrix.reshape(-1)
    words = flat.view("<u8") if flat.size % 2 == 0 else flat.view("<u4")
    return int(np.bitwise_xor.reduce(words)) if words.size else 0


def _stamp(st: os.stat_result) -> str:
    return f"{st.st_dev} {st.st_ino} {st.st_size} {st.st_mtime_ns} {st.st_ctime_ns}"


def _checked_before(path: Path, stamp: str) -> bool:
    try:
        return checked_path(path).read_text(encoding="ascii") == stamp
    except (OSError, ValueError):
        return False


def _remember_checked(path: Path, stamp: str, st: os.stat_result, fresh: bool = False) -> None:
    """Keep ``stamp`` as the one that passed; ``fresh``: written (and synced) by this
    process just now, so not racy."""
    if not fresh and time.time_ns() - max(st.st_mtime_ns, st.st_ctime_ns) < RACY_NS:
        return
    try:
        write_parts(checked_path(path), stamp.encode("ascii"), [])
    except OSError:  # a read-only folder: checked whole every time
        pass


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
