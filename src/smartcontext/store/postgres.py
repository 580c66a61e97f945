"""The PostgreSQL store: one index shared by a team, with pgvector and full-text search.

``open_store("postgresql://user@host/db", workspace="shop")`` keeps the workspace's rows in
the schema ``sc_shop``, so many workspaces share one database without collisions; the
embedding cache is one table in the schema ``smartcontext`` that every workspace reads,
keyed by model and content hash.

Concurrency: psycopg 3 with a connection pool; readers never wait (MVCC). Every write is
one transaction that first takes a transaction-level advisory lock of its workspace, so
several indexers at once serialise their commits the way SQLite's ``BEGIN IMMEDIATE`` does:
a file's rows are replaced whole (delete and insert in one transaction), never lost or
doubled, and no two writers can deadlock on each other's rows.

Keyword search: FTS5's BM25 with the SQLite store's weights, from statistics kept in the
same transaction as the items (``fts_terms``: document counts; ``fts_postings``: per term
and item the weighted frequency, the item's length and the term's positions; ``fts_stats``:
rows and tokens), tokenized by SQLite's own unicode61 (``store/bm25.py``), and scored in one
statement: both stores give the same scores for the same index.
"""

from __future__ import annotations

import bisect
import functools
import importlib.util
import json
import logging
import re
import threading
import weakref
import zlib
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from itertools import repeat
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from typing import TYPE_CHECKING, Any, cast

from ..errors import StoreUnavailable
from ..model import Edge
from .base import (
    CatalogueRow, EdgeRow, FileRecord, FileState, ItemRow, KeywordTerm, SnapshotMoved, StoredItem, exact_nearest,
)
from .pg_import import import_psycopg
from ..words import fts_text
from . import bm25
from .shared import FileTexts, StoreBase, item_from_row
from .text import JSON, FileData

if TYPE_CHECKING:  # numpy and pgvector only where vectors are handled (see _vectors)
    import numpy as np
    from psycopg_pool import ConnectionPool

try:  # the optional ``postgres`` extra (psycopg_pool is imported where a pool starts)
    import_psycopg()  # first: psycopg without the parts a question does not use
    import psycopg
    from psycopg import sql

    for _name in ("psycopg_pool", "pgvector"):
        if importlib.util.find_spec(_name) is None:
            raise ImportError(f"No module named {_name!r}")
except ImportError as _exc:  # pragma: no cover - exercised only without the extra
    psycopg = None  # type: ignore[assignment]
    _IMPORT_ERROR: ImportError | None = _exc
else:
    _IMPORT_ERROR = None

from .pg_schema import CORE, EMBEDDINGS, FILE_NAME_KEY, LINK_NAME_KEY, SHARED_SCHEMA  # noqa: E402

# A snapshot's start: its transaction, then the index's state (the meta rows) in it.
_BEGIN = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"
_STATE = "SELECT key, value FROM meta"

if psycopg is not None:

    class _Connection(psycopg.Connection):
        """A connection whose snapshot may be begun with its first statement: while
        ``assumed`` is set (``PostgresStore.snapshot(assume_state=True)``), the first
        statement goes in one round trip after BEGIN and the read of the state, and
        ``assumed`` checks that state (raising ``SnapshotMoved`` when it moved)."""

        assumed: "Callable[[list[tuple]], None] | None" = None

        def queue_begin(self) -> "Callable[[], None] | None":
            """In an open pipeline: queue the pending BEGIN and state read; returns what
            checks the state once the pipeline's results are in (None: nothing pending)."""
            check, self.assumed = self.assumed, None
            if check is None:
                return None
            super().execute(_BEGIN)
            state = super().execute(_STATE)
            return lambda: check(state.fetchall())

        def begin_now(self) -> None:
            if self.assumed is not None:
                with self.pipeline():
                    checked = self.queue_begin()
                assert checked is not None
                checked()

        def execute(self, query, params=None, *, prepare=None, binary=False):
            if self.assumed is None:
                return super().execute(query, params, prepare=prepare, binary=binary)
            with self.pipeline():
                checked = self.queue_begin()
                cur = super().execute(query, params, prepare=prepare, binary=binary)
            assert checked is not None
            checked()
            return cur

        def cursor(self, *args, **kwargs):
            self.begin_now()
            return super().cursor(*args, **kwargs)

        def transaction(self, *args, **kwargs):
            self.begin_now()
            return super().transaction(*args, **kwargs)
else:  # pragma: no cover - without the extra
    _Connection = None  # type: ignore[misc]


# Connections whose pgvector types are registered.
_WITH_VECTORS: "weakref.WeakSet[psycopg.Connection]" = weakref.WeakSet()


def _vectors(conn: "psycopg.Connection") -> "psycopg.Connection":
    """``conn``, with pgvector's types registered the first time it handles vectors:
    pgvector imports numpy, and a keyword-only process (most CLI questions) never needs
    either (0.4 s of its start)."""
    if conn not in _WITH_VECTORS:
        from pgvector.psycopg import register_vector

        register_vector(conn)
        _WITH_VECTORS.add(conn)
    return conn

log = logging.getLogger("smartcontext.store")

# Bootstrap (extension, schemas, migrations) of one database is serialised by this
# session-level advisory lock; 0x5C000001 is "SC" and a version.
_BOOTSTRAP_LOCK = 0x5C000001
# pgvector's HNSW indexes vectors of at most 2000 dimensions.
_HNSW_MAX_DIM = 2000
# A filtered semantic search over at most this many items (a folder, a tag) reads their
# vectors and ranks them exactly: cheaper than an HNSW scan that skips everything else.
EXACT_AMONG = 5000
_SCHEMA_PREFIX = "sc_"
# Writes of at least this many vectors go through COPY (one round trip) rather than
# executemany.
_COPY_ROWS = 200
# Files a batch queues before writing them together (``replace_file``).
_PENDING_FILES = 64
# A read names the files whose text this process holds decoded, so the server sends the
# others' with the rows; past this many it asks for them in a second statement.
_CACHED_IDS_SENT = 20_000


# A model with at most this many vectors in the workspace is searched exactly over an
# in-memory matrix (150 MB at 384 dimensions), past it through HNSW (``searches_vectors``).
IN_MEMORY_VECTORS = 100_000
# HNSW candidates per question: at least EF_SEARCH, and EF_PER_RESULT per result asked
# (pgvector's default is 40; see ef_search()). On 120,000 clustered vectors (past
# IN_MEMORY_VECTORS), recall@10 for questions near a stored vector was 0.96 at 100, 0.98
# at 200 and 0.995 at 400, for new points of the same clusters 0.998 at each, with p50
# 17-25 ms at all three (docs/scale-out.md).
EF_SEARCH = 200
EF_PER_RESULT = 4
# The graph's build parameters (pgvector's defaults are 16 and 64).
HNSW_M = 16
HNSW_EF_CONSTRUCTION = 64
# Random directions whose best graph match sets the line under which a question is searched
# exactly (``PostgresStore._far_line``).
FAR_PROBES = 16
FAR_SEED = 20261127


def ef_search(limit: int) -> int:
    """``hnsw.ef_search`` for a question asking for ``limit`` results: the size of the
    candidate list the graph walk keeps, whose distances are exact (recall, not order,
    is what it buys)."""
    return max(EF_SEARCH, min(1000, EF_PER_RESULT * limit))


def is_postgres_url(location: str) -> bool:
    return location.split("://", 1)[0].lower() in ("postgresql", "postgres")


def schema_name(workspace: str) -> str:
    """The schema a workspace's tables live in: ``sc_`` and the name in lower case
    letters, digits and ``_``; a name that had to change gets a short hash so two names
    never share a schema."""
    clean = re.sub(r"[^a-z0-9_]+", "_", workspace.lower()).strip("_") or "workspace"
    if clean != workspace:
        clean = f"{clean[:40]}_{zlib.crc32(workspace.encode()):08x}"
    return (_SCHEMA_PREFIX + clean)[:63]


def split_url(url: str) -> tuple[str, str | None]:
    """(connection URL, workspace) from ``postgresql://...?workspace=name``; the
    ``workspace`` parameter is ours, not libpq's, so it is taken out."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    workspace = next((v for k, v in query if k == "workspace"), None)
    rest = urlencode([(k, v) for k, v in query if k != "workspace"])
    return urlunsplit(parts._replace(query=rest)), workspace


def redact(url: str) -> str:
    """The URL without its password, for messages."""
    parts = urlsplit(url)
    if parts.password:
        netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
        parts = parts._replace(netloc=netloc)
    return urlunsplit(parts)


# BM25 in SQL, with FTS5's order of operations (see store/bm25.py); float8 throughout.
_IDF = (
    "CASE WHEN ln((st.n - {d} + 0.5::float8) / ({d} + 0.5::float8)) > 0 "
    "THEN ln((st.n - {d} + 0.5::float8) / ({d} + 0.5::float8)) ELSE %s::float8 END" % bm25.IDF_FLOOR
)
_TF = (
    f"({{f}} * ({bm25.K1}::float8 + 1.0::float8)) / ({{f}} + {bm25.K1}::float8 * "
    f"(1::float8 - {bm25.B}::float8 + {bm25.B}::float8 * {{dl}} / st.avgdl))"
)
_COLUMN_WEIGHTS = "ARRAY[" + ", ".join(f"{w}::float8" for w in bm25.WEIGHTS) + "]"


def _hits_sql(query: "bm25.Query") -> tuple[str, list]:
    """``WITH ... hits(item, file_row, s)``: a score ``s`` for every (matching row,
    phrase of ``query``), and its parameters. Each phrase's n (rows holding it) is read
    from ``fts_terms`` for a single term and counted among the matches for a phrase."""
    singles = list(query.singles)
    tokens = sorted({t for ph in query.phrases for t in ph} | set(singles))
    params: list = [tokens]
    parts = []
    if singles:
        parts.append(
            "SELECT p.item, p.file_row, x.w * " + _IDF.format(d="qt.text_docs") + " * "
            + _TF.format(f="p.wtf::float8", dl="p.dl") + " AS s "
            "FROM unnest(%s::text[], %s::float8[]) AS x(term, w) JOIN qt ON qt.term = x.term "
            # Each term's postings through the primary key (term_id, item): OFFSET 0 keeps the
            # planner from joining the postings by a scan of all of them, which it chose
            # before the tables had statistics (a fresh index: 44 of 60 ms of a search).
            "CROSS JOIN LATERAL (SELECT item, file_row, wtf, dl FROM fts_postings "
            "WHERE term_id = qt.id AND wtf > 0 OFFSET 0) p CROSS JOIN st"
        )
        params += [singles, [query.singles[t] for t in singles]]
    for phrase, weight in query.phrases.items():
        joins = " ".join(
            f"JOIN fts_postings p{k} ON p{k}.item = p0.item AND p{k}.wtf > 0 "
            f"AND p{k}.term_id = (SELECT id FROM qt WHERE term = %s)"
            for k in range(1, len(phrase))
        )
        follows = " AND ".join(f"z + {k} = ANY(p{k}.pos)" for k in range(1, len(phrase)))
        parts.append(
            "SELECT item, file_row, %s::float8 * " + _IDF.format(d="hits_n") + " * "
            + _TF.format(f="f", dl="dl") + " AS s FROM ("
            "SELECT item, file_row, dl, f, count(*) OVER ()::float8 AS hits_n FROM ("
            f"SELECT p0.item, p0.file_row, p0.dl, (SELECT sum(({_COLUMN_WEIGHTS})[(z >> {bm25.OFFSET_BITS}) + 1]) "
            f"FROM unnest(p0.pos) AS z WHERE {follows}) AS f "
            f"FROM fts_postings p0 {joins} "
            "WHERE p0.wtf > 0 AND p0.term_id = (SELECT id FROM qt WHERE term = %s)"
            ") c WHERE f > 0) m CROSS JOIN st"
        )
        params += [weight, *phrase[1:], phrase[0]]
    sql_text = (
        "WITH st AS MATERIALIZED (SELECT rows::float8 AS n, tokens::float8 / greatest(rows, 1)::float8 AS avgdl "
        "FROM fts_stats), "
        "qt AS MATERIALIZED (SELECT id, term, text_docs FROM fts_terms WHERE term = ANY(%s::text[])), "
        "hits AS (" + " UNION ALL ".join(parts) + ")"
    )
    return sql_text, params


# An item row as _stored_items decodes it (then the file's stored form, or NULL).
_ITEM_COLUMNS = (
    "i.rowid, i.id, i.path, i.kind, i.name, i.qualname, i.fqname, i.start_line, i.end_line, "
    "i.parent_id, i.language, i.tokens, i.sig_tokens, i.content_hash, i.file_id, f.hash, "
    "i.details_at, i.details_len, i.text_at, i.text_len"
)
# The same columns of a lateral subquery ``x`` that selects them: its file's stored form is
# sent only where the CASE of ``_rank_with_items`` asks for it (``x.*`` sent it with every
# row, 10 KB a vault search).
_LATERAL_ITEM_COLUMNS = ", ".join("x." + c.split(".")[1] for c in _ITEM_COLUMNS.split(", "))
# A keyword search in a snapshot returns the rows of its best this many items with the
# ranking: the hits' rows and a note's aliases are read from them, not in statements of
# their own.
PREFETCH_ITEMS = 40


# The items with a vector, by model. Counted again after every write (a new item may have
# its text's vector in the shared cache already): one index probe per item, 40-100 ms for
# the hub vault's items on a busy machine, paid by a server's first question after each
# tool's write; an empty cache (a keyword-only database) skips the join.
_VECTORS_BY_MODEL = (
    "SELECT c.model, count(*) AS n FROM items i JOIN embedding_cache c ON c.hash = i.content_hash "
    "WHERE EXISTS (SELECT 1 FROM embedding_cache) GROUP BY c.model"
)


class _Counts:
    """Keyword statistics taken out by the open write's deletes and the rows and tokens
    it changed, applied to ``fts_terms`` and ``fts_stats`` once before it commits:
    updating a common term's row for every file of a batch left a chain of row versions
    that each later update walked (46 ms a file)."""

    def __init__(self, known: dict[str, int] | None = None) -> None:
        self.terms: dict[int, list[int]] = {}  # term id -> [docs, text_docs] deltas
        self.rows = 0
        self.tokens = 0
        # In a first load: the term ids its committed writes added, and this write's
        # (``_copy_postings``; kept once it commits, forgotten if it rolls back).
        self.known = known
        self.added: dict[str, int] = {}

    def add(self, term_id: int, docs: int, text_docs: int) -> None:
        entry = self.terms.get(term_id)
        if entry is None:
            self.terms[term_id] = [docs, text_docs]
        else:
            entry[0] += docs
            entry[1] += text_docs

    def flush(self, conn: "psycopg.Connection") -> None:
        changed = sorted((t, d) for t, d in self.terms.items() if d[0] or d[1])
        terms = (
            "UPDATE fts_terms t SET docs = t.docs + d.docs, text_docs = t.text_docs + d.text_docs "
            "FROM unnest(%s::integer[], %s::integer[], %s::integer[]) AS d(id, docs, text_docs) "
            "WHERE t.id = d.id"
        )
        # As text: psycopg adapts a list element by element in Python, and a first load's
        # batch changes the counts of thousands of terms.
        term_params = tuple("{" + ",".join(map(str, column)) + "}" for column in (
            [t for t, _ in changed], [d[0] for _, d in changed], [d[1] for _, d in changed]))
        stats = "UPDATE fts_stats SET rows = rows + %s, tokens = tokens + %s"
        if changed and (self.rows or self.tokens):  # one round trip inside the write lock, not two
            conn.execute(f"WITH terms AS ({terms}) {stats}", (*term_params, self.rows, self.tokens))
        elif changed:
            conn.execute(terms, term_params)
        elif self.rows or self.tokens:
            conn.execute(stats, (self.rows, self.tokens))
        self.terms, self.rows, self.tokens = {}, 0, 0


def _delete_keywords(conn: "psycopg.Connection", paths: list[str], counts: _Counts) -> None:
    """Take the items of the files at ``paths`` out of the keyword statistics (before the
    files' rows go)."""
    rows = conn.execute(
        "WITH gone AS (DELETE FROM fts_postings p USING items i JOIN files f ON f.id = i.file_id "
        "WHERE f.path = ANY(%s) AND p.item = i.rowid RETURNING p.term_id, p.wtf) "
        "SELECT term_id, count(*), count(*) FILTER (WHERE wtf > 0) FROM gone GROUP BY term_id "
        "UNION ALL SELECT -1, count(*), coalesce(sum(i.fts_len), 0) FROM items i JOIN files f "
        "ON f.id = i.file_id WHERE f.path = ANY(%s)",
        (paths, paths),
    ).fetchall()
    for term_id, n, nt in rows:
        if term_id == -1:
            counts.rows -= n
            counts.tokens -= nt
        else:
            counts.add(term_id, -n, -nt)


# An index run writing at least this many files into an empty workspace builds some
# indexes once at its end (``PostgresStore.first_load``).
FIRST_LOAD_FILES = 100
# What it builds then, as the migrations create it: (name, statement that builds it,
# statement that drops it). The postings' two B-trees, the edges' lookups, and the
# foreign keys of items and edges to their file (checked row by row they were most of the
# server's time for the edges; one query checks them at the end). Not the items' indexes
# nor the edges' by file: a write finds a file's rows by them.
_LOAD_INDEXES = (
    # (the primary key's index first, then the key: the index's build holds no lock that
    # keeps the other builds waiting)
    ("fts_postings_pkey", "CREATE UNIQUE INDEX fts_postings_pkey ON fts_postings (term_id, item); "
     "ALTER TABLE fts_postings ADD CONSTRAINT fts_postings_pkey PRIMARY KEY USING INDEX fts_postings_pkey",
     "ALTER TABLE fts_postings DROP CONSTRAINT fts_postings_pkey"),
    ("fts_postings_item", "CREATE INDEX fts_postings_item ON fts_postings (item)", "DROP INDEX fts_postings_item"),
    ("edges_src", "CREATE INDEX edges_src ON edges (src)", "DROP INDEX edges_src"),
    ("edges_dst", "CREATE INDEX edges_dst ON edges (dst) WHERE dst IS NOT NULL", "DROP INDEX edges_dst"),
    ("edges_dst_name", "CREATE INDEX edges_dst_name ON edges (dst_name) WHERE dst_name IS NOT NULL",
     "DROP INDEX edges_dst_name"),
    ("edges_link_name_key", f"CREATE INDEX edges_link_name_key ON edges (({LINK_NAME_KEY})) WHERE kind = 'links_to'",
     "DROP INDEX edges_link_name_key"),
    ("items_file_id_fkey", "ALTER TABLE items ADD CONSTRAINT items_file_id_fkey FOREIGN KEY (file_id) "
     "REFERENCES files(id) ON DELETE CASCADE", "ALTER TABLE items DROP CONSTRAINT items_file_id_fkey"),
    ("edges_file_id_fkey", "ALTER TABLE edges ADD CONSTRAINT edges_file_id_fkey FOREIGN KEY (file_id) "
     "REFERENCES files(id) ON DELETE CASCADE", "ALTER TABLE edges DROP CONSTRAINT edges_file_id_fkey"),
)


class _TermIds:
    """The term ids a first load has seen committed (``_copy_postings``), for the
    workspace's terms table of the oid it had then: a rebuild of the workspace meanwhile
    (another process's ``index --rebuild``) makes the tables anew, and the ids with them."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}
        self.table: int | None = None

    def check(self, table: int) -> None:
        if table != self.table:
            self.ids.clear()
            self.table = table


# Percent of a page the terms fill (``first_load``).
_TERMS_FILLFACTOR = 50

# Deletes files with their items and edges: what their foreign keys' cascade does, done
# here too, in the same statement, for a first load writes without those keys (a second
# writer may rewrite a file meanwhile).
_DELETE_FILES = (
    "WITH f AS MATERIALIZED (SELECT id FROM files WHERE path = ANY(%s)), "
    "e AS (DELETE FROM edges WHERE file_id IN (SELECT id FROM f)), "
    "i AS (DELETE FROM items WHERE file_id IN (SELECT id FROM f)) "
    "DELETE FROM files WHERE id IN (SELECT id FROM f)"
)

# Postings up to this many go to the server as text lines in one parameter, more as
# binary COPY rows straight into their table.
_INLINE_POSTINGS = 5000
# Adds the terms of the posting lines in ``source``, counts every term's documents and
# writes the postings with the terms' ids; its parameter is the items' row ids. Terms in
# one order, so two writers of different workspaces never wait on each other.
_ADD_POSTINGS = (
    "ids AS (INSERT INTO fts_terms AS t (term, docs, text_docs) "
    "SELECT term, count(*), count(*) FILTER (WHERE wtf > 0) FROM {source} GROUP BY term ORDER BY term "
    "ON CONFLICT (term) DO UPDATE SET docs = t.docs + excluded.docs, text_docs = t.text_docs + excluded.text_docs "
    "RETURNING id, term) "
    "INSERT INTO fts_postings (term_id, item, wtf, dl, file_row, pos) "
    "SELECT ids.id, (%s::bigint[])[p.first + p.n + 1], p.wtf, p.dl, p.file_row, p.pos "
    "FROM {source} p JOIN ids USING (term)"
)
# The terms of many postings, counted in the client: adds the new ones, adds to the
# counts of the others, and returns every one's id.
_ADD_TERMS = (
    "INSERT INTO fts_terms AS t (term, docs, text_docs) "
    "SELECT * FROM unnest(string_to_array(%s, E'\\n'), %s::integer[], %s::integer[]) AS u(term, docs, text_docs) "
    "ORDER BY term COLLATE \"C\" "
    "ON CONFLICT (term) DO UPDATE SET docs = t.docs + excluded.docs, text_docs = t.text_docs + excluded.text_docs "
    "RETURNING term, id"
)


def _write_keywords(
    conn: "psycopg.Connection", rowids: Sequence[int], items: Sequence[tuple[int, bool]],
    postings: Sequence[tuple[int, "bm25.Postings"]], counts: _Counts,
) -> None:
    """Add these items' keyword statistics: ``items`` is each one's (length, stands for
    its file), ``postings`` (index of its first item in ``rowids``, its ``Postings``) per
    file. A few postings go as text lines in one statement that adds their terms and
    writes them; many have their terms counted in the client, added in one statement
    that returns their ids, and go as binary COPY rows straight into ``fts_postings``
    (through a scratch table, with the terms added and joined in the server, they were
    most of the server's work in a cold index)."""
    total = sum(len(p) for _, p in postings)
    if 0 < total <= _INLINE_POSTINGS:
        # A tool's write of a file or two: the lines go as one parameter, split in the
        # statement; a scratch table's CREATE, COPY and DROP were three more round trips
        # inside the workspace's write lock (the DROP alone 5 ms), for which 16 writers queued.
        lengths = [length for length, _ in items]
        file_rows = [file_row for _, file_row in items]
        text = "".join(
            f"{first}\t" + lines[:-1].replace("\n", f"\n{first}\t") + "\n"
            for first, p in postings
            if (lines := p.lines(lengths[first:], file_rows[first:]))
        )
        conn.execute(
            "WITH p AS MATERIALIZED (SELECT split_part(l, E'\\t', 1)::integer AS first, "
            "split_part(l, E'\\t', 2)::integer AS n, "
            "replace(split_part(l, E'\\t', 3), E'\\\\\\\\', E'\\\\') COLLATE \"C\" AS term, "
            "split_part(l, E'\\t', 4)::integer AS wtf, split_part(l, E'\\t', 5)::integer AS dl, "
            "split_part(l, E'\\t', 6)::boolean AS file_row, split_part(l, E'\\t', 7)::integer[] AS pos "
            "FROM string_to_table(%s, E'\\n') AS l WHERE l <> ''), " + _ADD_POSTINGS.format(source="p"),
            (text, list(rowids)),
        )
    elif total:
        _copy_postings(conn, rowids, items, postings, counts)
    counts.rows += len(items)
    counts.tokens += sum(length for length, _ in items)


@functools.cache
def _copy_record(positions: int) -> tuple:
    """(numpy record, its bytes with every constant set) of a binary COPY row of
    ``_binary_postings`` with this many positions (an empty array has no dimension, as
    PostgreSQL writes ``{}``)."""
    import numpy as np

    i4 = ">i4"
    fields: list[tuple] = [
        ("fields", ">i2"), ("term_len", i4), ("term_id", i4), ("item_len", i4), ("item", ">i8"),
        ("wtf_len", i4), ("wtf", i4), ("dl_len", i4), ("dl", i4), ("file_row_len", i4), ("file_row", "u1"),
        ("pos_len", i4), ("ndim", i4), ("nulls", i4), ("oid", i4),
    ]
    if positions:
        fields += [("size", i4), ("lower", i4), ("pos", [("len", i4), ("value", i4)], (positions,))]
    record = np.dtype(fields)
    one = np.zeros(1, record)
    for name, value in (("fields", 6), ("term_len", 4), ("item_len", 8), ("wtf_len", 4), ("dl_len", 4),
                        ("file_row_len", 1), ("ndim", 1 if positions else 0), ("oid", _INT4_OID)):
        one[name] = value
    one["pos_len"] = record.itemsize - record.fields["ndim"][1]  # type: ignore[index]
    if positions:
        one["size"], one["lower"], one["pos"]["len"] = positions, 1, 4
    return record, one.tobytes()


def _copy_postings(
    conn: "psycopg.Connection", rowids: Sequence[int], items: Sequence[tuple[int, bool]],
    postings: Sequence[tuple[int, "bm25.Postings"]], counts: _Counts,
) -> None:
    """``_write_keywords`` of many postings: the terms in one statement, the postings as
    binary COPY rows built by numpy. In a first load, the terms whose ids this load has
    seen committed or added (``_Counts.known``, ``added``; a term's row is never
    deleted) have their counts added with the write's other count changes (one UPDATE
    by id before the commit) and only the others are upserted: an upsert of a term
    already there, most of a first load's after its first batches, cost the server
    about twice an update by id."""
    import numpy as np

    postings = [(first, p) for first, p in postings if len(p)]
    every = [t for _, p in postings for t in p.terms]  # each file's distinct terms
    slot = dict(zip(dict.fromkeys(every), range(len(every))))  # the batch's, in order of first appearance
    where = np.fromiter(map(slot.__getitem__, every), np.int64, len(every))
    parts = []
    at = 0
    for first, p in postings:
        parts.append((first + np.frombuffer(p.row, np.int32).astype(np.int64),
                      where[at + np.frombuffer(p.term, np.int32)],
                      np.frombuffer(p.wtf, np.int32), np.frombuffer(p.npos, np.int32), np.frombuffer(p.pos, np.int32)))
        at += len(p.terms)
    row, term, wtf, npos, pos = (np.concatenate(c) for c in zip(*parts))
    docs = np.bincount(term, minlength=len(slot))
    text_docs = np.bincount(term[wtf > 0], minlength=len(slot))
    known, added = counts.known, counts.added
    if known is None:
        ids = np.full(len(slot), -1, np.int64)
    else:
        seen = {**known, **added} if added else known
        ids = np.fromiter(map(seen.get, slot, repeat(-1)), np.int64, len(slot))
    old, new = np.flatnonzero(ids >= 0), np.flatnonzero(ids < 0)
    for i, d, td in zip(ids[old].tolist(), docs[old].tolist(), text_docs[old].tolist()):
        counts.add(i, d, td)
    if len(new):
        terms = list(slot)
        # As text: psycopg adapts a list item by item in Python (a tenth of a second a batch).
        counted = ["{" + ",".join(map(str, c[new].tolist())) + "}" for c in (docs, text_docs)]
        got: dict[str, int] = dict(conn.execute(_ADD_TERMS, ("\n".join([terms[k] for k in new.tolist()]), *counted)).fetchall())
        ids[new] = [got[terms[k]] for k in new.tolist()]
        if known is not None:
            added.update(got)
    term_id = ids[term]
    item = np.asarray(rowids, np.int64)[row]
    lengths = np.array([length for length, _ in items], np.int64)[row]
    file_row = np.array([file_row for _, file_row in items], np.bool_)[row]
    data = _binary_postings(term_id, item, wtf, lengths, file_row, npos, pos)
    with conn.cursor() as cur, cur.copy(
        "COPY fts_postings (term_id, item, wtf, dl, file_row, pos) FROM STDIN (FORMAT BINARY)"
    ) as copy:
        copy.write(data)


_INT4_OID = 23


def _binary_postings(term_id, item, wtf, dl, file_row, npos, pos) -> bytes:
    """PostgreSQL's binary COPY of postings (``term_id integer, item bigint, wtf integer,
    dl integer, file_row boolean, pos integer[]``), one row per element of the arrays,
    ``pos`` holding every row's ``npos`` positions one after another. The rows go grouped
    by their number of positions: each group is one numpy record array (each field's
    big-endian length and value, the array's header and elements), filled column by
    column rather than a step per row."""
    import numpy as np

    first = np.cumsum(npos, dtype=np.int64) - npos
    order = np.argsort(npos, kind="stable")
    cuts = np.flatnonzero(np.diff(npos[order])) + 1
    out: list[bytes | bytearray] = [b"PGCOPY\n\xff\r\n\x00" + bytes(8)]
    for rows in np.split(order, cuts):
        if not len(rows):
            continue
        k = int(npos[rows[0]])
        record, template = _copy_record(k)
        block = bytearray(template * len(rows))
        group = np.frombuffer(block, record)
        group["term_id"], group["item"], group["wtf"] = term_id[rows], item[rows], wtf[rows]
        group["dl"], group["file_row"] = dl[rows], file_row[rows]
        if k:
            group["pos"]["value"] = pos[first[rows][:, None] + np.arange(k)]
        out.append(block)
    out.append(b"\xff\xff")
    return b"".join(out)


def index_stored_keywords(conn: "psycopg.Connection", batch: int = 200) -> None:
    """Keyword statistics for the items already stored (the upgrade of an index made
    before them), from each item's stored text, as ``replace_file`` computes them."""
    file_ids = [r for (r,) in conn.execute("SELECT id FROM files ORDER BY id")]
    for i in range(0, len(file_ids), batch):
        chunk = file_ids[i : i + batch]
        texts = {fid: FileData.unpack(bytes(blob)) for fid, blob in conn.execute(
            "SELECT id, data FROM files WHERE id = ANY(%s)", (chunk,))}
        rows = conn.execute(
            "SELECT rowid, file_id, path, kind, qualname, start_line, text_at, text_len, details_at, "
            "details_len FROM items WHERE file_id = ANY(%s) ORDER BY rowid", (chunk,),
        ).fetchall()
        fts_rows = []
        for _rowid, fid, path, kind, qualname, start, at, n, d_at, d_len in rows:
            data = texts[fid]
            text = data.slice(at, n)
            sig, doc, _meta = data.details(d_at, d_len)
            fts_rows.append((fts_text(qualname), path, fts_text(text if text else f"{sig}\n{doc}"),
                             bm25.fts_kind(kind, start)))
        stats = bm25.analyse(fts_rows)
        with conn.cursor() as cur:
            cur.executemany("UPDATE items SET fts_len = %s WHERE rowid = %s",
                            [(st.length, r[0]) for st, r in zip(stats, rows)])
        counts = _Counts()
        _write_keywords(conn, [r[0] for r in rows], [(st.length, st.file_row) for st in stats],
                        [(0, bm25.postings(stats))], counts)
        counts.flush(conn)


def _array(value) -> np.ndarray:
    """A float32 array from what pgvector's loader returns (a Vector or an array)."""
    import numpy as np

    if hasattr(value, "to_numpy"):
        value = value.to_numpy()
    return np.asarray(value, dtype=np.float32)


class _OnDemand:
    """What a process that asks one question needs of a pool: connections opened when a
    thread asks for one and none is idle, kept for the next ask. Neither psycopg_pool's
    import nor its thread and second connection (together 0.1-0.2 s of a CLI question);
    without a size limit, which a server's pool keeps."""

    def __init__(self, connect: Callable[[], "psycopg.Connection"], first: "psycopg.Connection"):
        self._connect = connect
        self._idle = [first]
        self._all = [first]
        self._lock = threading.Lock()

    def getconn(self) -> "psycopg.Connection":
        with self._lock:
            conn = self._idle.pop() if self._idle else None
        if conn is None:
            conn = self._connect()
            with self._lock:
                self._all.append(conn)
        return conn

    def putconn(self, conn: "psycopg.Connection") -> None:
        if not conn.closed and conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            conn.rollback()  # as a pool gives back a connection: outside a transaction
        with self._lock:
            if not conn.closed:
                self._idle.append(conn)

    @contextmanager
    def connection(self) -> Iterator["psycopg.Connection"]:
        conn = self.getconn()
        try:
            yield conn
        finally:
            self.putconn(conn)

    def close(self) -> None:
        with self._lock:
            conns, self._all, self._idle = self._all, [], []
        for conn in conns:
            conn.close()


class _Finisher:
    """Ends read-only snapshots without waiting: their COMMIT (which keeps or loses
    nothing) is sent and its answer read only when the connection is next wanted, by
    then long arrived. That round trip was one of a warm keyword search's three, each
    waiting for the server process to get a core on a busy machine. The connection is
    kept for the next snapshot (one is kept; another ended meanwhile goes back to the
    pool): the pool hands out its idle connections in turn, and a server process that
    waited longest answers slowest. (A thread that sent the COMMITs instead took the
    interpreter's lock from the questions, and a busy machine preempted it holding it.)"""

    def __init__(self, pool: "ConnectionPool | _OnDemand"):
        self._pool = pool
        self._lock = threading.Lock()
        self._kept: "psycopg.Connection | None" = None

    def finish(self, conn: "psycopg.Connection") -> None:
        """End the open read-only transaction of ``conn`` and keep it."""
        try:
            conn.pgconn.send_query(b"COMMIT")
            conn.pgconn.flush()
        except psycopg.Error as exc:  # a lost connection: the pool replaces it
            log.debug("ending a snapshot: %s", exc)
            self._pool.putconn(conn)
            return
        self._keep(conn)

    def give_back(self, conn: "psycopg.Connection") -> None:
        """Keep an idle snapshot connection for the next snapshot."""
        self._keep(conn)

    def _keep(self, conn: "psycopg.Connection") -> None:
        with self._lock:
            old, self._kept = self._kept, conn
        if old is not None:
            self._pool.putconn(self._ended(old))

    def take(self) -> "psycopg.Connection | None":
        """The connection kept, its COMMIT's answer read (None: none kept, or lost)."""
        with self._lock:
            conn, self._kept = self._kept, None
        if conn is None:
            return None
        conn = self._ended(conn)
        if conn.closed or conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            self._pool.putconn(conn)
            return None
        return conn

    @staticmethod
    def _ended(conn: "psycopg.Connection") -> "psycopg.Connection":
        """``conn`` with the answer of a COMMIT sent read (waiting for it if it is not in)."""
        if conn.closed or conn.pgconn.transaction_status != psycopg.pq.TransactionStatus.ACTIVE:
            return conn
        try:
            while conn.pgconn.flush():  # rarely: the COMMIT did not fit the socket's buffer
                pass
            while (result := conn.pgconn.get_result()) is not None:
                if result.status != psycopg.pq.ExecStatus.COMMAND_OK:
                    raise psycopg.OperationalError(result.get_error_message())
        except psycopg.Error as exc:
            log.debug("ending a snapshot: %s", exc)
            conn.close()
        return conn

    def wait(self) -> None:
        """Give the kept connection back to the pool, its COMMIT's answer read."""
        conn = self.take()
        if conn is not None:
            self._pool.putconn(conn)


class _Answers:
    """Keyword answers and term counts of one index generation, for reads in a snapshot
    (whose generation is known without a round trip): a server is asked the same words
    again and again, each a round trip and a ranking statement. As the SQLite store's
    remembered answers; all dropped when the generation moves. A version is (index id,
    generation): a rebuilt index counts its generations from the start again."""

    ENTRIES = 20_000
    PAIRS = 5_000  # an answer holding more (rowid, score) pairs is not kept

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._version: tuple[str, int] | None = None
        self._data: OrderedDict[tuple, object] = OrderedDict()
        self._questions = 0  # snapshots begun on this version
        self._vocabulary: _Vocabulary | None = None
        self._too_many_terms: str | None = None  # an index id whose vocabulary is not held

    def begun(self, version: tuple[str, int]) -> None:
        """A snapshot began on ``version``."""
        with self._lock:
            if version == self._version:
                self._questions += 1
            elif self._version is None or version[0] != self._version[0] or version[1] > self._version[1]:
                self._version, self._data, self._questions, self._vocabulary = version, OrderedDict(), 1, None

    def vocabulary(
        self, version: tuple[str, int], load: Callable[[int], list[tuple[str, int]]]
    ) -> "_Vocabulary | None":
        """The vocabulary of ``version``, loaded (``load(limit)``: at most ``limit`` rows)
        from the second question of a generation on: a server that writes between every
        two questions never pays for a load it would use once."""
        with self._lock:
            if version != self._version or self._questions < 2 or self._too_many_terms == version[0]:
                return None
            if self._vocabulary is not None:
                return self._vocabulary
        rows = load(_Vocabulary.TERMS + 1)
        with self._lock:
            if len(rows) > _Vocabulary.TERMS:
                self._too_many_terms = version[0]
                return None
            vocabulary = _Vocabulary(rows)
            if version == self._version:
                self._vocabulary = vocabulary
        return vocabulary

    def get(self, version: tuple[str, int], key: tuple) -> object | None:
        with self._lock:
            if version != self._version:
                return None
            value = self._data.get(key)
            if value is not None:
                self._data.move_to_end(key)
            return value

    def put(self, version: tuple[str, int], key: tuple, value: object, size: int = 1) -> None:
        if size > self.PAIRS:
            return
        with self._lock:
            old = self._version
            if old is not None and old[0] == version[0] and version[1] < old[1]:
                return  # a question on an older snapshot: its answers are not the current ones
            if version != old:
                self._version, self._data, self._questions, self._vocabulary = version, OrderedDict(), 0, None
            self._data[key] = value
            while len(self._data) > self.ENTRIES:
                self._data.popitem(last=False)


class _Vocabulary:
    """Every indexed term of one index generation with its document count, sorted by code
    point (as the column's COLLATE "C"): a search's term counts and word-form lookups are
    then answered in process, two statements fewer per question (each a round trip that
    waits for a core on a busy server)."""

    # Past this many terms the vocabulary is not held: its load would cost more than the
    # statements it saves (this repository's 7,900 terms load in about 5 ms, so this many
    # in about 40, the price of 10-20 questions' two statements on a busy machine).
    TERMS = 60_000

    def __init__(self, rows: list[tuple[str, int]]):
        self.terms = [t for t, _ in rows]
        self.docs = dict(rows)

    def with_prefix(self, prefix: str, upper: str, limit: int) -> dict[str, int]:
        start = bisect.bisect_left(self.terms, prefix)
        end = bisect.bisect_left(self.terms, upper, start)
        return {t: self.docs[t] for t in self.terms[start : min(end, start + limit)]}


def _one(cursor: "psycopg.Cursor") -> tuple:
    """The row of a statement that always returns one (``count(*)``, ``RETURNING``)."""
    row = cursor.fetchone()
    assert row is not None
    return row


def _ranked_rows(conn: "psycopg.Connection", query: str, params: Sequence) -> list[tuple]:
    """The rows of a ranking statement, run by a plan made once per connection and kept
    (a prepared statement with a generic plan) when ``conn`` is in a transaction. Its
    plan is the same whatever the words (each term's postings through the primary key,
    which the statement's shape imposes), and making it took 0.6 ms of a 0.9 ms vault
    search in the server: PostgreSQL makes a prepared statement's first five plans for
    their parameters, and psycopg prepares a statement only from its sixth run. The
    setting lasts for this statement only, in the same round trip."""
    starting = conn if isinstance(conn, _Connection) and conn.assumed is not None else None
    if starting is None and conn.info.transaction_status != psycopg.pq.TransactionStatus.INTRANS:
        return conn.execute(query, params).fetchall()
    with conn.pipeline():
        # a snapshot begun with its first statement
        checked = starting.queue_begin() if starting is not None else None
        conn.execute("SET LOCAL plan_cache_mode = force_generic_plan")
        cur = conn.execute(query, params, prepare=True)
        conn.execute("SET LOCAL plan_cache_mode TO DEFAULT")
    if checked is not None:
        checked()
    return cur.fetchall()


def _connect_error(url: str, exc: Exception) -> StoreUnavailable:
    return StoreUnavailable(
        f"cannot connect to PostgreSQL at {redact(url)}: {' '.join(str(exc).split())}; check that the "
        f"server is running and the URL (user, password, host, port, database) is right"
    )


class PostgresStore(StoreBase):
    """One workspace index in a PostgreSQL database (with the pgvector extension)."""

    # The indexer's workers pack each file's text (stretches + zlib) and tokenize its
    # items for the keyword statistics (7 s of the writing process on pytest's 491 files).
    prepare_file = staticmethod(bm25.prepare_rows)
    @property
    def searches_vectors(self) -> bool:
        """Whether retrieval asks the HNSW index (True) or keeps the vectors in memory and
        searches them exactly, as on SQLite (False): exact up to IN_MEMORY_VECTORS, where
        numpy answers in milliseconds and an approximate graph loses true neighbours
        (recall@10 0.54 at ef_search 100 for questions far from every passage)."""
        return max(self.vector_models().values(), default=0) > IN_MEMORY_VECTORS

    def __init__(
        self, url: str, workspace: str | None = None, *, default_workspace: str | None = None,
        pool_size: int = 8, lean: bool = False,
    ):
        """``lean``: connections as needed, without a pool (a process asking one question);
        otherwise a pool of up to ``pool_size``."""
        if _IMPORT_ERROR is not None:
            raise StoreUnavailable(
                "the PostgreSQL store needs psycopg, psycopg-pool and pgvector: "
                "pip install 'smartcontext[postgres]'"
            ) from _IMPORT_ERROR
        super().__init__()
        conninfo, from_url = split_url(url)
        self.workspace = workspace or from_url or default_workspace or "default"
        self.schema = schema_name(self.workspace)
        self.url = conninfo
        self.location = f"{redact(conninfo)} (workspace {self.workspace}, schema {self.schema})"
        self.notices: list[str] = []
        self._local = threading.local()
        self._texts = FileTexts()
        self._cached_ids_memo: tuple[int, str | None] | None = None
        self._hnsw_dims: set[int] = set()
        self._far_lines: dict[tuple[str, int], tuple[int, float]] = {}  # (model, dim) -> (vectors, line)
        self._deferred_dims: set[int] | None = None  # inside deferred_vector_index()
        self._lock_key = zlib.crc32(self.schema.encode()) - (1 << 31)  # a signed int4
        self._lean = lean
        self._meta: dict[str, str] | None = None  # a lean store's meta rows (_meta_value)
        self._answers = _Answers()
        self._last_state: dict[str, str] | None = None  # the meta rows the last snapshot read
        search_path = sql.SQL("SET search_path TO {}, {}, public").format(
            sql.Identifier(self.schema), sql.Identifier(SHARED_SCHEMA)
        )

        def configure(conn: "psycopg.Connection") -> None:
            conn.execute(search_path)

        first = self._bootstrap()
        self.pool: ConnectionPool | _OnDemand
        if lean:
            def connect() -> "psycopg.Connection":
                try:
                    conn = _Connection.connect(conninfo, autocommit=True, connect_timeout=10)
                except psycopg.Error as exc:
                    raise _connect_error(conninfo, exc) from exc
                configure(conn)
                return conn

            if not self._path_set:
                configure(first)
            self.pool = _OnDemand(connect, first)
            self._finisher = _Finisher(self.pool)
            return
        first.close()
        from psycopg_pool import ConnectionPool

        try:
            self.pool = ConnectionPool(
                conninfo, connection_class=_Connection, min_size=1, max_size=pool_size, open=True,
                configure=configure,
                kwargs={"autocommit": True}, name=f"smartcontext-{self.schema}", timeout=30,
            )
            self.pool.wait(timeout=15)
        except Exception as exc:  # PoolTimeout, OperationalError
            raise _connect_error(conninfo, exc) from exc
        self._finisher = _Finisher(self.pool)

    # -- opening -----------------------------------------------------------------------

    def _bootstrap(self) -> "psycopg.Connection":
        """Create the pgvector extension, the shared cache and this workspace's schema, and
        apply pending migrations, once per database at a time; returns the connection
        (autocommit) it used."""
        try:
            conn = _Connection.connect(self.url, autocommit=True, connect_timeout=10)
        except psycopg.Error as exc:
            raise _connect_error(self.url, exc) from exc
        self._path_set = False
        try:
            if self._ready(conn):
                self._path_set = True  # _ready set this workspace's search path
            else:
                self._set_up(conn)
        except BaseException:
            conn.close()
            raise
        return conn

    def _ready(self, conn: "psycopg.Connection") -> bool:
        """Whether the extension is there and both migration sets are exactly applied, in
        one round trip and without the lock (an open of a set-up workspace, nearly
        always): eight round trips less for a question. The same round trip sets the
        connection's search path to the workspace."""
        path = sql.SQL("{}, {}, public").format(sql.Identifier(self.schema), sql.Identifier(SHARED_SCHEMA))
        try:
            row = _one(conn.execute(
                sql.SQL(
                    "SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'vector'), "
                    "ARRAY(SELECT name FROM {}._migrations WHERE migration_set = %s), "
                    "ARRAY(SELECT name FROM {}._migrations WHERE migration_set = %s), "
                    "set_config('search_path', %s, false)"
                ).format(sql.Identifier(SHARED_SCHEMA), sql.Identifier(self.schema)),
                (EMBEDDINGS.name, CORE.name, path.as_string(conn)),
            ))
        except (psycopg.errors.UndefinedTable, psycopg.errors.InvalidSchemaName):
            return False  # a new database or workspace
        return (bool(row[0]) and set(row[1]) == {s for s, _ in EMBEDDINGS.steps}
                and set(row[2]) == {s for s, _ in CORE.steps})

    def _set_up(self, conn: "psycopg.Connection") -> None:
        conn.execute("SELECT pg_advisory_lock(%s)", (_BOOTSTRAP_LOCK,))
        try:
            self._create_extension(conn)
            EMBEDDINGS.apply(conn, SHARED_SCHEMA)
            if "m001_tables" in CORE.apply(conn, self.schema):
                # The name as given: `store list` shows it (a schema name may be hashed).
                conn.execute(
                    sql.SQL("INSERT INTO {}.meta(key, value) VALUES ('workspace', %s) "
                            "ON CONFLICT (key) DO NOTHING").format(sql.Identifier(self.schema)),
                    (self.workspace,),
                )
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (_BOOTSTRAP_LOCK,))

    def _create_extension(self, conn: "psycopg.Connection") -> None:
        if conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone():
            return
        available = conn.execute(
            "SELECT 1 FROM pg_available_extensions WHERE name = 'vector'"
        ).fetchone()
        if not available:
            raise StoreUnavailable(
                f"the PostgreSQL server at {redact(self.url)} has no pgvector extension; install "
                f"it on the server (e.g. the postgresql-NN-pgvector package, or a managed "
                f"PostgreSQL that offers pgvector) and try again"
            )
        try:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        except psycopg.errors.InsufficientPrivilege as exc:
            raise StoreUnavailable(
                f"pgvector is installed on {redact(self.url)} but not enabled in this database, "
                f"and this user may not enable it; ask an administrator to run "
                f"`CREATE EXTENSION vector;` in it ({exc})"
            ) from exc

    def close(self) -> None:
        self._finisher.wait()
        self.pool.close()

    def release_memory(self) -> None:
        """Drop the decoded files kept for reads (a server gone idle); they are read again."""
        self._texts.clear()

    def check(self, full: bool = False) -> str | None:
        """None when the index answers. PostgreSQL guards its own pages (WAL, checksums),
        so there is no damage marker as for a SQLite file; ``full`` reads every table."""
        try:
            with self._conn() as conn:
                conn.execute("SELECT 1 FROM meta LIMIT 1")
                if full:
                    conn.execute(
                        "SELECT (SELECT count(*) FROM files), (SELECT count(*) FROM items), "
                        "(SELECT count(*) FROM edges)"
                    )
        except psycopg.Error as exc:
            return " ".join(str(exc).split())
        return None

    # -- connections and transactions ---------------------------------------------------

    @contextmanager
    def _conn(self) -> Iterator["psycopg.Connection"]:
        """This thread's connection in a write or a snapshot, or one from the pool."""
        conn = getattr(self._local, "conn", None)
        if conn is not None and self._local.pending:
            self._flush(conn)  # its reads and writes see the files queued before them
        conn = conn or getattr(self._local, "snap", None)
        if conn is not None:
            yield conn
            return
        with self._pooled() as conn:
            yield conn

    @contextmanager
    def _pooled(self) -> Iterator["psycopg.Connection"]:
        try:
            with self.pool.connection() as conn:
                yield conn
        except psycopg.OperationalError as exc:
            raise _connect_error(self.url, exc) from exc

    @contextmanager
    def _snapshot(self) -> Iterator["psycopg.Connection"]:
        """A connection whose statements all see one snapshot (for reads of several
        statements: an item's row and its file's text must be of the same version)."""
        conn = getattr(self._local, "conn", None) or getattr(self._local, "snap", None)
        if conn is not None:
            yield conn
            return
        with self._conn() as conn, conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            yield conn

    @contextmanager
    def snapshot(self, assume_state: bool = False) -> Iterator[None]:
        """Every read of this thread inside sees the index as one commit left it (a
        REPEATABLE READ transaction on one connection), as the SQLite store's snapshot:
        a question of several statements never mixes a write's before and after. The
        meta rows (generations, index id) are read once with its start, one round trip
        where a question read them 5-11 times. Nested, or inside a write of this thread,
        it adds nothing; a write inside goes on another connection and is not seen.

        ``assume_state``: begin on the state the last snapshot read, and send BEGIN and
        the read of the state with the first statement (one round trip fewer; a warm
        search is then one), or after the last read when every answer came from memory.
        When the state read is not the one assumed, ``SnapshotMoved`` is raised (at that
        statement or at the end) and the question is to be asked again without it.
        Either way the answer is that of one snapshot in which the state was the one
        its reads from memory assumed."""
        if getattr(self._local, "conn", None) is not None or getattr(self._local, "snap", None) is not None:
            yield
            return
        try:
            conn = cast("_Connection", self._finisher.take() or self.pool.getconn())
        except psycopg.OperationalError as exc:
            raise _connect_error(self.url, exc) from exc
        assumed = self._last_state if assume_state else None
        moved: list[bool] = []
        try:
            if assumed is None:
                with conn.pipeline():  # BEGIN and the meta rows in one round trip
                    conn.execute(_BEGIN)
                    rows = conn.execute(_STATE)
                held = self._last_state = dict(rows.fetchall())
            else:
                held = dict(assumed)

                def check(rows: list[tuple]) -> None:
                    state = self._last_state = dict(rows)
                    if state != held:
                        moved.append(True)  # raised again at the end, should a caller swallow it
                        raise SnapshotMoved("the index changed since its state was last read")

                conn.assumed = check
            self._local.held = held
            self._local.snap = conn
            self._local.items = {}
            self._answers.begun((held.get("index_id") or "", int(held.get("generation") or 0)))
            yield
            if conn.assumed is not None:  # every answer came from memory: was the state the one assumed?
                conn.assumed = None
                check(conn.execute(_STATE).fetchall())
            if moved:
                raise SnapshotMoved("the index changed since its state was last read")
        except psycopg.OperationalError as exc:
            raise _connect_error(self.url, exc) from exc
        finally:
            conn.assumed = None
            self._local.snap = self._local.held = self._local.items = None
            status = conn.info.transaction_status
            if status == psycopg.pq.TransactionStatus.INTRANS:
                self._finisher.finish(conn)  # read only: its COMMIT keeps nothing, so no one waits for it
            elif status == psycopg.pq.TransactionStatus.IDLE:
                self._finisher.give_back(conn)
            else:
                self.pool.putconn(conn)

    @contextmanager
    def _write(self) -> Iterator["psycopg.Connection"]:
        """One transaction holding the workspace's write lock (joins an open one), with
        SQLite's durability (see the commit below)."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            self._flush(conn)  # what this thread queued comes first
            yield conn
            return
        with self._pooled() as conn:  # not a snapshot's (read only)
            load = getattr(self._local, "load_terms", None)
            counts = _Counts(None if load is None else load.ids)
            with conn.transaction():
                # The commit does not wait for its WAL to reach the disk, as the SQLite
                # store's (WAL, synchronous=NORMAL): a server crash may lose the last
                # fraction of a second of index writes, never half of one, and the files
                # are the truth (the next refresh indexes what the index missed). The wait
                # was held inside the workspace's write lock, where 16 writers queued.
                lock = "SELECT pg_advisory_xact_lock(%s), set_config('synchronous_commit', 'off', true)"
                if load is None:
                    conn.execute(lock, (self._lock_key,))
                else:
                    load.check(_one(conn.execute(lock + ", 'fts_terms'::regclass::oid", (self._lock_key,)))[2])
                self._local.conn = conn
                self._local.counts = counts
                self._local.pending = []
                try:
                    yield conn
                    self._flush(conn)
                    counts.flush(conn)
                finally:
                    self._local.conn = None
                    self._local.counts = None
                    self._local.pending = None
                    self._meta = None
            if counts.known is not None:  # committed
                counts.known.update(counts.added)

    def _counts(self) -> "_Counts":
        """The keyword count changes of this thread's open write."""
        return self._local.counts

    def _settled(self, conn: "psycopg.Connection") -> None:
        """Apply the open write's keyword count changes before this thread reads them."""
        counts = getattr(self._local, "counts", None)
        if counts is not None and getattr(self._local, "conn", None) is conn:
            counts.flush(conn)

    @contextmanager
    def transaction(self) -> Iterator[None]:
        with self._write():
            yield

    @contextmanager
    def batch(self) -> Iterator["PostgresStore"]:
        with self._write():
            yield self

    # PostgreSQL's autovacuum gives freed space back: compact() has nothing to do.

    # -- meta --------------------------------------------------------------------------

    def _increment(self, counter: str) -> int:
        self._meta = None
        with self._conn() as conn:
            return int(_one(conn.execute(
                "INSERT INTO meta(key, value) VALUES (%s, '1') ON CONFLICT (key) "
                "DO UPDATE SET value = (meta.value::bigint + 1)::text RETURNING value", (counter,),
            ))[0])

    def _log_changes(self, generation: int, paths: list[str]) -> None:
        with self._conn() as conn:
            conn.execute(
                "INSERT INTO changes(generation, path) SELECT %s, unnest(%s::text[])", (generation, paths)
            )

    def _forget_changes(self, floor: int) -> None:
        with self._conn() as conn:
            conn.execute("DELETE FROM changes WHERE generation <= %s", (floor,))
            conn.execute(
                "UPDATE meta SET value = %s WHERE key = 'changes_from' AND value::bigint < %s",
                (str(floor), floor),
            )

    def _changes_since(self, since: int) -> tuple[int | None, set[str]]:
        with self._snapshot() as conn:
            floor = conn.execute("SELECT value FROM meta WHERE key = 'changes_from'").fetchone()
            if floor is None or since < int(floor[0]):  # the paths would not be used
                return (None if floor is None else int(floor[0])), set()
            paths = {
                p for (p,) in conn.execute(
                    "SELECT DISTINCT path FROM changes WHERE generation > %s", (since,)
                )
            }
        return int(floor[0]), paths

    def _snapshot_generation(self) -> tuple[str, int] | None:
        """(index id, generation) of what this thread's snapshot reads, or None outside
        one (or inside a write, whose reads may be rolled back)."""
        held = getattr(self._local, "held", None)
        if held is None or getattr(self._local, "conn", None) is not None:
            return None
        return held.get("index_id") or "", int(held.get("generation") or 0)

    def _meta_value(self, key: str) -> str | None:
        held = getattr(self._local, "held", None)
        if held is not None and getattr(self._local, "conn", None) is None:
            return held.get(key)  # in a snapshot: as its start read them
        if self._lean and getattr(self._local, "conn", None) is None:
            # A process asking one question reads the few meta rows once (the generations,
            # the index id, the last run's stamps: 14 round trips of a CLI question) and
            # again after each write of its own. Another process's commit meanwhile is
            # seen as if it had come a moment after this question's reads, which it may.
            meta = self._meta
            if meta is None:
                with self._conn() as conn:
                    meta = self._meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
            return meta.get(key)
        with self._conn() as conn:
            row = conn.execute("SELECT value FROM meta WHERE key = %s", (key,)).fetchone()
        return row[0] if row else None

    def set_meta(self, key: str, value: str) -> None:
        with self._write() as conn:
            conn.execute(
                "INSERT INTO meta(key, value) VALUES (%s, %s) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (key, value),
            )

    # -- files -------------------------------------------------------------------------

    def file_states(self, paths: Sequence[str] | None = None) -> dict[str, FileState]:
        query = "SELECT id, path, mtime_ns, size, hash, language, source FROM files"
        with self._conn() as conn:
            if paths is None:
                rows = conn.execute(query).fetchall()
            else:  # a tool's write re-reads a file or two: not every file's row
                rows = conn.execute(query + " WHERE path = ANY(%s)", (list(paths),)).fetchall()
        return {r[1]: FileState(*r) for r in rows}

    def touch_file(self, path: str, mtime_ns: int, size: int) -> None:
        with self._write() as conn:
            conn.execute(
                "UPDATE files SET mtime_ns = %s, size = %s WHERE path = %s", (mtime_ns, size, path)
            )

    def delete_files(self, paths: Iterable[str]) -> int:
        paths = list(paths)
        with self._write() as conn:
            if paths:
                changed = self._item_paths(conn, paths)
                _delete_keywords(conn, paths, self._counts())
                conn.execute(_DELETE_FILES, (paths,))
                self._bump_generation(changed)
        return len(paths)

    def replace_file(
        self, *, path: str, mtime_ns: int, size: int, hash: str, language: str, source: str,
        module: str, warnings: Sequence[str], items: Sequence[ItemRow], edges: Sequence[Edge],
        prepared=None,
    ) -> None:
        """Replace everything known about ``path`` in one transaction (``prepared``: the
        indexer worker's ``prepare_file`` of the same rows). Inside a batch the file is
        written with the next ones (``_PENDING_FILES`` at a time, or before anything else
        this thread does with the store): a dozen statements for them all, where a file
        alone took sixteen round trips."""
        record = (FileRecord(path, mtime_ns, size, hash, language, source, module, list(warnings),
                             list(items), list(edges)), prepared)
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            pending = self._local.pending
            if any(r.path == path for r, _ in pending):
                self._flush(conn)  # the same file twice: in order
            self._local.pending.append(record)
            if len(self._local.pending) >= _PENDING_FILES:
                self._flush(conn)
            return
        with self._write() as conn:
            self._store_files(conn, [record])

    def load_files(self, records: Sequence[FileRecord]) -> None:
        """Replace these files as :meth:`replace_file` would, in one transaction and a few
        statements (for ``store copy``)."""
        if records:
            with self._write() as conn:
                self._store_files(conn, [(rec, None) for rec in records])

    def _flush(self, conn: "psycopg.Connection") -> None:
        """Write the files this thread's open write has queued."""
        records, self._local.pending = self._local.pending, []
        if records:
            self._store_files(conn, records)

    def _store_files(self, conn: "psycopg.Connection", records: Sequence[tuple[FileRecord, Any]]) -> None:
        """Replace these files (with their ``prepare_file`` results, or None) in the open
        write: the file rows in one INSERT, the items and their keyword statistics through
        COPY, the edges through COPY, one generation for them all."""
        prepared: list[bm25.Prepared] = [prep or bm25.prepare_rows(rec.items) for rec, prep in records]
        paths = [rec.path for rec, _ in records]
        changed = self._item_paths(conn, paths) | {row[0].path for rec, _ in records for row in rec.items}
        _delete_keywords(conn, paths, self._counts())
        conn.execute(_DELETE_FILES, (paths,))
        recs = [rec for rec, _ in records]
        ids: dict[str, int] = dict(conn.execute(
            "INSERT INTO files(path, mtime_ns, size, hash, language, source, module, warnings, data) "
            "SELECT * FROM unnest(%s::text[], %s::bigint[], %s::bigint[], %s::text[], %s::text[], "
            "%s::text[], %s::text[], %s::jsonb[], %s::bytea[]) RETURNING path, id",
            (paths, [r.mtime_ns for r in recs], [r.size for r in recs], [r.hash for r in recs],
             [r.language for r in recs], [r.source for r in recs], [r.module for r in recs],
             [json.dumps(list(r.warnings)) for r in recs], [p.packed[0] for p in prepared]),
        ).fetchall())
        entries: list[tuple[int, ItemRow, tuple, tuple, int, bool]] = []
        postings: list[tuple[int, bm25.Postings]] = []
        for rec, prep in zip(recs, prepared):
            _blob, spans, detail_spans = prep.packed
            postings.append((len(entries), prep.postings))
            entries += [(ids[rec.path], row, spans[n], detail_spans[n], *prep.items[n])
                        for n, row in enumerate(rec.items)]
        self._insert_items(conn, entries, postings)
        if any(rec.edges for rec in recs):
            # COPY: executemany sent a statement per edge (a tenth of a cold index).
            with conn.cursor() as cur, cur.copy("COPY edges(file_id, src, kind, dst, dst_name) FROM STDIN") as copy:
                for rec in recs:
                    file_id = ids[rec.path]
                    for e in rec.edges:
                        copy.write_row((file_id, e.src, str(e.kind), e.dst, e.dst_name))
        self._bump_generation(changed)

    def _insert_items(
        self, conn: "psycopg.Connection", entries: Sequence[tuple[int, ItemRow, tuple, tuple, int, bool]],
        postings: Sequence[tuple[int, "bm25.Postings"]],
    ) -> None:
        """Insert items given as (file id, item row, text span, details span, keyword
        length, stands for its file), with their keyword postings (``_write_keywords``),
        in a few round trips whatever their number."""
        if not entries:
            return
        rowids = [r for (r,) in conn.execute(
            "SELECT nextval(pg_get_serial_sequence('items', 'rowid')) FROM generate_series(1, %s)",
            (len(entries),),
        )]
        with conn.cursor() as cur, cur.copy(
            "COPY items(rowid, id, file_id, path, kind, name, qualname, fqname, start_line, end_line, "
            "parent_id, language, tokens, sig_tokens, content_hash, tags, text_at, text_len, "
            "details_at, details_len, file_row, fts_len) FROM STDIN"
        ) as copy:
            for rowid, (file_id, row, span, detail_span, length, file_row) in zip(rowids, entries):
                item, fqname, sig_tokens, content_hash = row[:4]
                copy.write_row((
                    rowid, item.id, file_id, item.path, str(item.kind), item.name, item.qualname, fqname,
                    item.start_line, item.end_line, item.parent_id, item.language, item.tokens,
                    sig_tokens, content_hash,
                    JSON.encode(item.meta["tags"]) if "tags" in item.meta else None,
                    *span, *detail_span, file_row, length,
                ))
        _write_keywords(conn, rowids, [e[4:] for e in entries], postings, self._counts())

    @staticmethod
    def _item_paths(conn: "psycopg.Connection", files: list[str]) -> set[str]:
        """These files' paths and the paths their items carry, for the change log."""
        rows = conn.execute(
            "SELECT DISTINCT i.path FROM items i JOIN files f ON f.id = i.file_id "
            "WHERE f.path = ANY(%s)", (files,),
        ).fetchall()
        return set(files) | {r[0] for r in rows}

    # -- items -------------------------------------------------------------------------

    def _read_items(self, where: str, params: Sequence) -> list[StoredItem]:
        # No transaction of its own (BEGIN, SET TRANSACTION and COMMIT were three of a
        # question's round trips per read): a file replaced between the two statements
        # has another hash, and its items are left out, as on SQLite. The stored text of
        # files not decoded here yet comes with the rows (once per file), so a read is one
        # round trip; only a file replaced since it was decoded takes a second.
        cached = self._cached_ids()
        with self._conn() as conn:
            rows = conn.execute(
                f"SELECT {_ITEM_COLUMNS}, CASE WHEN %s AND row_number() OVER (PARTITION BY i.file_id) = 1 "
                "AND NOT i.file_id = ANY(%s::bigint[]) THEN f.data END "
                f"FROM items i JOIN files f ON f.id = i.file_id WHERE {where} ORDER BY i.rowid",
                (cached is not None, cached or "{}", *params),
            ).fetchall()
            return self._stored_items(conn, rows)

    def _stored_items(self, conn: "psycopg.Connection", rows: Sequence[tuple]) -> list[StoredItem]:
        """Items from rows of ``_ITEM_COLUMNS`` and the file's stored form (or None)."""
        sent = {r[14]: (r[15], bytes(r[20])) for r in rows if r[20] is not None}

        def load(ids: list[int]) -> list[tuple[int, str, bytes]]:
            out = [(i, *sent[i]) for i in ids if i in sent]
            rest = [i for i in ids if i not in sent]
            if rest:
                out += [(file_id, file_hash, bytes(blob)) for file_id, file_hash, blob in conn.execute(
                    "SELECT id, hash, data FROM files WHERE id = ANY(%s)", (rest,)
                ).fetchall()]
            return out

        files = self._texts.get(((r[14], r[15]) for r in rows), load)
        return [
            StoredItem(rowid, item_from_row(files[file_id], id_, path, kind, name, qualname, start,
                                            end, parent, lang, tokens, d_at, d_len, at, length),
                       fqname, sig_tokens, chash)
            for (rowid, id_, path, kind, name, qualname, fqname, start, end, parent, lang, tokens,
                 sig_tokens, chash, file_id, _hash, d_at, d_len, at, length, _data) in rows
            if file_id in files
        ]

    def _cached_ids(self) -> str | None:
        """The ids of the files decoded here, as an array literal for ``_read_items``
        (None past ``_CACHED_IDS_SENT``), made again only when that set changed: psycopg
        adapts a list element by element (a read sending 6,000 ids took 34 ms, 2.4 ms
        with the literal)."""
        texts = self._texts
        memo = self._cached_ids_memo
        if memo is not None and memo[0] == texts.changes:
            return memo[1]
        changes = texts.changes
        ids = texts.file_ids()
        literal = "{" + ",".join(map(str, ids)) + "}" if len(ids) <= _CACHED_IDS_SENT else None
        self._cached_ids_memo = (changes, literal)
        return literal

    def _snapshot_items(self) -> dict[int, StoredItem] | None:
        """The items this thread's snapshot has read, by row id (None outside one, or
        inside a write): rows of one snapshot never change, so they are read once."""
        if getattr(self._local, "conn", None) is not None:
            return None
        return getattr(self._local, "items", None)

    def items_by_rowids(self, rowids: Sequence[int]) -> dict[int, StoredItem]:
        wanted = list(dict.fromkeys(int(r) for r in rowids))
        if not wanted:
            return {}
        known = self._snapshot_items()
        if known is None:
            return {s.rowid: s for s in self._read_items("i.rowid = ANY(%s)", (wanted,))}
        missing = [r for r in wanted if r not in known]
        if missing:
            known.update((s.rowid, s) for s in self._read_items("i.rowid = ANY(%s)", (missing,)))
        return {r: known[r] for r in wanted if r in known}

    def items_by_ids(self, ids: Sequence[str]) -> dict[str, StoredItem]:
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return {}
        return {s.item.id: s for s in self._read_items("i.id = ANY(%s)", (wanted,))}

    def items_in_paths(self, paths: Sequence[str]) -> list[StoredItem]:
        wanted = list(dict.fromkeys(paths))
        if not wanted:
            return []
        return self._read_items("i.path = ANY(%s)", (wanted,))

    def item_light_rows(self, paths: Sequence[str] | None = None) -> list[CatalogueRow]:
        where, params = ("", ()) if paths is None else ("WHERE path = ANY(%s) ", (list(paths),))
        with self._conn() as conn:
            rows = conn.execute(
                "SELECT rowid, id, path, kind, name, qualname, fqname, parent_id, tokens, "
                f"sig_tokens, start_line, end_line FROM items {where}ORDER BY rowid", params,
            ).fetchall()
        return [CatalogueRow(*r) for r in rows]

    def item_sizes(self, paths: Sequence[str], kind: str) -> list[tuple[int, str, str, int]]:
        with self._conn() as conn:
            return [tuple(r) for r in conn.execute(
                "SELECT rowid, path, qualname, tokens FROM items WHERE kind = %s AND path = ANY(%s) "
                "ORDER BY rowid", (kind, list(paths)),
            ).fetchall()]

    def _count(self, *tables: str) -> tuple[int, ...]:
        counts = sql.SQL(", ").join(
            sql.SQL("(SELECT count(*) FROM {})").format(sql.Identifier(table)) for table in tables
        )
        with self._conn() as conn:
            return tuple(_one(conn.execute(sql.SQL("SELECT {}").format(counts))))

    def counts(self) -> dict[str, int]:
        """The table counts and the vectors by model in one statement (a process asking
        one question counted them in three, the items twice); the item count is the
        keyword statistics' row count, kept in the same transaction as the items."""
        generation = (self.generation(), self.vector_generation())
        tables, vectors = self._memo.get("tables"), self._vector_models
        if tables is not None and tables[0] == generation[0] and vectors is not None and vectors[0] == generation:
            return super().counts()
        with self._conn() as conn:
            self._settled(conn)
            files, items, edges, models = _one(conn.execute(
                "SELECT (SELECT count(*) FROM files), (SELECT rows FROM fts_stats), (SELECT count(*) FROM edges), "
                f"(SELECT coalesce(json_object_agg(model, n), '{{}}') FROM ({_VECTORS_BY_MODEL}) v)"
            ))
        self._memo["tables"] = (generation[0], (files, int(items), edges))
        self._memo["items"] = (generation[0], int(items))
        self._vector_models = (generation, {m: int(n) for m, n in models.items()})
        return {"files": files, "items": int(items), "edges": edges, "vectors": sum(self._vector_models[1].values())}

    def kind_counts(self) -> dict[str, int]:
        with self._conn() as conn:
            return dict(conn.execute("SELECT kind, count(*) FROM items GROUP BY kind").fetchall())

    def file_warnings(self) -> dict[str, list[str]]:
        with self._conn() as conn:
            return dict(
                conn.execute("SELECT path, warnings FROM files WHERE warnings <> '[]'::jsonb").fetchall()
            )

    def tag_rows(self, paths: Sequence[str] | None = None) -> list[tuple[int, str]]:
        where, params = ("", ()) if paths is None else ("AND path = ANY(%s) ", (list(paths),))
        with self._conn() as conn:
            rows = conn.execute(
                f"SELECT rowid, tags FROM items WHERE tags IS NOT NULL {where}ORDER BY rowid", params,
            ).fetchall()
        out: list[tuple[int, str]] = []
        for rowid, tags in rows:
            values = tags if isinstance(tags, list) else list(tags.values()) if isinstance(tags, dict) else [tags]
            out.extend((rowid, v if isinstance(v, str) else json.dumps(v)) for v in values)
        return out

    # -- keyword search -----------------------------------------------------------------

    def keyword_search(
        self, terms: Sequence[KeywordTerm], limit: int, files_only: bool = False,
        within: Collection[int] | None = None,
    ) -> list[tuple[int, float]]:
        """FTS5's BM25 over name, path and body (``store/bm25.py``), in one statement:
        the same scores as the SQLite store. ``within``: only these rows, filtered in the
        server (the statistics stay those of the whole index)."""
        query = bm25.plan(terms)
        if not query:
            return []
        generation = self._snapshot_generation() if within is None else None
        key = ("top", repr(query), limit, files_only)
        if generation is not None:
            hit = self._answers.get(generation, key)
            if hit is not None:
                return list(hit)  # type: ignore[call-overload]
        hits, params = _hits_sql(query)
        where = []
        if files_only:
            where.append("file_row")
        if within is not None:
            where.append("item = ANY(%s::bigint[])")
            params.append(list(within))
        ranking = (
            f"{hits} SELECT item, sum(s) AS score FROM hits {'WHERE ' + ' AND '.join(where) if where else ''} "
            "GROUP BY item ORDER BY score DESC, item LIMIT %s"
        )
        known = self._snapshot_items()
        with self._conn() as conn:
            self._settled(conn)
            if known is None:
                rows = _ranked_rows(conn, ranking, (*params, limit))
            else:
                rows = self._rank_with_items(conn, ranking, (*params, limit), known)
        found = [(r[0], r[1]) for r in rows]
        if generation is not None:
            self._answers.put(generation, key, tuple(found), len(found))
        return found

    def _rank_with_items(
        self, conn: "psycopg.Connection", ranking: str, params: tuple, known: dict[int, StoredItem]
    ) -> list[tuple]:
        """The rows of ``ranking`` (item, score), each of the first PREFETCH_ITEMS with its
        item's row when the snapshot has not read it yet, in one statement; those items
        join ``known``."""
        cached = self._cached_ids()
        rows = _ranked_rows(
            conn,
            f"WITH ranked AS MATERIALIZED (SELECT item, score, row_number() OVER (ORDER BY score DESC, item) AS n "
            f"FROM ({ranking}) g) "
            f"SELECT r.item, r.score, {_LATERAL_ITEM_COLUMNS}, CASE WHEN x.rowid IS NOT NULL AND %s "
            "AND row_number() OVER (PARTITION BY x.file_id) = 1 AND NOT x.file_id = ANY(%s::bigint[]) "
            "THEN x.data END FROM ranked r LEFT JOIN LATERAL ("
            f"SELECT {_ITEM_COLUMNS}, f.data FROM items i JOIN files f ON f.id = i.file_id "
            "WHERE i.rowid = r.item AND r.n <= %s AND NOT i.rowid = ANY(%s::bigint[]) OFFSET 0) x ON true "
            "ORDER BY r.score DESC, r.item",
            (*params, cached is not None, cached or "{}", PREFETCH_ITEMS, list(known)),
        )
        items = [r[2:] for r in rows if r[2] is not None]
        known.update((s.rowid, s) for s in self._stored_items(conn, items))
        return rows

    def keyword_search_with_files(
        self, terms: Sequence[KeywordTerm], limit: int, is_file_row: Callable[[int], bool]
    ) -> tuple[list[tuple[int, float]], list[tuple[int, float]]]:
        """Both rankings from one scoring of the matching rows: the best items, and the
        best rows that stand for a whole file."""
        query = bm25.plan(terms)
        if not query:
            return [], []
        generation = self._snapshot_generation()
        key = ("both", repr(query), limit)
        if generation is not None:
            hit = self._answers.get(generation, key)
            if hit is not None:
                return list(hit[0]), list(hit[1])  # type: ignore[index]
        hits, params = _hits_sql(query)
        with self._conn() as conn:
            self._settled(conn)
            rows = _ranked_rows(
                conn,
                f"{hits}, ranked AS MATERIALIZED (SELECT item, bool_or(file_row) AS file_row, "
                "sum(s) AS score FROM hits GROUP BY item) "
                "(SELECT false, item, score FROM ranked ORDER BY score DESC, item LIMIT %s) UNION ALL "
                "(SELECT true, item, score FROM ranked WHERE file_row ORDER BY score DESC, item LIMIT %s)",
                (*params, limit, limit),
            )
        items = [(r, s) for files, r, s in rows if not files]
        files = [(r, s) for is_file, r, s in rows if is_file]
        if generation is not None:
            self._answers.put(generation, key, (tuple(items), tuple(files)), len(rows))
        return items, files

    def _held_vocabulary(self) -> "_Vocabulary | None":
        """The vocabulary of this thread's snapshot's generation, when it is held or worth
        loading (``_Answers.vocabulary``); None outside a snapshot."""
        generation = self._snapshot_generation()
        if generation is None:
            return None

        def load(limit: int) -> list[tuple[str, int]]:
            with self._conn() as conn:
                return conn.execute(
                    "SELECT term, docs FROM fts_terms WHERE docs > 0 ORDER BY term LIMIT %s", (limit,)
                ).fetchall()

        return self._answers.vocabulary(generation, load)

    def doc_freqs(self, terms: Sequence[str]) -> dict[str, int]:
        """Items holding each term in any column (as the FTS5 vocabulary counts rows)."""
        wanted = list(dict.fromkeys(terms))
        if not wanted:
            return {}
        vocabulary = self._held_vocabulary()
        if vocabulary is not None:
            return {t: vocabulary.docs[t] for t in wanted if t in vocabulary.docs}
        generation = self._snapshot_generation()
        known: dict[str, int] = {}
        if generation is not None:
            for term in wanted:
                hit = self._answers.get(generation, ("docs", term))
                if hit is not None:
                    known[term] = hit  # type: ignore[assignment]
            wanted = [t for t in wanted if t not in known]
        if wanted:
            with self._conn() as conn:
                self._settled(conn)
                found = dict(conn.execute(
                    "SELECT term, docs FROM fts_terms WHERE term = ANY(%s) AND docs > 0", (wanted,)
                ).fetchall())
            if generation is not None:
                for term in wanted:  # 0: a term no item holds, remembered too
                    self._answers.put(generation, ("docs", term), found.get(term, 0))
            known.update(found)
        return {t: n for t, n in known.items() if n}

    def terms_with_prefix(self, prefix: str, limit: int = 64) -> dict[str, int]:
        if not prefix:
            return {}
        # The range FTS5's vocabulary answers (terms compare by code point: COLLATE "C").
        upper = prefix[:-1] + chr(ord(prefix[-1]) + 1)
        vocabulary = self._held_vocabulary()
        if vocabulary is not None:
            return vocabulary.with_prefix(prefix, upper, limit)
        generation = self._snapshot_generation()
        key = ("prefix", prefix, limit)
        if generation is not None:
            hit = self._answers.get(generation, key)
            if hit is not None:
                return dict(hit)  # type: ignore[call-overload]
        with self._conn() as conn:
            self._settled(conn)
            found = dict(conn.execute(
                "SELECT term, docs FROM fts_terms WHERE term >= %s AND term < %s AND docs > 0 "
                "ORDER BY term LIMIT %s", (prefix, upper, limit),
            ).fetchall())
        if generation is not None:
            self._answers.put(generation, key, tuple(found.items()), len(found))
        return found

    def terms_with_prefixes(self, prefixes: Sequence[str], limit: int = 64) -> dict[str, dict[str, int]]:
        """Every prefix's terms in one statement (a question's word forms asked one
        prefix at a time were one to four round trips)."""
        vocabulary = self._held_vocabulary()
        if vocabulary is not None:
            return {p: vocabulary.with_prefix(p, p[:-1] + chr(ord(p[-1]) + 1), limit) if p else {}
                    for p in prefixes}
        generation = self._snapshot_generation()
        out: dict[str, dict[str, int]] = {}
        todo = []
        for prefix in dict.fromkeys(p for p in prefixes if p):
            hit = self._answers.get(generation, ("prefix", prefix, limit)) if generation is not None else None
            if hit is None:
                todo.append(prefix)
            else:
                out[prefix] = dict(hit)  # type: ignore[call-overload]
        if todo:
            with self._conn() as conn:
                self._settled(conn)
                rows = conn.execute(
                    "SELECT p.prefix, t.term, t.docs FROM unnest(%s::text[], %s::text[]) AS p(prefix, upper) "
                    "CROSS JOIN LATERAL (SELECT term, docs FROM fts_terms WHERE term >= (p.prefix COLLATE \"C\") "
                    "AND term < (p.upper COLLATE \"C\") AND docs > 0 ORDER BY term LIMIT %s) t",
                    (todo, [p[:-1] + chr(ord(p[-1]) + 1) for p in todo], limit),
                ).fetchall()
            found: dict[str, dict[str, int]] = {p: {} for p in todo}
            for prefix, term, docs in rows:
                found[prefix][term] = docs
            for prefix, terms in found.items():
                if generation is not None:
                    self._answers.put(generation, ("prefix", prefix, limit), tuple(terms.items()), len(terms))
                out[prefix] = terms
        return {p: out.get(p, {}) for p in prefixes}

    # -- edges ---------------------------------------------------------------------------

    def _edges(self, where: str, order: str, params: Sequence) -> list[EdgeRow]:
        # Sorted here, by code point as COLLATE "C" would: the server's sort of a few
        # thousand edges by a "C" key took ten times its index scan.
        column = {"src": 0, "dst": 2, "dst_name": 3}[order]
        with self._conn() as conn:
            rows = conn.execute(
                f"SELECT src, kind, dst, dst_name, id FROM edges WHERE {where}", params,
            ).fetchall()
        rows.sort(key=lambda r: (r[column], r[4]))
        return [EdgeRow(*r[:4]) for r in rows]

    def edges_from(self, ids: Sequence[str], kinds: Sequence[str] | None = None) -> list[EdgeRow]:
        if not ids:
            return []
        if kinds:
            return self._edges("src = ANY(%s) AND kind = ANY(%s)", "src", (list(ids), list(kinds)))
        return self._edges("src = ANY(%s)", "src", (list(ids),))

    def edges_to(self, ids: Sequence[str], names: Sequence[str]) -> list[EdgeRow]:
        if not (ids and names):
            out = self._edges("dst = ANY(%s)", "dst", (list(ids),)) if ids else []
            return out + (self._edges("dst_name = ANY(%s)", "dst_name", (list(names),)) if names else [])
        # Both in one round trip, in the order of two reads: by id, then by name.
        with self._conn() as conn:
            rows = conn.execute(
                "SELECT false, src, kind, dst, dst_name, id FROM edges WHERE dst = ANY(%s) UNION ALL "
                "SELECT true, src, kind, dst, dst_name, id FROM edges WHERE dst_name = ANY(%s)",
                (list(ids), list(names)),
            ).fetchall()
        rows.sort(key=lambda r: (r[0], r[4] if r[0] else r[3], r[5]))
        return [EdgeRow(*r[1:5]) for r in rows]

    def all_edges(self) -> list[EdgeRow]:
        with self._conn() as conn:
            rows = conn.execute("SELECT src, kind, dst, dst_name FROM edges ORDER BY id").fetchall()
        return [EdgeRow(*r) for r in rows]

    def _links_by_key(self, name: str) -> tuple[list[str], list[tuple[str, str]]]:
        with self._conn() as conn:
            paths = [r[0] for r in conn.execute(f"SELECT path FROM files WHERE {FILE_NAME_KEY} = %s", (name,))]
            links = [(r[0], r[1]) for r in conn.execute(
                "SELECT f.path, e.dst_name FROM edges e JOIN files f ON f.id = e.file_id "
                f"WHERE e.kind = 'links_to' AND {LINK_NAME_KEY.replace('dst_name', 'e.dst_name')} = %s",
                (name,),
            )]
        return paths, links

    def _links_like(
        self, file_patterns: list[str], link_patterns: list[str]
    ) -> tuple[list[str], list[tuple[str, str]]]:
        with self._conn() as conn:
            paths = [r[0] for r in conn.execute("SELECT path FROM files WHERE path ILIKE ANY(%s)", (file_patterns,))]
            links = [(r[0], r[1]) for r in conn.execute(
                "SELECT f.path, e.dst_name FROM edges e JOIN files f ON f.id = e.file_id "
                "WHERE e.kind = 'links_to' AND e.dst_name ILIKE ANY(%s)", (link_patterns,)
            )]
        return paths, links

    # -- vectors: an item's vector is the cache row for (model, its content hash) --------

    def items_missing_vectors(self, model: str) -> list[tuple[int, str]]:
        with self._conn() as conn:
            return [
                tuple(r)
                for r in conn.execute(
                    "SELECT i.rowid, i.content_hash FROM items i WHERE NOT EXISTS ("
                    "SELECT 1 FROM embedding_cache c WHERE c.model = %s AND c.hash = i.content_hash) "
                    "ORDER BY i.rowid",
                    (model,),
                )
            ]

    def _content_hashes(self, rowids: list[int]) -> dict[int, str]:
        with self._conn() as conn:
            return dict(conn.execute(
                "SELECT rowid, content_hash FROM items WHERE rowid = ANY(%s)", (rowids,)
            ).fetchall())

    def _vector_rows(self, model: str) -> list[tuple[int, bytes]]:
        # pgvector's binary form, decoded by _matrix in one numpy pass (a vector object per
        # row took 1.3 s for 20,000 vectors, this 0.5 s).
        with self._conn() as conn, conn.cursor(binary=True) as cur:
            return cur.execute(
                "SELECT i.rowid, vector_send(c.vec) FROM items i JOIN embedding_cache c "
                "ON c.model = %s AND c.hash = i.content_hash ORDER BY i.rowid",
                (model,),
            ).fetchall()

    @staticmethod
    def _matrix(vectors: list[bytes]) -> np.ndarray:
        import numpy as np

        # vector_send: int16 size, int16 unused, then the floats, big-endian
        dim = (len(vectors[0]) - 4) // 4
        packed = np.frombuffer(b"".join(vectors), dtype=np.dtype([("head", ">i4"), ("vec", ">f4", (dim,))]))
        return packed["vec"].astype(np.float32)

    def _vector_counts(self) -> dict[str, int]:
        with self._conn() as conn:
            return dict(
                conn.execute(_VECTORS_BY_MODEL).fetchall()
            )

    def nearest(
        self, model: str, vector: np.ndarray, limit: int, among: Collection[int] | None = None
    ) -> list[tuple[int, float]]:
        """(rowid, cosine similarity) of the ``limit`` items closest to ``vector``, through
        the HNSW index of the shared cache (iterative scan, so items of other workspaces
        in the cache, or outside ``among``, do not crowd this one's out). A small ``among``
        (a folder, a tag) is searched exactly over its own vectors instead, and so is a
        question no closer to the stored vectors than a random direction (``_far_line``)."""
        import numpy as np

        v = np.ascontiguousarray(vector, dtype=np.float32).reshape(-1)
        if among is not None and len(among) <= EXACT_AMONG:
            # Only vectors of the query's size: another size is another model's, never compared.
            found = {r: m for r, m in self.vectors_for(model, list(among)).items() if m.shape[0] == v.shape[0]}
            rowids = np.fromiter(found, dtype=np.int64, count=len(found))
            matrix = np.vstack(list(found.values())) if found else np.zeros((0, v.shape[0]), dtype=np.float32)
            return exact_nearest(rowids, matrix, v, limit)
        ranked = self._ranked(model, v, limit, among, exact=False)
        if ranked and ranked[0][1] <= self._far_line(model, int(v.shape[0])):
            ranked = self._ranked(model, v, limit, among, exact=True)
        return ranked

    def _ranked(
        self, model: str, v: np.ndarray, limit: int, among: Collection[int] | None, exact: bool
    ) -> list[tuple[int, float]]:
        """The ``limit`` nearest items through the HNSW index, or by reading every vector
        of the model (``exact``)."""
        with self._conn() as conn, _vectors(conn).transaction():
            return self._ranked_in(conn, model, [v], limit, among, exact)[0]

    def _ranked_in(
        self, conn: "psycopg.Connection", model: str, vs: Sequence[np.ndarray], limit: int,
        among: Collection[int] | None, exact: bool,
    ) -> list[list[tuple[int, float]]]:
        """``_ranked`` for each of ``vs`` (of one size) in the open transaction of ``conn``,
        their statements sent together (one round trip)."""
        dim = int(vs[0].shape[0])
        cast = sql.SQL("c.vec::vector({})").format(sql.Literal(dim))
        among_clause = sql.SQL("AND i.rowid = ANY(%s) " if among is not None else "")
        # "+ 0" orders by an expression the index does not cover: a scan of every vector.
        order = sql.SQL("({} <=> %s::vector({})) + 0" if exact else "{} <=> %s::vector({})").format(
            cast, sql.Literal(dim))
        statement = sql.SQL(
            "SELECT i.rowid, 1 - ({cast} <=> %s::vector({d})) AS sim FROM embedding_cache c "
            "JOIN items i ON i.content_hash = c.hash "
            "WHERE c.model = %s AND c.dim = {d} {among} ORDER BY {order} LIMIT %s"
        ).format(cast=cast, d=sql.Literal(dim), among=among_clause, order=order)
        if not exact:
            conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
            conn.execute("SET LOCAL hnsw.ef_search = %s" % ef_search(limit))
        with conn.pipeline():
            cursors = [conn.execute(statement, (v, model) + ((list(among),) if among is not None else ()) + (v, limit))
                       for v in vs]
        # relaxed_order: the scan may return near ties slightly out of order.
        return [sorted(((int(r), float(s)) for r, s in cur.fetchall()), key=lambda rs: -rs[1]) for cur in cursors]

    def _far_line(self, model: str, dim: int) -> float:
        """The similarity under which a question's best match says it is unlike every
        stored vector: the best graph matches of FAR_PROBES random directions, their mean
        plus four standard deviations. There the walk loses most true neighbours
        (recall@10 0.3-0.65 at 120,000 clustered vectors, at every ``ef_search`` pgvector
        allows), so such a question is searched exactly; questions of the stored vectors'
        kind match far closer than random directions and keep the graph. Measured again
        when the model's vector count has moved by a quarter."""
        import numpy as np

        count = self.vector_models().get(model, 0)
        key = (model, dim)
        held = self._far_lines.get(key)
        if held is not None and held[0] <= count <= held[0] * 1.25:
            return held[1]
        probes = np.random.default_rng(FAR_SEED).standard_normal((FAR_PROBES, dim)).astype(np.float32)
        with self._conn() as conn, _vectors(conn).transaction():
            best = [found[0][1] for found in self._ranked_in(conn, model, list(probes), 10, None, exact=False) if found]
        line = float(np.mean(best) + 4 * np.std(best)) if best else -1.0
        self._far_lines[key] = (count, line)
        return line

    def vectors_for(self, model: str, rowids: Sequence[int]) -> dict[int, np.ndarray]:
        wanted = list(dict.fromkeys(int(r) for r in rowids))
        if not wanted:
            return {}
        with self._conn() as conn, _vectors(conn).cursor(binary=True) as cur:
            rows = cur.execute(
                "SELECT i.rowid, c.vec FROM items i JOIN embedding_cache c "
                "ON c.model = %s AND c.hash = i.content_hash WHERE i.rowid = ANY(%s)",
                (model, wanted),
            ).fetchall()
        return {int(r): _array(vec) for r, vec in rows}

    # -- embedding cache ------------------------------------------------------------------

    def cached_vectors(self, model: str, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        wanted = list(dict.fromkeys(hashes))
        if not wanted:
            return {}
        with self._conn() as conn, _vectors(conn).cursor(binary=True) as cur:
            rows = cur.execute(
                "SELECT hash, dim, vec FROM embedding_cache WHERE model = %s AND hash = ANY(%s)",
                (model, wanted),
            ).fetchall()
        found: dict[str, np.ndarray] = {}
        for h, dim, v in rows:
            vec = _array(v)
            if len(vec) == dim:  # a row whose size disagrees is treated as absent
                found[h] = vec
        return found

    def _put_cache_rows(self, model: str, rows: Sequence[tuple[str, np.ndarray]]) -> None:
        # Sorted, so two writers of overlapping hashes lock rows in one order (no deadlock).
        import numpy as np

        unique = {h: np.ascontiguousarray(v, dtype=np.float32) for h, v in rows}
        if not unique:
            return
        with self._conn() as conn:  # the open write's
            _vectors(conn)
            for dim in {int(v.shape[0]) for v in unique.values()} - self._hnsw_dims:
                if self._deferred_dims is not None and not self._hnsw_exists(conn, dim):
                    self._deferred_dims.add(dim)  # built once, over all rows, at the end of the load
                else:
                    self._ensure_hnsw(conn, dim)
            # A row that is already there with the same vector is left alone: copying an index
            # into a database that shares its cache rewrites nothing (nor its HNSW graph).
            upsert = (
                "ON CONFLICT (model, hash) DO UPDATE SET dim = excluded.dim, vec = excluded.vec "
                "WHERE embedding_cache.dim <> excluded.dim OR embedding_cache.vec <> excluded.vec"
            )
            with conn.cursor() as cur:
                if len(unique) < _COPY_ROWS:
                    cur.executemany(
                        f"INSERT INTO embedding_cache(model, hash, dim, vec) VALUES (%s, %s, %s, %s) {upsert}",
                        [(model, h, int(unique[h].shape[0]), unique[h]) for h in sorted(unique)],
                    )
                    return
                cur.execute(
                    "CREATE TEMP TABLE _sc_load_vectors (hash text, dim integer, vec vector) ON COMMIT DROP"
                )
                # Binary: pgvector's text form is built float by float in Python, 15x slower.
                with cur.copy("COPY _sc_load_vectors FROM STDIN (FORMAT BINARY)") as copy:
                    copy.set_types(["text", "int4", "vector"])
                    for h in sorted(unique):
                        copy.write_row((h, int(unique[h].shape[0]), unique[h]))
                cur.execute(
                    "INSERT INTO embedding_cache(model, hash, dim, vec) SELECT %s, hash, dim, vec "
                    f"FROM _sc_load_vectors ORDER BY hash {upsert}",
                    (model,),
                )
                cur.execute("DROP TABLE _sc_load_vectors")

    @contextmanager
    def deferred_vector_index(self, maintenance_work_mem: str = "2GB") -> Iterator[None]:
        """For a bulk load (``store copy``, a first index of a large corpus): vectors of a
        size that has no HNSW index yet get it once at the end, built over all rows, which
        is many times faster than growing the graph row by row. Sizes already indexed stay
        indexed. The graph must fit in ``maintenance_work_mem`` for a fast build (about
        1.5-2x the vectors). Should the load die first, searches still answer (exactly,
        without the index) and the next write of that size builds it."""
        self._deferred_dims = set()
        try:
            yield
        finally:
            dims, self._deferred_dims = self._deferred_dims, None
            for dim in sorted(dims):
                with self._conn() as conn:
                    conn.execute(sql.SQL("SET maintenance_work_mem = {}").format(sql.Literal(maintenance_work_mem)))
                    try:
                        with conn.transaction():
                            self._ensure_hnsw(conn, dim)
                    finally:
                        conn.execute("RESET maintenance_work_mem")
            with self._conn() as conn:
                # Statistics of the loaded rows now: until autovacuum came by, the planner
                # took the cache for nearly empty and scanned every vector (330 ms at 20k).
                conn.execute("ANALYZE embedding_cache")

    @contextmanager
    def first_load(self, files: int) -> Iterator[None]:
        """Around an index run about to write ``files`` files: into an empty workspace and
        at least ``FIRST_LOAD_FILES`` of them, the indexes and keys of ``_LOAD_INDEXES``
        are dropped and built once at the end over all rows, cheaper than growing them
        row by row (the statement that wrote the postings took 5.7 s of this repository's
        cold index with the postings' B-trees, 2.0 s without, and building them afterwards
        0.5 s; the edges' foreign key was 0.39 of their 0.47 s). Meanwhile a search reads
        every posting instead of a term's: slower, the same answers; a second writer takes
        turns with the load (``_DELETE_FILES`` does the foreign keys' cascade). A run that
        dies before its end leaves them missing; the next run builds them first."""
        if files >= FIRST_LOAD_FILES:
            import numpy  # noqa: F401 - before the parse workers fork: they group postings with it

        names = [name for name, *_ in _LOAD_INDEXES]
        check = (
            "WITH s AS (SELECT oid FROM pg_namespace WHERE nspname = current_schema()) "
            "SELECT NOT EXISTS (SELECT 1 FROM files), ARRAY(SELECT relname::text FROM pg_class "
            "WHERE relnamespace = (SELECT oid FROM s) AND relname = ANY(%s) AND relkind = 'i' "
            "UNION SELECT conname::text FROM pg_constraint WHERE connamespace = (SELECT oid FROM s) "
            "AND conname = ANY(%s))"
        )
        with self._conn() as conn:  # one read, without the write lock, nearly always all there is
            empty, present = _one(conn.execute(check, (names, names)))
        defer = bool(empty) and files >= FIRST_LOAD_FILES
        if defer or len(present) < len(names):
            with self._write() as conn:
                empty, present = _one(conn.execute(check, (names, names)))  # again, under the lock
                defer = bool(empty) and files >= FIRST_LOAD_FILES
                if defer:
                    for name, _, drop in _LOAD_INDEXES:
                        if name in present:
                            conn.execute(drop)
                    # Room on each page for the terms' new counts: an update in place
                    # (HOT, no index entry) cost less than half of one moved to another
                    # page, and a load updates every common term once a batch.
                    conn.execute(f"ALTER TABLE fts_terms SET (fillfactor = {_TERMS_FILLFACTOR})")
                else:
                    self._build_load_indexes(conn, present)
        self._local.load_terms = _TermIds() if defer else None
        try:
            yield
        finally:
            self._local.load_terms = None
            if defer:
                self._build_after_load(check, names)

    def _build_after_load(self, check: str, names: list[str]) -> None:
        """The end of a first load: the postings' primary key built on a connection of its
        own while the rest are built on this one (on two cores, the index run's last
        half second was these builds one after another). Each build is one transaction,
        so a run killed meanwhile leaves whole indexes or none, and the next run builds
        what is missing."""
        failed: list[BaseException] = []

        def build_key() -> None:
            try:
                with self._pooled() as other, other.transaction():
                    self._build_load_indexes(other, present, only=("fts_postings_pkey",))
            except BaseException as exc:  # noqa: BLE001 - raised below, in the index run's thread
                failed.append(exc)

        with self._conn() as conn:
            present = _one(conn.execute(check, (names, names)))[1]
        key = threading.Thread(target=build_key, name="smartcontext-build-key", daemon=True)
        key.start()
        try:
            # committed before the key's build takes its table lock to finish
            with self._write() as conn:
                self._build_load_indexes(conn, [*present, "fts_postings_pkey"])
        finally:
            key.join()
        if failed:
            raise failed[0]

    @staticmethod
    def _build_load_indexes(conn: "psycopg.Connection", present: Collection[str],
                            only: Collection[str] | None = None) -> None:
        for name, statements, _ in _LOAD_INDEXES:
            if name not in present and (only is None or name in only):
                for statement in statements.split("; "):
                    conn.execute(statement)

    def _hnsw_exists(self, conn: "psycopg.Connection", dim: int) -> bool:
        return conn.execute(
            "SELECT 1 FROM pg_indexes WHERE schemaname = %s AND indexname = %s",
            (SHARED_SCHEMA, f"embedding_cache_hnsw_{dim}"),
        ).fetchone() is not None

    def _ensure_hnsw(self, conn: "psycopg.Connection", dim: int) -> None:
        """An HNSW index (cosine) over the cache's vectors of size ``dim``."""
        if 0 < dim <= _HNSW_MAX_DIM:
            name = f"embedding_cache_hnsw_{dim}"
            if not self._hnsw_exists(conn, dim):
                # Two workspaces creating the same index at once would collide.
                conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", (_BOOTSTRAP_LOCK, dim))
                conn.execute(
                    sql.SQL(
                        "CREATE INDEX IF NOT EXISTS {} ON {}.embedding_cache USING hnsw "
                        "((vec::vector({})) vector_cosine_ops) WITH (m = {}, ef_construction = {}) WHERE dim = {}"
                    ).format(sql.Identifier(name), sql.Identifier(SHARED_SCHEMA), sql.Literal(dim),
                             sql.Literal(HNSW_M), sql.Literal(HNSW_EF_CONSTRUCTION), sql.Literal(dim))
                )
        self._hnsw_dims.add(dim)

    def _delete_cached_vectors(self, model: str | None) -> int:
        """The cache is shared by every workspace in the database: this clears it for all."""
        with self._conn() as conn:
            if model is None:
                return conn.execute("DELETE FROM embedding_cache").rowcount
            return conn.execute("DELETE FROM embedding_cache WHERE model = %s", (model,)).rowcount

    # -- export --------------------------------------------------------------------------

    def _file_paths(self) -> list[str]:
        with self._conn() as conn:
            return [r[0] for r in conn.execute("SELECT path FROM files ORDER BY path COLLATE \"C\"")]

    def _file_record(self, path: str) -> FileRecord | None:
        """The keyword statistics cannot give back the text they were made from, so the
        full-text values are None: a store this is copied into derives them from the
        items' text (as this one did)."""
        with self._snapshot() as conn:
            row = conn.execute(
                "SELECT id, path, mtime_ns, size, hash, language, source, module, warnings "
                "FROM files WHERE path = %s", (path,),
            ).fetchone()
            if row is None:
                return None
            edges = [
                Edge(src, kind, dst=dst, dst_name=dst_name)
                for src, kind, dst, dst_name in conn.execute(
                    "SELECT src, kind, dst, dst_name FROM edges WHERE file_id = %s ORDER BY id",
                    (row[0],),
                )
            ]
            outer, self._local.snap = getattr(self._local, "snap", None), conn
            try:  # the items in the same snapshot
                stored = self._read_items("i.file_id = %s", (row[0],))
            finally:
                self._local.snap = outer
        items = [(si.item, si.fqname, si.sig_tokens, si.content_hash, None, None) for si in stored]
        path_, mtime_ns, size, hash_, language, source, module, warnings = row[1:9]
        return FileRecord(path_, mtime_ns, size, hash_, language, source, module, list(warnings), items, edges)

    # -- administration --------------------------------------------------------------------

    def drop(self) -> None:
        """Delete this workspace's schema and everything in it (the shared embedding cache
        stays). The store is closed afterwards."""
        with self._conn() as conn:
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(self.schema)))
        self.close()


@dataclass
class WorkspaceInfo:
    """One workspace of a database, as ``smartcontext store list`` shows it."""

    name: str
    schema: str
    files: int
    items: int

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def _connect(conninfo: str) -> "psycopg.Connection":
    if _IMPORT_ERROR is not None:
        raise StoreUnavailable("pip install 'smartcontext[postgres]' for PostgreSQL stores")
    try:
        return psycopg.connect(conninfo, autocommit=True, connect_timeout=10)
    except psycopg.OperationalError as exc:
        raise _connect_error(conninfo, exc) from exc


def _info(conn: "psycopg.Connection", schema: str) -> WorkspaceInfo | None:
    s = sql.Identifier(schema)
    row = conn.execute(
        "SELECT count(*) FROM pg_tables WHERE schemaname = %s AND tablename IN ('meta', 'files', 'items')",
        (schema,),
    ).fetchone()
    if row is None or row[0] < 3:  # not a workspace of ours (or one whose creation failed half-way)
        return None
    name = conn.execute(sql.SQL("SELECT value FROM {}.meta WHERE key = 'workspace'").format(s)).fetchone()
    counts = conn.execute(
        sql.SQL("SELECT (SELECT count(*) FROM {}.files), (SELECT count(*) FROM {}.items)").format(s, s)
    ).fetchone()
    files, items = counts if counts is not None else (0, 0)
    return WorkspaceInfo(name[0] if name else schema[len(_SCHEMA_PREFIX):], schema, files, items)


def list_workspaces(url: str) -> list[WorkspaceInfo]:
    """The workspaces of the database at ``url`` with their sizes, by name; reads only
    (creates no schema, extension or table)."""
    conninfo, _ = split_url(url)
    with _connect(conninfo) as conn:
        schemas = [r[0] for r in conn.execute(
            "SELECT nspname FROM pg_namespace WHERE starts_with(nspname, %s) ORDER BY nspname",
            (_SCHEMA_PREFIX,),
        )]
        found = [_info(conn, schema) for schema in schemas]
    return sorted((w for w in found if w is not None), key=lambda w: w.name)


def workspace_info(url: str, workspace: str) -> WorkspaceInfo | None:
    """``workspace`` of the database at ``url`` with its size, or None when the database
    has no such workspace; reads only."""
    conninfo, _ = split_url(url)
    with _connect(conninfo) as conn:
        return _info(conn, schema_name(workspace))


def drop_workspace(url: str, workspace: str | None = None, *, clear_cache: bool = False) -> None:
    """Delete a workspace's tables from a database (``smartcontext index --rebuild`` and
    tests); the shared embedding cache is kept unless ``clear_cache`` (which empties it
    for every workspace of the database)."""
    conninfo, from_url = split_url(url)
    schema = schema_name(workspace or from_url or "default")
    if _IMPORT_ERROR is not None:
        raise StoreUnavailable("pip install 'smartcontext[postgres]' for PostgreSQL stores")
    try:
        with psycopg.connect(conninfo, autocommit=True, connect_timeout=10) as conn:
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))
            if clear_cache and conn.execute(
                "SELECT 1 FROM pg_tables WHERE schemaname = %s AND tablename = 'embedding_cache'",
                (SHARED_SCHEMA,),
            ).fetchone():
                conn.execute(sql.SQL("TRUNCATE {}.embedding_cache").format(sql.Identifier(SHARED_SCHEMA)))
    except psycopg.OperationalError as exc:
        raise _connect_error(conninfo, exc) from exc


__all__ = [
    "PostgresStore", "WorkspaceInfo", "drop_workspace", "is_postgres_url", "list_workspaces", "schema_name",
    "split_url", "workspace_info",
]
