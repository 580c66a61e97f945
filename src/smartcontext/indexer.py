"""Build and update a workspace index: discover -> parse -> store -> (embed).

Only new or changed files are parsed; each file is replaced in one transaction, so an
interrupted run leaves a consistent index that the next run completes.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import Interrupted
from .lazy import Logger
from .safeio import is_regular, read_regular
from .model import Item, ParsedFile
from .words import fts_text
from .sources.base import BaseSource, Source, decode
from .sources.discover import (
    DiscoveredFile,
    DiscoveryOptions,
    classify,
    looks_binary,
    looks_generated,
    symlink_allowed,
)
from .sources.registry import get_source
from .sources import unchanged
from .sources.walk_cache import discover_cached
from .sources.text import MINIFIED_LINE_CHARS, TEXT_SOURCE, text_windows
from .store.base import Store

if TYPE_CHECKING:
    from .parse_pool import ParsePool

log = Logger("smartcontext.indexer")

Progress = Callable[[str, int, int], None]

# Below this many changed files, a process pool costs more than it saves.
_PARALLEL_THRESHOLD = 64
# A cold run commits whole files in batches: this many files, or this many seconds.
_BATCH_FILES = 64
_BATCH_SECONDS = 0.25


@dataclass
class IndexStats:
    """What one indexing run did."""

    files_seen: int = 0
    files_indexed: int = 0
    files_unchanged: int = 0
    files_deleted: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    items: int = 0
    edges: int = 0
    warnings: list[str] = field(default_factory=list)
    embedded: int = 0
    embed_cache_hits: int = 0
    embedding_model: str | None = None
    seconds: dict[str, float] = field(default_factory=dict)
    # Why the index could not be brought up to date (a full disk, a read-only folder),
    # when a refresh before a question went on with the index as it was.
    stale: str | None = None

    @property
    def skipped_total(self) -> int:
        return sum(self.skipped.values())

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["skipped_total"] = self.skipped_total
        return d


def embed_text(item: Item) -> str:
    """The text an item is embedded from: where it is, what it is, then its content
    (unless its kind says otherwise: ``KindTraits.embed_text``)."""
    own = item.traits.embed_text
    if own is not None:
        return own(item)
    head = f"{item.path} {item.kind} {item.qualname}"
    body = item.text or f"{item.signature}\n{item.docstring}"
    # The model truncates at 256 tokens anyway; cutting characters first saves tokenising.
    return f"{head}\n{body}"[:2000]


def _longest_line(data: bytes) -> int:
    return max(map(len, data.split(b"\n")), default=0)


def _content_hash(text: str) -> str:
    import hashlib  # a question that finds nothing changed never hashes

    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def parse_file(path: str, source: Source, language: str, data: bytes) -> ParsedFile:
    """Parse one file with its source. Never raises: a source's bug becomes text windows,
    and so does a file with minified lines."""
    # A source of data files (chats: JSON written on one line) parses long lines as usual.
    if (source.name != TEXT_SOURCE and not getattr(source, "long_lines", False)
            and len(data) > MINIFIED_LINE_CHARS and _longest_line(data) > MINIFIED_LINE_CHARS):
        parsed = text_windows(path, decode(data))
        parsed.warnings.append(
            f"{path}: lines over {MINIFIED_LINE_CHARS:,} characters (minified?); indexed as text windows"
        )
        return parsed
    try:
        return source.parse(path, data, language)
    except Exception as exc:  # a parser bug must not abort a run over thousands of files
        parsed = text_windows(path, decode(data))
        parsed.warnings.append(f"{path}: could not parse ({type(exc).__name__}: {exc}); indexed as text")
        return parsed


def _file_hash(file: DiscoveredFile) -> str | None:
    """The hash ``_process`` stores for the file's content now; None when unreadable."""
    import hashlib

    try:
        return hashlib.sha1(read_regular(file.abs_path)).hexdigest()
    except OSError:
        return None


@dataclass
class _Processed:
    file: DiscoveredFile
    hash: str
    status: str  # "parsed" | "same" | "binary" | "generated" | "unreadable"
    parsed: ParsedFile | None = None
    module: str = ""
    rows: list[tuple[Item, str, int, str]] = field(default_factory=list)
    prepared: Any = None  # the store's prepare_file of the items


def _process(
    file: DiscoveredFile, known_hash: str | None, prepare: Callable[[list[tuple]], Any] | None = None
) -> _Processed:
    """Read, hash and parse one file; runs in worker processes, so it only returns data."""
    try:
        data = read_regular(file.abs_path)  # a FIFO put there since discovery: no hang
    except OSError:
        return _Processed(file, "", "unreadable")
    import hashlib

    digest = hashlib.sha1(data).hexdigest()
    if known_hash == digest:
        return _Processed(file, digest, "same")
    if looks_binary(data):
        return _Processed(file, digest, "binary")
    source = get_source(file.source)
    if source.skip_generated and looks_generated(data):
        return _Processed(file, digest, "generated")
    parsed = parse_file(file.path, source, file.language, data)
    if parsed.aside is not None:
        source.keep_aside(file.abs_path, digest, parsed.aside)  # type: ignore[attr-defined]
        parsed.aside = None
    text = decode(data)
    try:
        module, rows = _rows(source, file.path, parsed.items, text)
    except Exception as exc:  # a source's naming or full-text hook broke: keep the file as text
        warnings = [*parsed.warnings, f"{file.path}: source {source.name!r} failed "
                    f"({type(exc).__name__}: {exc}); indexed as text"]
        parsed = text_windows(file.path, text)
        parsed.warnings[:0] = warnings
        module, rows = _rows(_PLAIN, file.path, parsed.items, text)
    prepared = prepare(rows) if prepare is not None else None
    return _Processed(file, digest, "parsed", parsed, module, rows, prepared)


# The defaults every source inherits: what a file falls back to when its source breaks.
_PLAIN = BaseSource()


def _rows(source: Source, path: str, items: list[Item], text: str) -> tuple[str, list[tuple]]:
    """The module name and the store rows of ``items``. Everything the store needs is
    computed here, in the worker, so the parent process only writes rows."""
    module = source.module_name(path)
    # Token counts here are estimates (about 4 bytes a token): tokenising every nested
    # item would cost a third of a cold index, and the budgeter only plans with them;
    # the rendered context is counted exactly and trimmed to the budget. Measured on
    # SWE-bench Lite, planning with exact counts was slower and no better.
    # A signature is shown with the first line of its docstring (budgeter.signature_text),
    # so that is what it costs: the whole docstring made plans drop signatures that fit.
    # A source that counted exactly already (chat messages: their rendered lines) keeps it.
    sig_counts = [_estimate_tokens(f"{it.signature}\n{it.doc_summary}".strip()) for it in items]
    for item in items:
        item.tokens = item.tokens or _estimate_tokens(item.text)
    bodies = list(source.fts_bodies(items, text))
    if len(bodies) != len(items):
        raise ValueError(f"fts_bodies gave {len(bodies)} bodies for {len(items)} items")
    # fts_names is optional: a source written before it existed names items by qualname.
    names_of = getattr(source, "fts_names", None)
    names = list(names_of(items)) if names_of is not None else [fts_text(it.qualname) for it in items]
    if len(names) != len(items):
        raise ValueError(f"fts_names gave {len(names)} names for {len(items)} items")
    rows = [
        (item, source.fqname(item, module), sig_counts[i], _content_hash(embed_text(item)), bodies[i], names[i])
        for i, item in enumerate(items)
    ]
    return module, rows


def _estimate_tokens(text: str) -> int:
    return (len(text.encode("utf-8", "surrogatepass")) + 3) // 4


def _warm_up_for_workers(todo) -> None:
    """Load the registries and grammars in the parent before forking: workers inherit them."""
    seen = set()
    for f, _ in todo:
        if (f.source, f.language) not in seen:
            seen.add((f.source, f.language))
            try:
                get_source(f.source).warm_up(f.path, f.language)
            except Exception as exc:  # only an optimisation: the worker loads what it needs
                log.warning("warm-up of source %r for %s failed: %s: %s", f.source, f.path,
                            type(exc).__name__, exc)


def _process_chunk(
    chunk: list[tuple[DiscoveredFile, str | None]], prepare: Callable[[list[tuple]], Any] | None
) -> list[_Processed]:
    return [_process(f, h, prepare) for f, h in chunk]


# Seconds between a worker's checks that the process that started it is still alive.
_WATCHDOG_SECONDS = 0.5


def _worker_init(parent: int) -> None:
    """Make a parse worker die with the indexing process, however that one ends.

    On Linux the kernel sends SIGKILL to the worker when its parent dies
    (``PR_SET_PDEATHSIG``); everywhere, a daemon thread exits the worker once its parent
    is gone (it is then re-parented, so ``getppid`` changes). SIGTERM gets its default
    action back (the parent may have turned it into KeyboardInterrupt).
    """
    import signal
    import threading

    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG = 1
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent:  # the parent died before the death signal was armed
        os._exit(1)

    def watch() -> None:
        while True:
            time.sleep(_WATCHDOG_SECONDS)
            if os.getppid() != parent:
                os._exit(1)

    threading.Thread(target=watch, name="smartcontext-parent-watch", daemon=True).start()


# Meta key: when the last run started (ns). An edit that keeps size and mtime (within the
# file system's timestamp granularity, or a restored mtime) is only visible in the content:
# files modified less than _RACY_NS before that run are hashed again (as git does for
# "racily clean" files); the hash is compared, so an unchanged file is not parsed again.
_RUN_STARTED = "run_started_ns"
# Meta key: the files left out for their content (``Indexer._content_skips``).
_CONTENT_SKIPPED = "content_skipped"
# Meta key: every file (and folder, ending in "/") the last run left out -> why, for
# ``smartcontext files --skipped`` (``Indexer.skipped_files``).
SKIPPED_FILES = "skipped_files"
_RACY_NS = 2_000_000_000
# A check for changes reads at most this many racily clean files (see ``has_changes``).
_RECHECK_MAX = 64


# The version of each source that parsed the index's files, as ``{source: version}``. A
# source whose reading changes (a section named otherwise, a part left out) raises its
# ``version``, and the next run parses its files again, changed or not: without it, a file
# nobody edits would keep the old reading in the index for ever.
READER_VERSIONS = "reader_versions"


def _reader_versions(names) -> dict[str, int]:
    out = {}
    for name in names:
        try:
            out[name] = int(getattr(get_source(name), "version", 0) or 0)
        except Exception:  # a source no longer registered: its files leave the index anyway
            continue
    return out


def _same_stamp(state, f: DiscoveredFile, racy_after: int) -> bool:
    return (state.mtime_ns == f.mtime_ns and state.size == f.size and f.mtime_ns < racy_after
            and _untouched_since_run(f, racy_after))


def _untouched_since_run(f: DiscoveredFile, racy_after: int) -> bool:
    """Whether the file's inode is as it was when the last run started. An edit that puts
    size and mtime back (``touch -r``, a copy keeping times) still moves its ctime, which
    no program can set; a chmod or a rename does too, and then the hash tells. (ctime has
    the file system's own granularity: nanoseconds on ext4, xfs, btrfs, tmpfs, APFS.)"""
    return f.ctime_ns < racy_after + _RACY_NS


def _same_skip(skip: list, f: DiscoveredFile, racy_after: int) -> bool:
    """A remembered content skip ([mtime_ns, size, reason]) still stands for ``f``."""
    return (isinstance(skip, list) and len(skip) == 3 and skip[0] == f.mtime_ns and skip[1] == f.size
            and f.mtime_ns < racy_after and _untouched_since_run(f, racy_after))


def skipped_files(store: Store) -> dict[str, str]:
    """What the last index run left out: path (a folder ends with "/") -> reason."""
    try:
        data = json.loads(store.get_meta(SKIPPED_FILES) or "{}")
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


class Indexer:
    def __init__(self, root: Path, store: Store, options: DiscoveryOptions | None = None,
                 walk_cache: Path | None = None, unchanged_cache: Path | None = None):
        """walk_cache: where the last folder walk is kept between processes
        (``sources.walk_cache``); None walks every time. unchanged_cache: where the stamps
        of the last run that found nothing to do are kept (``sources.unchanged``); None
        compares every file with the index's rows."""
        self.root = root
        self.store = store
        self.options = options or DiscoveryOptions()
        self.walk_cache = walk_cache
        self.unchanged_cache = unchanged_cache
        self._stop: threading.Event | None = None
        self._wrote = False  # whether this run stored or removed a file's rows or stamp
        self._skips_now: dict[str, list] = {}  # the content skips this run confirmed or found
        self._unreadable: dict[str, str] = {}  # files this run could not read

    def run(self, progress: Progress | None = None, workers: int | None = None,
            stop: threading.Event | None = None) -> IndexStats:
        """Index new and changed files. ``stop``: when set, the run ends after the file it
        is storing (raising ``Interrupted``); every stored file is whole."""
        self._stop = stop
        stats = IndexStats()
        t0 = time.perf_counter()
        found = discover_cached(self.root, self.options, self.walk_cache)
        stats.seconds["discover"] = time.perf_counter() - t0
        stats.files_seen = len(found.files)
        skipped = dict(found.skipped)
        # Read before the rows: a write in between moves the generation this names, so
        # what is saved below can only be too old to match, never wrongly matching.
        checked = self._checked(found)
        seen = unchanged.stamps(found.files) if checked else b""
        stale = self._stale_readers(found.files)
        kept = unchanged.load(self.unchanged_cache, checked, seen) if checked and not stale else None
        if kept is not None:
            stats.files_unchanged = kept["unchanged"]
            for reason, n in kept["skipped"].items():
                skipped[reason] = skipped.get(reason, 0) + n
            stats.skipped = skipped
            counts = self.store.counts()
            stats.items, stats.edges = counts["items"], counts["edges"]
            return stats
        known = self.store.file_states()
        started_ns = time.time_ns()
        racy = self._racy_after()

        remembered = self._content_skips()
        self._skips_now = {}
        self._unreadable = {}
        todo: list[tuple[DiscoveredFile, str | None]] = []
        for f in found.files:
            state = known.get(f.path)
            if f.source in stale:
                todo.append((f, None))  # read again by the new version, whatever its stamps
                continue
            if state and _same_stamp(state, f, racy):
                stats.files_unchanged += 1
                continue
            skip = remembered.get(f.path) if not state else None
            if skip is not None and _same_skip(skip, f, racy):
                skipped[skip[2]] = skipped.get(skip[2], 0) + 1
                self._skips_now[f.path] = skip
                continue
            todo.append((f, state.hash if state else None))

        t1 = time.perf_counter()
        present = {f.path for f in found.files}
        gone = [p for p in known if p not in present]
        self._wrote = False
        # A database store builds some indexes once after a first load, and those a first
        # load cut short left missing (postgres.first_load).
        first_load = getattr(self.store, "first_load", None)
        with first_load(len(todo)) if first_load else contextlib.nullcontext():
            self._apply(todo, known, stats, skipped, progress, workers)
        if gone:
            stats.files_deleted = self.store.delete_files(gone)
        if stale:  # every file of those sources is stored by now (an interrupted run raised)
            self._save_reader_versions(found.files)
        quiet = not (todo or gone or self._wrote) and self._skips_now == remembered
        if self._skips_now != remembered:
            self.store.set_meta(_CONTENT_SKIPPED, json.dumps(self._skips_now, sort_keys=True))
        if self._record_skipped(found.skipped_files):
            quiet = False
        stats.seconds["parse_and_store"] = time.perf_counter() - t1
        stats.skipped = skipped
        if quiet and checked:
            content_skips: dict[str, int] = {}
            for skip in self._skips_now.values():
                content_skips[skip[2]] = content_skips.get(skip[2], 0) + 1
            unchanged.save(self.unchanged_cache, checked, seen, stats.files_unchanged, content_skips)
        if self._wrote or gone:
            # Only a run that stored stamps moves the racy window. A run that wrote
            # nothing keeps the older start, which marks at least as many files racy (so
            # it is as safe), and leaves the index file untouched: the next process then
            # trusts its last integrity check instead of reading the whole file again.
            self.store.set_meta(_RUN_STARTED, str(started_ns))
        counts = self.store.counts()
        stats.items, stats.edges = counts["items"], counts["edges"]
        return stats

    def _stored_reader_versions(self) -> dict[str, int]:
        """What the index says parsed its files (nothing, or something unreadable: version 0)."""
        try:
            stored = json.loads(self.store.get_meta(READER_VERSIONS) or "{}")
        except ValueError:
            return {}
        return stored if isinstance(stored, dict) else {}

    def _stale_readers(self, files: list[DiscoveredFile]) -> set[str]:
        """The sources of ``files`` whose version differs from the one that parsed them."""
        stored = self._stored_reader_versions()
        current = _reader_versions({f.source for f in files})
        return {name for name, version in current.items() if stored.get(name, 0) != version}

    def _save_reader_versions(self, files: list[DiscoveredFile]) -> None:
        stored = self._stored_reader_versions()
        stored.update(_reader_versions({f.source for f in files}))
        self.store.set_meta(READER_VERSIONS, json.dumps(stored, sort_keys=True))

    def _record_skipped(self, walked: dict[str, str]) -> bool:
        """Keep why each file was left out: the walk's reasons (ignored, too large, ...)
        and the content's (binary, generated, unreadable). Written only when it changed,
        so a refresh that finds nothing new leaves the index untouched; returns whether
        it was written."""
        skipped = dict(walked)
        skipped.update({p: s[2] for p, s in self._skips_now.items()})
        skipped.update(self._unreadable)
        text = json.dumps(skipped, sort_keys=True, separators=(",", ":"))
        if text == (self.store.get_meta(SKIPPED_FILES) or "{}"):
            return False
        self.store.set_meta(SKIPPED_FILES, text)
        return True

    def _checked(self, found) -> tuple | None:
        """What a run's comparison of stamps rests on besides the stamps themselves (see
        ``sources.unchanged``): the walk, the index, its generation and racy window; None
        when the walk was not saved (nothing names it)."""
        if not found.walk or self.unchanged_cache is None:
            return None
        store = self.store
        return (found.walk, store.get_meta("index_id") or "", store.generation(),
                store.get_meta(_RUN_STARTED) or "")

    def has_changes(self) -> bool:
        """Whether a run would parse or delete anything (reads only)."""
        found = discover_cached(self.root, self.options, self.walk_cache)
        if self._stale_readers(found.files):
            return True
        checked = self._checked(found)
        if checked and unchanged.load(self.unchanged_cache, checked, unchanged.stamps(found.files)):
            return False
        known = self.store.file_states()
        remembered = self._content_skips()
        racy = self._racy_after()
        seen = 0
        recheck = []
        for f in found.files:
            state = known.get(f.path)
            if state is None:
                skip = remembered.get(f.path)
                if skip is None or not _same_skip(skip, f, racy):
                    return True
                continue
            seen += 1
            if not _same_stamp(state, f, racy):
                if state.mtime_ns != f.mtime_ns or state.size != f.size:
                    return True
                recheck.append((f, state.hash))
        if seen != len(known):
            return True
        # Same stamps, but written too near the last run to trust them: the files a tool
        # wrote and re-indexed since (``update_paths``) are all like this. Their content
        # decides, as it would in a run; without this, every check while an agent writes
        # found "changes" and re-indexed the whole folder.
        if len(recheck) > _RECHECK_MAX:
            return True  # a run stores their stamps and moves the window past them
        return any(_file_hash(f) != known_hash for f, known_hash in recheck)

    def _content_skips(self) -> dict[str, list]:
        """Files left out for their content (binary, generated) as last read:
        path -> [mtime_ns, size, reason]. Unchanged, they are not read again."""
        try:
            data = json.loads(self.store.get_meta(_CONTENT_SKIPPED) or "{}")
        except ValueError:
            return {}
        return data if isinstance(data, dict) else {}

    def _racy_after(self) -> int:
        """Files modified after this (ns) may have changed again within the same mtime tick
        after the last run looked at them: their content hash decides, not their stamp."""
        try:
            return int(self.store.get_meta(_RUN_STARTED) or 0) - _RACY_NS
        except ValueError:
            return 0

    def update_paths(self, paths: list[str]) -> IndexStats:
        """Re-read just these files (after a tool wrote, moved or deleted them)."""
        stats = IndexStats()
        known = self.store.file_states(paths)  # a write re-reads one file: 0.1 s less than every row
        todo = []
        gone = []
        skipped: dict[str, int] = {}
        for rel in paths:
            abs_path = self.root / rel
            kind = classify(rel)
            if not is_regular(abs_path) or kind is None or not symlink_allowed(abs_path, self.root):
                if rel in known:
                    gone.append(rel)
                continue
            st = abs_path.stat()
            f = DiscoveredFile(rel, abs_path, kind[0], kind[1], st.st_mtime_ns, st.st_size, st.st_ctime_ns)
            state = known.get(rel)
            todo.append((f, state.hash if state else None))
        self._apply(todo, known, stats, skipped, None, 1)
        if gone:
            stats.files_deleted = self.store.delete_files(gone)
        stats.skipped = skipped
        return stats

    def _apply(self, todo, known, stats, skipped, progress, workers) -> None:
        total = len(todo)
        if progress:
            progress("parse", 0, total)
        workers = workers or min(2, os.cpu_count() or 1)
        if total >= _PARALLEL_THRESHOLD and workers > 1:
            _warm_up_for_workers(todo)
            # Leaving the pool by an error (Ctrl-C, SIGTERM, a full disk) kills its workers:
            # no worker outlives the run, and nothing is left for the exit to wait on.
            # multiprocessing costs ~14 ms to import: only an index run with workers pays it.
            from .parse_pool import ParsePool

            with ParsePool(workers, _process_chunk, _worker_init, (os.getpid(),)) as pool:
                self._store_results(self._pool_results(pool, todo), known, stats, skipped, progress, total)
        else:
            self._store_results(
                (_process(f, h) for f, h in todo), known, stats, skipped, progress, total
            )

    def _pool_results(self, pool: "ParsePool", todo, chunk: int = 16):
        """Results in order, from chunks parsed by the pool; a set ``stop`` is noticed within
        a tenth of a second even while a chunk is still being parsed."""
        prepare = self.store.prepare_file
        tasks = [(todo[i : i + chunk], prepare) for i in range(0, len(todo), chunk)]
        for part in pool.map(tasks, check=self._check_stop):
            yield from part

    def _check_stop(self) -> None:
        if self._stop is not None and self._stop.is_set():
            raise Interrupted("indexing stopped; run `smartcontext index` to finish it")

    def _store_results(self, results, known, stats, skipped, progress, total) -> None:
        batch = None
        batch_started = 0.0
        batch_files = 0
        try:
            for done, res in enumerate(results, 1):
                self._check_stop()
                if batch is None:
                    batch = self.store.batch()
                    batch.__enter__()
                    batch_started, batch_files = time.perf_counter(), 0
                self._store_one(res, known, stats, skipped)
                batch_files += 1
                if batch_files >= _BATCH_FILES or time.perf_counter() - batch_started >= _BATCH_SECONDS:
                    batch.__exit__(None, None, None)
                    batch = None
                if progress:
                    progress("parse", done, total)
        except BaseException as exc:
            if batch is not None:
                batch.__exit__(type(exc), exc, exc.__traceback__)
                batch = None
            raise
        finally:
            if batch is not None:
                batch.__exit__(None, None, None)

    def _store_one(self, res: _Processed, known, stats: IndexStats, skipped: dict[str, int]) -> None:
        f = res.file
        if res.status == "same":
            self.store.touch_file(f.path, f.mtime_ns, f.size)
            self._wrote = True
            stats.files_unchanged += 1
        elif res.status == "parsed":
            self._wrote = True
            assert res.parsed is not None
            self.store.replace_file(
                path=f.path, mtime_ns=f.mtime_ns, size=f.size, hash=res.hash,
                language=res.parsed.language or f.language, source=f.source,
                module=res.module, warnings=res.parsed.warnings, items=res.rows,
                edges=res.parsed.edges, prepared=res.prepared,
            )
            stats.files_indexed += 1
            stats.warnings.extend(res.parsed.warnings)
        else:
            skipped[res.status] = skipped.get(res.status, 0) + 1
            if res.status in ("binary", "generated"):  # an unreadable file may be readable next time
                self._skips_now[f.path] = [f.mtime_ns, f.size, res.status]
            else:
                self._unreadable[f.path] = res.status
            if f.path in known:
                self.store.delete_files([f.path])
                self._wrote = True


# Called after each stored batch of ``embed_pending``: the batch's item row ids, their
# vectors, and whether the store's vector generation moved only by this batch's writes
# (``(before, after)``), or None when another writer wrote meanwhile.
BatchDone = Callable[[list[int], Any, "tuple[int, int] | None"], None]


def embed_pending(
    store: Store,
    embedder,
    progress: Progress | None = None,
    batch_size: int = 64,
    stop: threading.Event | None = None,
    on_batch: BatchDone | None = None,
) -> tuple[int, int]:
    """Give every item a vector for ``embedder``; returns (texts sent to the model, cache hits).

    Pending items are those without a vector, so an interrupted run (``stop`` set, a
    crash, a restart) continues where it ended. Each batch is embedded without holding
    the store, then stored in its own short transaction. ``stop`` ends the run after the
    batch in progress (no exception: what was stored is kept).
    """
    from .embeddings.cache import EmbeddingCache, text_hash

    missing = store.items_missing_vectors(embedder.name)
    total = len(missing)
    if not total:
        return 0, 0
    cache = EmbeddingCache(store)
    embedded = hits = 0
    if progress:
        progress("embed", 0, total)
    for start in range(0, total, batch_size):
        if stop is not None and stop.is_set():
            break
        batch = missing[start : start + batch_size]
        rows = store.items_by_rowids([r for r, _ in batch])
        rowids = [r for r, _ in batch if r in rows]
        texts = [embed_text(rows[r].item) for r in rowids]
        if not texts:
            continue
        before = store.vector_generation()
        matrix = cache.embed_cached(embedder, texts, batch_size=len(texts))
        writes = 1 if cache.stats.embedded else 0
        # The cache already holds each vector under its text's hash, which is the item's
        # vector unless the item's content hash was computed from other text.
        other = [i for i, r in enumerate(rowids) if rows[r].content_hash != text_hash(texts[i])]
        if other:
            store.put_vectors(embedder.name, [rowids[i] for i in other], matrix[other])
            writes += 1
        hits += cache.stats.hits
        embedded += cache.stats.embedded
        if on_batch is not None:
            after = store.vector_generation()
            on_batch(rowids, matrix, (before, after) if after - before == writes else None)
        if progress:
            progress("embed", min(start + batch_size, total), total)
    return embedded, hits
