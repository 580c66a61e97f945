"""The SQLite store: files, items, edges, full text and vectors in one WAL-mode file.

A file's rows are always replaced in one transaction, so a crash (even SIGKILL) leaves
either the old or the new version of that file, never a mix.

Text is stored once: each file keeps one compressed text that its items point into,
the FTS5 table is contentless, and an item's vector is the embedding-cache row for its
content hash.
"""

from __future__ import annotations

import functools
import json
import sqlite3
import threading
import time
import zlib
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import DiskFull, IndexDamaged, IndexUnwritable, SmartContextError
from ..hashes import blake2b
from ..lazy import Logger
from ..space import disk_full, is_disk_full, is_disk_full_at, size_of
from ..model import Edge
from .base import (
    CatalogueRow, EdgeRow, FileRecord, FileState, ItemRow, KeywordTerm, StoredItem,
)
from .bm25 import bm25_sql_weights, fts_kind
from .schema import FILE_NAME_KEY, LEGACY_VERSION, LINK_NAME_KEY, migrate
from .shared import FileTexts, StoreBase, fts_values, item_from_row
from .text import JSON, FileData, pack_file, pack_rows
from . import vector_file

if TYPE_CHECKING:  # imported where vectors are handled: a keyword-only question never needs it
    import numpy as np

log = Logger("smartcontext.store")


def _id_sql(item: str, file: str) -> str:
    """SQL for the id of item alias ``item`` (whose file is alias ``file``); see id_mode."""
    path = f"COALESCE({item}.path, {file}.path)"
    return (
        f"CASE {item}.id_mode WHEN 1 THEN {path} WHEN 2 THEN {path} || '#' || {item}.qualname "
        f"WHEN 3 THEN {path} || '::' || {item}.qualname ELSE {item}.id END"
    )


# A parent in the same file is joined as ``p``; one elsewhere keeps its id in parent_id.
_PARENT_SQL = f"CASE WHEN p.rowid IS NULL THEN i.parent_id ELSE {_id_sql('p', 'f')} END"
_ITEM_COLUMNS = (
    f"i.rowid, {_id_sql('i', 'f')}, COALESCE(i.path, f.path), i.kind, i.name, i.qualname, "
    "i.fqname, i.fq_mode, "
    f"f.module, i.start_line, i.end_line, {_PARENT_SQL}, COALESCE(i.language, f.language), "
    "i.tokens, i.sig_tokens, i.content_hash, i.file_id, f.hash, i.details_at, i.details_len, "
    "i.text_at, i.text_len"
)
_LIGHT_COLUMNS = (
    f"i.rowid, {_id_sql('i', 'f')}, COALESCE(i.path, f.path), i.kind, i.name, i.qualname, "
    "i.fqname, i.fq_mode, "
    f"f.module, {_PARENT_SQL}, i.tokens, i.sig_tokens, i.start_line, i.end_line"
)
# An edge's src and dst rows are items of the edge's own file.
_EDGE_SELECT = (
    f"SELECT CASE WHEN e.src IS NULL THEN e.src_id ELSE {_id_sql('s', 'ef')} END AS src_key, "
    f"e.kind, CASE WHEN e.dst IS NULL THEN e.dst_id ELSE {_id_sql('d', 'ef')} END AS dst_key, "
    "e.dst_name FROM edges e JOIN files ef ON ef.id = e.file_id "
    "LEFT JOIN items s ON s.rowid = e.src LEFT JOIN items d ON d.rowid = e.dst"
)
# The items at some paths: two indexed lookups, items on their file's path and the rare
# item whose path differs from its file's ({} takes the placeholders).
_PATH_WHERE = ("i.path IS NULL AND f.path IN ({})", "i.path IN ({})")
# Stay well under SQLite's bound-parameter limit on older builds (999).
_CHUNK = 500
# Meta key: how many times the embedding cache was cleared (see vector_file).
_VECTORS_CLEARED = "vectors_cleared"
# Full-text answers remembered per index generation: at most this many (rowid, score)
# pairs in all (about 100 bytes each); a filtered search asks for every match, so one
# answer may hold tens of thousands, and one over a quarter of the budget is not kept.
_SEARCH_PAIRS_KEPT = 200_000
# Idle reader connections kept for the next questions (see ``_read``).
_IDLE_READERS_KEPT = 4

# bm25() with the weights of the FTS columns name, path, body, kind (store/bm25.py,
# which the PostgreSQL store computes the same scores with).
_BM25 = bm25_sql_weights()


class SQLiteStore(StoreBase):
    """One workspace index in a SQLite file. Thread-safe for readers; writes are
    serialised by a lock."""

    # Packing (stretches + zlib) is a third of the writing process's work on a cold index;
    # the indexer's workers run it instead.
    prepare_file = staticmethod(pack_rows)
    # Retrieval's in-memory matrix is faster than any query through SQLite.
    searches_vectors = False

    def __init__(self, path: str | Path):
        super().__init__()
        self.path = Path(path)
        self.location = str(self.path)
        self.notices: list[str] = []
        self._lock = threading.RLock()
        self._batch_depth = 0
        self._texts = FileTexts()
        # Full-text answers by query and limit, kept for their index generation (with
        # their size in pairs): ranking the thousands of rows a common word matches is
        # most of a question's work, and a server is asked the same words again (by
        # search, then context, by each client).
        self._searches: OrderedDict[tuple, tuple[int, tuple[list[tuple[int, float]], ...], int]] = OrderedDict()
        self._search_pairs = 0
        self._searches_lock = threading.Lock()
        # Reads run on connections of their own, one per reader at a time: SQLite runs one
        # statement at a time per connection, so on the writer's connection concurrent
        # questions queued for it (full-text ranking is most of a question's time), and a
        # reader never sees a writer's uncommitted rows. The writing thread reads on its
        # own connection, which sees what it wrote.
        self._idle_readers: list[sqlite3.Connection] = []
        self._all_readers: list[sqlite3.Connection] = []
        self._readers_lock = threading.Lock()
        self._writer: int | None = None
        self._local = threading.local()  # the reader a read method runs on
        # Why this index can only be read (a read-only folder, a full disk), or None.
        self.unwritable: Exception | None = None
        try:
            self._wdb = self._connect()
            _enable_wal(self._wdb)
            self._wdb.execute("PRAGMA synchronous=NORMAL")
            self._wdb.execute("PRAGMA foreign_keys=ON")
            legacy = self._wdb.execute("PRAGMA user_version").fetchone()[0] == LEGACY_VERSION
            migrate(self._wdb)
            self._probe_damage()
        except sqlite3.DatabaseError as exc:
            if hasattr(self, "_wdb"):
                self._wdb.close()
            typed = translate_error(exc, self.path)
            if not self._open_read_only(exc, typed):
                raise typed from exc
            legacy = False
        if legacy:
            notice = (
                f"the index {self.path} was written in an older format; it was reset and is "
                f"rebuilt on the next `smartcontext index` (cached embeddings were kept)"
            )
            self.notices.append(notice)
            log.warning(notice)

    def _connect(self) -> sqlite3.Connection:
        if self.unwritable is not None:
            # Immutable: no lock and no shared-memory file, which cannot be created in a
            # read-only folder or on a full disk. Only used when the write-ahead log is
            # empty, so the file alone is the whole index.
            uri = f"{self.path.resolve().as_uri()}?mode=ro&immutable=1"
            conn = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
        else:
            conn = sqlite3.connect(str(self.path), isolation_level=None, check_same_thread=False, timeout=30)
        conn.execute("PRAGMA busy_timeout=30000")
        return conn

    def _open_read_only(self, exc: sqlite3.DatabaseError, typed: Exception) -> bool:
        """Open an existing index for reading when it cannot be opened for writing: a
        question is answered, an index run says why it cannot write. False when that is
        not the failure, or the file alone is not the whole index."""
        if not isinstance(typed, (IndexUnwritable, DiskFull)) and not (
            isinstance(exc, sqlite3.OperationalError) and "disk i/o error" in str(exc).lower()
            and is_disk_full_at(self.path)
        ):
            return False
        if not self.path.is_file() or size_of(self.path.with_name(self.path.name + "-wal")) > 0:
            return False
        if not isinstance(typed, (IndexUnwritable, DiskFull)):  # an I/O error of a full disk
            typed = disk_full(self.path.parent, index=self.path)
        self.unwritable = typed
        try:
            self._wdb = self._connect()
            migrate(self._wdb)  # an older format needs rewriting: that fails here
            self._probe_damage()
        except (sqlite3.DatabaseError, SmartContextError):
            self._wdb.close()
            self.unwritable = None
            return False
        return True

    def _probe_damage(self) -> None:
        """``PRAGMA quick_check(1)``: damaged pages fail here, as one sentence, rather than
        midway through a question. It reads the whole file (a tenth of a second on a
        large repository's index, and the page cache), so it is skipped when the file is
        as it was after the last clean check (same inode, size and modification time, no
        pending write-ahead log): a write or a damaging edit changes one of them."""
        stamp_file = self.path.with_name(self.path.name + ".checked")
        stamp = _file_stamp(self.path)
        try:
            if stamp is not None and stamp_file.read_text(encoding="utf-8") == stamp:
                return
        except OSError:
            pass
        result = self._wdb.execute("PRAGMA quick_check(1)").fetchone()
        if stamp is not None and result is not None and result[0] == "ok":
            try:
                stamp_file.write_text(stamp, encoding="utf-8")
            except OSError:  # a read-only folder: check every time
                pass

    @property
    def db(self) -> sqlite3.Connection:
        """The connection for this thread now: the writer's inside a write, the reader
        bound by a read method (``_reads``), else the writer's."""
        if self._writer != threading.get_ident():
            conn = getattr(self._local, "conn", None)
            if conn is not None:
                return conn
        return self._wdb

    def close(self) -> None:
        with self._lock:
            self._wdb.close()
            with self._readers_lock:
                for conn in self._all_readers:
                    conn.close()
                self._all_readers.clear()
                self._idle_readers.clear()

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        """A connection for one read: the writer's own inside a write on this thread, else
        an idle reader (opened when none is idle)."""
        if self._writer == threading.get_ident() or getattr(self._local, "conn", None) is not None:
            yield self.db
            return
        with self._readers_lock:
            conn = self._idle_readers.pop() if self._idle_readers else None
        if conn is None:
            conn = self._connect()
            with self._readers_lock:
                self._all_readers.append(conn)
        self._local.conn = conn
        try:
            yield conn
        finally:
            self._local.conn = None
            surplus = False
            with self._readers_lock:
                if conn in self._all_readers:  # not closed meanwhile
                    # A burst of questions opens a connection each (with its own page
                    # cache, up to 2 MB); afterwards a few are kept for the next ones.
                    surplus = len(self._idle_readers) >= _IDLE_READERS_KEPT
                    if surplus:
                        self._all_readers.remove(conn)
                    else:
                        self._idle_readers.append(conn)
            if surplus:
                conn.close()

    def release_memory(self) -> None:
        """Give back what caches hold (decoded files, full-text answers, idle reader
        connections and SQLite's page caches); they fill again as questions come. For a
        server that has gone idle."""
        self._texts.clear()
        with self._searches_lock:
            self._searches.clear()
            self._search_pairs = 0
        with self._readers_lock:
            idle, self._idle_readers = self._idle_readers, []
            for conn in idle:
                self._all_readers.remove(conn)
        for conn in idle:
            conn.close()
        if self._lock.acquire(blocking=False):  # a write in progress keeps its cache
            try:
                self._wdb.execute("PRAGMA shrink_memory")
            except sqlite3.Error:
                pass
            finally:
                self._lock.release()

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Every read of this thread inside sees the index as one commit left it: one
        reader connection held in one read transaction (WAL keeps that snapshot while
        writers commit). So a question made of several queries never mixes an edit's
        before and after, and needs no lock against writers. Nested, and inside a write
        on this thread, it adds nothing."""
        if self._writer == threading.get_ident() or getattr(self._local, "conn", None) is not None:
            yield
            return
        with self._read() as conn:
            conn.execute("BEGIN")
            try:
                yield
            finally:
                if conn.in_transaction:
                    conn.execute("COMMIT")  # a read transaction: nothing to keep or lose

    def check(self, full: bool = False) -> str | None:
        """None when the index is sound, else the first problem found: damage an earlier
        query met (remembered beside the file, since a damaged file cannot record it),
        and with ``full`` what ``PRAGMA quick_check`` finds (opening runs it already)."""
        try:
            return _damage_marker(self.path).read_text(encoding="utf-8") or "damaged pages"
        except OSError:
            pass
        if not full:
            return None
        with self._lock:
            try:
                rows = self._wdb.execute("PRAGMA quick_check(1)").fetchall()
            except sqlite3.DatabaseError as exc:
                return str(exc)
        problem = rows[0][0] if rows else "no answer"
        return None if problem == "ok" else problem

    # -- transactions -------------------------------------------------------------

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One atomic write; inside ``batch()`` it joins the batch's transaction."""
        with self._lock:
            if self._batch_depth or self._writer is not None:
                yield
                return
            self._wdb.execute("BEGIN IMMEDIATE")
            self._writer = threading.get_ident()
            try:
                yield
            except BaseException:
                self._wdb.execute("ROLLBACK")
                raise
            finally:
                self._writer = None
            self._wdb.execute("COMMIT")

    @contextmanager
    def batch(self) -> Iterator["SQLiteStore"]:
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
            self._wdb.execute("BEGIN IMMEDIATE")
            self._batch_depth = 1
            self._writer = threading.get_ident()
            try:
                yield self
            except BaseException:
                self._batch_depth = 0
                self._writer = None
                self._wdb.execute("ROLLBACK")
                raise
            self._batch_depth = 0
            self._writer = None
            self._wdb.execute("COMMIT")

    def _increment(self, counter: str) -> int:
        self.db.execute(
            "INSERT INTO meta(key, value) VALUES(?, '1') "
            "ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + 1",
            (counter,),
        )
        return int(self._meta_value(counter) or 0)

    def _log_changes(self, generation: int, paths: list[str]) -> None:
        self.db.executemany(
            "INSERT INTO changes(generation, path) VALUES (?, ?)", [(generation, p) for p in paths]
        )

    def _forget_changes(self, floor: int) -> None:
        self.db.execute("DELETE FROM changes WHERE generation <= ?", (floor,))
        self.db.execute(
            "UPDATE meta SET value = ? WHERE key = 'changes_from' AND CAST(value AS INTEGER) < ?",
            (str(floor), floor),
        )

    def _changes_since(self, since: int) -> tuple[int | None, set[str]]:
        # One statement, so one snapshot.
        rows = self.db.execute(
            "SELECT 0, value FROM meta WHERE key = 'changes_from' "
            "UNION ALL SELECT DISTINCT 1, path FROM changes WHERE generation > ?",
            (since,),
        ).fetchall()
        floor = [int(v) for tag, v in rows if tag == 0]
        return (floor[0] if floor else None), {p for tag, p in rows if tag == 1}

    def _meta_value(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return row[0] if row else None

    def set_meta(self, key: str, value: str) -> None:
        with self.transaction():
            self.db.execute(
                "INSERT INTO meta(key, value) VALUES(?, ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (key, value),
            )

    def compact(self) -> bool:
        """Give the pages that indexing freed (FTS5 segment merges, rewritten files) back
        to the file system when they are more than a twentieth of the file; returns
        whether it did."""
        with self._lock:
            pages = self._wdb.execute("PRAGMA page_count").fetchone()[0]
            free = self._wdb.execute("PRAGMA freelist_count").fetchone()[0]
            if not pages or free * 20 < pages:
                return False
            try:
                self._wdb.execute("VACUUM")
                self._wdb.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            except sqlite3.OperationalError as exc:
                # VACUUM fails while another statement is open on the shared connection
                # (a reader mid-iteration); compaction is only an optimisation, so the
                # next run that changes files tries again.
                log.debug("compact skipped: %s", exc)
                return False
            return True

    # -- files -------------------------------------------------------------------

    def file_states(self, paths: Sequence[str] | None = None) -> dict[str, FileState]:
        query = "SELECT id, path, mtime_ns, size, hash, language, source FROM files"
        if paths is None:
            rows = self.db.execute(query).fetchall()
        else:  # a tool's write re-reads a file or two: not every file's row
            rows = [r for marks, chunk in _in_chunks(paths)
                    for r in self.db.execute(f"{query} WHERE path IN ({marks})", chunk).fetchall()]
        return {r[1]: FileState(*r) for r in rows}

    def touch_file(self, path: str, mtime_ns: int, size: int) -> None:
        with self.transaction():
            self.db.execute(
                "UPDATE files SET mtime_ns=?, size=? WHERE path=?", (mtime_ns, size, path)
            )

    def _delete_file_rows(self, path: str) -> set[str]:
        """Delete ``path``'s rows; returns the item paths they had (the file's own, and
        any other an item carried), for the change log."""
        db = self.db
        row = db.execute("SELECT id, data FROM files WHERE path=?", (path,)).fetchone()
        if not row:
            return set()
        file_id, blob = row
        text = FileData.unpack(blob)
        # A contentless FTS5 row is deleted by giving back exactly what was indexed.
        rows = db.execute(
            "SELECT i.rowid, COALESCE(i.path, f.path), i.kind, i.start_line, i.qualname, "
            "i.text_at, i.text_len, i.fts_mode, i.fts_extra, i.fts_name "
            "FROM items i JOIN files f ON f.id = i.file_id WHERE i.file_id=?",
            (file_id,),
        ).fetchall()
        db.executemany(
            "INSERT INTO items_fts(items_fts, rowid, name, path, body, kind) "
            "VALUES('delete', ?, ?, ?, ?, ?)",
            [
                (rowid, qualname if name is None else name, ipath,
                 _fts_body_of(text.slice(at, n), mode, extra), fts_kind(kind, start))
                for rowid, ipath, kind, start, qualname, at, n, mode, extra, name in rows
            ],
        )
        db.execute("DELETE FROM edges WHERE src IN (SELECT rowid FROM items WHERE file_id=?)", (file_id,))
        db.execute("DELETE FROM edges WHERE src IS NULL AND file_id=?", (file_id,))
        db.execute("DELETE FROM items WHERE file_id=?", (file_id,))
        db.execute("DELETE FROM files WHERE id=?", (file_id,))
        return {path, *(ipath for _, ipath, *_ in rows)}

    def delete_files(self, paths: Iterable[str]) -> int:
        count = 0
        changed: set[str] = set()
        with self.transaction():
            for path in paths:
                changed |= self._delete_file_rows(path)
                count += 1
            if count:
                self._bump_generation(changed)
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
        items: Sequence[ItemRow],
        edges: Sequence[Edge],
        prepared: tuple | None = None,
    ) -> None:
        """Replace everything known about ``path`` in one transaction.

        ``items`` holds ``(item, fqname, sig_tokens, content_hash)`` tuples, optionally
        followed by the full-text body and name for that item (default: computed from
        the item's text and qualified name). ``prepared`` is ``pack_file`` of the items,
        when the indexer's workers already packed them.
        """
        blob, spans, detail_spans = prepared or pack_file([row[0] for row in items])
        db = self.db
        with self.transaction():
            changed = self._delete_file_rows(path) | {path} | {row[0].path for row in items}
            cur = db.execute(
                "INSERT INTO files(path, mtime_ns, size, hash, language, source, module, "
                "warnings, data) VALUES (?,?,?,?,?,?,?,?,?)",
                (path, mtime_ns, size, hash, language, source, module,
                 json.dumps(list(warnings)), blob),
            )
            file_id = cur.lastrowid
            # Explicit row ids let items and their FTS rows go in with two executemany calls.
            next_rowid = (db.execute("SELECT COALESCE(MAX(rowid), 0) FROM items").fetchone()[0]) + 1
            item_rows, fts_rows = [], []
            rowid_of = {row[0].id: next_rowid + n for n, row in enumerate(items)}
            for n, row in enumerate(items):
                item, fqname, sig_tokens, content_hash = row[:4]
                fts_body, fts_name = fts_values(row)
                mode, extra = _fts_recipe(item.text, fts_body)
                fq_mode = _fq_mode(fqname, module, item.qualname)
                id_mode = _id_mode(item.id, item.path, item.qualname)
                rowid = next_rowid + n
                at, length = spans[n]
                item_rows.append((
                    rowid, _id_key(item.id), id_mode, None if id_mode else item.id, file_id,
                    *detail_spans[n], None if item.path == path else item.path,
                    item.kind, item.name, item.qualname, None if fq_mode else fqname, fq_mode,
                    item.start_line, item.end_line, rowid_of.get(item.parent_id or ""),
                    item.parent_id if item.parent_id and item.parent_id not in rowid_of else None,
                    None if item.language == language else item.language,
                    item.tokens, sig_tokens, content_hash,
                    JSON.encode(item.meta["tags"]) if "tags" in item.meta else None,
                    at, length, mode, extra, None if fts_name == item.qualname else fts_name,
                ))
                fts_rows.append(
                    (rowid, fts_name, item.path, fts_body, fts_kind(item.kind, item.start_line))
                )
            db.executemany(
                "INSERT INTO items(rowid, id_key, id_mode, id, file_id, details_at, details_len, path, "
                "kind, name, qualname, fqname, "
                "fq_mode, start_line, end_line, parent, parent_id, language, tokens, sig_tokens, "
                "content_hash, tags, text_at, text_len, fts_mode, fts_extra, fts_name) "
                "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                item_rows,
            )
            db.executemany(
                "INSERT INTO items_fts(rowid, name, path, body, kind) VALUES (?,?,?,?,?)", fts_rows
            )
            db.executemany(
                "INSERT INTO edges(file_id, src, src_id, kind, dst, dst_id, dst_name) "
                "VALUES (?,?,?,?,?,?,?)",
                [
                    (file_id, rowid_of.get(e.src), None if e.src in rowid_of else e.src, e.kind,
                     rowid_of.get(e.dst) if e.dst else None,
                     e.dst if e.dst and e.dst not in rowid_of else None, e.dst_name)
                    for e in edges
                ],
            )
            self._bump_generation(changed)

    # -- items -------------------------------------------------------------------

    def _file_blobs(self, ids: list[int]) -> Iterator[tuple[int, str, bytes]]:
        for marks, chunk in _in_chunks(ids):
            yield from self.db.execute(f"SELECT id, hash, data FROM files WHERE id IN ({marks})", chunk)

    def _read_items(self, where: str, params: Sequence, order: str = "") -> list[StoredItem]:
        rows = self.db.execute(
            f"SELECT {_ITEM_COLUMNS} FROM items i JOIN files f ON f.id = i.file_id "
            f"LEFT JOIN items p ON p.rowid = i.parent WHERE {where} {order}",
            params,
        ).fetchall()
        files = self._texts.get(((r[16], r[17]) for r in rows), self._file_blobs)
        out = []
        for (rowid, id_, path, kind, name, qualname, fqname, fq_mode, module, start, end,
             parent, lang, tokens, sig_tokens, chash, file_id, _hash, d_at, d_len, at, length) in rows:
            data = files.get(file_id)
            if data is None:
                continue  # its file changed under this read (another process indexing): left out
            item = item_from_row(data, id_, path, kind, name, qualname, start, end, parent, lang,
                                 tokens, d_at, d_len, at, length)
            fq = _fqname(fq_mode, fqname, module, qualname)
            out.append(StoredItem(rowid, item, fq, sig_tokens, chash))
        return out

    def items_by_rowids(self, rowids: Sequence[int]) -> dict[int, StoredItem]:
        out: dict[int, StoredItem] = {}
        for marks, chunk in _in_chunks(dict.fromkeys(int(r) for r in rowids)):
            for stored in self._read_items(f"i.rowid IN ({marks})", chunk):
                out[stored.rowid] = stored
        return out

    def items_by_ids(self, ids: Sequence[str]) -> dict[str, StoredItem]:
        out: dict[str, StoredItem] = {}
        for marks, chunk in _in_chunks(dict.fromkeys(ids)):
            wanted = set(chunk)
            for stored in self._read_items(f"i.id_key IN ({marks})", [_id_key(i) for i in chunk]):
                if stored.item.id in wanted:  # never trust a 64-bit key alone
                    out[stored.item.id] = stored
        return out

    def items_in_paths(self, paths: Sequence[str]) -> list[StoredItem]:
        found: dict[int, StoredItem] = {}
        for marks, chunk in _in_chunks(dict.fromkeys(paths)):
            for where in _PATH_WHERE:
                for stored in self._read_items(where.format(marks), chunk):
                    found[stored.rowid] = stored
        return [found[r] for r in sorted(found)]

    def item_light_rows(self, paths: Sequence[str] | None = None) -> list[CatalogueRow]:
        """The light columns of every item (or of the items at these paths), in row id
        order: the in-memory catalogue retrieval works on."""
        if paths is None:
            return self._light_rows("1", ())
        found: dict[int, CatalogueRow] = {}
        for marks, chunk in _in_chunks(dict.fromkeys(paths)):
            for where in _PATH_WHERE:
                found.update((r.rowid, r) for r in self._light_rows(where.format(marks), chunk))
        return [found[r] for r in sorted(found)]

    def _light_rows(self, where: str, params: Sequence) -> list[CatalogueRow]:
        return [
            CatalogueRow(rowid, id_, path, kind, name, qual, _fqname(fq_mode, fq, module, qual),
                         parent, tokens, sig_tokens, start, end)
            for (rowid, id_, path, kind, name, qual, fq, fq_mode, module, parent, tokens,
                 sig_tokens, start, end) in self.db.execute(
                f"SELECT {_LIGHT_COLUMNS} FROM items i JOIN files f ON f.id = i.file_id "
                f"LEFT JOIN items p ON p.rowid = i.parent WHERE {where} ORDER BY i.rowid",
                params,
            )
        ]

    def _count(self, *tables: str) -> tuple[int, ...]:
        counts = ", ".join(f"(SELECT COUNT(*) FROM {table})" for table in tables)
        return tuple(self.db.execute(f"SELECT {counts}").fetchone())

    def kind_counts(self) -> dict[str, int]:
        return dict(self.db.execute("SELECT kind, COUNT(*) FROM items GROUP BY kind").fetchall())

    def file_warnings(self) -> dict[str, list[str]]:
        return {
            path: json.loads(w)
            for path, w in self.db.execute("SELECT path, warnings FROM files WHERE warnings != '[]'")
        }

    def item_sizes(self, paths: Sequence[str], kind: str) -> list[tuple[int, str, str, int]]:
        found: list[tuple[int, str, str, int]] = []
        for marks, chunk in _in_chunks(dict.fromkeys(paths)):
            for where in _PATH_WHERE:
                found.extend(self.db.execute(
                    "SELECT i.rowid, COALESCE(i.path, f.path), i.qualname, i.tokens FROM items i "
                    f"JOIN files f ON f.id = i.file_id WHERE i.kind = ? AND {where.format(marks)}",
                    (kind, *chunk),
                ))
        found.sort()
        return found

    def item_size_columns(self, paths: Sequence[str], kind: str) -> dict[str, tuple[list[int], list[str], list[int]]]:
        # Each column comes back as one string, split at C speed: a row per item costs
        # Python about 3 us, 0.15-0.3 s for a 50,000-message chat.
        out: dict[str, tuple[list[int], list[str], list[int]]] = {}
        for path in dict.fromkeys(paths):
            for where in _PATH_WHERE:
                n, rowids, names, sizes = self.db.execute(
                    "SELECT COUNT(*), group_concat(r), group_concat(q, char(31)), group_concat(t) FROM "
                    "(SELECT i.rowid AS r, i.qualname AS q, i.tokens AS t FROM items i "
                    f"JOIN files f ON f.id = i.file_id WHERE i.kind = ? AND {where.format('?')} ORDER BY i.rowid)",
                    (kind, path),
                ).fetchone()
                if not n:
                    continue
                cols = (list(map(int, rowids.split(","))), names.split("\x1f"), list(map(int, sizes.split(","))))
                if len(cols[1]) != n or cols[0] != sorted(cols[0]):
                    # A name holding the separator, or an order not kept: row by row.
                    found = sorted(self.db.execute(
                        "SELECT i.rowid, i.qualname, i.tokens FROM items i JOIN files f ON f.id = i.file_id "
                        f"WHERE i.kind = ? AND {where.format('?')}", (kind, path)))
                    cols = ([r for r, _, _ in found], [q for _, q, _ in found], [t for _, _, t in found])
                if path in out:  # rows under both spellings of the path: merged in row id order
                    merged = sorted([*zip(*out[path]), *zip(*cols)])
                    cols = ([r for r, _, _ in merged], [q for _, q, _ in merged], [t for _, _, t in merged])
                out[path] = cols
        return out

    def tag_rows(self, paths: Sequence[str] | None = None) -> list[tuple[int, str]]:
        select = (
            "SELECT i.rowid, t.value FROM items i JOIN files f ON f.id = i.file_id, "
            "json_each(i.tags) AS t WHERE i.tags IS NOT NULL AND "
        )
        if paths is None:
            return [(r, str(t)) for r, t in self.db.execute(select + "1")]
        out: list[tuple[int, str]] = []
        for marks, chunk in _in_chunks(dict.fromkeys(paths)):
            for where in _PATH_WHERE:
                out.extend((r, str(t)) for r, t in self.db.execute(select + where.format(marks), chunk))
        return out

    # -- keyword search ------------------------------------------------------------

    def keyword_search(
        self, terms: Sequence[KeywordTerm], limit: int, files_only: bool = False,
        within: Collection[int] | None = None,
    ) -> list[tuple[int, float]]:
        """BM25 over name, path and body; returns (rowid, score) with higher = better.

        files_only: rank whole files (module rows) instead of symbols.
        within:     only these rows: read in score order until ``limit`` of them are found.
        """
        query = _ranked_query(terms, files_only)
        if query is None:
            return []
        sql, params = query
        if within is not None:
            scope = within if isinstance(within, (set, frozenset, dict)) else set(within)
            found: list[tuple[int, float]] = []
            cursor = self.db.execute(sql, params)
            try:
                for rowid, score in cursor:
                    if rowid in scope:
                        found.append((rowid, -score))
                        if len(found) >= limit:
                            break
            finally:
                cursor.close()
            return found
        return self._remembered(("top", sql, *params, limit), lambda: (
            [(r, -s) for r, s in self.db.execute(sql + " LIMIT ?", (*params, limit)).fetchall()],
        ))[0]

    def keyword_search_with_files(
        self, terms: Sequence[KeywordTerm], limit: int, is_file_row: Callable[[int], bool]
    ) -> tuple[list[tuple[int, float]], list[tuple[int, float]]]:
        query = _ranked_query(terms, files_only=False)
        if query is None:
            return [], []
        sql, params = query

        files_query = _ranked_query(terms, files_only=True)
        assert files_query is not None  # the same terms as ``query``

        def both() -> tuple[list[tuple[int, float]], list[tuple[int, float]]]:
            # Two ranked queries, each cut at ``limit`` by SQLite: the file rows are those
            # whose full-text kind is ``file`` (``_fts_kind``, the rows ``is_file_row``
            # names), and that column weighs 0 in bm25, so their scores and order are the
            # ones a walk of every match would give. That walk read up to 17,000 rows in
            # Python on the hub vault (about 0.1 s), again after every write.
            items = [(r, -s) for r, s in self.db.execute(sql + " LIMIT ?", (*params, limit))]
            files = [(r, -s) for r, s in self.db.execute(files_query[0] + " LIMIT ?", (*files_query[1], limit))]
            return items, files

        items, files = self._remembered(("both", sql, *params, limit), both)
        return items, files

    def _remembered(self, key: tuple, compute: Callable[[], tuple[list, ...]]) -> tuple[list, ...]:
        """``compute()``, a tuple of lists, answered from the per-generation cache when it
        was asked before (as copies: callers may edit them). A query FTS5 rejects finds
        nothing."""
        # Remembered only from reader connections: they see committed rows, so an answer
        # belongs to the generation read before it (or a newer one, which is what the
        # next reader would see anyway). The writer's own reads may be rolled back.
        remember = self._writer != threading.get_ident()
        if remember:
            generation = self.generation()
            with self._searches_lock:
                hit = self._searches.get(key)
                if hit is not None and hit[0] == generation:
                    self._searches.move_to_end(key)
                    return tuple(list(part) for part in hit[1])
        try:
            found = compute()
        except sqlite3.OperationalError:
            return ([],) * (2 if key[0] == "both" else 1)
        pairs = sum(map(len, found))
        if remember and pairs <= _SEARCH_PAIRS_KEPT // 4:
            with self._searches_lock:
                old = self._searches.pop(key, None)
                if old is not None:
                    self._search_pairs -= old[2]
                if self._searches and next(reversed(self._searches.values()))[0] < generation:
                    # The index changed: answers of older generations are never used
                    # again (a writing agent changes it every few seconds).
                    for stale in [k for k, v in self._searches.items() if v[0] < generation]:
                        self._search_pairs -= self._searches.pop(stale)[2]
                self._searches[key] = (generation, tuple(list(part) for part in found), pairs)
                self._search_pairs += pairs
                while self._search_pairs > _SEARCH_PAIRS_KEPT:
                    self._search_pairs -= self._searches.popitem(last=False)[1][2]
        return found

    def doc_freqs(self, terms: Sequence[str]) -> dict[str, int]:
        out: dict[str, int] = {}
        for marks, chunk in _in_chunks(dict.fromkeys(terms)):
            out.update(
                self.db.execute(
                    f"SELECT term, doc FROM items_fts_vocab WHERE term IN ({marks})", chunk
                ).fetchall()
            )
        return out

    def terms_with_prefix(self, prefix: str, limit: int = 64) -> dict[str, int]:
        if not prefix:
            return {}
        # A term range, which fts5vocab answers from the index without a full scan.
        upper = prefix[:-1] + chr(ord(prefix[-1]) + 1)
        return dict(
            self.db.execute(
                "SELECT term, doc FROM items_fts_vocab WHERE term >= ? AND term < ? LIMIT ?",
                (prefix, upper, limit),
            ).fetchall()
        )

    # -- edges -------------------------------------------------------------------

    def _edges_where(self, where: str, order: str, values: Sequence[str], by_key: bool,
                     kinds: Sequence[str] | None = None) -> list[EdgeRow]:
        # Ordered as an index on the id would return them (by id, then insertion), which
        # the graph walk relies on when it keeps the first few edges of a node.
        out: list[EdgeRow] = []
        only = f" AND e.kind IN ({','.join('?' * len(kinds))})" if kinds else ""
        for marks, chunk in _in_chunks(values):
            params = [_id_key(v) for v in chunk] + chunk if by_key else chunk
            rows = self.db.execute(
                f"{_EDGE_SELECT} WHERE ({where.format(marks=marks)}){only} ORDER BY {order}, e.rowid",
                [*params, *(kinds or ())],
            )
            if by_key:
                wanted = set(chunk)
                column = 0 if order == "src_key" else 2
                out.extend(EdgeRow(*r) for r in rows if r[column] in wanted)
            else:
                out.extend(EdgeRow(*r) for r in rows)
        return out

    def edges_from(self, ids: Sequence[str], kinds: Sequence[str] | None = None) -> list[EdgeRow]:
        return self._edges_where(
            "e.src IN (SELECT rowid FROM items WHERE id_key IN ({marks})) OR e.src_id IN ({marks})",
            "src_key", ids, by_key=True, kinds=kinds,
        )

    def edges_to(self, ids: Sequence[str], names: Sequence[str]) -> list[EdgeRow]:
        return self._edges_where(
            "e.dst IN (SELECT rowid FROM items WHERE id_key IN ({marks})) OR e.dst_id IN ({marks})",
            "dst_key", ids, by_key=True,
        ) + self._edges_where("e.dst_name IN ({marks})", "e.dst_name", names, by_key=False)

    def all_edges(self) -> list[EdgeRow]:
        return [EdgeRow(*r) for r in self.db.execute(f"{_EDGE_SELECT} ORDER BY e.rowid")]

    def _links_by_key(self, name: str) -> tuple[list[str], list[tuple[str, str]]]:
        paths = [r[0] for r in self.db.execute(f"SELECT path FROM files WHERE {FILE_NAME_KEY} = ?", (name,))]
        links = self.db.execute(
            "SELECT f.path, e.dst_name FROM edges e JOIN files f ON f.id = e.file_id "
            f"WHERE e.kind = 'links_to' AND e.dst_name IS NOT NULL AND {LINK_NAME_KEY} = ?", (name,)
        ).fetchall()
        return paths, links

    def _links_like(
        self, file_patterns: list[str], link_patterns: list[str]
    ) -> tuple[list[str], list[tuple[str, str]]]:
        def any_of(column: str, patterns: list[str]) -> str:
            return " OR ".join(f"{column} LIKE ? ESCAPE '\\'" for _ in patterns)

        paths = [r[0] for r in self.db.execute(
            f"SELECT path FROM files WHERE {any_of('path', file_patterns)}", file_patterns
        )]
        links = self.db.execute(
            "SELECT f.path, e.dst_name FROM edges e JOIN files f ON f.id = e.file_id "
            f"WHERE e.kind = 'links_to' AND ({any_of('e.dst_name', link_patterns)})", link_patterns,
        ).fetchall()
        return paths, links

    # -- vectors: an item's vector is the cache row for (model, its content hash) ---

    def items_missing_vectors(self, model: str) -> list[tuple[int, str]]:
        """(rowid, content_hash) of items that have no vector for ``model``."""
        return self.db.execute(
            "SELECT i.rowid, i.content_hash FROM items i WHERE NOT EXISTS ("
            "SELECT 1 FROM embedding_cache c WHERE c.model = ? AND c.hash = i.content_hash)",
            (model,),
        ).fetchall()

    def _content_hashes(self, rowids: list[int]) -> dict[int, str]:
        hashes: dict[int, str] = {}
        for marks, chunk in _in_chunks(rowids):
            hashes.update(
                self.db.execute(
                    f"SELECT rowid, content_hash FROM items WHERE rowid IN ({marks})", chunk
                ).fetchall()
            )
        return hashes

    def _vector_rows(self, model: str) -> list[tuple[int, bytes]]:
        return self.db.execute(
            "SELECT i.rowid, c.vec FROM items i JOIN embedding_cache c "
            "ON c.model = ? AND c.hash = i.content_hash ORDER BY i.rowid",
            (model,),
        ).fetchall()

    @staticmethod
    def _matrix(vectors: list[bytes]) -> np.ndarray:
        import numpy as np

        # One buffer: a row-by-row frombuffer and stack is several times slower.
        return np.frombuffer(b"".join(vectors), dtype=np.float32).reshape(len(vectors), -1)

    # -- the mapped vector file beside the index (store/vector_file.py) ----------------

    def _vector_state(self) -> vector_file.State:
        """What the saved vector files are checked against, read on this connection."""
        meta = dict(self.db.execute(
            "SELECT key, value FROM meta WHERE key IN ('index_id', 'generation', 'vector_generation', ?)",
            (_VECTORS_CLEARED,),
        ).fetchall())
        return (meta.get("index_id") or "", int(meta.get("generation") or 0),
                int(meta.get("vector_generation") or 0), int(meta.get(_VECTORS_CLEARED) or 0))

    @contextmanager
    def _one_snapshot(self) -> Iterator[sqlite3.Connection]:
        """This read's connection in one read transaction (when not already in one), so
        the state read first labels exactly the rows read after it."""
        conn = self.db
        own = not conn.in_transaction
        if own:
            conn.execute("BEGIN")
        try:
            yield conn
        finally:
            if own and conn.in_transaction:
                conn.execute("COMMIT")

    def load_vectors(self, model: str) -> tuple[np.ndarray, np.ndarray]:
        """(rowids, matrix) as ``StoreBase.load_vectors`` reads them, from the mapped
        vector file when it reflects this state of the index (read-only arrays), else
        read (or patched from an older file) and saved for the next process."""
        import numpy as np

        path = vector_file.vectors_path(self.path)
        with self._one_snapshot():
            state = self._vector_state()
            saved = vector_file.read(path, model)
            if saved is not None and saved.state == state:
                return saved.rowids, saved.matrix
            rows = self.db.execute("SELECT rowid, content_hash FROM items ORDER BY rowid").fetchall()
            made = None
            if saved is not None and saved.state[0] == state[0] and saved.state[3] == state[3]:
                made = vector_file.patch(saved, rows, lambda hashes: self.cached_vectors(model, hashes))
            if made is None:
                rowids, matrix = super().load_vectors(model)
                hashes = dict(rows)
                keys = np.fromiter((vector_file.content_key(hashes.get(int(r), "")) for r in rowids.tolist()),
                                   dtype=np.int64, count=len(rowids))
            else:
                rowids, keys, matrix = made
        if self.unwritable is None:
            try:
                vector_file.write(path, state, model, rowids, keys, matrix)
            except OSError:  # a read-only folder or a full disk: read from SQLite next time
                pass
        return rowids, matrix

    def mapped_vectors(self, model: str) -> tuple[memoryview[Any], memoryview[Any]] | None:
        """(row ids, n x dim rows) as memoryviews of the saved vector file when it reflects
        this state of the index (no numpy: a one-question process searches them in
        place); None when it does not (``load_vectors`` reads, patches and saves it)."""
        with self._one_snapshot():
            state = self._vector_state()
            saved = vector_file.read(vector_file.vectors_path(self.path), model)
        if saved is None or saved.state != state:
            return None
        return saved.views()

    def _vector_counts(self) -> dict[str, int]:
        with self._one_snapshot():
            state = self._vector_state()
            counts = vector_file.read_counts(self.path, state)
            if counts is None:
                counts = self._count_vectors()
                if self.unwritable is None:
                    vector_file.write_counts(self.path, state, counts)
        return counts

    def _count_vectors(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for (model,) in self.db.execute("SELECT DISTINCT model FROM embedding_cache").fetchall():
            n = self.db.execute(
                "SELECT COUNT(*) FROM items i JOIN embedding_cache c "
                "ON c.model = ? AND c.hash = i.content_hash",
                (model,),
            ).fetchone()[0]
            if n:
                out[model] = n
        return out

    def vectors_for(self, model: str, rowids: Sequence[int]) -> dict[int, np.ndarray]:
        import numpy as np

        wanted = list(dict.fromkeys(int(r) for r in rowids))
        out: dict[int, np.ndarray] = {}
        for marks, chunk in _in_chunks(wanted):
            for rowid, vec in self.db.execute(
                "SELECT i.rowid, c.vec FROM items i JOIN embedding_cache c "
                f"ON c.model = ? AND c.hash = i.content_hash WHERE i.rowid IN ({marks})",
                (model, *chunk),
            ):
                out[int(rowid)] = np.frombuffer(vec, dtype=np.float32).copy()
        return out

    # -- embedding cache -------------------------------------------------------------

    def cached_vectors(self, model: str, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        import numpy as np

        found: dict[str, np.ndarray] = {}
        for marks, chunk in _in_chunks(hashes):
            for h, dim, blob in self.db.execute(
                f"SELECT hash, dim, vec FROM embedding_cache WHERE model = ? AND hash IN ({marks})",
                (model, *chunk),
            ):
                # A truncated or foreign blob is treated as absent and rewritten.
                if dim and blob is not None and len(blob) == 4 * dim:
                    found[h] = np.frombuffer(blob, dtype=np.float32)
        return found

    def _put_cache_rows(self, model: str, rows: Sequence[tuple[str, np.ndarray]]) -> None:
        import numpy as np

        self.db.executemany(
            "INSERT OR REPLACE INTO embedding_cache(model, hash, dim, vec) VALUES (?, ?, ?, ?)",
            [
                (model, h, int(v.shape[0]), np.ascontiguousarray(v, dtype=np.float32).tobytes())
                for h, v in rows
            ],
        )

    def _delete_cached_vectors(self, model: str | None) -> int:
        # Counted, so a saved vector file is never patched across a clearing (it would
        # keep vectors the cache no longer has).
        self._increment(_VECTORS_CLEARED)
        if model is None:
            return self.db.execute("DELETE FROM embedding_cache").rowcount
        return self.db.execute("DELETE FROM embedding_cache WHERE model = ?", (model,)).rowcount

    # -- export ------------------------------------------------------------------------

    def _file_paths(self) -> list[str]:
        return [r[0] for r in self.db.execute("SELECT path FROM files ORDER BY path")]

    def _file_record(self, path: str) -> FileRecord | None:
        """The file's row, items (with the full-text values they were indexed with) and
        edges."""
        row = self.db.execute(
            "SELECT id, path, mtime_ns, size, hash, language, source, module, warnings, data "
            "FROM files WHERE path = ?", (path,),
        ).fetchone()
        if row is None:
            return None
        file_id, path, mtime_ns, size, hash_, language, source, module, warnings, blob = row
        text = FileData.unpack(blob)
        stored = self._read_items("i.file_id = ?", (file_id,), "ORDER BY i.rowid")
        fts = {
            rowid: (_fts_body_of(text.slice(at, n), mode, extra), qualname if name is None else name)
            for rowid, qualname, at, n, mode, extra, name in self.db.execute(
                "SELECT rowid, qualname, text_at, text_len, fts_mode, fts_extra, fts_name "
                "FROM items WHERE file_id = ?", (file_id,),
            )
        }
        items = [(si.item, si.fqname, si.sig_tokens, si.content_hash, *fts[si.rowid]) for si in stored]
        edges = [
            Edge(src, kind, dst=dst, dst_name=dst_name)
            # A file's edges as _delete_file_rows finds them, through indexes: edges has no
            # index on file_id alone, and a scan per file made copying a vault quadratic.
            for src, kind, dst, dst_name in self.db.execute(
                f"{_EDGE_SELECT} WHERE (e.src IN (SELECT rowid FROM items WHERE file_id = ?) "
                "OR (e.src IS NULL AND e.file_id = ?)) ORDER BY e.rowid", (file_id, file_id),
            )
        ]
        return FileRecord(path, mtime_ns, size, hash_, language, source, module,
                          json.loads(warnings), items, edges)


def _id_key(item_id: str) -> int:
    """The 64-bit key an item is found by: its id's full text is mostly derivable and
    left out of the row, and an index on this key is a tenth of an index on the text."""
    digest = blake2b(item_id.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def _id_mode(item_id: str, path: str, qualname: str) -> int:
    """How an item's id follows from its path and qualified name (0: it does not)."""
    if item_id == path:
        return 1
    if item_id == f"{path}#{qualname}":
        return 2
    if item_id == f"{path}::{qualname}":
        return 3
    return 0


def _fq_mode(fqname: str, module: str, qualname: str) -> int:
    """How ``fqname`` follows from the module and qualified name (0: it does not)."""
    if module and qualname and fqname == f"{module}.{qualname}":
        return 1
    if module and qualname and fqname == f"{module}#{qualname}":
        return 2
    if fqname == module:
        return 3
    if fqname == qualname:
        return 4
    return 0


def _fqname(mode: int, stored: str | None, module: str, qualname: str) -> str:
    if mode == 1:
        return f"{module}.{qualname}"
    if mode == 2:
        return f"{module}#{qualname}"
    if mode == 3:
        return module
    if mode == 4:
        return qualname
    return stored or ""


def _enable_wal(db: sqlite3.Connection, wait: float = 30.0) -> None:
    """Switch a new file to WAL. The switch needs an exclusive lock and SQLite does not
    wait for it (no busy handler) when another process is creating the same index, so
    retry until that process is done; an index already in WAL mode needs nothing."""
    deadline = time.monotonic() + wait
    while True:
        try:
            if db.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                db.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.02)


def _quote(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def _match_expression(terms: Sequence[KeywordTerm]) -> str:
    """FTS5 MATCH syntax for OR-ed terms (weights aside). Only the text columns are
    searched: the kind column exists for filtering."""
    clauses = [_quote(text) for text, _weight in terms if text]
    if not clauses:
        return ""
    return "{name path body} : (" + " OR ".join(clauses) + ")"


def _ranked_query(terms: Sequence[KeywordTerm], files_only: bool) -> tuple[str, list[str]] | None:
    """SQL listing (rowid, score) of the rows matching any of ``terms``, best first
    (lowest score, as SQLite's bm25() is negative), and its parameters.

    BM25 sums a score per OR-ed phrase, each with its own idf, over the same row length,
    so a term counted ``weight`` times scores ``weight`` times the query of it alone:
    one MATCH per weight, summed, ranks exactly as repeating each term would, while
    FTS5 reads each term's postings once instead of ``weight`` times (2-4x faster on long
    bug reports, bench/code_context.py)."""
    by_weight: dict[int, list[KeywordTerm]] = {}
    for term in terms:
        if term.text:
            by_weight.setdefault(max(1, term.weight), []).append(term)
    if not by_weight:
        return None
    parts, params = [], []
    for weight, group in sorted(by_weight.items()):
        match = _match_expression(group)
        params.append(f"({match}) AND kind:file" if files_only else match)
        scaled = f"{weight} * {_BM25}" if weight > 1 else _BM25
        parts.append(f"SELECT rowid AS r, {scaled} AS s FROM items_fts WHERE items_fts MATCH ?")
    if len(parts) == 1:
        return parts[0] + " ORDER BY s, r", params
    return "SELECT r, sum(s) AS s FROM (" + " UNION ALL ".join(parts) + ") GROUP BY r ORDER BY s, r", params


def _fts_recipe(text: str, body: str) -> tuple[int, bytes | None]:
    """How to rebuild ``body`` from the item's text later (see the ``items`` columns)."""
    if body == text:
        return 0, None
    if len(body) > len(text) and body.startswith(text) and body[len(text)] == "\n":
        return 1, body[len(text) + 1 :].encode("utf-8", "surrogatepass")
    return 2, zlib.compress(body.encode("utf-8", "surrogatepass"))


def _fts_body_of(text: str, mode: int, extra: bytes | None) -> str:
    if mode == 0:
        return text
    if mode == 1:
        return text + "\n" + (extra or b"").decode("utf-8", "surrogatepass")
    return zlib.decompress(extra or b"").decode("utf-8", "surrogatepass")


def _in_chunks(values: Iterable) -> Iterator[tuple[str, list]]:
    """``values`` in lists small enough to bind, each with its ``?`` placeholders."""
    seq = list(values)
    for i in range(0, len(seq), _CHUNK):
        chunk = seq[i : i + _CHUNK]
        yield ",".join("?" * len(chunk)), chunk


_UNWRITABLE = ("readonly", "read-only", "unable to open", "permission denied")


def translate_error(exc: sqlite3.Error, path: Path) -> Exception:
    """The typed error a user can act on for an SQLite failure, or ``exc`` itself."""
    text = str(exc)
    if is_disk_full(exc):  # not damage: the failed write was rolled back
        return disk_full(path.parent, index=path)
    if isinstance(exc, sqlite3.OperationalError):
        if any(word in text.lower() for word in _UNWRITABLE):
            return IndexUnwritable(
                f"the index {path} cannot be written ({text}): its folder is read-only for this "
                f"user; make {path.parent} writable, or index a writable copy of the folder"
            )
        return exc
    if type(exc) is sqlite3.DatabaseError:  # malformed pages, "file is not a database"
        return IndexDamaged(
            f"the index {path} is damaged ({text}); run `smartcontext index` on the folder to rebuild "
            f"it (or `smartcontext index --rebuild`)"
        )
    return exc


def _file_stamp(path: Path) -> str | None:
    """Inode, size and modification time of the index file, or None while its
    write-ahead log holds changes (they are not in the file yet)."""
    try:
        wal = path.with_name(path.name + "-wal").stat().st_size
    except FileNotFoundError:
        wal = 0
    except OSError:
        return None
    if wal:
        return None
    try:
        st = path.stat()
    except OSError:
        return None
    return f"{st.st_ino} {st.st_size} {st.st_mtime_ns}"


def _damage_marker(path: Path) -> Path:
    return path.with_name(path.name + ".damaged")


def _guarded(method, reads: bool = False):
    @functools.wraps(method)
    def call(self, *args, **kwargs):
        try:
            if reads:
                with self._read():
                    return method(self, *args, **kwargs)
            return method(self, *args, **kwargs)
        except sqlite3.Error as exc:
            typed = translate_error(exc, self.path)
            if self.unwritable is not None and isinstance(typed, IndexUnwritable):
                raise self.unwritable from exc  # the reason it was opened for reading only
            if typed is exc:
                raise
            if isinstance(typed, IndexDamaged):
                try:  # so the next `index` knows to rebuild, even if its own reads look fine
                    _damage_marker(self.path).write_text(str(exc), encoding="utf-8")
                except OSError:
                    pass
            raise typed from exc

    return call


# Every query method answers typed errors: a damaged page or a read-only folder found
# mid-query is one sentence for the user, never an sqlite3 traceback.
# Methods that only read run on a reader connection of their own (see ``_read``).
_READS = {
    "generation", "get_meta", "file_states", "changed_paths", "items_by_rowids", "items_by_ids",
    "items_in_paths", "item_light_rows", "item_count", "counts", "kind_counts", "file_warnings",
    "tag_rows", "keyword_search", "keyword_search_with_files", "doc_freqs", "terms_with_prefix", "edges_from", "edges_to",
    "item_sizes", "item_size_columns", "all_edges", "links_ending", "items_missing_vectors", "load_vectors", "mapped_vectors", "vector_models", "nearest", "cached_vectors",
}
# The shared methods (store/shared.py) are wrapped too: they run the primitives here.
for _name in dir(SQLiteStore):
    _method = getattr(SQLiteStore, _name)
    if (callable(_method) and not _name.startswith("_")
            and _name not in ("transaction", "batch", "close", "check", "prepare_file", "db")):
        setattr(SQLiteStore, _name, _guarded(_method, reads=_name in _READS))
