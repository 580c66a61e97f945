"""What a tool is (``ToolSpec``) and what the tools of one folder share (``ToolContext``).

A tool is a name, a description, a JSON schema of its arguments and a handler. The
handler receives the checked arguments and returns a JSON-serialisable dict of data; it
raises a ``SmartContextError`` (``ToolError`` for a plain refusal) when it cannot answer.
The registry adds ``"success"``, so no handler writes it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jsonschema import Draft202012Validator

from ..config import DEFAULT_REFRESH_INTERVAL
from ..errors import DiskFull, IndexDamaged, IndexUnwritable
from ..validate import compile_schema
from .rwlock import ReadWriteLock

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from ..workspace import Workspace

Handler = Callable[[dict[str, Any]], dict[str, Any]]

# Between re-checks a tool waits refresh_interval seconds (config.DEFAULT_REFRESH_INTERVAL)
# and, when a check took longer than CHEAP_REFRESH seconds, at least REFRESH_COST_FACTOR
# times its duration, so on a huge folder checks take a small share of the server's time.
CHEAP_REFRESH = 0.25
REFRESH_COST_FACTOR = 20
# A server with no tool call for this many seconds drops its caches and returns the freed
# memory (``release_when_idle``); a busy one keeps them.
IDLE_RELEASE_SECONDS = 10.0
# The schema of a list-of-paths (or tags, kinds) argument.
STR_LIST: dict[str, Any] = {"type": "array", "items": {"type": "string", "maxLength": 1000}, "maxItems": 100}


@dataclass
class ToolSpec:
    """One tool as clients see it, plus how to run it.

    read_only: True when the tool never changes files (an MCP annotation hint).
    destructive: a writing tool that may replace or remove content (not only add).
    provider:  which provider offered it (``workspace``, ``vault``, ``smart_connections``...).
    lock:      held while the handler runs, for tools whose state is not thread-safe.
    text_field: the answer's key holding text for a model to read as is (the context):
               MCP sends it as its own text block, so it is not JSON-escaped (escaping
               newlines and quotes costs tokens the budget did not count).
    """

    name: str
    description: str
    input_schema: dict[str, Any]
    handler: Handler
    read_only: bool = True
    destructive: bool = False
    provider: str = ""
    lock: Any = None
    text_field: str | None = None
    validator: Draft202012Validator = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.validator = compile_schema(self.input_schema)

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "input_schema": self.input_schema,
                "read_only": self.read_only, "destructive": self.destructive, "provider": self.provider}


# -- the shared state of one server: a workspace opened once -----------------------------


class ToolContext:
    """What tools share: the folder, its workspace (opened once) and index freshness.

    refresh_interval: seconds after which a retrieval tool first brings the index up to
                      date with the folder (incremental: unchanged files cost a stat),
                      stretched to 20x the last check's duration when checks are slow
                      (huge folders); 0 = before every question; negative = never re-check.

    The index lock is held only to parse and store files (names, keywords, graph). Vectors
    are computed afterwards by the workspace's background embedder (when embeddings are
    on), which holds no lock a question needs: questions answer at once from what is
    indexed and say how much of it is embedded.
    """

    def __init__(self, root: str | Path, refresh_interval: float = DEFAULT_REFRESH_INTERVAL):
        # Imported here so the vault tools, which share the argument check in this package,
        # do not pull in the whole engine.
        from ..workspace import Workspace

        self.workspace = Workspace.open(root)
        self.root = self.workspace.root
        self.refresh_interval = refresh_interval
        # Readers (context, search...) share it. The first build and a repair take it
        # alone, and so does every index write on a store without snapshots, so a question
        # never sees a half-updated index. Where each question reads a snapshot (both
        # stores), a tool's write and a refresh share it too: they never hold questions off.
        self.index_lock = ReadWriteLock()
        # Writes to the vault's files: one at a time (read-only vault tools do not take it).
        self.vault_lock = threading.RLock()
        self._refreshing = threading.Lock()
        self._indexed = False
        self._last_refresh = float("-inf")
        self._refresh_seconds = 0.0
        self._cache: dict[str, Any] = {}
        self._cache_lock = threading.Lock()
        # Set when the server stops: a background build ends after the file it is storing.
        self.stopping = threading.Event()
        # Tool calls in flight and when the last one ended (for ``release_when_idle``).
        self._activity = threading.Lock()
        self._calls = 0
        self._last_call = float("-inf")
        self._released = float("-inf")

    @contextmanager
    def busy(self) -> Iterator[None]:
        """Hold while a tool call runs (``ToolRegistry.call`` does)."""
        with self._activity:
            self._calls += 1
        try:
            yield
        finally:
            with self._activity:
                self._calls -= 1
                self._last_call = time.monotonic()

    def release_when_idle(self, after: float = IDLE_RELEASE_SECONDS) -> threading.Thread:
        """Start a thread that, once no tool call has run for ``after`` seconds, drops the
        workspace's caches and returns the freed memory (``Workspace.release_memory``):
        once per quiet spell, until the server stops. A server's memory otherwise stays
        at its busiest (hundreds of MB on a large vault) long after the load."""

        def run() -> None:
            while not self.stopping.wait(min(1.0, after / 4)):
                with self._activity:
                    quiet = (not self._calls and self._last_call > self._released
                             and time.monotonic() - self._last_call >= after)
                if quiet:
                    self._released = time.monotonic()
                    try:
                        self.workspace.release_memory()
                    except Exception as exc:  # only memory: the server goes on as it was
                        log.warning("releasing memory failed: %s", exc)

        thread = threading.Thread(target=run, name="smartcontext-idle-release", daemon=True)
        thread.start()
        return thread

    def shared(self, key: str, make: Callable[[], Any]) -> Any:
        """One instance per key for the server's life (vault tools, readers...); ``close``
        closes those that have a ``close()``."""
        with self._cache_lock:
            if key not in self._cache:
                self._cache[key] = make()
            return self._cache[key]

    def ready_workspace(self) -> "Workspace":
        """The workspace with an index: built on first need (no embeddings, fast), and
        re-checked for changed files at most every ``refresh_interval`` seconds."""
        ws = self.workspace
        if not self._indexed:
            with self.index_lock.writer:
                if not self._indexed:
                    if not ws.has_index:
                        ws.index(embeddings=False, stop=self.stopping)
                    self._last_refresh = time.monotonic()
                    self._indexed = True
            self.embed_pending()
            return ws
        if self.refresh_interval < 0 or time.monotonic() - self._last_refresh < self._refresh_wait():
            return ws
        # One thread checks the folder; the others answer from the current index meanwhile.
        if not self._refreshing.acquire(blocking=False):
            return ws
        if self.refresh_interval == 0:  # asked for: before every question, so in it
            self._refresh()
            return ws
        # The check walks the whole folder (a second on a vault of 6,500 notes): the
        # question that finds it due answers at once from the index, and the check runs on
        # a thread of its own, so no question's answer waits for a walk.
        try:
            threading.Thread(target=self._refresh, name="smartcontext-refresh", daemon=True).start()
        except RuntimeError:  # no thread could be started: check in this question
            self._refresh()
        return ws

    def _refresh(self) -> None:
        """Check the folder for changed files and index them; called holding ``_refreshing``,
        which it releases."""
        ws = self.workspace
        try:
            now = time.monotonic()
            if now - self._last_refresh >= self._refresh_wait() and not self.stopping.is_set():
                if ws.pending_changes():
                    try:
                        self._index_changes()
                    except (DiskFull, IndexUnwritable) as exc:
                        # The index is whole; answers come from it until there is room again.
                        log.warning("the index was not updated: %s", exc)
                    else:
                        self.embed_pending()
                self._last_refresh = time.monotonic()
                self._refresh_seconds = self._last_refresh - now
        except Exception as exc:  # on its own thread nobody else would hear of it
            if self.refresh_interval == 0:
                raise
            log.warning("checking %s for changed files failed: %s", self.root, exc)
            self._last_refresh = time.monotonic()  # tried again after the usual wait, not at once
        finally:
            self._refreshing.release()

    def _index_changes(self) -> None:
        """Index changed files. Where questions read snapshots, beside them: each file is
        replaced in one transaction, so a question sees it before or after, never between.
        A damaged index is rebuilt with the questions held off (the files are replaced),
        and so is every refresh on a store without snapshots."""
        ws = self.workspace
        if getattr(ws.store, "snapshot", None) is not None:
            try:
                with self.index_lock.reader:  # shared, as in files_changed
                    ws.index(embeddings=False, stop=self.stopping, repair=False)
                return
            except IndexDamaged:
                pass
        with self.index_lock.writer:
            ws.index(embeddings=False, stop=self.stopping)

    def embed_pending(self) -> None:
        """Start (or wake) the background embedder for items without vectors; nothing
        when embeddings are off or the server is stopping."""
        if self.stopping.is_set():
            return
        try:
            self.workspace.embed_in_background()
        except RuntimeError:  # no thread could be started: questions go on without vectors
            pass

    @contextmanager
    def reading(self) -> Iterator[None]:
        """Hold while a tool reads the index: shared with other readers, and, on a store
        that offers snapshots (SQLite and PostgreSQL), one consistent view of it for the
        whole question, so a tool's write (``files_changed``) goes on meanwhile instead of
        waiting."""
        with self.index_lock.reader, self.workspace.snapshot():
            yield

    def _refresh_wait(self) -> float:
        if self._refresh_seconds <= CHEAP_REFRESH:
            return self.refresh_interval
        return max(self.refresh_interval, REFRESH_COST_FACTOR * self._refresh_seconds)

    def files_changed(self, paths: list[str]) -> None:
        """Re-index files a tool wrote. Without an index yet there is nothing to update:
        the first build will read them (and updating first would leave an index holding
        only these files).

        Questions do not wait for it where the store gives each a snapshot (``reading``):
        a file's rows are replaced in one transaction, so a question sees the index
        before or after it, never between. Elsewhere it waits for the questions in
        flight and holds new ones off, as a refresh does."""
        ws = self.workspace
        # Shared, like a question: only what needs the index alone (a first build, a
        # repair, closing) waits for it.
        exclusive = getattr(ws.store, "snapshot", None) is None
        with self.index_lock.writer if exclusive else self.index_lock.reader:
            if not ws.has_index:
                return
            ws.update_files(paths, embeddings=False)
        self.embed_pending()

    def warm_up(self) -> threading.Thread:
        """Build a missing index in the background so the first question finds it ready."""

        def run() -> None:
            try:
                self.ready_workspace()
            except Exception:  # reported to the first tool call that needs the index
                pass

        thread = threading.Thread(target=run, name="smartcontext-index", daemon=True)
        thread.start()
        return thread

    def close(self, wait: float = 2.0) -> None:
        # A background build may still hold the index: it is asked to stop (it ends after
        # the file it is storing, and stops its workers); closing under it would fail its
        # writes, and the index stays consistent without a close (one transaction per file).
        self.stopping.set()
        with self._cache_lock:
            shared = list(self._cache.values())
        for value in shared:  # e.g. the Smart Connections reader's folder watch and store
            close = getattr(value, "close", None)
            if callable(close):
                close()
        job = self.workspace.background
        if job is not None:
            job.stop()  # no new batch starts; closing the workspace waits for the one in flight
        # A check for changes on its own thread ends after the file it is storing.
        refreshing = self._refreshing.acquire(timeout=wait)
        if refreshing:
            self._refreshing.release()
        if self.index_lock.acquire_write(timeout=wait):
            try:
                self.workspace.close()
            finally:
                self.index_lock.release_write()
