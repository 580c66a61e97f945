"""The facade: open a folder, index it, answer questions.

    ws = Workspace.open("path/to/repo")
    ws.index()
    print(ws.context("How does the session send requests?", max_tokens=4000).text)
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
import zlib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from .config import Config
from .context.models import ContextResult, ExtractionConfig
from .context.pipeline import SmartContextExtractor
from .errors import (
    DiskFull,
    EmptyWorkspace,
    IndexDamaged,
    IndexUnwritable,
    PathOutsideWorkspace,
    WorkspaceNotFound,
    did_you_mean,
)
from .background import BackgroundEmbedding, EmbeddingStatus
from .indexer import IndexStats, Indexer, Progress, embed_pending
from .query import Query
from .retrieval.catalogue import Catalogue
from .sealed import remove_stale_temps
from .space import disk_full, is_disk_full
from .sources.discover import DiscoveryOptions
from .store import Store, open_store

if TYPE_CHECKING:  # numpy: loaded only when the index has vectors
    from collections.abc import Callable, Iterator

    from .chat import SmartContext
    from .embeddings.base import Embedder
    from .retrieval.search import SearchHit
    from .retrieval.vector import StoreVectorIndex, VectorIndex

# The Python API's earlier names of three context options, still accepted.
LEGACY_OPTION_NAMES = {"expand_depth": "depth", "include_imports": "imports", "include_scores": "scores"}
INDEX_DIR = ".smartcontext"
INDEX_FILE = "index.db"
# The in-memory catalogue as last built, so a new process need not read the whole index.
CATALOGUE_FILE = "catalogue.bin"
# The last walk of the folder and what it rested on, so a refresh need not walk again.
WALK_FILE = "walk.bin"
# The stamps of the last refresh that found nothing to do (sources/unchanged.py).
UNCHANGED_FILE = "unchanged.bin"
# Files derived from the index (the saved catalogue, the last clean integrity check, the
# last walk and its unchanged stamps, the mapped vectors and their counts:
# store/vector_file.py): they go with it.
DERIVED_FILES = (CATALOGUE_FILE, INDEX_FILE + ".checked", WALK_FILE, UNCHANGED_FILE, INDEX_FILE + ".vectors",
                 INDEX_FILE + ".vcounts")
# What marks a workspace's root when a command starts inside it, as git finds its root:
# a repository, an Obsidian vault, or a folder indexed before.
ROOT_MARKERS = (".git", ".obsidian", INDEX_DIR)
# The index folder ignores itself, so `git status` never lists it.
INDEX_GITIGNORE = "# Created by smartcontext: the index is local state, never committed.\n*\n"


def find_root(start: str | os.PathLike[str] = ".") -> Path:
    """The workspace that holds ``start``: the nearest folder at or above it holding
    ``.git``, ``.obsidian`` or ``.smartcontext``; ``start`` itself when none does. A
    command started in a subfolder answers from the root found here.

    Like git, the walk stops below any folder listed in ``GIT_CEILING_DIRECTORIES``.
    """
    here = Path(start).expanduser().resolve()
    ceilings = {
        Path(p).expanduser().resolve()
        for p in os.environ.get("GIT_CEILING_DIRECTORIES", "").split(os.pathsep) if p
    }
    for folder in (here, *here.parents):
        if folder in ceilings:
            break
        if any((folder / marker).exists() for marker in ROOT_MARKERS):
            return folder
    return here


def _make_index_dir(index_dir: Path) -> None:
    index_dir.mkdir(exist_ok=True)
    remove_stale_temps(index_dir)  # left by a process killed while saving
    ignore = index_dir / ".gitignore"
    if not ignore.exists():
        ignore.write_text(INDEX_GITIGNORE, encoding="utf-8")


T = TypeVar("T")


@dataclass
class WorkspaceStatus:
    """What the index holds.

    embedding:     how far its vectors are (``background.EmbeddingStatus``: state, model,
                   embedded / total, the background embedder's rate and last error).
    vector_models: vectors stored per model (an index may keep several).
    """

    root: str
    index_path: str
    indexed: bool
    files: int
    items: int
    edges: int
    embedding: EmbeddingStatus
    kinds: dict[str, int]
    vector_models: dict[str, int]
    last_indexed: str | None
    warnings: int
    problems: list[str] = field(default_factory=list)
    """What stops the index from answering as it should (an unfinished copy, an
    embedding model that cannot be loaded), each a sentence a user can act on."""
    # Files (and folders) the last index run left out, by reason: ``smartcontext files
    # --skipped`` lists them.
    skipped: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class Workspace:
    """A folder (repository, vault, or both) with its index in ``<root>/.smartcontext/``."""

    def __init__(self, root: Path, config: Config | None = None):
        self.root = root
        self.config = config or Config.load(root)
        self.index_dir = root / INDEX_DIR
        self.index_path = self.index_dir / INDEX_FILE
        self._store: Store | None = None
        self._catalogue: Catalogue | None = None
        self._vectors: VectorIndex | StoreVectorIndex | None = None
        self._embedder: Embedder | None = None
        self._chats: SmartContext | None = None
        self._background: BackgroundEmbedding | None = None
        self._lock = threading.RLock()  # the cached state above: held for moments only
        # Index runs and per-file updates, one at a time. Apart from ``_lock`` so a question
        # (which needs the store and the catalogue) never waits for a write to finish.
        self._writing = threading.RLock()
        self._skipped: tuple[object, dict[str, list[tuple[str, str]]]] | None = None
        # A process that asks one question (the CLI): saved structures are read a key at a
        # time as the question needs them, not decoded whole for questions to come.
        self.lean = False

    # -- opening -------------------------------------------------------------------

    @classmethod
    def open(cls, path: str | os.PathLike[str] = ".", config: Config | None = None) -> "Workspace":
        root = Path(path).expanduser()
        if not root.exists():
            raise WorkspaceNotFound(f"no such folder: {root}")
        if not root.is_dir():
            raise WorkspaceNotFound(f"not a folder: {root}")
        return cls(root.resolve(), config)

    @property
    def store_url(self) -> str:
        """The database URL of a shared index ([store] url), or "" for the SQLite file."""
        return self.config.store.url

    @property
    def store(self) -> Store:
        with self._lock:
            if self._store is None:
                if self.store_url:
                    self._store = open_store(
                        self.store_url, workspace=self.config.store.workspace or None,
                        default_workspace=self.root.name, lean=self.lean,
                    )
                    return self._store
                try:
                    _make_index_dir(self.index_dir)
                except OSError as exc:
                    raise IndexUnwritable(
                        f"cannot create the index folder {self.index_dir} ({exc.strerror or exc}); "
                        f"make {self.root} writable, or index a writable copy of it"
                    ) from exc
                self._store = open_store(self.index_path)
            return self._store

    def _index_exists(self) -> bool:
        return bool(self.store_url) or self.index_path.exists()

    @property
    def has_index(self) -> bool:
        return self._index_exists() and self.store.counts()["files"] > 0

    @property
    def keeps_vectors(self) -> bool:
        """Whether a refresh should embed what changed: embeddings are on and the index
        already has vectors (a keyword-only index stays keyword-only until asked)."""
        return self.config.embeddings.active and bool(self.store.vector_models())

    def close(self) -> None:
        job, self._background = self._background, None
        if job is not None:  # a stopped job never starts again: a later one is a new job
            job.stop(wait=2.0)
        with self._lock:
            if self._store is not None:
                self._store.close()
                self._store = None
            self._catalogue = None
            self._vectors = None

    def __enter__(self) -> "Workspace":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- indexing ------------------------------------------------------------------

    def _discovery_options(self) -> DiscoveryOptions:
        ic = self.config.index
        return DiscoveryOptions(
            include=list(ic.include), exclude=list(ic.exclude), max_file_bytes=ic.max_file_bytes,
            respect_gitignore=ic.respect_gitignore, index_text_files=ic.text_files,
        )

    def _indexer(self) -> Indexer:
        return Indexer(self.root, self.store, self._discovery_options(), walk_cache=self._kept(WALK_FILE),
                       unchanged_cache=self._kept(UNCHANGED_FILE))

    def _kept(self, name: str) -> Path | None:
        """Where a file that spares the next process work is kept (the folder walk, the
        saved catalogue): the index folder, also for a shared database when the folder
        allows it (a PostgreSQL question walked 500 files anew and read every item's row:
        0.5 s of its 1.3). The catalogue is tied to its index by ``index_id``, so
        another store's or a rebuilt index's is never trusted."""
        if self.store_url:
            try:
                _make_index_dir(self.index_dir)
            except OSError:
                return None
        return self.index_dir / name

    def index(
        self,
        embeddings: bool | None = None,
        progress: Progress | None = None,
        rebuild: bool = False,
        workers: int | None = None,
        stop: threading.Event | None = None,
        repair: bool = True,
    ) -> IndexStats:
        """Bring the index up to date with the folder; only changed files are parsed.

        embeddings: compute vectors for new items (default: when a model is configured).
        rebuild:    throw the old index away first (for a corrupt or outdated index).
        stop:       an event that, once set, ends the run early (``Interrupted``); what
                    was stored is kept and the next run finishes the job.
        repair:     check the index and rebuild it when damaged; without it (the quick
                    refresh before a question) damage raises ``IndexDamaged``, whose
                    message sends the user to ``smartcontext index``.
        """
        try:
            return self._index_repairing(embeddings, progress, rebuild, workers, stop, repair)
        except Exception as exc:
            if is_disk_full(exc) and not isinstance(exc, DiskFull):
                raise self._disk_full() from exc
            raise

    def _disk_full(self) -> DiskFull:
        if self.store_url:
            from .store.postgres import redact

            return disk_full(None, server=redact(self.store_url))
        return disk_full(self.index_dir, index=self.index_path)

    def _index_repairing(self, embeddings, progress, rebuild, workers, stop, repair) -> IndexStats:
        repaired = None
        if repair and not rebuild and self._index_exists():
            try:
                repaired = self.store.check()
            except IndexDamaged as exc:
                repaired = str(exc.__cause__ or exc)
            rebuild = repaired is not None
        if rebuild:
            self._discard_index()
        try:
            stats = self._index(embeddings, progress, workers, stop)
        except IndexDamaged as exc:
            if repaired is not None or not repair:
                raise
            repaired = str(exc.__cause__ or exc)  # found mid-run: start again from the files
            self._discard_index()
            stats = self._index(embeddings, progress, workers, stop)
        if repaired is not None:
            stats.warnings.insert(0, f"the index was damaged ({repaired}); it was rebuilt from the files")
        return stats

    def _discard_index(self) -> None:
        if self.store_url:  # a shared database: this workspace's files and items go
            self.remove_index()
            return
        self.close()
        if self.index_dir.exists():
            for name in (INDEX_FILE, INDEX_FILE + "-wal", INDEX_FILE + "-shm", INDEX_FILE + ".damaged",
                         *DERIVED_FILES):
                p = self.index_dir / name
                if p.exists():
                    p.unlink()

    def _index(self, embeddings, progress, workers, stop) -> IndexStats:
        with self._writing:
            t0 = time.perf_counter()
            stats = self._indexer().run(progress, workers, stop)
            # e.g. "the index was written in an older format; it was reset and is rebuilt"
            stats.warnings[:0] = self.store.notices
            self.store.notices.clear()
            if stats.files_seen == 0 and stats.items == 0:
                raise EmptyWorkspace(
                    f"nothing to index in {self.root}: no source, markdown or text files were found"
                    + (f" ({stats.skipped_total} skipped: {_reasons(stats.skipped)})" if stats.skipped else "")
                )
            want = self.config.embeddings.active if embeddings is None else embeddings
            if want and not (stats.files_indexed or stats.files_deleted) and self._all_embedded():
                # The refresh before a question, with nothing new: the model (and numpy)
                # is not loaded to learn that no item lacks a vector.
                stats.embedding_model = self._embedder_name()
            elif want:
                t1 = time.perf_counter()
                embedder = self.embedder()
                stats.embedding_model = embedder.name
                from .embeddings.base import prepare_embedder

                prepare_embedder(embedder, progress)  # a first-use model build shows its own bar
                stats.embedded, stats.embed_cache_hits = embed_pending(
                    self.store, embedder, progress, batch_size=max(8, self.config.embeddings.batch_size)
                )
                stats.seconds["embed"] = time.perf_counter() - t1
            changed = stats.files_indexed or stats.files_deleted or stats.embedded
            if changed or self.store.get_meta("last_indexed") is None:
                # Not on a refresh that found nothing: a question would write the index
                # every time, and a changed file is checked for damage on the next open.
                self.store.set_meta("last_indexed", time.strftime("%Y-%m-%dT%H:%M:%S%z"))
                from .store.copy import finish_copy_by_index

                finish_copy_by_index(self.store)  # an index run makes an unfinished copy whole
            if stats.files_indexed or stats.files_deleted:
                self.store.compact()
                if not self.store_url:
                    # Brought up to date and saved now, so the first question after
                    # `index` opens it from the file instead of building and saving it.
                    try:
                        self.catalogue()
                    except OSError:  # best effort: the next question builds it
                        pass
            stats.seconds["total"] = time.perf_counter() - t0
            return stats

    def pending_changes(self) -> bool:
        """Whether files were added, changed or removed since the last index run. Only
        reads (a walk of the folder and the stored stamps), so readers go on meanwhile."""
        return self._indexer().has_changes()

    def ensure_index(self, progress: Progress | None = None) -> IndexStats | None:
        """Build an index (names, keywords, graph; no embeddings) when there is none yet."""
        if self.has_index:
            return None
        return self.index(embeddings=False, progress=progress)

    def refresh(self, progress: Progress | None = None) -> IndexStats:
        """Bring the index up to date before a question: build it when missing (no
        embeddings, fast), else re-parse only new and changed files (an unchanged file
        costs a stat), with vectors only when the index already has some."""
        built = self.ensure_index(progress)
        if built is not None:
            return built
        try:
            return self.index(embeddings=self.keeps_vectors, progress=progress, repair=False)
        except (DiskFull, IndexUnwritable) as exc:
            # The index there is whole (a failed write is rolled back): a question is
            # answered from it, and the user is told it may miss the latest edits.
            return IndexStats(stale=f"the index was not updated ({exc}); answering from the index as it is")

    def update_files(self, paths: list[str], embeddings: bool | None = None) -> IndexStats:
        """Re-index just these files (relative paths) after a write, move or delete.

        embeddings: embed their new items now (default: when the index keeps vectors);
                    a server passes False and lets its background embedder do it.
        """
        rel = [self._relative(p) for p in paths]
        with self._writing:
            stats = self._indexer().update_paths(rel)
            if self._catalogue is not None:
                # Brought up to date here, so the next question does not pay for it.
                self.catalogue()
            if self.keeps_vectors if embeddings is None else embeddings:
                try:
                    embed_pending(self.store, self.embedder())
                except Exception as exc:  # the text index is updated; vectors can catch up later
                    stats.warnings.append(f"embedding the changed files failed: {exc}")
            return stats

    def _relative(self, path: str) -> str:
        p = Path(path)
        full = (p if p.is_absolute() else self.root / p).resolve()
        try:
            return full.relative_to(self.root).as_posix()
        except ValueError:
            raise PathOutsideWorkspace(f"{path} is outside the workspace {self.root}") from None

    # -- retrieval state ------------------------------------------------------------

    def embedder(self):
        with self._lock:
            if self._embedder is None:
                from .embeddings import get_embedder

                ec = self.config.embeddings
                options: dict[str, Any] = {}
                if ec.api_base:
                    options["api_base"] = ec.api_base
                if ec.api_key_env and os.environ.get(ec.api_key_env):
                    options["api_key"] = os.environ[ec.api_key_env]
                self._embedder = get_embedder(ec.model, **options)
            return self._embedder

    def catalogue(self) -> Catalogue:
        with self._lock:
            if self._catalogue is None:  # a process's first: from the saved one when it can
                # One per store: a folder indexed into SQLite and PostgreSQL keeps both.
                saved = self._kept(CATALOGUE_FILE if not self.store_url else
                                   f"catalogue-{zlib.crc32(self.store.location.encode()):08x}.bin")
                self._catalogue = Catalogue.open(self.store, saved, self.store.get_meta("index_id") or "",
                                                 lazy=self.lean)
            elif self.store.generation() > self._catalogue.generation:
                # A write re-reads only the files it changed. A question on an older
                # snapshot than the catalogue's keeps the newer one (never step back).
                self._catalogue = self._catalogue.updated(self.store)
            return self._catalogue

    def snapshot(self):
        """A context in which this thread's reads of the index see one commit (the
        store's ``snapshot``); nothing when the store has none or is not open yet."""
        with self._lock:
            store = self._store
        make = getattr(store, "snapshot", None)
        return make() if make is not None else contextlib.nullcontext()

    def release_memory(self) -> None:
        """Drop what the store caches for questions (decoded files, full-text answers,
        idle connections) and return freed memory to the system: for a server gone idle.
        The catalogue and vectors stay (the next question needs them whole)."""
        with self._lock:
            store = self._store
            self._skipped = None
        release = getattr(store, "release_memory", None)
        if release is not None:
            release()
        from .memory import return_free_memory

        return_free_memory()

    def vectors(self) -> tuple[VectorIndex | StoreVectorIndex, Any] | None:
        """The vector index and query embedder, or None when there are no vectors to use.

        Reloaded when items change; vectors that a background embedder of this process
        stores are added to it as they land (``vectors_landed``), and vectors written by
        another process cause one reload."""
        if not self.config.embeddings.active:
            return None
        with self._lock:
            current = self._vectors
            # ">=": a question reading an older snapshot than the loaded vectors' keeps
            # them (reloading every vector for it, then again for the next, would thrash).
            if (
                current is not None and self._embedder is not None
                and current.generation >= self.store.generation()
                and current.vector_generation >= self.store.vector_generation()
            ):
                return current, self._embedder
            models = self.store.vector_models()
            if not models:
                return None
            try:
                embedder = self.embedder()
            except Exception:
                return None
            if embedder.name not in models:
                return None  # vectors of another model: never compare across models
            from .retrieval.vector import vector_index

            self._vectors = vector_index(self.store, embedder.name)
            return self._vectors, embedder

    def vectors_landed(self, model: str, rowids: list[int], matrix, generations: tuple[int, int] | None) -> None:
        """A batch of vectors was stored (``embed_pending``'s ``on_batch``): extend the
        loaded vector index in place when it is exactly one batch behind, else drop it
        (the next question loads it anew)."""
        with self._lock:
            current = self._vectors
            if current is None or current.model != model:
                return
            if (
                generations is None or current.vector_generation != generations[0]
                or current.generation != self.store.generation()
            ):
                self._vectors = None
                return
            current.extend(rowids, matrix)
            current.vector_generation = generations[1]

    # -- background embedding ----------------------------------------------------------

    def embed_in_background(self) -> BackgroundEmbedding | None:
        """Embed whatever items lack a vector on a low-priority background thread (see
        ``background``), started on first call and woken again by later ones; None when
        embeddings are off. Questions meanwhile answer from what is embedded."""
        if not self.config.embeddings.active:
            return None
        with self._lock:
            if self._background is None:
                self._background = BackgroundEmbedding(self)
            job = self._background
        job.wake()
        return job

    @property
    def background(self) -> BackgroundEmbedding | None:
        return self._background

    def vector_progress(self) -> tuple[int, int]:
        """(items with a vector of the configured model, items that should have one)."""
        if not self.config.embeddings.active or not self._index_exists():
            return 0, 0
        total = self.store.item_count()
        models = self.store.vector_models()
        if not models:  # nothing embedded yet: no need to load the model (and numpy) to say so
            return 0, total
        name = self._embedder_name()
        if name is None:  # an unusable model: count nothing as embedded
            return 0, total
        return min(models.get(name, 0), total), total

    def _all_embedded(self) -> bool:
        """Whether every item has a vector of the configured model, told from the stored
        counts and the model's remembered name (no model is loaded)."""
        name = self._embedder_name()
        return name is not None and self.store.vector_models().get(name, 0) >= self.store.item_count()

    def _embedder_name(self) -> str | None:
        """The configured model's name as its vectors are stored. Building a model to
        learn it costs up to a second (and numpy), so the name is remembered in the index
        once learnt: a keyword-only question in a new process never loads the model."""
        key = f"embedder_name:{self.config.embeddings.model}"
        if self._embedder is None:
            known = self.store.get_meta(key)
            if known:
                return known
        try:
            name = self.embedder().name
        except Exception:
            return None
        if self.store.get_meta(key) != name:
            try:
                self.store.set_meta(key, name)
            except Exception:  # a read-only index: learnt again next time
                pass
        return name

    def embedding_status(self) -> EmbeddingStatus:
        """How far the index's vectors are (``background.EmbeddingStatus``): the
        ``embedding`` of every status, search and context answer."""
        if not self.config.embeddings.active:
            return EmbeddingStatus("off")
        done, total = self.vector_progress()
        job = self._background
        state = job.state() if job is not None else None
        if state is not None and state.state == "failed":
            what = "failed"
        elif job is not None and job.running:
            what = "running"
        else:
            what = "complete" if done >= total else "pending"
        return EmbeddingStatus(
            what, self.config.embeddings.model, done, total,
            items_per_second=state.items_per_second if state is not None else None,
            error=state.error if state is not None and what == "failed" else None,
        )

    def chats(self):
        """The chat context of this workspace (``chat.SmartContext``): its chats in
        ``.memory/``, topics, the topic filter, the commands and events."""
        with self._lock:
            if self._chats is None:
                from .chat import SmartContext

                self._chats = SmartContext(self)
            return self._chats

    def chat(self, chat_id: str | None = None):
        """One chat (``chat.Chat``), ``.memory/{chat_id}.json``; created on its first message."""
        return self.chats().chat(chat_id)

    # -- questions -----------------------------------------------------------------

    def context(
        self,
        question: str,
        max_tokens: int | None = None,
        format: str = "mu",
        progress: Progress | None = None,
        **options: Any,
    ) -> ContextResult:
        """The best context for ``question`` within ``max_tokens`` (exact count).

        options: the code-context options of ``query.options`` (exclude_tests, depth,
        paths, exclude, kinds, imports, scores, encoding, explain); what is left out comes
        from smartcontext.toml's ``[context]``, then the declared default.
        """
        for old, new in LEGACY_OPTION_NAMES.items():
            if old in options:
                options[new] = options.pop(old)
        query = Query.build("code-context", question, defaults=self.config.context,
                            max_tokens=max_tokens, format=format, **options)
        return self.answer_context(query, progress)

    def answer_context(self, query: Query, progress: Progress | None = None) -> ContextResult:
        """Answer a checked code-context Query (the CLI, the tools and ``context`` all
        come here)."""
        config = ExtractionConfig.from_query(query)
        extractor = SmartContextExtractor(self.store, self.catalogue, self.vectors, config,
                                          skipped=self._skipped_by_name if config.explain else None)

        def answer(built: IndexStats | None) -> tuple[ContextResult, IndexStats | None]:
            result = extractor.extract(query.text, format=query.format)
            result.embedding = self.embedding_status()
            return result, built

        result, built = self._asked(answer, progress)
        if built is not None:
            result.stats["built_index"] = built.to_dict()
        return result

    def _skipped_by_name(self) -> dict[str, list[tuple[str, str]]]:
        """The skipped files by name, kept until the index changes (its catalogue's
        generation) or the list of skipped files does."""
        from .coverage import skipped_by_name
        from .indexer import SKIPPED_FILES

        raw = self.store.get_meta(SKIPPED_FILES) or "{}"
        cached = self._skipped
        if cached is not None and cached[0] == raw:
            return cached[1]
        import json

        try:
            reasons = json.loads(raw)
        except ValueError:
            reasons = {}
        names = skipped_by_name(reasons if isinstance(reasons, dict) else {})
        self._skipped = (raw, names)
        return names

    def files(self, path: str | None = None, indexed: bool = True, skipped: bool = True):
        """What the index covers under ``path`` (folder, file or glob; None: everything):
        ``coverage.Coverage`` with the indexed files (source, items, tokens, vectors) and
        the skipped ones with why."""
        from .coverage import coverage

        return coverage(self, path, indexed=indexed, skipped=skipped)

    def search(self, query: str, limit: int = 10, mode: str = "hybrid", **options: Any) -> list[SearchHit]:
        """Ranked hits for ``query``; options as ``search_with_info``."""
        return self.search_with_info(query, limit=limit, mode=mode, **options)[0]

    def search_with_info(
        self, query: str, limit: int = 10, mode: str = "hybrid", **options: Any
    ) -> tuple[list[SearchHit], dict[str, Any]]:
        """(hits, info) for ``query``: options are the search options of
        ``query.options`` (paths, exclude, kinds, tags, min_score); info says what
        answered: ``{"mode", "signals", "note"?, "embedding"}`` (``embedding``:
        ``EmbeddingStatus.to_dict()``, what the semantic signal covered)."""
        return self.answer_search(Query.build("search", query, limit=limit, mode=mode, **options))

    def answer_search(self, query: Query) -> tuple[list[SearchHit], dict[str, Any]]:
        """Answer a checked search Query."""
        return self._asked(lambda _built: self._search_answer(query))

    def _search_answer(self, query: Query) -> tuple[list[SearchHit], dict[str, Any]]:
        from .retrieval.search import search  # a context question does not load it

        mode = query.options["mode"]
        vectors = self.vectors() if mode != "keyword" else None
        if mode == "semantic" and vectors is None and self._background is not None and self._background.running:
            from .errors import InvalidArgument

            raise InvalidArgument(
                f"semantic search needs vectors, and none are stored yet: they are being computed "
                f"in the background ({self.embedding_status().vectors}); use mode hybrid or keyword meanwhile"
            )
        scope = query.scope
        hits, info = search(
            self.store, self.catalogue(), query.text, limit=query.options["limit"], mode=mode, vectors=vectors,
            paths=list(scope.paths) or None, tags=list(scope.tags) or None, kinds=list(scope.kinds) or None,
            min_score=query.options["min_score"], exclude=list(scope.exclude) or None,
        )
        info["embedding"] = self.embedding_status().to_dict()
        return hits, info

    def _asked(self, answer: Callable[[IndexStats | None], T], progress: Progress | None = None) -> T:
        """``answer(built)`` inside ``_question``. On a database server the snapshot first
        assumes the index's last known state, which saves a round trip; when the state had
        moved (``SnapshotMoved``), the question is asked again on a snapshot begun as usual.
        Answers only read, so asking again changes nothing."""
        if not self.store_url:
            with self._question(progress) as built:
                return answer(built)
        from .store.base import SnapshotMoved

        try:
            with self._question(progress, assume_state=True) as built:
                return answer(built)
        except SnapshotMoved:
            with self._question(progress) as built:
                return answer(built)

    @contextlib.contextmanager
    def _question(self, progress: Progress | None = None, assume_state: bool = False) -> Iterator[IndexStats | None]:
        """``ensure_index``, then the question's reads; yields what was built, if anything.
        On a database server the reads are one snapshot, whose first round trip reads the
        state (the generations) that a question otherwise asked for 5-11 times; SQLite's
        reads are in process and cost nothing to repeat. ``assume_state``: see
        ``PostgresStore.snapshot``."""
        if self.store_url:
            with self.store.snapshot(assume_state=assume_state):  # type: ignore[attr-defined]
                if self.has_index:  # nearly always: no build, so the snapshot sees it all
                    yield None
                    return
        built = self.ensure_index(progress)
        with self.store.snapshot() if self.store_url else contextlib.nullcontext():  # type: ignore[attr-defined]
            yield built

    def similar(self, path: str, limit: int = 10) -> list[SearchHit]:
        """Notes or files most like ``path``, by the mean vector of its items."""
        import numpy as np

        from .retrieval.search import SearchHit

        vectors = self.vectors()
        if vectors is None:
            from .errors import InvalidArgument

            raise InvalidArgument("similar() needs embeddings: run `smartcontext index` with an embedding model")
        index, _ = vectors
        cat = self.catalogue()
        rel = self.note_path(path, cat)
        own = index.vectors_of(cat.by_path.get(rel, []))
        if not own:
            from .errors import InvalidArgument

            raise InvalidArgument(f"{rel} is not in the index (or has no vectors yet)")
        centroid = np.mean(list(own.values()), axis=0)
        centroid /= max(float(np.linalg.norm(centroid)), 1e-9)
        best: dict[str, tuple[int, float]] = {}
        for r, s in index.search(centroid, 400):
            e = cat.entries.get(r)
            if e is None or e.path == rel:
                continue
            if e.path not in best or s > best[e.path][1]:
                best[e.path] = (r, s)
        ranked = sorted(best.values(), key=lambda t: -t[1])[:limit]
        stored = self.store.items_by_rowids([r for r, _ in ranked])
        out = []
        for r, s in ranked:
            si = stored.get(r)
            if si is None:
                continue  # removed by a concurrent index run since the ranking
            out.append(
                SearchHit(
                    id=si.item.id, path=si.item.path, kind=si.item.kind, name=si.item.qualname,
                    heading=" > ".join(si.item.meta.get("heading_path", [])),
                    start_line=si.item.start_line, end_line=si.item.end_line,
                    score=round(float(s), 4), snippet=" ".join(si.item.text.split())[:240],
                    signals=["semantic"],
                )
            )
        return out

    def note_path(self, name: str, cat: Catalogue | None = None) -> str:
        """The indexed file ``name`` stands for: a path relative to the workspace, or a
        bare note name ("Attention") resolved as a wikilink is, as read_file accepts."""
        from .errors import InvalidArgument
        from .notes.resolver import LinkResolver

        cat = cat or self.catalogue()
        rel = self._relative(name)
        if rel in cat.by_path:
            return rel
        linked = LinkResolver(cat.paths).resolve(name.strip())
        if linked is not None:
            return linked
        raise InvalidArgument(f"{name} is not in the index{did_you_mean(rel, cat.paths)}")

    def status(self) -> WorkspaceStatus:
        indexed = self._index_exists()
        counts = self.store.counts() if indexed else {"files": 0, "items": 0, "edges": 0, "vectors": 0}
        return WorkspaceStatus(
            root=str(self.root),
            index_path=self.store.location if self.store_url else str(self.index_path),
            indexed=indexed and counts["files"] > 0,
            files=counts["files"], items=counts["items"], edges=counts["edges"],
            embedding=self.embedding_status(),
            kinds=self.store.kind_counts() if indexed else {},
            vector_models=self.store.vector_models() if indexed else {},
            last_indexed=self.store.get_meta("last_indexed") if indexed else None,
            warnings=len(self.store.file_warnings()) if indexed else 0,
            problems=self._problems(indexed),
            skipped=self._skipped_summary() if indexed else {},
        )

    def _problems(self, indexed: bool) -> list[str]:
        from .store.copy import incomplete_copy

        found = [incomplete_copy(self.store) if indexed else None]
        if self.config.embeddings.active:
            from .embeddings.registry import spec_problem

            found.append(spec_problem(self.config.embeddings.model))
        return [p for p in found if p]

    def _skipped_summary(self) -> dict[str, int]:
        from collections import Counter

        from .indexer import skipped_files

        return dict(Counter(skipped_files(self.store).values()).most_common())

    def remove_index(self) -> None:
        """Delete the index files only: preferences and logs in the same folder stay. A
        shared index (a database) loses this workspace's files and items."""
        if self.store_url:
            self.store.delete_files(list(self.store.file_states()))
            return
        self.close()
        for name in (INDEX_FILE, INDEX_FILE + "-wal", INDEX_FILE + "-shm", *DERIVED_FILES):
            p = self.index_dir / name
            if p.exists():
                p.unlink()


def _reasons(skipped: dict[str, int]) -> str:
    return ", ".join(f"{n} {k}" for k, n in sorted(skipped.items()))
