"""The store interface: every query the engine makes of an index, and the data it returns.

Retrieval, the indexer and the workspace talk to a :class:`Store` only through these
methods and types. A :class:`Store` is three narrow interfaces in one: an
:class:`ItemStore` (files, items, edges, meta), a :class:`KeywordIndex` over its items and
a :class:`VectorIndex` of their vectors. The SQLite store (``store/sqlite.py``) is one
implementation, and a PostgreSQL store is another that needs no change outside
``store/``; what both do alike lives once in ``store/shared.py``. No caller sees SQL,
FTS5 query syntax, connections or locks.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, runtime_checkable

from ..model import Edge, Item

if TYPE_CHECKING:  # numpy only in annotations: a keyword-only question never loads it
    import numpy as np


# The change log (:meth:`Store.changed_paths`) keeps the last CHANGES_KEPT generations,
# pruned every CHANGES_PRUNE_EVERY: a reader further behind reads the whole index again,
# which past a few thousand changed files costs no more than patching.
CHANGES_KEPT = 4096
CHANGES_PRUNE_EVERY = 256


class SnapshotMoved(Exception):
    """A question read on a database server's snapshot begun on the index's last known
    state (``snapshot(assume_state=True)``), and the state had moved: its answer may be
    of the state before, so the question is asked again on a snapshot begun as usual."""


@dataclass
class FileState:
    """What the index knows about one file, to decide whether it changed."""

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


class CatalogueRow(NamedTuple):
    """The light columns of one item: what the in-memory catalogue is built from."""

    rowid: int
    id: str
    path: str
    kind: str
    name: str
    qualname: str
    fqname: str
    parent_id: str | None
    tokens: int
    sig_tokens: int
    start_line: int
    end_line: int


class EdgeRow(NamedTuple):
    src: str
    kind: str
    dst: str | None
    dst_name: str | None


@dataclass
class FileRecord:
    """Everything a store holds about one file, as :meth:`Store.replace_file` takes it:
    what ``store copy`` moves from one store to another without parsing the file again.
    Each of ``items`` is ``(item, fqname, sig_tokens, content_hash, fts_body, fts_name)``
    (the full-text values may be None: derived from the item)."""

    path: str
    mtime_ns: int
    size: int
    hash: str
    language: str
    source: str
    module: str
    warnings: list[str]
    items: list[tuple]
    edges: list[Edge]


class KeywordTerm(NamedTuple):
    """One OR-ed clause of a keyword query: a word, or several words that must appear
    next to each other (a phrase), counted ``weight`` times in the score."""

    text: str
    weight: int = 1


# An item row for ``replace_file``: ``(item, fqname, sig_tokens, content_hash)``,
# optionally followed by the full-text body and the full-text name (default: derived
# from the item's text and qualified name).
ItemRow = tuple


@runtime_checkable
class ItemStore(Protocol):
    """Files, their items and edges, meta and the change log: what the indexer writes and
    retrieval reads back. Readers may run on several threads; writes are serialised.

    Every write that changes items or edges bumps :meth:`generation`, so callers can
    cache derived structures (catalogue, vector matrix) per generation.
    """

    location: str
    """Where the index lives (a file path or a database URL), for messages."""

    @property  # read-only here, so a backend may give a narrower function (a staticmethod)
    def prepare_file(self) -> Callable[[Sequence[ItemRow]], Any] | None:
        """A pure, picklable function of one file's item rows (as :meth:`replace_file`
        takes them) that the indexer runs in its worker processes, so the writing process
        only writes; its result comes back to :meth:`replace_file` as ``prepared``. None
        when the backend needs no preparation."""

    notices: list[str]
    """Things the user should hear about opening this index (e.g. an old format that
    was reset and will be rebuilt)."""

    def close(self) -> None: ...

    def check(self, full: bool = False) -> str | None:
        """None when the index is sound, else a short description of the damage (damage
        met by earlier queries; ``full`` also scans the whole index)."""
        ...

    # -- transactions ------------------------------------------------------------
    def transaction(self) -> AbstractContextManager[None]:
        """One atomic write; inside :meth:`batch` it joins the batch."""
        ...

    def batch(self) -> AbstractContextManager["Store"]:
        """Group many writes (whole files) into one atomic commit."""
        ...

    def compact(self) -> bool:
        """Reclaim space freed by writes, when worth it; returns whether it did."""
        ...

    # -- meta ----------------------------------------------------------------------
    def generation(self) -> int: ...

    def changed_paths(self, since: int) -> set[str] | None:
        """The item paths whose rows (items, names, tags) changed after generation
        ``since``, so a cache of the light rows can re-read just those; None when the
        store no longer remembers that far back (re-read everything). Vectors are not
        changes here: they bump only :meth:`VectorIndex.vector_generation`."""
        ...

    def get_meta(self, key: str, default: str | None = None) -> str | None: ...

    def set_meta(self, key: str, value: str) -> None: ...

    # -- files ---------------------------------------------------------------------
    def file_states(self, paths: Sequence[str] | None = None) -> dict[str, FileState]:
        """The stored state of every file, or of ``paths`` only (those not stored are absent)."""
        ...

    def touch_file(self, path: str, mtime_ns: int, size: int) -> None:
        """Record a new mtime/size for a file whose content did not change."""
        ...

    def delete_files(self, paths: Iterable[str]) -> int: ...

    def replace_file(
        self, *, path: str, mtime_ns: int, size: int, hash: str, language: str, source: str,
        module: str, warnings: Sequence[str], items: Sequence[ItemRow], edges: Sequence[Edge],
        prepared: Any = None,
    ) -> None:
        """Replace everything known about ``path`` (items, edges, full text) atomically.
        ``prepared`` is ``prepare_file`` of the same items when the caller ran it."""
        ...

    def load_files(self, records: Sequence[FileRecord]) -> None:
        """Replace each of these files as :meth:`replace_file` would, in one atomic write
        and as few statements as the backend allows (``store copy``)."""
        ...

    def file_records(self, paths: Sequence[str] | None = None) -> Iterator[FileRecord]:
        """Every file (or these files) as it was written, in path order, for copying."""
        ...

    # -- items ---------------------------------------------------------------------
    def items_by_rowids(self, rowids: Sequence[int]) -> dict[int, StoredItem]: ...

    def items_by_ids(self, ids: Sequence[str]) -> dict[str, StoredItem]: ...

    def items_in_paths(self, paths: Sequence[str]) -> list[StoredItem]: ...

    def item_light_rows(self, paths: Sequence[str] | None = None) -> list[CatalogueRow]:
        """The light columns of every item, or of the items at ``paths``, by row id."""
        ...

    def item_count(self) -> int: ...

    def kind_counts(self) -> dict[str, int]: ...

    def file_warnings(self) -> dict[str, list[str]]: ...

    def item_sizes(self, paths: Sequence[str], kind: str) -> list[tuple[int, str, str, int]]:
        """(rowid, path, qualname, tokens) of the items of ``kind`` at ``paths``, in row id
        order: the narrow read of one chat's messages (``chat.rows``), without the
        catalogue's other columns."""
        ...

    def item_size_columns(self, paths: Sequence[str], kind: str) -> dict[str, tuple[list[int], list[str], list[int]]]:
        """``item_sizes`` by path, as columns: ``{path: (rowids, qualnames, tokens)}`` in
        row id order (a path with no such item is left out). A store may read them
        without making a Python row per item (a long chat's 50,000 messages)."""
        ...

    def tag_rows(self, paths: Sequence[str] | None = None) -> list[tuple[int, str]]:
        """(rowid, tag) for every tag in every item's ``meta["tags"]`` (of the items at
        ``paths``, when given), as written."""
        ...

    # -- edges ---------------------------------------------------------------------
    def edges_from(self, ids: Sequence[str], kinds: Sequence[str] | None = None) -> list[EdgeRow]:
        """Edges leaving the items ``ids`` (of ``kinds`` only, when given), by source id
        and then in the order they were written."""
        ...

    def edges_to(self, ids: Sequence[str], names: Sequence[str]) -> list[EdgeRow]: ...

    def all_edges(self) -> list[EdgeRow]: ...

    def links_ending(self, name: str) -> tuple[list[str], list[tuple[str, str]]]:
        """The indexed file paths whose last part is ``name`` or ``name.md``, and the
        (linking file, target) of the ``links_to`` edges whose target's last part is
        ``name`` (targets as ``notes.links.Link.target``), ignoring case: a superset (a
        letter outside ASCII matches any text), for the caller to narrow."""
        ...


@runtime_checkable
class KeywordIndex(Protocol):
    """Full-text ranking of the items of an :class:`ItemStore`, by row id."""

    def keyword_search(
        self, terms: Sequence[KeywordTerm], limit: int, files_only: bool = False,
        within: Collection[int] | None = None,
    ) -> list[tuple[int, float]]:
        """BM25 over item names, paths and bodies for any of ``terms``; (rowid, score),
        higher is better. ``files_only`` ranks whole files instead of symbols.
        ``within``: the scope, only these rows (one chat's messages, a filtered search),
        the best ``limit`` of them, filtered by the backend as it ranks."""
        ...

    def keyword_search_with_files(
        self, terms: Sequence[KeywordTerm], limit: int, is_file_row: Callable[[int], bool]
    ) -> tuple[list[tuple[int, float]], list[tuple[int, float]]]:
        """``keyword_search(terms, limit)`` and ``keyword_search(terms, limit,
        files_only=True)`` together, in one ranking where the backend can:
        ``is_file_row(rowid)`` tells which rows stand for a whole file."""
        ...

    def doc_freqs(self, terms: Sequence[str]) -> dict[str, int]:
        """How many items hold each (single-word, lower-case) term; absent terms are left out."""
        ...

    def terms_with_prefix(self, prefix: str, limit: int = 64) -> dict[str, int]:
        """Indexed (single-word, lower-case) terms starting with ``prefix``, with their
        document frequencies: at most ``limit``, in term order. For word-form matching
        at query time ("rewriting" -> rewrite, rewriter)."""
        ...

    def terms_with_prefixes(self, prefixes: Sequence[str], limit: int = 64) -> dict[str, dict[str, int]]:
        """``terms_with_prefix`` of each prefix, by prefix: one round trip where the index
        is a server."""
        ...


@runtime_checkable
class VectorIndex(Protocol):
    """Item vectors and the embedding cache: an item's vector is the cached embedding
    (by model and text hash) of its content hash, so it is stored once."""

    @property
    def searches_vectors(self) -> bool:
        """True when the backend answers :meth:`nearest` from its own vector index (pgvector
        HNSW), so retrieval asks it rather than holding every vector in memory; False when
        retrieval's exact in-memory search is the faster path (SQLite). Read-only: a
        backend may decide it from what it holds."""
        ...

    def vector_generation(self) -> int:
        """Bumped by every write of vectors (``cache_vectors``, ``put_vectors``), so a
        background embedder storing batch after batch never invalidates the catalogue."""
        ...

    def items_missing_vectors(self, model: str) -> list[tuple[int, str]]:
        """(rowid, content_hash) of the items with no vector for ``model``."""
        ...

    def put_vectors(self, model: str, rowids: Sequence[int], matrix: np.ndarray) -> None: ...

    def load_vectors(self, model: str) -> tuple[np.ndarray, np.ndarray]:
        """(rowids, float32 matrix) of every item with a vector for ``model``."""
        ...

    def vector_models(self) -> dict[str, int]: ...

    def nearest(
        self, model: str, vector: np.ndarray, limit: int, among: Collection[int] | None = None
    ) -> list[tuple[int, float]]:
        """(rowid, cosine similarity) of the ``limit`` items nearest ``vector``, best first
        (exact in SQLite, the HNSW index in PostgreSQL); ``among`` restricts the search to
        those row ids before the top ``limit`` are cut."""
        ...

    def vectors_for(self, model: str, rowids: Sequence[int]) -> dict[int, np.ndarray]:
        """The ``model`` vectors of these items (those that have one), by row id."""
        ...

    # -- embedding cache (vectors by model and text hash) --------------------------
    def cached_vectors(self, model: str, hashes: Sequence[str]) -> dict[str, np.ndarray]: ...

    def cache_vectors(self, model: str, rows: Sequence[tuple[str, np.ndarray]]) -> None:
        """Store (hash, vector) pairs for ``model`` in one atomic write."""
        ...

    def clear_cached_vectors(self, model: str | None = None) -> int: ...


@runtime_checkable
class Store(ItemStore, KeywordIndex, VectorIndex, Protocol):
    """One workspace index: an item store with its keyword and vector indexes. Callers
    that need one part only may ask for that narrow protocol; a backend implements them
    all, usually by subclassing ``store.shared.StoreBase``, which builds what every
    backend does alike (generations and the change log, counts, vector writes, exact
    search, copying) on a few primitives of the backend's own."""

    def counts(self) -> dict[str, int]:
        """``files``, ``items``, ``edges`` and ``vectors`` (items with a vector, summed
        over models)."""
        ...


def exact_nearest(
    rowids: np.ndarray, matrix: np.ndarray, vector: np.ndarray, limit: int
) -> list[tuple[int, float]]:
    """(rowid, cosine) of the ``limit`` rows of ``matrix`` nearest ``vector``, best first;
    empty when there are none or their size differs from the vector's."""
    import numpy as np

    q = np.asarray(vector, dtype=np.float32).reshape(-1)
    if not len(rowids) or matrix.shape[1] != q.shape[0]:
        return []
    norms = np.linalg.norm(matrix, axis=1) * (np.linalg.norm(q) or 1.0)
    sims = (matrix @ q) / np.where(norms == 0, 1.0, norms)
    top = np.argsort(-sims, kind="stable")[:limit]
    return [(int(rowids[i]), float(sims[i])) for i in top]


def like_pattern(name: str) -> str:
    """A LIKE pattern (escape ``\\``) for ``name``: ASCII letters match either case in
    both stores (ILIKE on PostgreSQL); any other character may be cased differently, so
    it matches any run of characters."""
    out: list[str] = []
    for ch in name:
        if not ch.isascii():
            if out[-1:] != ["%"]:
                out.append("%")
        elif ch in "%_\\":
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)
