"""The saved catalogue, read one key at a time.

A question on a large index looks up a few thousand of its hundred thousand names and
rows; decoding the whole saved catalogue to answer it was most of a ``context`` process's
time and memory. So each large map is saved as a hash table of small marshalled buckets
(two keys each, on average): the file is mapped, not read, and a lookup decodes the bucket
its key hashes to, once. Iterating a map, copying it or asking its length decodes all of
it, so the maps behave exactly as the dicts they stand for.

Layout: a first line naming the format, the CRC-32 of the rest (checked when a map is
decoded whole), the CRC-32 and length of a marshalled head (the small parts, decoded at
once, and where each map's table is), then the body: per map, a table of bucket offsets
and CRC-32s, then the buckets. A bucket whose CRC disagrees (a damaged file) makes the
whole catalogue be read again from the index, never trusted.
"""

from __future__ import annotations

import marshal
import mmap
import os
import sys
import zlib
from array import array
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ..sealed import write_sealed
from ..store.base import CatalogueRow

MAGIC = b"smartcontext catalogue 3\n"
# The maps kept as hash tables (the large ones); with "entries" first, the rows.
LAZY_MAPS = ("entries", "by_id", "by_name", "by_fqname", "by_path", "children")
# Maps whose missing keys read as a new empty list, as the defaultdicts a full read builds.
LIST_MAPS = frozenset({"by_name", "by_fqname", "by_path", "children"})
_PREFIX = len(MAGIC) + 4 + 4 + 8
# Keys per bucket, on average: a lookup decodes its bucket's few neighbours too; fewer,
# larger buckets make saving faster.
_PER_BUCKET = 2
_MISSING = object()


def bucket_of(key: object, n: int) -> int:
    """The bucket of ``key`` among ``n``: stable across processes (unlike ``hash``)."""
    if isinstance(key, str):
        return zlib.crc32(key.encode("utf-8", "surrogatepass")) % n
    if isinstance(key, int):
        return key % n
    return -1  # no other kind of key is ever stored


def write(path: Path, head: dict[str, Any], maps: dict[str, dict]) -> None:
    """Save ``head`` (small, marshallable) and the ``LAZY_MAPS`` in ``maps`` at ``path``
    (atomically). A map read from a saved file keeps that file's buckets as they were,
    byte for byte, except those it changed: saving a patched catalogue encodes only what
    the patch touched."""
    parts: list[bytes] = []  # the body, written piece by piece (never joined in memory)
    size = 0
    tables: dict[str, tuple[int, int]] = {}
    for name in LAZY_MAPS:
        n, blobs, crcs = _buckets(name, maps[name])
        pad = -size % 8
        parts.append(b"\0" * pad)
        table_at = size + pad
        offsets = array("Q", [0] * (n + 1))
        start = table_at + offsets.itemsize * (n + 1) + crcs.itemsize * n
        for i, blob in enumerate(blobs):
            offsets[i] = start
            start += len(blob)
        offsets[n] = start
        parts += [offsets.tobytes(), crcs.tobytes(), *blobs]
        size = start
        tables[name] = (n, table_at)
    head = {**head, "byteorder": sys.byteorder, "tables": tables, "body": size}
    packed = marshal.dumps(head)
    # write_sealed puts a CRC of all that follows the magic first: checked when a map is
    # decoded whole; a key at a time, the head and each bucket read are checked instead.
    write_sealed(path, MAGIC, [zlib.crc32(packed).to_bytes(4, "big") + len(packed).to_bytes(8, "big"), packed, *parts])


def _buckets(name: str, mapping: dict) -> tuple[int, list[bytes], array]:
    """(bucket count, encoded buckets, their CRC-32s) of one map."""
    plain = (lambda v: tuple(v)) if name == "entries" else (lambda v: v)
    if isinstance(mapping, LazyMap) and mapping._saved is not None:
        n, saved = mapping._n, mapping._saved
        changed: dict[int, dict] = {i: {} for i in mapping._dirty}
        if changed:
            for key, value in dict.items(mapping):
                i = bucket_of(key, n)
                if i in changed:
                    changed[i][key] = plain(value)
        blobs = [marshal.dumps(changed[i]) if i in changed else saved.raw(name, i) for i in range(n)]
        crcs = array("I", [zlib.crc32(b) if i in changed else saved.crc(name, i) for i, b in enumerate(blobs)])
        return n, blobs, crcs
    n = max(1, len(mapping) // _PER_BUCKET)
    keys = list(mapping)
    if all(type(k) is int for k in keys):
        where = [k % n for k in keys]
    else:
        where = [bucket_of(k, n) for k in keys]
    members: list[list] = [[] for _ in range(n)]
    for i, key in zip(where, keys):
        members[i].append(key)
    dumps = marshal.dumps
    if name == "entries":
        blobs = [dumps({k: tuple(mapping[k]) for k in ks}) for ks in members]
    else:
        blobs = [dumps({k: mapping[k] for k in ks}) for ks in members]
    return n, blobs, array("I", map(zlib.crc32, blobs))


class SavedFile:
    """One mapped saved catalogue: its head, and the buckets of its lazy maps on demand."""

    def __init__(self, data: mmap.mmap | bytes, head: dict[str, Any], body_at: int):
        self._data = data
        self.head = head
        self._body_at = body_at
        self._tables: dict[str, tuple[int, memoryview, memoryview]] = {}
        self.on_damage: Callable[[], None] | None = None
        self.damaged = False
        self._sound: bool | None = None  # the whole-file CRC, once checked
        for name, (n, at) in head["tables"].items():
            start = body_at + at
            view = memoryview(data)
            offsets = view[start:start + 8 * (n + 1)].cast("Q")
            crcs = view[start + 8 * (n + 1):start + 8 * (n + 1) + 4 * n].cast("I")
            self._tables[name] = (n, offsets, crcs)

    def buckets(self, name: str) -> int:
        return self._tables[name][0]

    def raw(self, name: str, i: int) -> bytes:
        _, offsets, _ = self._tables[name]
        return self._data[self._body_at + offsets[i]:self._body_at + offsets[i + 1]]

    def crc(self, name: str, i: int) -> int:
        return self._tables[name][2][i]

    def bucket(self, name: str, i: int) -> dict:
        """Bucket ``i`` of map ``name``, checked; raises ``Damaged`` when its CRC disagrees."""
        blob = self.raw(name, i)
        if zlib.crc32(blob) != self.crc(name, i):
            raise Damaged(name)
        try:
            value = marshal.loads(blob)
        except (ValueError, EOFError, TypeError) as exc:
            raise Damaged(name) from exc
        if not isinstance(value, dict):
            raise Damaged(name)
        return value


    def whole(self, name: str) -> dict | None:
        """Every bucket of map ``name`` decoded into one dict, or None when the file
        fails its whole-file CRC (checked once) or a bucket does not decode."""
        if self._sound is None:
            stored = int.from_bytes(self._data[len(MAGIC):len(MAGIC) + 4], "big")
            self._sound = zlib.crc32(memoryview(self._data)[len(MAGIC) + 4:]) == stored
        if not self._sound:
            return None
        n, offsets, _ = self._tables[name]
        view = memoryview(self._data)
        at = self._body_at
        out: dict = {}
        update, loads = out.update, marshal.loads
        try:
            for i in range(n):
                update(loads(view[at + offsets[i]:at + offsets[i + 1]]))
        except (ValueError, EOFError, TypeError):
            return None
        if name == "entries":
            make = tuple.__new__
            out = {k: make(CatalogueRow, v) for k, v in out.items()}
        return out


class Damaged(Exception):
    """A bucket of the saved catalogue failed its check."""


def open_saved(path: Path) -> SavedFile | None:
    """The saved catalogue at ``path`` mapped, its head decoded and checked; None when it
    is missing, of another format or damaged."""
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size < _PREFIX + 4:
                return None
            data: mmap.mmap | bytes = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):
        return None
    prefix = len(MAGIC) + 4  # past write_sealed's CRC of the whole file (not read)
    if data[:len(MAGIC)] != MAGIC:
        return None
    crc = int.from_bytes(data[prefix:prefix + 4], "big")
    length = int.from_bytes(data[prefix + 4:prefix + 12], "big")
    head_at = prefix + 12
    packed = data[head_at:head_at + length]
    if len(packed) != length or zlib.crc32(packed) != crc:
        return None
    try:
        head = marshal.loads(packed)
    except (ValueError, EOFError, TypeError):
        return None
    if (not isinstance(head, dict) or head.get("byteorder") != sys.byteorder
            or head_at + length + head.get("body", -1) != size):
        return None
    try:
        return SavedFile(data, head, head_at + length)
    except (KeyError, TypeError, ValueError):
        return None


class LazyMap(dict):
    """A dict filled from a saved map's buckets as keys are asked for. Reading a key, a
    membership test and ``get`` load one bucket; anything that sees every key loads all."""

    __slots__ = ("_saved", "_name", "_n", "_loaded", "_complete", "_dirty")

    def __init__(self, saved: SavedFile, name: str):
        super().__init__()
        self._saved: SavedFile | None = saved
        self._name = name
        self._n = saved.buckets(name)
        self._loaded: set[int] = set()
        self._complete = False
        self._dirty: set[int] = set()  # buckets changed since read (saved again encoded)

    def _load(self, key: object) -> bool:
        """Load the bucket of ``key``; False when it was loaded before (or has none)."""
        if self._complete:
            return False
        i = bucket_of(key, self._n)
        if i < 0 or i in self._loaded:
            return False
        # Marked loaded only once filled: another thread asking meanwhile fills it too
        # (harmlessly) rather than finding it marked and its keys not yet there.
        self._fill(i)
        self._loaded.add(i)
        return True

    def _fill(self, i: int) -> None:
        saved = self._saved
        if saved is None:  # adopted a full read: nothing left to fill
            return
        try:
            values = saved.bucket(self._name, i)
        except Damaged:
            saved.damaged = True
            if saved.on_damage is not None:
                saved.on_damage()  # replaces every map's contents by a full read
            return
        if self._name == "entries":
            values = {k: tuple.__new__(CatalogueRow, v) for k, v in values.items()}
        for key, value in values.items():
            # A key already here came from a full read after damage, or was added as an
            # empty list by a lookup before its bucket was read: the saved one is it.
            dict.setdefault(self, key, value)

    def adopt(self, full: dict) -> None:
        """Take the contents of ``full`` (a full read of the index) as the whole map."""
        dict.clear(self)
        dict.update(self, full)
        self._complete = True
        self._saved = None  # saved again whole

    def _changing(self, key: object) -> None:
        """Before ``key`` is set or removed: its bucket is read first (so a later read
        never brings back what was removed) and marked to be encoded again."""
        self._load(key)
        i = bucket_of(key, self._n)
        if i >= 0:
            self._dirty.add(i)
        elif self._saved is not None:
            self.load_all()
            self._saved = None  # a key no bucket can hold: saved again whole

    def load_all(self) -> None:
        if self._complete:
            return
        if not self._loaded and self._saved is not None:
            # Nothing read yet: decode all at once, the file checked whole (faster than
            # bucket by bucket, each checked).
            full = self._saved.whole(self._name)
            if full is not None:
                dict.update(self, full)
                self._complete = True
                return
        for i in range(self._n):
            if self._complete:  # damage found on the way: the full read is in
                return
            if i not in self._loaded:
                self._fill(i)
                self._loaded.add(i)
        self._complete = True

    def __missing__(self, key: object) -> Any:
        if self._load(key):
            value = dict.get(self, key, _MISSING)
            if value is not _MISSING:
                return value
        if self._name in LIST_MAPS:  # as a defaultdict(list): the key now holds []
            self[key] = []
            return dict.__getitem__(self, key)
        raise KeyError(key)

    def get(self, key: object, default: Any = None) -> Any:
        value = dict.get(self, key, _MISSING)
        if value is _MISSING:
            if not self._load(key):
                return default
            value = dict.get(self, key, default)
        return value

    def __contains__(self, key: object) -> bool:
        return dict.__contains__(self, key) or (self._load(key) and dict.__contains__(self, key))

    def __iter__(self) -> Iterator:
        self.load_all()
        return dict.__iter__(self)

    def __len__(self) -> int:
        self.load_all()
        return dict.__len__(self)

    def keys(self):
        self.load_all()
        return dict.keys(self)

    def values(self):
        self.load_all()
        return dict.values(self)

    def items(self):
        self.load_all()
        return dict.items(self)

    def plain(self) -> dict:
        """A plain dict (a defaultdict(list) for the list maps) of everything."""
        self.load_all()
        if self._name in LIST_MAPS:
            return defaultdict(list, dict.items(self))
        return dict(dict.items(self))

    def copy(self) -> "LazyMap":
        """A copy to change (reading the same file): what this one has read so far."""
        new = LazyMap.__new__(LazyMap)
        dict.update(new, self)
        new._saved, new._name, new._n = self._saved, self._name, self._n
        new._loaded, new._complete, new._dirty = set(self._loaded), self._complete, set(self._dirty)
        return new

    def __setitem__(self, key: object, value: Any) -> None:
        self._changing(key)
        dict.__setitem__(self, key, value)

    def __delitem__(self, key: object) -> None:
        self._changing(key)
        dict.__delitem__(self, key)

    def pop(self, key: object, *default: Any) -> Any:
        self._changing(key)
        return dict.pop(self, key, *default)

    def setdefault(self, key: object, default: Any = None) -> Any:
        if key not in self:
            self[key] = default
        return dict.__getitem__(self, key)

    def update(self, *args: Any, **kwargs: Any) -> None:
        for key, value in dict(*args, **kwargs).items():
            self[key] = value

    def clear(self) -> None:
        self.adopt({})

    def popitem(self):
        self.load_all()
        key, value = dict.popitem(self)
        self._changing(key)
        return key, value

    def __eq__(self, other: object) -> bool:
        self.load_all()
        if isinstance(other, LazyMap):
            other.load_all()
        return dict.__eq__(self, other)

    __hash__ = None

    def __repr__(self) -> str:
        self.load_all()
        return dict.__repr__(self)

    def __reduce__(self):
        self.load_all()
        return (dict, (dict(dict.items(self)),))
