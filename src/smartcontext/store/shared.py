"""What every store backend does the same way, written once above the backends.

A backend subclasses :class:`StoreBase` and writes only what its database does
differently: the SQL of the narrow interfaces (``store.base``: item store, keyword index,
vector index) and a few private primitives, the abstract methods below (bump a meta
counter, log and read changed paths, count a table, store cache rows, read one file back
for copying). Generations and the change log's pruning, counts, vector writes, exact
vector search, copying files in and out, the text cache and how an item is rebuilt from
its stored parts live here, so the backends cannot drift apart on them.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, TypeVar

from ..model import Edge, Item
from ..words import fts_text
from .base import (
    CHANGES_KEPT, CHANGES_PRUNE_EVERY, FileRecord, ItemRow, KeywordTerm, exact_nearest, like_pattern,
)
from .text import FileData

if TYPE_CHECKING:  # numpy only in annotations: a keyword-only question never loads it
    import numpy as np

# Decoded files kept for reads, by characters: a question reads items of about a hundred
# files, and later questions return to them. Decompressing on every read made warm
# queries on the hub vault about 50% slower than the uncompressed index; 24M characters
# hold all of it (about 15M) and most repositories.
TEXT_CACHE_CHARS = 24_000_000

_T = TypeVar("_T")


class FileTexts:
    """Decoded file texts by (file id, file hash), the least recently read dropped past
    ``max_chars``; shared by reader threads. The hash is part of the key because a file
    id can be reused."""

    def __init__(self, max_chars: int = TEXT_CACHE_CHARS):
        self.max_chars = max_chars
        self._files: OrderedDict[tuple[int, str], FileData] = OrderedDict()
        self._chars = 0
        self._lock = threading.Lock()
        self.changes = 0  # counts the changes of the set of files held

    def clear(self) -> None:
        """Forget every decoded file (a server gone idle gives the memory back)."""
        with self._lock:
            self._files.clear()
            self._chars = 0
            self.changes += 1

    def file_ids(self) -> list[int]:
        """The ids of the files held (any hash)."""
        with self._lock:
            return list({file_id for file_id, _ in self._files})

    def get(
        self, keys: Iterable[tuple[int, str]],
        load: Callable[[list[int]], Iterable[tuple[int, str, bytes]]],
    ) -> dict[int, FileData]:
        """The decoded files of these (file id, file hash) pairs, by file id; ``load(ids)``
        reads (id, hash, stored form) of those not cached. A file whose hash is not the
        one asked for was replaced since the caller read its items (by another process):
        it is left out, so its new text is never sliced with the old rows' spans."""
        out: dict[int, FileData] = {}
        todo: dict[int, str] = {}
        with self._lock:
            for key in set(keys):
                hit = self._files.get(key)
                if hit is None:
                    todo[key[0]] = key[1]
                else:
                    self._files.move_to_end(key)
                    out[key[0]] = hit
        if not todo:
            return out
        fresh: dict[tuple[int, str], FileData] = {}
        for file_id, file_hash, blob in load(list(todo)):
            data = fresh[(file_id, file_hash)] = FileData.unpack(blob)
            if file_hash == todo[file_id]:
                out[file_id] = data
        with self._lock:
            for key, data in fresh.items():
                if key not in self._files:
                    self._chars += len(data.text)
                    self.changes += 1
                self._files[key] = data
            while self._chars > self.max_chars and len(self._files) > 1:
                self._chars -= len(self._files.popitem(last=False)[1].text)
        return out


def item_from_row(
    data: FileData, id_: str, path: str, kind: str, name: str, qualname: str, start: int,
    end: int, parent: str | None, language: str, tokens: int, details_at: int,
    details_len: int, text_at: int, text_len: int,
) -> Item:
    """An item rebuilt from its row and its file's stored form (text and details are
    spans of it, see ``store.text``)."""
    sig, doc, meta = data.details(details_at, details_len)
    return Item(
        id=id_, path=path, kind=kind, name=name, qualname=qualname, start_line=start,
        end_line=end, signature=sig, docstring=doc, text=data.slice(text_at, text_len),
        parent_id=parent, language=language, meta=meta, tokens=tokens,
    )


def fts_values(row: ItemRow) -> tuple[str, str]:
    """(body, name) an item row is indexed with for keyword search: the row's own when it
    carries them (``store copy`` from SQLite), else derived from the item. Names are
    indexed in their own column; the body carries signature, docs and code."""
    item = row[0]
    body = row[4] if len(row) > 4 and row[4] is not None else fts_text(
        item.text if item.text else f"{item.signature}\n{item.docstring}"
    )
    name = row[5] if len(row) > 5 and row[5] is not None else fts_text(item.qualname)
    return body, name


def commonest_size(rows: list[_T], size: Callable[[_T], int]) -> list[_T]:
    """``rows`` of the most common ``size``: vectors of mixed sizes under one model name
    (a model changed its output) are never mixed in one matrix."""
    sizes = {size(r) for r in rows}
    if len(sizes) <= 1:
        return rows
    best = max(sizes, key=lambda d: sum(1 for r in rows if size(r) == d))
    return [r for r in rows if size(r) == best]


class StoreBase(ABC):
    """The shared part of a :class:`~smartcontext.store.base.Store`. A subclass calls
    ``super().__init__()`` and implements the store's narrow interfaces and the abstract
    primitives here; it may override any method below where its database does better
    (PostgreSQL: ``nearest`` through HNSW, ``load_files`` through COPY; SQLite:
    ``keyword_search_with_files`` in one ranking)."""

    def __init__(self) -> None:
        self._memo: dict[str, tuple[int, Any]] = {}
        self._vector_models: tuple[tuple[int, int], dict[str, int]] | None = None

    # -- what the shared methods call (the Store protocol's own methods) ------------
    @abstractmethod
    def transaction(self) -> AbstractContextManager[None]: ...

    @abstractmethod
    def batch(self) -> AbstractContextManager[Any]: ...

    @abstractmethod
    def replace_file(
        self, *, path: str, mtime_ns: int, size: int, hash: str, language: str, source: str,
        module: str, warnings: Sequence[str], items: Sequence[ItemRow], edges: Sequence[Edge],
        prepared: Any = None,
    ) -> None: ...

    @abstractmethod
    def keyword_search(
        self, terms: Sequence[KeywordTerm], limit: int, files_only: bool = False,
        within: Collection[int] | None = None,
    ) -> list[tuple[int, float]]: ...

    # -- primitives ------------------------------------------------------------------
    @abstractmethod
    def _meta_value(self, key: str) -> str | None:
        """The meta value of ``key``, None when there is none."""

    @abstractmethod
    def _increment(self, counter: str) -> int:
        """Add one to the meta counter (created at 1), in the open write; its new value."""

    @abstractmethod
    def _log_changes(self, generation: int, paths: list[str]) -> None:
        """Record that ``generation`` changed the rows of these item paths."""

    @abstractmethod
    def _forget_changes(self, floor: int) -> None:
        """Drop the change log up to generation ``floor`` and raise the ``changes_from``
        meta value to it (when lower): older generations are no longer answered."""

    @abstractmethod
    def _changes_since(self, since: int) -> tuple[int | None, set[str]]:
        """The ``changes_from`` meta value (None when absent) and the paths logged after
        generation ``since``, read in one snapshot (a writer pruning in between must not
        make an incomplete answer look complete)."""

    @abstractmethod
    def _count(self, *tables: str) -> tuple[int, ...]:
        """The number of rows of each of these tables (``files``, ``items``, ``edges``),
        read in one snapshot: a file always comes with all its items and edges."""

    @abstractmethod
    def _vector_counts(self) -> dict[str, int]:
        """Items with a vector, by model (models with none left out)."""

    @abstractmethod
    def _vector_rows(self, model: str) -> list[tuple[int, Any]]:
        """(rowid, vector) of every item with a vector for ``model``, by row id, each
        vector as the backend reads it (``len()`` grows with its size)."""

    @abstractmethod
    def _matrix(self, vectors: list[Any]) -> np.ndarray:
        """One float32 matrix of these vectors (of one size), a row each."""

    @abstractmethod
    def _content_hashes(self, rowids: list[int]) -> dict[int, str]:
        """The content hash of each of these items that exists, by row id."""

    @abstractmethod
    def _put_cache_rows(self, model: str, rows: Sequence[tuple[str, np.ndarray]]) -> None:
        """Write (hash, vector) rows of ``model`` into the embedding cache, in the open write."""

    @abstractmethod
    def _delete_cached_vectors(self, model: str | None) -> int:
        """Delete the cache rows of ``model`` (all, when None), in the open write; how many."""

    @abstractmethod
    def _links_by_key(self, name: str) -> tuple[list[str], list[tuple[str, str]]]:
        """:meth:`links_ending` for an ASCII ``name``, through the lower-cased last parts
        (``schema.FILE_NAME_KEY``, ``LINK_NAME_KEY``) the schema indexes."""

    @abstractmethod
    def _links_like(
        self, file_patterns: list[str], link_patterns: list[str]
    ) -> tuple[list[str], list[tuple[str, str]]]:
        """The file paths matching any of ``file_patterns`` and the (linking file, target)
        of the ``links_to`` edges whose target matches any of ``link_patterns``: LIKE
        patterns (escape ``\\``), ASCII letters of either case."""

    @abstractmethod
    def _file_paths(self) -> list[str]:
        """Every indexed file's path, in path order (by code point)."""

    @abstractmethod
    def _file_record(self, path: str) -> FileRecord | None:
        """One file as :meth:`replace_file` took it (None when it is not indexed)."""

    def compact(self) -> bool:
        """Nothing to reclaim unless the backend says otherwise (a database that vacuums
        itself)."""
        return False

    def item_size_columns(self, paths: Sequence[str], kind: str) -> dict[str, tuple[list[int], list[str], list[int]]]:
        out: dict[str, tuple[list[int], list[str], list[int]]] = {}
        for rowid, path, qualname, tokens in self.item_sizes(paths, kind):  # type: ignore[attr-defined]
            rowids, names, sizes = out.setdefault(path, ([], [], []))
            rowids.append(rowid)
            names.append(qualname)
            sizes.append(tokens)
        return out

    # -- meta, generations and the change log ----------------------------------------
    def get_meta(self, key: str, default: str | None = None) -> str | None:
        value = self._meta_value(key)
        return default if value is None else value

    def generation(self, counter: str = "generation") -> int:
        # Not through get_meta: every remembered keyword answer asks for the generation,
        # and SQLite wraps each public method (a tenth of that answer's time).
        value = self._meta_value(counter)
        return int(value) if value else 0

    def vector_generation(self) -> int:
        return self.generation("vector_generation")

    def _bump_generation(self, paths: Iterable[str] = ()) -> None:
        """A new generation, in the open write; ``paths`` are the item paths whose rows it
        changed, logged for :meth:`changed_paths` (vector writes bump the vector
        generation instead)."""
        generation = self._increment("generation")
        changed = list(dict.fromkeys(paths))
        if not changed:
            return
        self._log_changes(generation, changed)
        if generation % CHANGES_PRUNE_EVERY == 0:
            self._forget_changes(generation - CHANGES_KEPT)

    def _bump_vector_generation(self) -> None:
        self._increment("vector_generation")

    def changed_paths(self, since: int) -> set[str] | None:
        """Item paths whose rows changed after generation ``since``; None when the log no
        longer reaches back that far (the caller reads everything again)."""
        floor, paths = self._changes_since(since)
        if floor is None or since < floor:
            return None
        return paths

    @abstractmethod
    def terms_with_prefix(self, prefix: str, limit: int = 64) -> dict[str, int]: ...

    def terms_with_prefixes(self, prefixes: Sequence[str], limit: int = 64) -> dict[str, dict[str, int]]:
        return {p: self.terms_with_prefix(p, limit) for p in dict.fromkeys(prefixes)}

    # -- counts ------------------------------------------------------------------------
    def _per_generation(self, key: str, compute: Callable[[], _T]) -> _T:
        """``compute()`` once per index generation. Counting rows walks a whole table (a
        millisecond on a large vault) and questions ask for counts every time."""
        generation = self.generation()
        hit = self._memo.get(key)
        if hit is not None and hit[0] == generation:
            return hit[1]
        value = compute()
        self._memo[key] = (generation, value)
        return value

    def item_count(self) -> int:
        return self._per_generation("items", lambda: self._count("items")[0])

    def counts(self) -> dict[str, int]:
        files, items, edges = self._per_generation("tables", lambda: self._count("files", "items", "edges"))
        return {"files": files, "items": items, "edges": edges, "vectors": sum(self.vector_models().values())}

    def vector_models(self) -> dict[str, int]:
        # Asked on every question (is there a vector index?); counted once per pair of
        # generations, which every write that adds items or vectors bumps.
        generation = (self.generation(), self.vector_generation())
        cached = self._vector_models
        if cached is not None and cached[0] == generation:
            return dict(cached[1])
        out = self._vector_counts()
        self._vector_models = (generation, out)
        return dict(out)

    # -- vectors -------------------------------------------------------------------------
    def load_vectors(self, model: str) -> tuple[np.ndarray, np.ndarray]:
        """(rowids, matrix) of every item with a vector for ``model``."""
        import numpy as np

        rows = self._vector_rows(model)
        if not rows:
            return np.zeros(0, dtype=np.int64), np.zeros((0, 0), dtype=np.float32)
        rows = commonest_size(rows, lambda r: len(r[1]))
        rowids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        return rowids, self._matrix([r[1] for r in rows])

    def put_vectors(self, model: str, rowids: Sequence[int], matrix: np.ndarray) -> None:
        import numpy as np

        matrix = np.ascontiguousarray(matrix, dtype=np.float32)
        wanted = [int(r) for r in rowids]
        with self.transaction():
            hashes = self._content_hashes(wanted)
            # An item deleted while we embedded is skipped.
            self._put_cache_rows(
                model, [(hashes[r], matrix[i]) for i, r in enumerate(wanted) if r in hashes]
            )
            self._bump_vector_generation()

    def cache_vectors(self, model: str, rows: Sequence[tuple[str, np.ndarray]]) -> None:
        with self.transaction():
            self._put_cache_rows(model, rows)
            # Items whose content hash is among these now have vectors. Only the vector
            # generation moves: the catalogue of items stays valid while a background
            # embedder stores batch after batch.
            self._bump_vector_generation()

    def clear_cached_vectors(self, model: str | None = None) -> int:
        with self.transaction():
            deleted = self._delete_cached_vectors(model)
            self._bump_generation()
        return deleted

    def nearest(
        self, model: str, vector: np.ndarray, limit: int, among: Collection[int] | None = None
    ) -> list[tuple[int, float]]:
        """Exact cosine search over the model's vectors (retrieval keeps its own matrix in
        memory; this is the store-level equivalent of an approximate index's query)."""
        import numpy as np

        rowids, matrix = self.load_vectors(model)
        if among is not None and len(rowids):
            keep = np.isin(rowids, np.fromiter(among, dtype=np.int64, count=len(among)))
            rowids, matrix = rowids[keep], matrix[keep]
        return exact_nearest(rowids, matrix, vector, limit)

    # -- keyword search ----------------------------------------------------------------
    def keyword_search_with_files(
        self, terms: Sequence[KeywordTerm], limit: int, is_file_row: Callable[[int], bool]
    ) -> tuple[list[tuple[int, float]], list[tuple[int, float]]]:
        """The two rankings asked one after the other: a backend whose index knows its
        file rows answers each with one lookup per term."""
        return self.keyword_search(terms, limit), self.keyword_search(terms, limit, files_only=True)

    # -- links -------------------------------------------------------------------------
    def links_ending(self, name: str) -> tuple[list[str], list[tuple[str, str]]]:
        if name.isascii():  # lower() folds ASCII letters alike in every database
            return self._links_by_key(name)
        pattern = like_pattern(name)
        return self._links_like(
            [pattern, pattern + ".md", "%/" + pattern, "%/" + pattern + ".md"], [pattern, "%/" + pattern]
        )

    # -- copying -----------------------------------------------------------------------
    def load_files(self, records: Sequence[FileRecord]) -> None:
        """Replace these files (``store copy``) in one transaction, one by one."""
        with self.batch():
            for rec in records:
                self.replace_file(
                    path=rec.path, mtime_ns=rec.mtime_ns, size=rec.size, hash=rec.hash,
                    language=rec.language, source=rec.source, module=rec.module,
                    warnings=rec.warnings, items=rec.items, edges=rec.edges,
                )

    def file_records(self, paths: Sequence[str] | None = None) -> Iterator[FileRecord]:
        """Each file's row, items and edges as :meth:`replace_file` takes them, in path
        order (or the order of ``paths``; paths not indexed are skipped)."""
        for path in self._file_paths() if paths is None else paths:
            record = self._file_record(path)
            if record is not None:
                yield record
