"""The SQLite store: files, items, edges, FTS5 and vectors in one WAL-mode file.

A file's rows are always replaced in one transaction, so a crash (even SIGKILL) leaves
either the old or the new version of that file, never a mix.
"""

from __future__ import annotations

import json
import re
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import IndexCorrupt
from ..model import Edge, Item
from .schema import migrate

_ITEM_COLUMNS = (
    "rowid, id, path, kind, name, qualname, fqname, start_line, end_line, signature, "
    "docstring, text, parent_id, language, meta, tokens, sig_tokens, content_hash"
)


@dataclass
class FileState:
    id: int
    path: str
    mtime_ns: int
    size: int
    hash: str
    language: str
    source: str


@dataclass
class StoredItem:
    """An item as read back from the store, with its row id and derived fields."""

    rowid: int
    item: Item
    fqname: str
    sig_tokens: int
    content_hash: str


_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_IDENT = re.compile(r"[^\W\d]\w*", re.UNICODE)


def split_identifier(word: str) -> list[str]:
    """``HTTPAdapter`` -> ``[http, adapter]``; ``get_netrc_auth`` -> ``[get, netrc, auth]``."""
    parts: list[str] = []
    for piece in word.split("_"):
        if piece:
            parts.extend(p.lower() for p in _CAMEL.findall(piece))
    return parts


_HAS_CAMEL = re.compile(r"[a-z][A-Z]|[A-Z][A-Z][a-z]")


def fts_text(text: str) -> str:
    """Text for the FTS index: the original plus the parts of every camelCase identifier.

    unicode61 already splits on ``_`` and ``.``; camelCase needs help, so ``HTTPAdapter``
    is indexed as ``HTTPAdapter http adapter`` and a question saying "http adapter"
    finds it.
    """
    extra: list[str] = []
    # Distinct words first: the regex runs in C and the Python loop sees each word once.
    for word in set(_IDENT.findall(text)):
        if len(word) < 4 or not _HAS_CAMEL.search(word):
            continue
        parts = split_identifier(word)
        if len(parts) > 1:
            extra.extend(parts)
    if not extra:
        return text
    return text + "\n" + " ".join(sorted(extra))


class Store:
    """One workspace index. Thread-safe for readers; writes are serialised by a lock."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._lock = threading.RLock()
        self._batch_depth = 0
        try:
            self.db = sqlite3.connect(
                str(self.path), isolation_level=None, check_same_thread=False, timeout=30
            )
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.execute("PRAGMA foreign_keys=ON")
            self.db.execute("PRAGMA busy_timeout=30000")
            migrate(self.db)
            self.db.execute("PRAGMA quick_check(1)").fetchone()
        except sqlite3.DatabaseError as exc:
            raise IndexCorrupt(
                f"the index {self.path} cannot be read ({exc}); rebuild it with "
                f"`smartcontext index --rebuild`"
            ) from exc

    def close(self) -> None:
        with self._lock:
            self.db.close()

    # -- transactions -------------------------------------------------------------

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One atomic write; inside ``batch()`` it joins the batch's transaction."""
        with self._lock:
            if self._batch_depth:
                yield self.db
                return
            self.db.execute("BEGIN IMMEDIATE")
            try:
                yield self.db
            except BaseException:
                self.db.execute("ROLLBACK")
                raise
            self.db.execute("COMMIT")

    @contextmanager
    def batch(self) -> Iterator["Store"]:
        """Group several writes (whole files) into one transaction: a cold index commits
        every few dozen files instead of after each. Atomicity still holds per batch."""
        with self._lock:
            if self._batch_depth:
                self._batch_depth += 1
                try:
                    yield self
                finally:
                    self._batch_depth -= 1
                return
            self.db.execute("BEGIN IMMEDIATE")
            self._batch_depth = 1
            try:
                yield self
            except BaseException:
                self._batch_depth = 0
                self.db.execute("ROLLBACK")
                raise
            self._batch_depth = 0
            self.db.execute("COMMIT")

    def _bump_generation(self) -> None:
        self.db.execute(
            "INSERT INTO meta(key, value) VALUES('generation', '1') "
            "ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + 1"
        )

    def generation(self) -> int:
        row = self.db.execute("SELECT value FROM meta WHERE key='generation'").fetchone()
        return int(row[0]) if row else 0

    def get_meta(self, key: str, default: str | None = None) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return row[0] if row else default

    def set_meta(self, key: str, value: str) -> None:
        with self.transaction() as db:
            db.execute(
                "INSERT INTO meta(key, value) VALUES(?, ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (key, value),
            )

    # -- files -------------------------------------------------------------------

    def file_states(self) -> dict[str, FileState]:
        rows = self.db.execute(
            "SELECT id, path, mtime_ns, size, hash, language, source FROM files"
        ).fetchall()
        return {r[1]: FileState(*r) for r in rows}

    def touch_file(self, path: str, mtime_ns: int, size: int) -> None:
        with self.transaction() as db:
            db.execute(
                "UPDATE files SET mtime_ns=?, size=? WHERE path=?", (mtime_ns, size, path)
            )

    def _delete_file_rows(self, db: sqlite3.Connection, path: str) -> None:
        row = db.execute("SELECT id FROM files WHERE path=?", (path,)).fetchone()
        if not row:
            return
        file_id = row[0]
        db.execute(
            "DELETE FROM items_fts WHERE rowid IN (SELECT rowid FROM items WHERE file_id=?)",
            (file_id,),
        )
        # vectors and edges go by ON DELETE CASCADE
        db.execute("DELETE FROM items WHERE file_id=?", (file_id,))
        db.execute("DELETE FROM edges WHERE file_id=?", (file_id,))
        db.execute("DELETE FROM files WHERE id=?", (file_id,))

    def delete_files(self, paths: Iterable[str]) -> int:
        count = 0
        with self.transaction() as db:
            for path in paths:
                self._delete_file_rows(db, path)
                count += 1
            if count:
                self._bump_generation()
        return count

    def replace_file(
        self,
        *,
        path: str,
        mtime_ns: int,
        size: int,
        hash: str,
        language: str,
        source: str,
        module: str,
        warnings: Sequence[str],
        items: Sequence[tuple],
        edges: Sequence[Edge],
    ) -> None:
        """Replace everything known about ``path`` in one transaction.

        ``items`` holds ``(item, fqname, sig_tokens, content_hash)`` tuples, optionally
        followed by the full-text body and name for that item (default: computed from
        the item's text and qualified name).
        """
        with self.transaction() as db:
            self._delete_file_rows(db, path)
            cur = db.execute(
                "INSERT INTO files(path, mtime_ns, size, hash, language, source, module, warnings) "
                "VALUES (?,?,?,?,?,?,?,?)",
                (path, mtime_ns, size, hash, language, source, module, json.dumps(list(warnings))),
            )
            file_id = cur.lastrowid
            # Explicit row ids let items and their FTS rows go in with two executemany calls.
            next_rowid = (db.execute("SELECT COALESCE(MAX(rowid), 0) FROM items").fetchone()[0]) + 1
            item_rows, fts_rows = [], []
            for offset, row in enumerate(items):
                item, fqname, sig_tokens, content_hash = row[:4]
                fts_body = row[4] if len(row) > 4 else _fts_body(item)
                fts_name = row[5] if len(row) > 5 else fts_text(item.qualname)
                rowid = next_rowid + offset
                item_rows.append((
                    rowid, item.id, file_id, item.path, item.kind, item.name, item.qualname, fqname,
                    item.start_line, item.end_line, item.signature, item.docstring, item.text,
                    item.parent_id, item.language, json.dumps(item.meta, default=str),
                    item.tokens, sig_tokens, content_hash,
                ))
                kind = "file" if item.kind in ("module", "text") and item.start_line == 1 else item.kind
                fts_rows.append((rowid, fts_name, item.path, fts_body, kind))
            db.executemany(
                "INSERT INTO items(rowid, id, file_id, path, kind, name, qualname, fqname, start_line, "
                "end_line, signature, docstring, text, parent_id, language, meta, tokens, "
                "sig_tokens, content_hash) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                item_rows,
            )
            db.executemany(
                "INSERT INTO items_fts(rowid, name, path, body, kind) VALUES (?,?,?,?,?)", fts_rows
            )
            db.executemany(
                "INSERT INTO edges(src, kind, dst, dst_name, file_id) VALUES (?,?,?,?,?)",
                [(e.src, e.kind, e.dst, e.dst_name, file_id) for e in edges],
            )
            self._bump_generation()

    # -- items -------------------------------------------------------------------

    @staticmethod
    def _row_to_item(row: Sequence) -> StoredItem:
        (rowid, id_, path, kind, name, qualname, fqname, start, end, sig, doc, text,
         parent, lang, meta, tokens, sig_tokens, chash) = row
        item = Item(
            id=id_, path=path, kind=kind, name=name, qualname=qualname, start_line=start,
            end_line=end, signature=sig, docstring=doc, text=text, parent_id=parent,
            language=lang, meta=json.loads(meta), tokens=tokens,
        )
        return StoredItem(rowid, item, fqname, sig_tokens, chash)

    def items_by_rowids(self, rowids: Sequence[int]) -> dict[int, StoredItem]:
        out: dict[int, StoredItem] = {}
        ids = list(dict.fromkeys(int(r) for r in rowids))
        for chunk in _chunks(ids, 500):
            marks = ",".join("?" * len(chunk))
            for row in self.db.execute(
                f"SELECT {_ITEM_COLUMNS} FROM items WHERE rowid IN ({marks})", chunk
            ):
                stored = self._row_to_item(row)
                out[stored.rowid] = stored
        return out

    def items_by_ids(self, ids: Sequence[str]) -> dict[str, StoredItem]:
        out: dict[str, StoredItem] = {}
        uniq = list(dict.fromkeys(ids))
        for chunk in _chunks(uniq, 500):
            marks = ",".join("?" * len(chunk))
            for row in self.db.execute(
                f"SELECT {_ITEM_COLUMNS} FROM items WHERE id IN ({marks})", chunk
            ):
                stored = self._row_to_item(row)
                out[stored.item.id] = stored
        return out

    def items_in_paths(self, paths: Sequence[str]) -> list[StoredItem]:
        out: list[StoredItem] = []
        for chunk in _chunks(list(dict.fromkeys(paths)), 500):
            marks = ",".join("?" * len(chunk))
            out.extend(
                self._row_to_item(row)
                for row in self.db.execute(
                    f"SELECT {_ITEM_COLUMNS} FROM items WHERE path IN ({marks}) ORDER BY rowid",
                    chunk,
                )
            )
        return out

    def item_light_rows(self) -> list[tuple]:
        """(rowid, id, path, kind, name, qualname, fqname, parent_id, tokens, sig_tokens,
        start_line, end_line) for every item: the in-memory catalogue retrieval works on."""
        return self.db.execute(
            "SELECT rowid, id, path, kind, name, qualname, fqname, parent_id, tokens, "
            "sig_tokens, start_line, end_line FROM items"
        ).fetchall()

    def counts(self) -> dict[str, int]:
        q = self.db.execute
        return {
            "files": q("SELECT COUNT(*) FROM files").fetchone()[0],
            "items": q("SELECT COUNT(*) FROM items").fetchone()[0],
            "edges": q("SELECT COUNT(*) FROM edges").fetchone()[0],
            "vectors": q("SELECT COUNT(*) FROM vectors").fetchone()[0],
        }

    def kind_counts(self) -> dict[str, int]:
        return dict(self.db.execute("SELECT kind, COUNT(*) FROM items GROUP BY kind").fetchall())

    def file_warnings(self) -> dict[str, list[str]]:
        return {
            path: json.loads(w)
            for path, w in self.db.execute("SELECT path, warnings FROM files WHERE warnings != '[]'")
        }

    # -- keyword search ------------------------------------------------------------

    def fts_search(
        self, match: str, limit: int, files_only: bool = False
    ) -> list[tuple[int, float]]:
        """BM25 over name, path and body; returns (rowid, score) with higher = better.

        files_only: rank whole files (module rows) instead of symbols.
        """
        if not match:
            return []
        if files_only:
            match = f"({match}) AND kind:file"
        try:
            rows = self.db.execute(
                "SELECT rowid, bm25(items_fts, 4.0, 2.0, 1.0, 0.0) AS rank FROM items_fts "
                "WHERE items_fts MATCH ? ORDER BY rank LIMIT ?",
                (match, limit),
            ).fetchall()
        except sqlite3.OperationalError:
            return []
        # SQLite's bm25() is negative; flip it so callers can treat larger as better.
        return [(r[0], -r[1]) for r in rows]

    # -- edges -------------------------------------------------------------------

    def edges_from(self, ids: Sequence[str]) -> list[tuple[str, str, str | None, str | None]]:
        out: list[tuple] = []
        for chunk in _chunks(list(ids), 500):
            marks = ",".join("?" * len(chunk))
            out.extend(
                self.db.execute(
                    f"SELECT src, kind, dst, dst_name FROM edges WHERE src IN ({marks})", chunk
                ).fetchall()
            )
        return out

    def edges_to(
        self, ids: Sequence[str], names: Sequence[str]
    ) -> list[tuple[str, str, str | None, str | None]]:
        out: list[tuple] = []
        for chunk in _chunks(list(ids), 500):
            marks = ",".join("?" * len(chunk))
            out.extend(
                self.db.execute(
                    f"SELECT src, kind, dst, dst_name FROM edges WHERE dst IN ({marks})", chunk
                ).fetchall()
            )
        for chunk in _chunks(list(names), 500):
            marks = ",".join("?" * len(chunk))
            out.extend(
                self.db.execute(
                    f"SELECT src, kind, dst, dst_name FROM edges WHERE dst_name IN ({marks})",
                    chunk,
                ).fetchall()
            )
        return out

    def all_edges(self) -> list[tuple[str, str, str | None, str | None]]:
        return self.db.execute("SELECT src, kind, dst, dst_name FROM edges").fetchall()

    # -- vectors -------------------------------------------------------------------

    def items_missing_vectors(self, model: str) -> list[tuple[int, str]]:
        """(rowid, content_hash) of items that have no vector for ``model``."""
        return self.db.execute(
            "SELECT i.rowid, i.content_hash FROM items i LEFT JOIN vectors v "
            "ON v.item_rowid = i.rowid AND v.model = ? WHERE v.item_rowid IS NULL",
            (model,),
        ).fetchall()

    def put_vectors(self, model: str, rowids: Sequence[int], matrix: np.ndarray) -> None:
        matrix = np.ascontiguousarray(matrix, dtype=np.float32)
        with self.transaction() as db:
            # An item may have been deleted while we embedded; skip those rows.
            existing = set()
            for chunk in _chunks([int(r) for r in rowids], 500):
                marks = ",".join("?" * len(chunk))
                existing.update(
                    r[0] for r in db.execute(f"SELECT rowid FROM items WHERE rowid IN ({marks})", chunk)
                )
            db.executemany(
                "INSERT OR REPLACE INTO vectors(item_rowid, model, vec) VALUES (?,?,?)",
                [
                    (int(r), model, matrix[i].tobytes())
                    for i, r in enumerate(rowids)
                    if int(r) in existing
                ],
            )
            self._bump_generation()

    def load_vectors(self, model: str) -> tuple[np.ndarray, np.ndarray]:
        """(rowids, matrix) of every vector stored for ``model``."""
        rows = self.db.execute(
            "SELECT item_rowid, vec FROM vectors WHERE model=? ORDER BY item_rowid", (model,)
        ).fetchall()
        if not rows:
            return np.zeros(0, dtype=np.int64), np.zeros((0, 0), dtype=np.float32)
        rowids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32)
        return rowids, matrix.reshape(len(rows), -1)

    def vector_models(self) -> dict[str, int]:
        return dict(self.db.execute("SELECT model, COUNT(*) FROM vectors GROUP BY model").fetchall())


def _fts_body(item: Item) -> str:
    # Names are indexed in their own column; the body carries signature, docs and code.
    return fts_text(item.text if item.text else f"{item.signature}\n{item.docstring}")


def _chunks(seq: list, size: int) -> Iterator[list]:
    for i in range(0, len(seq), size):
        yield seq[i : i + size]
