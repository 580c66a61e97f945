"""The parsed vectors on disk, so a new process does not parse every ``.ajson`` again.

Parsing is the cost of a cold load (the files are JSON text, mostly numbers: ~120 MB
for 4,000 notes); reading the same vectors back as float32 BLOBs costs a fraction of
it. Each row is one ``.ajson`` file as parsed for one model, valid while the file's
(mtime, size) are unchanged, so the folder on disk stays the single source of truth:
a stale row is never used, only re-parsed and replaced.

The store is a cache: any error (read-only vault, corrupt file, a locked database, a
file written by a newer version) turns it off for this process with a note in ``error``;
loading then parses as usual. Its tables are versioned like every table we own, by the
``smart_connections`` migration set (``smartcontext.store.migrations``).

Why not the workspace index's embedding cache (``Store.cached_vectors``): that cache maps
(model, hash of a text) to one vector. A cold load needs each file's whole parse, valid
for one (mtime, size): its records (keys, kinds, line spans), tombstones, the keys it
decides and its counters, with the vectors in the records' order. With the vectors alone
every ``.ajson`` would still be parsed to learn its records, which is the cost this store
exists to avoid. Measured in one run of ``bench/smart_connections.py`` (2 busy cores,
load average 13): a new process loads 4,000 generated notes (117 MB of ``.ajson``) in
0.90 s from this store against 5.4 s by parsing (CPU 0.33 s against 1.9 s), and the real
vault (16 MB) in 84 ms against 0.80 s. (The plugin's vectors also cannot be the index's
item vectors, see ``cache``.) A server loads them once and keeps them (one reader per
server, ``tools.smart_connections``), so this store is read once per process.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections import Counter
from pathlib import Path

import numpy as np

from ..errors import SmartContextError
from ..store.migrations import Migrations
from .ajson import BLOCK, SOURCE, FileParse, Record

MIGRATIONS = Migrations("smart_connections")


@MIGRATIONS()
def m001_files(db: sqlite3.Connection) -> None:
    # The same table the wipe-on-change versions wrote (their format "1"), so their rows
    # stay valid; the "info" table that held the format number is no longer needed.
    db.execute(
        "CREATE TABLE IF NOT EXISTS files(name TEXT, model_key TEXT, mtime_ns INTEGER, "
        "size INTEGER, dim INTEGER, meta TEXT, vectors BLOB, PRIMARY KEY (name, model_key))"
    )
    db.execute("DROP TABLE IF EXISTS info")


class ParseStore:
    """Parsed ``.ajson`` files in one SQLite file (WAL, one transaction per save)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.error: str | None = None
        self.restored = 0
        self.saved = 0
        self.loads = 0  # whole-model reads: one per cold load of a reader, never per search
        self._db: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    def load(self, model_key: str | None) -> dict[str, tuple[int, int, int | None, FileParse]]:
        """{file name: (mtime_ns, size, dim, parse)} for ``model_key``; {} when unusable."""
        db = self._connect()
        if db is None or model_key is None:
            return {}
        out: dict[str, tuple[int, int, int | None, FileParse]] = {}
        self.loads += 1
        try:
            with self._lock:
                rows = db.execute(
                    "SELECT name, mtime_ns, size, dim, meta, vectors FROM files WHERE model_key = ?",
                    (model_key,),
                ).fetchall()
        except sqlite3.Error as exc:
            self._fail(exc)
            return {}
        for name, mtime_ns, size, dim, meta, blob in rows:
            parse = _decode(meta, blob, dim)
            if parse is not None:
                out[name] = (int(mtime_ns), int(size), dim, parse)
        return out

    def save(
        self, model_key: str | None, files: dict[str, tuple[int, int, FileParse]], removed: set[str]
    ) -> None:
        """Replace the rows of ``files`` and delete those of ``removed`` (every model)."""
        db = self._connect()
        if db is None or model_key is None or not (files or removed):
            return
        rows = []
        for name, (mtime_ns, size, parse) in files.items():
            dim = int(parse.vectors.shape[1]) if parse.vectors.ndim == 2 and parse.vectors.shape[0] else None
            rows.append((name, model_key, mtime_ns, size, dim, _encode(parse),
                         np.ascontiguousarray(parse.vectors, dtype=np.float32).tobytes()))
        try:
            with self._lock, db:
                db.executemany("DELETE FROM files WHERE name = ?", [(n,) for n in removed])
                db.executemany(
                    "INSERT OR REPLACE INTO files(name, model_key, mtime_ns, size, dim, meta, vectors) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?)",
                    rows,
                )
            self.saved += len(rows)
        except sqlite3.Error as exc:
            self._fail(exc)

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None

    def _connect(self) -> sqlite3.Connection | None:
        if self._db is not None or self.error is not None:
            return self._db
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(self.path, timeout=5, check_same_thread=False, isolation_level=None)
            self._db = db  # so that _fail closes it
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            MIGRATIONS.apply(db)  # needs autocommit: each step is its own transaction
            db.isolation_level = "DEFERRED"  # saves then run in one implicit transaction each
        except (sqlite3.Error, OSError, SmartContextError) as exc:
            self._fail(exc)
            return None
        self._db = db
        return db

    def _fail(self, exc: Exception) -> None:
        self.error = f"vector cache {self.path} not used: {exc}"
        if self._db is not None:
            try:
                self._db.close()
            except sqlite3.Error:
                pass
            self._db = None


def _encode(parse: FileParse) -> str:
    records = {r.key for r in parse.records}
    tombstones = set(parse.tombstones)
    return json.dumps({
        "r": [[r.key, r.kind, *(r.lines or ())] for r in parse.records],
        "t": parse.tombstones,
        "m": [k for k in parse.mentioned if k not in records and k not in tombstones],
        "mc": dict(parse.model_counts),
        "c": [parse.entries, parse.bad_lines, parse.no_vector, parse.stale_blocks,
              parse.bad_vectors, parse.other_collections],
    }, ensure_ascii=False, separators=(",", ":"))


def _decode(meta: str, blob: bytes, dim: int | None) -> FileParse | None:
    try:
        data = json.loads(meta)
        records = []
        for item in data["r"]:
            key, kind = item[0], int(item[1])
            if kind not in (SOURCE, BLOCK):
                return None
            path = key.split("#", 1)[0] if kind == BLOCK else key
            lines = (int(item[2]), int(item[3])) if len(item) == 4 else None
            records.append(Record(key, kind, path, lines))
        n = len(records)
        vectors = np.frombuffer(blob, dtype=np.float32)
        if n == 0:
            vectors = np.zeros((0, dim or 0), dtype=np.float32)
        elif not dim or vectors.size != n * dim:
            return None
        else:
            vectors = vectors.reshape(n, dim)
        parse = FileParse(records=records, vectors=vectors, tombstones=list(data["t"]),
                          model_counts=Counter(data["mc"]))
        parse.mentioned = [r.key for r in records] + parse.tombstones + list(data["m"])
        (parse.entries, parse.bad_lines, parse.no_vector, parse.stale_blocks,
         parse.bad_vectors, parse.other_collections) = (int(x) for x in data["c"])
        return parse
    except (ValueError, KeyError, TypeError, IndexError):
        return None
