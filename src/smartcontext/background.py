"""Embedding in the background of a server: questions never wait for vectors.

A server parses and stores files quickly (names, keywords, graph) and answers from that
at once; ``BackgroundEmbedding`` then gives the items their vectors on a daemon thread
at low OS priority. Each batch is embedded without any lock a reader needs and stored
in its own short transaction; the workspace's in-memory vector matrix is extended with
it, so the next question already uses it. Pending items are the ones without a vector,
so a restart continues where the last run ended. Errors are kept for ``status``, never
raised into a question.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
import time
import weakref
from dataclasses import asdict, dataclass
from typing import Any, Protocol

from .indexer import embed_pending
from .lazy import Logger


class EmbeddingHost(Protocol):
    """What the background embedder uses of a workspace (``Workspace`` is one): named
    here so this module never imports the workspace, which imports it."""

    config: Any

    @property
    def store(self) -> Any: ...

    def embedder(self) -> Any: ...

    def vectors_landed(self, model: str, rowids: Any, matrix: Any, generations: Any) -> None: ...


log = Logger("smartcontext.background")


class _Stopped(Exception):
    """Raised into a model build to end it when the embedder is stopped."""

# Niceness of the embedding thread (0 normal, 19 lowest): questions and parsing come first.
NICENESS = 10
# A short sleep after each stored batch lets reader threads take the GIL and the cores.
BATCH_PAUSE = 0.02
# The longest the interpreter's exit waits for the batch in flight (one batch: seconds).
# A model call in native code cannot be interrupted, and tearing the interpreter down
# under it (freeing the session it runs in) aborts the process; no later batch starts.
EXIT_WAIT = 60.0

_alive: weakref.WeakSet["BackgroundEmbedding"] = weakref.WeakSet()


@dataclass
class EmbeddingState:
    """What a background embedder is doing, for ``status``.

    state:    "idle" (nothing pending when last checked), "running", "stopped", "failed".
    model:    the embedder's name once known.
    done/total: items of the current (or last) pass stored so far / pending at its start.
    items_per_second: measured over the current (or last) pass.
    error:    why the last pass failed (the next refresh tries again).
    """

    state: str = "idle"
    model: str | None = None
    done: int = 0
    total: int = 0
    items_per_second: float | None = None
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class EmbeddingStatus:
    """How far the index's vectors are: the one object every answer that depends on them
    carries under the key ``embedding`` (``status``, ``search``, ``context``; the CLI's
    ``--json``, the MCP tools and the HTTP routes alike).

    state:    "off" (embeddings switched off), "complete", "running" (a background
              embedder of this process is at work), "pending" (items lack vectors and
              nothing here embeds them: ``smartcontext index`` or a server will) or
              "failed" (the background embedder's last pass failed: ``error``; the next
              refresh tries again, and questions go on without the missing vectors).
    model:    the configured embedding model; None when embeddings are off.
    embedded: items with a vector of that model; ``total``: items that should have one.
    items_per_second: the background embedder's rate over its current (or last) pass;
              None when none ran in this process.
    error:    why the background embedder's last pass failed.
    """

    state: str
    model: str | None = None
    embedded: int = 0
    total: int = 0
    items_per_second: float | None = None
    error: str | None = None

    @property
    def vectors(self) -> str:
        """For people: "8,480 / 36,947", or "off"."""
        return "off" if self.state == "off" else f"{self.embedded:,} / {self.total:,}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def lower_thread_priority(niceness: int = NICENESS) -> None:
    """Lower the calling thread's scheduling priority. On Linux a thread is its own task,
    so ``setpriority`` on its native id touches it alone (and the threads it starts,
    such as ONNX Runtime's pool when the model is loaded here, inherit it)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, max(os.getpriority(os.PRIO_PROCESS, tid), niceness))
    except (OSError, AttributeError):  # not permitted, or not supported: normal priority
        pass


class BackgroundEmbedding:
    """Give a workspace's items vectors on a low-priority daemon thread.

    ``wake()`` starts a pass (or queues one after the pass in progress) over whatever
    is pending then; ``stop()`` ends the thread after the batch in flight.
    """

    def __init__(self, workspace: EmbeddingHost, batch_size: int | None = None):
        self.workspace = workspace
        self.batch_size = max(8, batch_size or workspace.config.embeddings.batch_size)
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._state = EmbeddingState()
        self._started_at = 0.0
        _alive.add(self)

    @property
    def running(self) -> bool:
        return self._state.state == "running" or (self._wake.is_set() and not self._stop.is_set())

    def state(self) -> EmbeddingState:
        with self._lock:
            return EmbeddingState(**asdict(self._state))

    def wake(self) -> None:
        """Embed what is pending now (new items included), in the background."""
        if self._stop.is_set():
            return
        with self._lock:
            self._wake.set()
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="smartcontext-embed", daemon=True)
                self._thread.start()

    def stop(self, wait: float = 0.0) -> None:
        """Stop after the batch in flight; ``wait`` seconds for it to be stored."""
        self._stop.set()
        self._wake.set()
        thread = self._thread
        if wait > 0 and thread is not None and thread is not threading.current_thread():
            thread.join(wait)

    def join(self, timeout: float | None = None) -> bool:
        """Wait until nothing is pending (or the thread ended); returns whether it is idle."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            thread = self._thread
            if thread is None or not thread.is_alive() or (not self._wake.is_set() and self._state.state != "running"):
                return not self.running
            if deadline is not None and time.monotonic() >= deadline:
                return False
            time.sleep(0.02)

    # -- the thread ------------------------------------------------------------------

    def _run(self) -> None:
        lower_thread_priority()
        while not self._stop.is_set():
            self._wake.wait()
            if self._stop.is_set():
                break
            with self._lock:  # one step, so join() never sees "nothing queued, not running"
                self._wake.clear()
                self._state = EmbeddingState(state="running", model=self._state.model)
            self._pass()
        with self._lock:
            if self._state.state == "running":
                self._state.state = "stopped"

    def _pass(self) -> None:
        from .embeddings.base import prepare_embedder  # numpy: only once a pass runs

        ws = self.workspace
        self._started_at = time.monotonic()
        try:
            embedder = ws.embedder()
            with self._lock:
                self._state.model = embedder.name
            # A model built on first use (the static one: about 30 CPU seconds, far more at
            # this thread's priority on a busy machine) is built here, where a stop ends
            # the build between two of its steps: a process that is done never waits for
            # it (nothing is written; the next process builds it).
            prepare_embedder(embedder, self._building)

            def landed(rowids, matrix, generations) -> None:
                ws.vectors_landed(embedder.name, rowids, matrix, generations)
                if BATCH_PAUSE:
                    time.sleep(BATCH_PAUSE)

            embed_pending(ws.store, embedder, self._progress, batch_size=self.batch_size,
                          stop=self._stop, on_batch=landed)
        except Exception as exc:  # reported in status; the next wake tries again
            if self._stop.is_set():
                # Closed under a slow batch (the store went first): a stop, not a failure.
                with self._lock:
                    self._state.state = "stopped"
                return
            log.warning("background embedding failed: %s", exc)
            with self._lock:
                self._state.state, self._state.error = "failed", f"{type(exc).__name__}: {exc}"
            return
        with self._lock:
            self._state.state = "stopped" if self._stop.is_set() else "idle"

    def _building(self, phase: str, done: int, total: int) -> None:
        if self._stop.is_set():
            raise _Stopped("stopped while building the embedding model")

    def _progress(self, phase: str, done: int, total: int) -> None:
        elapsed = time.monotonic() - self._started_at
        with self._lock:
            self._state.done, self._state.total = done, total
            if done and elapsed > 0:
                self._state.items_per_second = round(done / elapsed, 1)


@atexit.register
def _stop_all() -> None:
    # Runs before the interpreter frees modules and objects: every embedder stops after
    # the batch in flight, which ends here, so no native model call outlives the objects
    # it uses. The process exits one batch later at most, never after the whole backlog.
    jobs = list(_alive)
    for job in jobs:
        job.stop()
    deadline = time.monotonic() + EXIT_WAIT
    for job in jobs:
        job.stop(wait=max(0.0, deadline - time.monotonic()))
