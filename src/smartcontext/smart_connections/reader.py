"""Semantic search over the vectors the Smart Connections plugin already stored.

Which mode answers a query (every result set says so in ``mode``):

``model``
    A local copy of the model that made the vault's vectors embeds the query (see
    ``query_models``); results are ranked by cosine similarity.
``shipped-model``
    No such model is available, so the notes' own text is embedded by the workspace's
    model (the default static model unless configured otherwise) and ranked against the query
    embedded by the same model (see ``shipped``): semantic search without the plugin's
    model. Needs embeddings on for the vault; a server embeds in the background and
    answers by keyword-rerank until it is done.
``keyword-rerank``
    No such model is available and the shipped model cannot answer (embeddings off, or
    still being computed by a server). The query's words find notes by BM25: the keyword
    index of the vault's own workspace (the one ``Workspace.search`` reads), scoped with
    ``within=`` to the sections of the notes the plugin has vectors for, each note scored
    by its best section; or the caller's ``keyword_candidates``. The stored vectors of the
    top keyword hits, weighted by their keyword score, form a pseudo-query vector in the
    vault's own vector space; every note or block is then scored by the ``vault-semantic``
    profile's weighted sum, ``0.7 * cosine(pseudo-query) + 0.3 * normalised keyword score
    of its note``. This finds notes that share the hits' meaning without sharing their
    words, and never compares vectors of two models. It needs at least one keyword hit.
``vectors``
    ``similar_notes``: the note's own stored vector against the others; no model needed.

Set ``allow_fallback=False`` to get the seed's "different embedding model" error
instead of ``keyword-rerank`` when no query model is available.
"""

from __future__ import annotations

import re
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import EmbeddingError, InvalidArgument, SmartContextError, WorkspaceNotFound
from ..query.fusion import weighted_sum
from ..query.options import (
    MIN_SIMILARITY, NOTE_FOLDERS, NOTE_PATH, NOTE_TAGS, SCOPE, SEMANTIC_LIMIT, SEMANTIC_QUERY, Option,
)
from ..query.profiles import VAULT_SEMANTIC
from .ajson import BLOCK, SOURCE
from .cache import LoadStats, VectorCache
from .config import (
    LEGACY_SETTINGS,
    PLUGIN_DEFAULT_MODEL,
    SmartConnectionsModelMismatch,
    SmartConnectionsNoEmbeddings,
    SmartConnectionsNotConfigured,
    SmartEnvConfig,
    read_config,
)
from ..notes import normalise_folder, normalise_tag, path_matches, tag_matches
from ..retrieval.keyword import KeywordSearcher
from ..retrieval.matrix import top_k
from .notes import VaultNotes, anchor_heading, heading_parts
from . import shipped
from .query_models import QueryModel, find_query_model
from .store import ParseStore

# The rows a scope ranks, for ``VectorCache.dot`` (None: every row).
SCOPE_KIND = {"notes": SOURCE, "blocks": BLOCK, "both": None}
MODE_MODEL = "model"
MODE_KEYWORD_RERANK = "keyword-rerank"
MODE_VECTORS = "vectors"
MODE_SHIPPED = shipped.MODE_SHIPPED

# keyword-rerank: weight of the cosine to the pseudo-query (the rest is keyword score),
# how many keyword hits form the pseudo-query, and how many are asked for.
# The vault-semantic profile's constants (query/profiles.py).
RERANK_SEEDS = VAULT_SEMANTIC.constants["rerank_seeds"]
RERANK_CANDIDATES = VAULT_SEMANTIC.constants["rerank_candidates"]
# Keyword hits are sections: this many are asked for per wanted note.
SECTIONS_PER_NOTE = VAULT_SEMANTIC.constants["sections_per_note"]
QUERY_VECTOR_CACHE = 256
_WORD = re.compile(r"\w+", re.UNICODE)

KeywordCandidates = Callable[[str, int], list[tuple[str, float]]]


class NoteNotFound(InvalidArgument):
    """``similar_notes`` was given a note the plugin has no vector for."""


@dataclass
class SemanticHit:
    """One result.

    kind:    ``note`` or ``block``.
    heading: for blocks, the heading path joined with `` > `` (``None`` for notes).
    key:     the plugin's item key (``path`` or ``path#H1#H2``).
    lines:   1-based inclusive span the snippet came from (blocks).
    signals: the parts of ``score`` (``cosine``; ``keyword`` in keyword-rerank mode).
    """

    path: str
    score: float
    kind: str
    heading: str | None
    key: str
    lines: list[int] | None
    snippet: str
    signals: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        # What asdict gives, without its deep copies (a tenth of a served call's time).
        return {"path": self.path, "score": self.score, "kind": self.kind, "heading": self.heading,
                "key": self.key, "lines": None if self.lines is None else list(self.lines),
                "snippet": self.snippet, "signals": dict(self.signals)}


@dataclass
class _Answer:
    """What every search answer carries: how it was answered, the hits, and why not more.

    method: ``mode`` in words, naming the model that ranked the results (and, when the
            plugin's model is missing, saying so).
    """

    mode: str
    method: str
    model_key: str | None
    scope: str
    results: list[SemanticHit]
    warnings: list[str]
    elapsed_ms: float
    load: dict[str, Any]

    @property
    def count(self) -> int:
        return len(self.results)

    def to_dict(self) -> dict[str, Any]:
        d = {f.name: getattr(self, f.name) for f in fields(self)}
        d.update(results=[hit.to_dict() for hit in self.results], warnings=list(self.warnings),
                 load=dict(self.load), count=self.count)
        return d


@dataclass
class SemanticSearchResult(_Answer):
    query: str
    candidates: int  # rows the filters allowed


@dataclass
class SimilarNotesResult(_Answer):
    path: str


@dataclass
class SmartConnectionsStatus:
    """What ``status()`` reports; ``error`` holds the validation message when not usable."""

    vault: str
    configured: bool
    smart_env_dir: str
    settings_found: bool = False
    model_key: str | None = None
    dim: int | None = None
    configured_models: list[dict[str, Any]] = field(default_factory=list)
    stored_models: dict[str, int] = field(default_factory=dict)
    files: int = 0
    notes: int = 0
    blocks: int = 0
    bad_lines: int = 0
    no_vector: int = 0
    stale_blocks: int = 0
    bad_vectors: int = 0
    vector_bytes: int = 0
    vector_store: str | None = None
    query_model: dict[str, Any] = field(default_factory=dict)
    search_mode: str | None = None
    last_load: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class SmartConnections:
    """Read-only access to a vault's Smart Connections vectors.

    Parameters:
        vault:              the Obsidian vault folder (it holds ``.smart-env/``).
        model_key:          use the vectors of this model (default: decided from the data,
                            see ``VectorCache.choose_model``).
        models_dirs:        folders to look in for a local copy of the vault's model.
        embedders:          query embedders to offer (``.name`` + ``embed_query``); one is
                            used only when its name names the vault's model.
        keyword_candidates: ``f(query, k) -> [(path, score)]`` for keyword-rerank mode;
                            default: the keyword search of the vault's workspace index
                            (built on first use when there is none).
        workspace:          a function returning the vault's workspace with an up-to-date
                            index (a server's ``ToolContext.ready_workspace``, so the server
                            keeps one index and one refresh schedule); default: this reader
                            opens the vault's workspace itself, brings it up to date at
                            most once per ``sweep_interval`` (only changed files are parsed),
                            and closes it in ``close``.
        allow_fallback:     False raises the "different model" error instead of answering
                            in keyword-rerank mode.
        include_blocks:     keep block vectors (needed for ``scope="blocks"``/``"both"``).
        sweep_interval:     seconds between checks of every file's mtime (see ``cache``).
        use_hf_cache:       also look in the user's Hugging Face cache.
        snippet_chars:      length of result snippets.
        cache_path:         where to keep parsed vectors between processes (see ``store``):
                            ``"auto"`` is ``<vault>/.smartcontext/smart_connections.sqlite``
                            (beside the workspace index), None keeps them in memory only.
                            The plugin's ``.smart-env`` folder is never written to.
        watch:              on Linux, learn about changed files from inotify instead of
                            stat sweeps (see ``cache``).
    """

    def __init__(
        self,
        vault: str | Path,
        *,
        model_key: str | None = None,
        models_dirs: Iterable[str | Path] = (),
        embedders: Iterable[Any] = (),
        keyword_candidates: KeywordCandidates | None = None,
        workspace: Callable[[], Any] | None = None,
        allow_fallback: bool = True,
        include_blocks: bool = True,
        sweep_interval: float = 1.0,
        use_hf_cache: bool = True,
        snippet_chars: int = 300,
        cache_path: str | Path | None = "auto",
        watch: bool = True,
    ):
        root = Path(vault).expanduser()
        if not root.is_dir():
            raise WorkspaceNotFound(f"vault folder {str(root)!r} does not exist or is not a folder")
        self.vault = root.resolve()
        self.model_key_option = model_key
        self.models_dirs = [Path(d).expanduser() for d in models_dirs]
        self.embedders = list(embedders)
        self.keyword_candidates = keyword_candidates
        self.allow_fallback = allow_fallback
        self.include_blocks = include_blocks
        self.sweep_interval = sweep_interval
        self.use_hf_cache = use_hf_cache
        self.snippet_chars = int(snippet_chars)
        self.watch = watch
        if cache_path == "auto":
            cache_path = self.vault / ".smartcontext" / "smart_connections.sqlite"
        self.store = ParseStore(Path(cache_path).expanduser()) if cache_path else None
        self.notes = VaultNotes(self.vault)
        self._lock = threading.RLock()
        self._config: SmartEnvConfig | None = None
        self._config_stamp: tuple | None = None
        self._cache: VectorCache | None = None
        self._query_model: QueryModel | None = None
        self._lend_workspace = workspace
        self._workspace: Any = None  # opened here when no workspace is lent
        self._workspace_refreshed = float("-inf")
        self._query_vectors: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
        # Keyword candidates by (query, k), valid for one (index generation, vector rows)
        # stamp; and the keyword scope (rows of notes with vectors) for one stamp.
        self._keyword_memo: OrderedDict[tuple[str, int], tuple[tuple, list[tuple[str, float]]]] = OrderedDict()
        self._keyword_scope: tuple[tuple, frozenset[int] | None] | None = None

    # -- public API ---------------------------------------------------------------------

    def refresh(self, force: bool = False) -> LoadStats:
        """Load or update the vectors; raises the seed's errors when unusable."""
        with self._lock:
            return self._load(force)

    def status(self) -> SmartConnectionsStatus:
        """Configuration, counts and the last load, without raising for an unusable vault."""
        with self._lock:
            st = SmartConnectionsStatus(
                vault=str(self.vault), configured=False, smart_env_dir=str(self.vault / ".smart-env")
            )
            try:
                cfg = self._read_config()
            except SmartConnectionsNotConfigured as exc:
                st.error = str(exc)
                return st
            st.configured = True
            st.settings_found = cfg.settings_found
            st.configured_models = [asdict(m) for m in cfg.models]
            st.warnings.extend(cfg.warnings)
            try:
                stats: LoadStats | None = self._load(False)
            except SmartContextError as exc:
                st.error = str(exc)
                stats = self._cache.last_stats if self._cache else None
            cache = self._cache
            if cache is not None:
                totals = cache.totals()
                st.model_key = cache.model_key
                st.dim = cache.dim
                st.stored_models = dict(totals.models.most_common())
                st.files = len(cache.files)
                st.notes, st.blocks = cache.counts()
                st.bad_lines, st.no_vector = totals.bad_lines, totals.no_vector
                st.stale_blocks, st.bad_vectors = totals.stale_blocks, totals.bad_vectors
                st.vector_bytes = cache.memory_bytes()
                st.warnings.extend(self._model_warnings(cfg, cache))
            if self.store is not None:
                st.vector_store = str(self.store.path)
                if self.store.error:
                    st.warnings.append(self.store.error)
            if stats is not None:
                st.last_load = stats.to_dict()
            if st.model_key:
                qm = self._find_query_model()
                st.query_model = qm.to_dict()
                st.search_mode = MODE_MODEL if qm.available else (
                    self._fallback_mode() if self.allow_fallback else None
                )
            return st

    def semantic_search(
        self,
        query: str,
        limit: int | None = None,
        min_score: float | None = None,
        tags: list[str] | None = None,
        paths: list[str] | None = None,
        scope: str | None = None,
    ) -> SemanticSearchResult:
        """Notes and/or blocks most similar to ``query``. An argument left out (None)
        takes its declared default (``query.options.SEMANTIC_SEARCH_OPTIONS``: 10 results,
        minimum similarity 0.3, notes).

        tags:  keep notes that have any of these tags (frontmatter or inline; ``ai`` also
               matches ``ai/llm``; case and ``#`` ignored).
        paths: keep notes inside any of these folders (or equal to these note paths).
        scope: ``notes``, ``blocks`` or ``both``.
        """
        started = time.perf_counter()
        if not isinstance(query, str) or not query.strip():
            raise InvalidArgument("query must be a non-empty string")
        SEMANTIC_QUERY.check(query)
        limit, min_score, tags, paths, scope = self._check_args(limit, min_score, tags, paths, scope)
        with self._lock:
            stats, cache = self._loaded()
            warnings: list[str] = []
            mask = self._candidate_mask(scope, tags, paths)
            qm = self._find_query_model()
            scores = signals = None
            mode = MODE_MODEL
            if qm.available:
                scores, why = self._model_scores(qm, query, scope)
                if scores is None:
                    warnings.append(why)
            method = f"semantic (the plugin's model {cache.model_key}, run locally from {qm.source})"
            if scores is None:
                if not self.allow_fallback:
                    if qm.available:  # the right model, but it failed: say so, not "different model"
                        raise EmbeddingError(warnings[-1].split("; answered by")[0])
                    raise SmartConnectionsModelMismatch(cache.model_key or "unknown", self._supported_models())
                if not qm.available:
                    answer = self._shipped_search(query, scope, tags, paths, limit, min_score, warnings)
                    if answer is not None:
                        results, candidates, model = answer
                        return SemanticSearchResult(
                            query=query, mode=MODE_SHIPPED, model_key=cache.model_key, scope=scope,
                            method=(f"semantic (shipped model {model} over the notes' text; the plugin's "
                                    f"model {cache.model_key} is not installed)"),
                            results=results, candidates=candidates, warnings=warnings,
                            elapsed_ms=round((time.perf_counter() - started) * 1000, 3), load=stats.to_dict(),
                        )
                mode = MODE_KEYWORD_RERANK
                method = f"keyword-rerank (keyword hits re-ranked by the plugin's stored {cache.model_key} vectors)"
                if not qm.available:
                    warnings.append(
                        f"no query model for {cache.model_key}: answered by keyword-rerank ({qm.reason})"
                    )
                scores, signals, why = self._rerank_scores(query)
                if why:
                    warnings.append(why)
            results = self._collect(scores, mask, limit, min_score, signals, warnings)
            return SemanticSearchResult(
                query=query, mode=mode, method=method, model_key=cache.model_key, scope=scope, results=results,
                candidates=int(mask.sum()), warnings=warnings,
                elapsed_ms=round((time.perf_counter() - started) * 1000, 3), load=stats.to_dict(),
            )

    def similar_notes(
        self, path: str, limit: int | None = None, min_score: float | None = None, scope: str | None = None
    ) -> SimilarNotesResult:
        """Notes (or blocks) closest to the note at ``path``, from stored vectors alone
        (arguments left out as for ``semantic_search``)."""
        started = time.perf_counter()
        limit, min_score, _, _, scope = self._check_args(limit, min_score, None, None, scope)
        with self._lock:
            stats, cache = self._loaded()
            note = self._resolve_note(path)
            warnings: list[str] = []
            rows = cache.rows_of_note(note)
            vec = self._note_vector(note)
            if cache.row_of(note) is None:
                warnings.append(
                    f"{note} has no note-level vector; used the mean of its {rows.size} block vectors"
                )
            mask = self._candidate_mask(scope, [], [])
            mask[rows] = False  # never the note itself, nor its own blocks
            scores = cache.dot(vec, SCOPE_KIND[scope])
            results = self._collect(scores, mask, limit, min_score, None, warnings)
            return SimilarNotesResult(
                path=note, mode=MODE_VECTORS, model_key=cache.model_key, scope=scope,
                method=f"the plugin's stored {cache.model_key} vectors (no model needed)",
                results=results, warnings=warnings,
                elapsed_ms=round((time.perf_counter() - started) * 1000, 3), load=stats.to_dict(),
            )

    def workspace(self) -> Any:
        """The vault's workspace as it is (no refresh): the lent one, or this reader's own."""
        if self._lend_workspace is not None:
            return self._lend_workspace()
        if self._workspace is None:
            from ..workspace import Workspace

            self._workspace = Workspace.open(self.vault)
        return self._workspace

    def close(self) -> None:
        """Release the folder watch, the store connection and the workspace this reader
        opened (the object stays usable: they are opened again when needed)."""
        with self._lock:
            if self._cache is not None:
                self._cache.close()
            if self.store is not None:
                self.store.close()
            if self._workspace is not None:
                self._workspace.close()
                self._workspace = None
                self._workspace_refreshed = float("-inf")

    # -- loading and validation ---------------------------------------------------------

    def _read_config(self) -> SmartEnvConfig:
        env = self.vault / ".smart-env"
        stamp = tuple(_mtime(p) for p in (
            env, env / "smart_env.json", env / "embedding_models" / "embedding_models.ajson", self.vault / LEGACY_SETTINGS,
        ))
        if self._config is None or stamp != self._config_stamp:
            self._config = read_config(self.vault)
            self._config_stamp = stamp
        return self._config

    def _check_args(self, limit, min_score, tags, paths, scope):
        checked = _check_args(limit, min_score, tags, paths, scope)
        if checked[-1] != "notes" and not self.include_blocks:
            raise InvalidArgument("block search needs include_blocks=True")
        return checked

    def _loaded(self) -> tuple[LoadStats, VectorCache]:
        """The vectors in step with disk (under the caller's lock) and what loading did."""
        stats = self._load(False)
        assert self._cache is not None
        return stats, self._cache

    def _load(self, force: bool) -> LoadStats:
        cfg = self._read_config()
        preferred = cfg.configured_keys
        if self._cache is None:
            self._cache = VectorCache(
                cfg.multi_dir, preferred_keys=preferred, model_key=self.model_key_option,
                include_blocks=self.include_blocks, sweep_interval=self.sweep_interval,
                store=self.store, watch=self.watch,
            )
        cache = self._cache
        if cache.preferred_keys != preferred:
            cache.preferred_keys = preferred
            force = True
        before = cache.model_key
        stats = cache.refresh(force)
        if cache.model_key != before:
            self._query_model = None
            self._query_vectors.clear()
        if not self.allow_fallback and cache.model_key and not self._find_query_model().available:
            # The seed checks the model before the embeddings; so does strict mode.
            raise SmartConnectionsModelMismatch(cache.model_key, self._supported_models())
        notes, blocks = cache.counts()
        if notes + blocks == 0:
            raise SmartConnectionsNoEmbeddings()
        return stats

    def _fallback_mode(self) -> str:
        try:
            return MODE_SHIPPED if shipped.usable(self.workspace()) is None else MODE_KEYWORD_RERANK
        except (SmartContextError, OSError):
            return MODE_KEYWORD_RERANK

    def _find_query_model(self) -> QueryModel:
        cache = self._cache
        key = cache.model_key if cache else None
        if self._query_model is None or self._query_model.model_key != key:
            info = self._config.info(key) if (self._config and key) else None
            self._query_model = find_query_model(
                key, embedders=self.embedders, models_dirs=self.models_dirs,
                use_hf_cache=self.use_hf_cache, max_tokens=info.max_tokens if info else None,
            )
        return self._query_model

    def _supported_models(self) -> str:
        names = [getattr(e, "name", "") for e in self.embedders if getattr(e, "name", "")]
        return " or ".join([PLUGIN_DEFAULT_MODEL] + [n for n in names if n != PLUGIN_DEFAULT_MODEL])

    def _model_warnings(self, cfg: SmartEnvConfig, cache: VectorCache) -> list[str]:
        out = []
        keys = cfg.configured_keys
        if keys and cache.model_key and cache.model_key != keys[0]:
            out.append(
                f"the settings name {keys[0]} but the vectors used are stored under {cache.model_key}"
            )
        others = [k for k in cache.totals().models if k != cache.model_key]
        if others:
            out.append("vectors of other models are ignored: " + ", ".join(sorted(others)))
        return out

    def _resolve_note(self, path: str) -> str:
        if not isinstance(path, str) or not path.strip():
            raise InvalidArgument("path must be a non-empty note path")
        NOTE_PATH.check(path)
        cache = self._cache
        assert cache is not None
        rel = normalise_folder(path)
        self.notes.resolve(rel)  # refuse paths outside the vault before anything else
        for candidate in (rel, rel + ".md"):
            if cache.has_rows(candidate):
                return candidate
        # A bare note name ("Attention"), resolved as a wikilink is, like read_file does.
        from ..notes.resolver import LinkResolver

        linked = LinkResolver(cache.note_paths()).resolve(path.strip())
        if linked is not None and cache.has_rows(linked):
            return linked
        raise NoteNotFound(
            f"Smart Connections has no vector for {path!r} (model {cache.model_key}); "
            f"check the path (relative to the vault, e.g. 'folder/note.md') or let the plugin embed it"
        )

    # -- scoring ------------------------------------------------------------------------

    def _candidate_mask(self, scope: str, tags: list[str], paths: list[str]) -> np.ndarray:
        cache = self._cache
        assert cache is not None
        mask = cache.alive().copy()
        kinds = cache.kinds()
        if scope == "notes":
            mask &= kinds == SOURCE
        elif scope == "blocks":
            mask &= kinds != SOURCE
        if tags or paths:
            note_paths = cache.note_paths()
            allowed = np.zeros(len(note_paths), dtype=bool)
            ids = np.unique(cache.note_ids()[mask])
            for nid in ids:
                p = note_paths[nid]
                if paths and not path_matches(p, paths):
                    continue
                if tags:
                    facts = self._facts(p)
                    if facts is None or not tag_matches(facts.tags, tags):
                        continue
                allowed[nid] = True
            mask &= allowed[cache.note_ids()]
        return mask

    def _facts(self, path: str):
        # Checked against disk at most once per sweep interval, like the vectors.
        return self.notes.facts(path, max_age=self.sweep_interval)

    def _model_scores(self, qm: QueryModel, query: str, scope: str) -> tuple[np.ndarray | None, str]:
        cache = self._cache
        assert cache is not None
        assert qm.embedder is not None  # the caller checked qm.available
        key = (qm.source, query)
        cached = self._query_vectors.get(key)
        if cached is not None:
            self._query_vectors.move_to_end(key)
            return cache.dot(cached, SCOPE_KIND[scope]), ""
        try:
            q = np.asarray(qm.embedder.embed_query(query), dtype=np.float32).reshape(-1)
        except Exception as exc:  # a broken model must not take search down with it
            self._query_model = QueryModel(qm.model_key, None, "none", f"{qm.source} failed: {exc}")
            return None, f"query model {qm.source} failed ({exc}); answered by keyword-rerank"
        if q.shape[0] != cache.dim or not np.isfinite(q).all():
            self._query_model = QueryModel(
                qm.model_key, None, "none", f"{qm.source} makes {q.shape[0]}-d vectors, the vault has {cache.dim}-d"
            )
            return None, (
                f"query model {qm.source} makes {q.shape[0]}-d vectors but the vault's are "
                f"{cache.dim}-d; answered by keyword-rerank"
            )
        q /= max(float(np.linalg.norm(q)), 1e-12)
        # Agents and people repeat queries; the model costs far more than the ranking.
        self._query_vectors[key] = q
        if len(self._query_vectors) > QUERY_VECTOR_CACHE:
            self._query_vectors.popitem(last=False)
        return cache.dot(q, SCOPE_KIND[scope]), ""

    def _shipped_search(
        self, query: str, scope: str, tags: list[str], paths: list[str], limit: int, min_score: float,
        warnings: list[str],
    ) -> tuple[list[SemanticHit], int, str] | None:
        """(results, candidates, model) by the shipped model over the notes' text, or None
        (with the reason in ``warnings``) when it cannot answer now."""
        try:
            ws = self.workspace()
            why = shipped.usable(ws)
            if why is None:
                self._ready_workspace()  # the index is up to date with the notes first
                # A server has a background embedder (and must not wait for it); a
                # one-shot caller embeds what is missing now.
                embedded, why = shipped.prepare(ws, wait=ws.background is None)
                if embedded:
                    warnings.append(f"embedded {embedded:,} section(s) with the shipped model (kept for later queries)")
            if why is not None:
                warnings.append(f"no semantic answer from the shipped model: {why}")
                return None
            vectors = ws.vectors()
            if vectors is None:
                warnings.append("no semantic answer from the shipped model: the vault's index has no vectors")
                return None
            _, embedder = vectors
            key = ("shipped:" + embedder.name, query)
            q = self._query_vectors.get(key)
            if q is None:
                q = np.asarray(embedder.embed_query(query), dtype=np.float32).reshape(-1)
                q /= max(float(np.linalg.norm(q)), 1e-12)
                self._query_vectors[key] = q
                if len(self._query_vectors) > QUERY_VECTOR_CACHE:
                    self._query_vectors.popitem(last=False)
            cache = self._cache
            assert cache is not None
            answer = shipped.search(ws, q, scope, tags, paths, limit, min_score, self._facts, cache.has_rows)
        except (SmartContextError, OSError) as exc:
            warnings.append(f"no semantic answer from the shipped model ({exc})")
            return None
        if answer is None:
            warnings.append("no semantic answer from the shipped model: the vault's index has no vectors")
            return None
        stored = ws.store.items_by_rowids([h.rowid for h in answer.hits])
        results: list[SemanticHit] = []
        missing = 0
        for h in answer.hits:
            if len(results) >= limit:
                break
            si = stored.get(h.rowid)
            if si is None or not self.notes.exists(h.path):
                missing += 1
                continue
            results.append(self._shipped_hit(h, si.item))
        if missing:
            warnings.append(f"skipped {missing} result(s) whose note no longer exists in the vault")
        return results, answer.candidates, answer.model

    def _shipped_hit(self, h: "shipped.ShippedHit", item) -> SemanticHit:
        heading = list(item.meta.get("heading_path") or []) if h.kind == "block" else []
        if h.kind == "note":
            snippet, _ = self.notes.snippet(h.path, None, None, self.snippet_chars)
            lines = None
        else:
            snippet, span = self.notes.snippet(
                h.path, (item.start_line, item.end_line), heading[-1] if heading else None, self.snippet_chars
            )
            lines = list(span) if span else None
        return SemanticHit(
            path=h.path, score=round(float(h.score), 4), kind=h.kind,
            heading=" > ".join(heading) if heading else None,
            key=h.path + "".join("#" + part for part in heading), lines=lines, snippet=snippet,
            signals={"cosine": round(float(h.score), 4)},
        )

    def _ready_workspace(self, force: bool = False) -> Any:
        """The vault's workspace with its index up to date: a lent one is the lender's
        business; our own is refreshed at most once per ``sweep_interval`` (or now, when
        ``force``), and built on first use when the vault has no index."""
        ws = self.workspace()
        if self._lend_workspace is None and (
            force or time.monotonic() - self._workspace_refreshed >= self.sweep_interval
        ):
            if ws.has_index:
                ws.index(embeddings=ws.keeps_vectors)
            else:
                ws.ensure_index()
            # From the end: a first build can take longer than the interval itself.
            self._workspace_refreshed = time.monotonic()
        return ws

    def _keyword(self, query: str, k: int) -> tuple[list[tuple[str, float]], str]:
        """``[(note path, score)]``, best first: the vault index's keyword search within
        the sections of the notes that have vectors (each note scored by its best
        section), and why there are none when the index could not answer."""
        if self.keyword_candidates is not None:
            return list(self.keyword_candidates(query, k)), ""
        cache = self._cache
        assert cache is not None
        # New vectors mean the plugin saw edited notes: the index should see them too.
        fresh = cache.last_stats.check in ("cold", "reloaded")
        try:
            ws = self._ready_workspace(fresh)
            catalogue = ws.catalogue()
            stamp = (id(ws.store), catalogue.generation, id(cache), cache.version)
            memo = self._keyword_memo.get((query, k))
            if memo is not None and memo[0] == stamp:
                self._keyword_memo.move_to_end((query, k))
                return list(memo[1]), ""
            if self._keyword_scope is None or self._keyword_scope[0] != stamp:
                rows = frozenset(r for p, rs in catalogue.by_path.items() if cache.has_rows(p) for r in rs)
                # A scope of every row is no scope: the store's plain top-k is cheaper.
                self._keyword_scope = (stamp, None if len(rows) == len(catalogue.entries) else rows)
            hits = KeywordSearcher(ws.store).search(query, SECTIONS_PER_NOTE * k, within=self._keyword_scope[1])
        except (SmartContextError, OSError, sqlite3.Error) as exc:
            return [], f"keyword search over the vault's index failed ({exc})"
        best: dict[str, float] = {}
        for rowid, score in hits:
            entry = catalogue.entries.get(rowid)
            if entry is not None and score > best.get(entry.path, 0.0):
                best[entry.path] = float(score)
        found = sorted(best.items(), key=lambda kv: -kv[1])[:k]
        self._keyword_memo[(query, k)] = (stamp, found)
        if len(self._keyword_memo) > QUERY_VECTOR_CACHE:
            self._keyword_memo.popitem(last=False)
        return list(found), ""

    def _rerank_scores(self, query: str) -> tuple[np.ndarray, dict[str, np.ndarray] | None, str]:
        cache = self._cache
        assert cache is not None
        n = cache.n_rows
        hits = []
        found, why = self._keyword(query, RERANK_CANDIDATES)
        for path, score in found:
            path = normalise_folder(str(path))
            if score > 0 and cache.has_rows(path):
                hits.append((path, float(score)))
        if not hits:
            terms = ", ".join(dict.fromkeys(w for w in _WORD.findall(query.lower()) if len(w) >= 2)) or "(none)"
            return np.full(n, -np.inf, dtype=np.float32), None, why or (
                f"keyword-rerank found no note containing the query's words ({terms})"
            )
        top = max(s for _, s in hits)
        kw_by_note = np.zeros(len(cache.note_paths()), dtype=np.float32)
        centroid = np.zeros(cache.dim or 0, dtype=np.float32)
        for i, (path, score) in enumerate(hits):
            weight = score / top
            nid = cache.note_id(path)
            assert nid is not None  # hits are paths with rows
            kw_by_note[nid] = max(kw_by_note[nid], weight)
            if i < RERANK_SEEDS:
                centroid += weight * self._note_vector(path)
        centroid /= max(float(np.linalg.norm(centroid)), 1e-12)
        cosine = cache.dot(centroid)
        keyword = kw_by_note[cache.note_ids()]
        scores = weighted_sum({"vectors": cosine, "keywords": keyword}, VAULT_SEMANTIC.fusion.weights)
        return scores, {"cosine": cosine, "keyword": keyword}, ""

    def _note_vector(self, path: str) -> np.ndarray:
        cache = self._cache
        assert cache is not None
        own = cache.row_of(path)
        if own is not None:
            return cache.matrix()[own]
        vec = cache.matrix()[cache.rows_of_note(path)].mean(axis=0)
        return vec / max(float(np.linalg.norm(vec)), 1e-12)

    def _collect(
        self,
        scores: np.ndarray,
        mask: np.ndarray,
        limit: int,
        min_score: float,
        signals: dict[str, np.ndarray] | None,
        warnings: list[str],
    ) -> list[SemanticHit]:
        cache = self._cache
        assert cache is not None
        allowed = mask & (scores >= min_score)
        results: list[SemanticHit] = []
        missing = 0
        # Results whose note file is gone are skipped, so look a little past the limit.
        want = limit * 2 + 8
        while len(results) < limit:
            rows, top = top_k(scores, want, allowed)
            if rows.size == 0:
                break
            for row, score in zip(rows.tolist(), top.tolist()):
                allowed[row] = False
                rec = cache.record(row)
                if not self.notes.exists(rec.path):
                    missing += 1
                    continue
                results.append(self._hit(rec, score, signals, row))
                if len(results) >= limit:
                    break
            want = (limit - len(results)) * 2 + 8
        if missing:
            warnings.append(f"skipped {missing} result(s) whose note no longer exists in the vault")
        return results

    def _hit(self, rec, score: float, signals: dict[str, np.ndarray] | None, row: int) -> SemanticHit:
        heading = heading_parts(rec.key) if rec.kind != SOURCE else None
        snippet, span = self.notes.snippet(rec.path, rec.lines, anchor_heading(rec.key), self.snippet_chars)
        sig = {k: round(float(v[row]), 4) for k, v in signals.items()} if signals else {"cosine": round(score, 4)}
        return SemanticHit(
            path=rec.path,
            score=round(score, 4),
            kind="note" if rec.kind == SOURCE else "block",
            heading=" > ".join(heading) if heading else None,
            key=rec.key,
            lines=list(span) if span else None,
            snippet=snippet,
            signals=sig,
        )


def _check_args(limit, min_score, tags, paths, scope):
    """Both questions' arguments, checked by the vault-semantic profile's option
    declarations (``query.options``), the ones the tools' schemas are made from: the
    library, the CLI and MCP accept and refuse the same values. A lone string stands for
    a list of one tag or folder."""
    tags = _given(NOTE_TAGS, [tags] if isinstance(tags, str) else tags) or []
    paths = _given(NOTE_FOLDERS, [paths] if isinstance(paths, str) else paths) or []
    return (
        int(_given(SEMANTIC_LIMIT, limit)), float(_given(MIN_SIMILARITY, min_score)),
        [t for t in (normalise_tag(x) for x in tags) if t], [normalise_folder(p) for p in paths],
        _given(SCOPE, scope),
    )


def _given(option: Option, value: Any) -> Any:
    checked = option.check(value)
    return option.default if checked is None else checked


def _mtime(path: Path) -> int | None:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return None
