"""The vectors of ``.smart-env/multi/*.ajson`` in one float32 matrix, kept in step with disk.

Refresh rules (the seed's plan, plus what it misses):

1. The first refresh reads every file.
2. Later refreshes first stat the ``multi/`` folder. Its mtime changes when a file is
   created, deleted or renamed into place, so a change there always triggers a check.
3. The plugin saves by *appending* to an existing file, which does not touch the
   folder's mtime, so the folder alone misses most updates. Two ways to see them:

   - On Linux an inotify watch on the folder (``watch``) names the files written since
     the last refresh; only those are stat-ed and reloaded. A no-change check is one
     stat plus one non-blocking read (~10 us), and changes are seen at once. A full
     sweep still runs every ``safety_sweep_interval`` seconds (default 30) for
     filesystems that send no events (network mounts).
   - Elsewhere, a sweep stats every file (one ``os.scandir`` pass) and reloads those
     whose mtime or size changed. That is one stat call per file: ~10 ms for 4,000
     files on an idle machine, 40 ms on a busy one, more than a search should spend.
     Sweeps are therefore rate-limited to one per ``sweep_interval`` seconds (default
     1 s) unless the folder mtime changed or a refresh is forced; between sweeps the
     check is a single stat. The trade-off: an append made less than ``sweep_interval``
     before a search is seen by the first search after the interval.

The vectors live in a shared :class:`~smartcontext.retrieval.matrix.VectorMatrix`: a
file's rows are freed when it is reloaded or deleted and reused by the next file, so one
changed note costs one file parse and a few row writes, never a rebuild of the matrix.
This module keeps only what is particular to the plugin's data beside each row (record,
kind, note id).

A key normally lives in one file (the plugin names the file after the note). If two
files hold the same key, the newer file (mtime, then name) decides it, including a
``null`` that deletes it; when the deciding file goes away, the files that also held the
key are read again so their copy comes back.

Why these rows are not the workspace index's vectors (``Store.put_vectors`` /
``load_vectors``, ranked by ``retrieval.vector.VectorIndex``): the index keeps one vector
per index item, bound to the item's content hash and made by the model the workspace
embeds queries with. The plugin's vectors belong to the plugin's keys (a note, or a
block whose heading path and line span are the plugin's, not our sections) and were
made by the plugin's model, which no package ships (bge-micro-v2): they can be compared
with each other (``similar_notes``, the keyword-rerank pseudo-query) or with a query
embedded by a local copy of that model, never with the index's. Bound to index items
they would be wrong in two ways: a note edited since the plugin last embedded it would
carry the old text's vector under the new text's hash, and a block that matches no
section would have no item to live on. So they stay in rows of their own, in the same
matrix class ``VectorIndex`` uses (``retrieval.matrix``), ranked by the same ``top_k``;
what is particular to them is only the per-row record, kind and note id kept here. The
keywords of keyword-rerank do come from the index (see ``reader``).
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..safeio import read_regular
from ..retrieval.matrix import VectorMatrix, blocked_dot
from .ajson import BLOCK, SOURCE, FileParse, Record, parse_ajson
from .store import ParseStore
from .watch import FolderWatch

SUFFIX = ".ajson"
_ESTIMATE_AFTER = 32  # files read before the matrix is sized for the whole load
_SAVE_BATCH = 256  # parsed files per store transaction


@dataclass
class LoadStats:
    """What one refresh did.

    check:        ``cold`` (first load or a full reload), ``cached`` (nothing changed, known
                  without stat-ing every file: the watch said so, or the folder is
                  unchanged and the last sweep recent), ``swept`` (every file stat-ed,
                  nothing changed) or ``reloaded`` (some files were read again).
    watching:     an inotify watch reports changes (no sweeps needed between safety sweeps).
    files_read:   ``.ajson`` files parsed by this refresh; ``files_read_total`` counts since
                  start. ``files_restored``: unchanged files taken from the on-disk store
                  instead (see ``store``).
    The item counters (entries, bad_lines, ...) cover the files loaded by this refresh.
    notes, blocks: items with a vector for the active model, after the refresh.
    """

    check: str = "cold"
    files_total: int = 0
    files_read: int = 0
    files_restored: int = 0
    files_removed: int = 0
    files_unreadable: int = 0
    entries: int = 0
    bad_lines: int = 0
    deleted_keys: int = 0
    no_vector: int = 0
    stale_blocks: int = 0
    bad_vectors: int = 0
    notes: int = 0
    blocks: int = 0
    model_key: str | None = None
    dim: int | None = None
    elapsed_ms: float = 0.0
    files_read_total: int = 0
    watching: bool = False

    def to_dict(self) -> dict:
        return dict(vars(self))  # every field a scalar: asdict's deep copies buy nothing

    def add(self, parse: FileParse, restored: bool = False) -> None:
        if restored:
            self.files_restored += 1
        else:
            self.files_read += 1
        self.entries += parse.entries
        self.bad_lines += parse.bad_lines
        self.deleted_keys += len(parse.tombstones)
        self.no_vector += parse.no_vector
        self.stale_blocks += parse.stale_blocks
        self.bad_vectors += parse.bad_vectors


@dataclass
class FileState:
    """What the cache remembers about one loaded file."""

    mtime_ns: int
    size: int
    keys: list[str]
    model_counts: Counter
    bad_lines: int = 0
    no_vector: int = 0
    stale_blocks: int = 0
    bad_vectors: int = 0


@dataclass
class _Totals:
    bad_lines: int = 0
    no_vector: int = 0
    stale_blocks: int = 0
    bad_vectors: int = 0
    models: Counter = field(default_factory=Counter)


class VectorCache:
    """Vectors of one ``multi/`` folder for one model, refreshed incrementally.

    Parameters:
        multi_dir:      the ``.smart-env/multi`` folder.
        preferred_keys: model keys the configuration names, most authoritative first.
        model_key:      force this model (otherwise chosen from the data, see
                        ``choose_model``).
        include_blocks: keep block vectors (needed for block search); False keeps notes only.
        sweep_interval: seconds between stat sweeps of every file (see module doc).
        clock:          monotonic clock, replaceable in tests.
        store:          an on-disk copy of parsed files: a cold load takes unchanged files
                        from it instead of parsing them, and every parse is saved to it.
        watch:          use an inotify watch where available (see module doc).
        safety_sweep_interval: with a watch, seconds between full sweeps anyway.
    """

    def __init__(
        self,
        multi_dir: str | Path,
        *,
        preferred_keys: list[str] | None = None,
        model_key: str | None = None,
        include_blocks: bool = True,
        sweep_interval: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
        store: ParseStore | None = None,
        watch: bool = True,
        safety_sweep_interval: float = 30.0,
    ):
        self.multi_dir = Path(multi_dir)
        self.store = store
        self.use_watch = watch
        self.safety_sweep_interval = float(safety_sweep_interval)
        self._watch: FolderWatch | None = None
        self._watch_unavailable = False
        self.preferred_keys = list(preferred_keys or [])
        self.forced_key = model_key
        self.include_blocks = include_blocks
        self.sweep_interval = float(sweep_interval)
        self.clock = clock
        self.model_key: str | None = model_key or (self.preferred_keys[0] if self.preferred_keys else None)
        self.dim: int | None = None
        self.last_stats = LoadStats()
        self.files_read_total = 0
        self._loaded = False
        self._dir_mtime: int | None = None
        self._last_sweep = float("-inf")
        # Bumped whenever a row is added or withdrawn, so what a caller derives from the
        # rows (the keyword scope of the notes with vectors) is kept until they change.
        self.version = 0
        self._reset_rows()

    # -- public -----------------------------------------------------------------------

    @property
    def loaded(self) -> bool:
        return self._loaded

    @property
    def n_rows(self) -> int:
        """High-water mark of used rows; rows past it are never alive."""
        return self._vm.n_rows

    def refresh(self, force: bool = False) -> LoadStats:
        """Bring the matrix in step with disk (see module doc); returns what was done."""
        started = time.perf_counter()
        try:
            dir_mtime = os.stat(self.multi_dir).st_mtime_ns
        except (FileNotFoundError, NotADirectoryError):
            dir_mtime = None
        now = self.clock()
        if self._loaded and not force:
            if self._watch is not None:
                names = self._watch.poll()
                if names is None:
                    self._watch = None  # events were lost: sweep, and watch again
                elif now - self._last_sweep < self.safety_sweep_interval:
                    if not names and dir_mtime == self._dir_mtime:
                        return self._finish(LoadStats(check="cached"), started)
                    self._dir_mtime = dir_mtime
                    return self._finish(self._reload_named(names), started)
            elif dir_mtime == self._dir_mtime and now - self._last_sweep < self.sweep_interval:
                return self._finish(LoadStats(check="cached"), started)

        # Watch first, then list: a write between the two is reported, never lost.
        self._open_watch(dir_mtime)
        listing = self._scan() if dir_mtime is not None else {}
        self._dir_mtime = dir_mtime
        self._last_sweep = now
        if not self._loaded:
            return self._finish(self._full_load(listing), started)

        changed = {
            name: st for name, st in listing.items()
            if (f := self.files.get(name)) is None or (f.mtime_ns, f.size) != st
        }
        removed = set(self.files) - set(listing)
        return self._finish(self._update(changed, removed, listing, "swept"), started)

    def close(self) -> None:
        """Stop watching the folder (the vectors stay usable)."""
        if self._watch is not None:
            self._watch.close()
            self._watch = None

    @property
    def watching(self) -> bool:
        return self._watch is not None

    def totals(self) -> _Totals:
        """Counters over every loaded file (not only the last refresh)."""
        t = _Totals()
        for f in self.files.values():
            t.bad_lines += f.bad_lines
            t.no_vector += f.no_vector
            t.stale_blocks += f.stale_blocks
            t.bad_vectors += f.bad_vectors
            t.models.update(f.model_counts)
        return t

    def counts(self) -> tuple[int, int]:
        """(notes, blocks) with a vector for the active model."""
        counted = self._by_kind.get(-1)  # kept beside the per-kind copies, dropped with them
        if counted is None:
            kinds = self._kind[: self._vm.n_rows][self._vm.alive()]
            notes = int((kinds == SOURCE).sum())
            counted = self._by_kind[-1] = (notes, int(kinds.size - notes))
        return counted

    @property
    def vectors(self) -> VectorMatrix:
        """The shared matrix (search it with ``dot`` or ``top_k``)."""
        return self._vm

    def matrix(self) -> np.ndarray:
        """The used part of the matrix (dead rows included; mask them with ``alive()``)."""
        return self._vm.matrix()

    def dot(self, vector: np.ndarray, kind: int | None = None) -> np.ndarray:
        """Cosines of a unit ``vector`` to every row (see ``VectorMatrix.dot``); with
        ``kind`` (``SOURCE`` or ``BLOCK``) to the alive rows of that kind only, -inf
        elsewhere.

        Notes are a fifth of the rows (four embedded blocks per note is typical), and a
        matrix-vector product costs its memory traffic: ranking notes reads a copy of the
        note rows, kept until rows change, instead of the whole matrix (0.6 ms instead of
        3 ms at 4,000 notes).
        """
        if kind is None:
            return self._vm.dot(vector)
        part = self._by_kind.get(kind)
        if part is None:
            rows = np.flatnonzero(self._vm.alive() & (self.kinds() == kind))
            part = self._by_kind[kind] = (rows, self._vm.matrix()[rows])
        rows, sub = part
        out = np.full(self._vm.n_rows, -np.inf, dtype=np.float32)
        out[rows] = blocked_dot(sub, vector)
        return out

    def alive(self) -> np.ndarray:
        return self._vm.alive()

    def kinds(self) -> np.ndarray:
        return self._kind[: self._vm.n_rows]

    def note_ids(self) -> np.ndarray:
        return self._note[: self._vm.n_rows]

    def record(self, row: int) -> Record:
        rec = self._records[row]
        assert rec is not None, "dead row"
        return rec

    def row_of(self, key: str) -> int | None:
        return self._key_row.get(key)

    def note_paths(self) -> list[str]:
        """Path of every note id ever seen (ids index this list)."""
        return self._note_paths

    def note_id(self, path: str) -> int | None:
        return self._note_ids.get(path)

    def rows_of_note(self, path: str) -> np.ndarray:
        """Alive rows (note and blocks) of one note."""
        nid = self._note_ids.get(path)
        if nid is None or not self._note_rows.get(nid):
            return np.zeros(0, dtype=np.int64)
        return np.flatnonzero((self.note_ids() == nid) & self._vm.alive())

    def has_rows(self, path: str) -> bool:
        """True when the note or one of its blocks has a vector."""
        nid = self._note_ids.get(path)
        return nid is not None and self._note_rows.get(nid, 0) > 0

    def memory_bytes(self) -> int:
        """Bytes held by the numpy arrays (matrix at capacity plus row metadata)."""
        return int(self._vm.nbytes + self._kind.nbytes + self._note.nbytes)

    def choose_model(self) -> str | None:
        return self._choose_model()

    # -- loading ------------------------------------------------------------------------

    def _open_watch(self, dir_mtime: int | None) -> None:
        if self.use_watch and self._watch is None and not self._watch_unavailable and dir_mtime is not None:
            self._watch = FolderWatch.open(self.multi_dir)
            # Not Linux, or no inotify instance left: sweeps only, without asking again.
            self._watch_unavailable = self._watch is None

    def _reload_named(self, names: set[str]) -> LoadStats:
        """Stat and reload only the files the watch named."""
        changed: dict[str, tuple[int, int]] = {}
        removed: set[str] = set()
        for name in names:
            if not name.endswith(SUFFIX):
                continue
            try:
                st = os.stat(self.multi_dir / name)
            except (FileNotFoundError, NotADirectoryError):
                if name in self.files:
                    removed.add(name)
                continue
            known = self.files.get(name)
            if known is None or (known.mtime_ns, known.size) != (st.st_mtime_ns, st.st_size):
                changed[name] = (st.st_mtime_ns, st.st_size)
        listing = {n: (f.mtime_ns, f.size) for n, f in self.files.items() if n not in removed}
        listing.update(changed)
        return self._update(changed, removed, listing, "cached")

    def _update(
        self, changed: dict[str, tuple[int, int]], removed: set[str], listing: dict[str, tuple[int, int]],
        unchanged_check: str,
    ) -> LoadStats:
        if changed or removed:
            stats = LoadStats(check="reloaded", files_removed=len(removed))
            self._apply(changed, removed, listing, stats)
        else:
            stats = LoadStats(check=unchanged_check)
        # New data or new preferences can make another model's vectors the ones to use.
        if self._choose_model() != self.model_key:
            stats = self._full_load(listing)
        self._maybe_compact()
        return stats

    def _scan(self) -> dict[str, tuple[int, int]]:
        out: dict[str, tuple[int, int]] = {}
        try:
            with os.scandir(self.multi_dir) as it:
                for entry in it:
                    if not entry.name.endswith(SUFFIX):
                        continue
                    try:
                        st = entry.stat()
                    except FileNotFoundError:
                        continue
                    if entry.is_file():
                        out[entry.name] = (st.st_mtime_ns, st.st_size)
        except (FileNotFoundError, NotADirectoryError):
            return {}
        return out

    def _full_load(self, listing: dict[str, tuple[int, int]]) -> LoadStats:
        for _ in range(2):  # a second pass only when the data names another model
            self._reset_rows()
            self.files: dict[str, FileState] = {}
            self.dim = None
            stats = LoadStats(check="cold")
            stored = self.store.load(self.model_key) if self.store is not None else {}
            gone = set(stored) - set(listing)
            self._apply(listing, gone, listing, stats, stored)
            chosen = self._choose_model()
            if chosen == self.model_key:
                break
            self.model_key = chosen
        # Growth doubles the matrix; after a full load keep only a little headroom.
        self._vm.fit()
        self._fit_rows()
        self._loaded = True
        return stats

    def _apply(
        self,
        changed: dict[str, tuple[int, int]],
        removed: set[str],
        listing: dict[str, tuple[int, int]],
        stats: LoadStats,
        stored: dict[str, tuple[int, int, int | None, FileParse]] | None = None,
    ) -> None:
        """Withdraw ``removed`` and (re)load ``changed``, saving new parses to the store."""
        unsaved: dict[str, tuple[int, int, FileParse]] = {}
        to_read = dict(changed)
        pending = set(removed) | set(changed)
        # Withdrawing a file can uncover another file's copy of one of its keys; that
        # file is then read again too (and may uncover more, hence the loop).
        while pending:
            name = pending.pop()
            state = self.files.pop(name, None)
            if state is None:
                continue
            self._model_totals.subtract(state.model_counts)
            for other in self._withdraw(name, state):
                if other in self.files and other not in to_read and other in listing:
                    to_read[other] = listing[other]
                    pending.add(other)
        # Older files first, so within one batch a newer file's entry wins.
        order = sorted(to_read, key=lambda n: (to_read[n][0], n))
        for done, name in enumerate(order):
            if done == _ESTIMATE_AFTER and len(order) > 2 * _ESTIMATE_AFTER:
                # Size the matrix once from the first files instead of doubling it
                # (each doubling briefly holds the old and the new copy).
                self._vm.reserve(self._vm.n_rows * len(order) * 9 // (8 * done))
                self._fit_rows()
            if len(unsaved) >= _SAVE_BATCH:
                self._save(unsaved, set())
            mtime_ns, size = to_read[name]
            hit = stored.get(name) if stored else None
            if hit is not None and hit[:2] == (mtime_ns, size) and (
                hit[2] is None or self.dim is None or hit[2] == self.dim
            ):
                stats.add(hit[3], restored=True)
                self._take(name, mtime_ns, size, hit[3])
                continue
            try:
                data = read_regular(self.multi_dir / name)
            except (FileNotFoundError, IsADirectoryError):
                continue
            except OSError:
                stats.files_unreadable += 1
                continue
            parse = parse_ajson(data, self.model_key, self.dim)
            stats.add(parse)
            self.files_read_total += 1
            self._take(name, mtime_ns, size, parse)
            if self.store is not None:
                unsaved[name] = (mtime_ns, size, parse)
        self._save(unsaved, removed)

    def _save(self, parsed: dict[str, tuple[int, int, FileParse]], removed: set[str]) -> None:
        # In batches, so a cold load never holds every parse at once just to save it.
        if self.store is not None and (parsed or removed):
            self.store.save(self.model_key, parsed, removed)
        parsed.clear()

    def _take(self, name: str, mtime_ns: int, size: int, parse: FileParse) -> None:
        rank = (mtime_ns, name)
        if parse.vectors.shape[0] and self.dim is None:
            self.dim = int(parse.vectors.shape[1])
        record_at = {rec.key: i for i, rec in enumerate(parse.records)}
        keys: list[str] = []
        won: list[int] = []  # indexes into parse.records that get a row
        for key in parse.mentioned:
            i = record_at.get(key)
            if i is not None and not self.include_blocks and parse.records[i].kind == BLOCK:
                continue
            keys.append(key)
            owner = self._owner.get(key)
            if owner is not None and owner != name:
                self._rivals.setdefault(key, {owner}).add(name)
                owner_state = self.files.get(owner)
                if owner_state is not None and (owner_state.mtime_ns, owner) > rank:
                    continue
                self._drop_key(key)
            self._owner[key] = name
            if i is not None:
                won.append(i)
        if won:
            self._put_many([parse.records[i] for i in won], parse.vectors[won])
        self.files[name] = FileState(
            mtime_ns, size, keys, parse.model_counts, parse.bad_lines, parse.no_vector,
            parse.stale_blocks, parse.bad_vectors,
        )
        self._model_totals.update(parse.model_counts)

    def _withdraw(self, name: str, state: FileState) -> set[str]:
        """Remove what ``name`` contributed; returns files that also held its keys."""
        uncovered: set[str] = set()
        for key in state.keys:
            rivals = self._rivals.get(key)
            if rivals is not None:
                rivals.discard(name)
                if self._owner.get(key) == name:
                    uncovered |= rivals
                if len(rivals) <= 1:
                    del self._rivals[key]
            if self._owner.get(key) == name:
                del self._owner[key]
                self._drop_key(key)
        return uncovered

    def _choose_model(self) -> str | None:
        """The model whose vectors to use.

        A forced key wins. Otherwise the vectors decide: the first configured key that has
        at least half as many vectors as the best-covered model (so a re-embed in progress
        under the configured model takes over once it covers half), else the model with
        the most vectors. With no vectors at all, the configured key stands.
        """
        if self.forced_key:
            return self.forced_key
        counts = +self._model_totals  # kept up to date by _take/_apply; + drops zeros
        if not counts:
            return self.model_key
        best = max(counts.values())
        for key in self.preferred_keys:
            if counts.get(key, 0) * 2 >= best:
                return key
        return min(counts, key=lambda k: (-counts[k], k))

    # -- rows ---------------------------------------------------------------------------

    def _reset_rows(self) -> None:
        self.version += 1
        self._vm = VectorMatrix()
        # Copies of the rows of one kind for ``dot`` (and, under -1, ``counts``);
        # dropped whenever a row changes.
        self._by_kind: dict[int, tuple] = {}
        # Per row, beside the vector: what it is and which note it belongs to.
        self._kind = np.zeros(0, dtype=np.int8)
        self._note = np.zeros(0, dtype=np.int32)
        self._records: list[Record | None] = []
        self._key_row: dict[str, int] = {}
        self._owner: dict[str, str] = {}
        self._rivals: dict[str, set[str]] = {}
        self._note_ids: dict[str, int] = {}
        self._note_paths: list[str] = []
        self._note_rows: Counter = Counter()  # note id -> alive rows
        self._model_totals: Counter = Counter()  # model -> vectors over loaded files
        self.files = getattr(self, "files", {})

    def _fit_rows(self) -> None:
        """Size the per-row arrays to the matrix's capacity."""
        capacity, n = self._vm.capacity, self._vm.n_rows
        if len(self._kind) != capacity:
            for attr in ("_kind", "_note"):
                old = getattr(self, attr)
                arr = np.zeros(capacity, dtype=old.dtype)
                keep = min(n, len(old))
                arr[:keep] = old[:keep]
                setattr(self, attr, arr)
        if len(self._records) < capacity:
            self._records.extend([None] * (capacity - len(self._records)))
        else:
            del self._records[max(capacity, n):]

    def _put_many(self, records: list[Record], vectors: np.ndarray) -> None:
        """Rows for one file's records, written with one numpy assignment per array."""
        idx = self._vm.add(vectors)
        self._by_kind.clear()
        self.version += 1
        self._fit_rows()
        nids = []
        for row, rec in zip(idx.tolist(), records):
            nid = self._note_ids.get(rec.path)
            if nid is None:
                nid = self._note_ids[rec.path] = len(self._note_paths)
                self._note_paths.append(rec.path)
            nids.append(nid)
            self._note_rows[nid] += 1
            self._records[row] = rec
            self._key_row[rec.key] = row
        self._kind[idx] = [rec.kind for rec in records]
        self._note[idx] = nids

    def _drop_key(self, key: str) -> None:
        row = self._key_row.pop(key, None)
        if row is not None:
            self._vm.remove(row)
            self._by_kind.clear()
            self.version += 1
            self._records[row] = None
            nid = int(self._note[row])
            self._note_rows[nid] -= 1
            if self._note_rows[nid] <= 0:
                del self._note_rows[nid]

    def _maybe_compact(self) -> None:
        live = self._vm.compact()
        if live is None:
            return
        self._by_kind.clear()
        n = live.size
        self._kind[:n] = self._kind[live]
        self._note[:n] = self._note[live]
        records = [self._records[i] for i in live]
        self._records = records + [None] * (len(self._records) - n)
        self._key_row = {rec.key: i for i, rec in enumerate(records) if rec is not None}
        self._fit_rows()

    def _finish(self, stats: LoadStats, started: float) -> LoadStats:
        stats.files_total = len(self.files)
        stats.notes, stats.blocks = self.counts()
        stats.model_key = self.model_key
        stats.dim = self.dim
        stats.files_read_total = self.files_read_total
        stats.watching = self._watch is not None
        stats.elapsed_ms = round((time.perf_counter() - started) * 1000, 3)
        self.last_stats = stats
        return stats
