"""The worker processes that parse files for ``index``: a small pool run from the caller's
own thread.

``concurrent.futures.ProcessPoolExecutor`` reads results in a manager thread that Python
joins at exit. A worker killed while it was writing a result (every stop after a failure
kills the workers) left that thread waiting for the rest of the message forever, so an
``index`` that had printed its error never exited. Here there is no such thread: the
caller waits on the workers' pipes itself, and stopping kills the workers and closes the
pipes; nothing is left to join. The pipes are read by a daemon thread of ``map``, so the
workers go on parsing while the caller writes what they parsed (a PostgreSQL index spent a
third of its time with both workers idle, waiting for the writer to ask for more); the
caller waits for that thread at most a moment when it stops, and a worker killed mid-message
ends its read (the pipe's other end is closed with it).
"""

from __future__ import annotations

import multiprocessing
import pickle
import queue
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from multiprocessing.connection import Connection, wait
from typing import Any

# Chunks given out beyond the one the caller waits for, per worker: enough to keep every
# worker busy, few enough that results parsed ahead stay a small buffer.
_AHEAD_PER_WORKER = 2


class WorkerDied(RuntimeError):
    """A worker process ended without answering (killed, out of memory)."""


def _worker_main(conn: Connection, init: Callable[..., None] | None, initargs: tuple,
                 fn: Callable[..., Any]) -> None:
    if init is not None:
        init(*initargs)
    while True:
        try:
            task = conn.recv()
        except (EOFError, OSError):  # the parent closed the pipe: done
            return
        if task is None:
            return
        try:
            answer: tuple[str, Any] = ("ok", fn(*task))
        except Exception as exc:
            answer = ("error", exc)
        try:
            conn.send(answer)
        except (pickle.PicklingError, TypeError, AttributeError) as exc:
            conn.send(("error", RuntimeError(f"{type(exc).__name__}: {exc}")))
        except (BrokenPipeError, OSError):
            return


class ParsePool:
    """``workers`` processes running ``fn``; ``map`` yields its results in task order.
    Use as a context manager: leaving it by an error stops the workers at once."""

    def __init__(self, workers: int, fn: Callable[..., Any], init: Callable[..., None] | None = None,
                 initargs: tuple = ()):
        ctx = multiprocessing.get_context()
        self._procs: list[Any] = []
        self._conns: list[Connection] = []
        try:
            for n in range(workers):
                parent_end, child_end = ctx.Pipe(duplex=True)
                proc = ctx.Process(target=_worker_main, args=(child_end, init, initargs, fn),
                                   name=f"smartcontext-parse-{n}", daemon=True)
                proc.start()
                child_end.close()
                self._procs.append(proc)
                self._conns.append(parent_end)
        except BaseException:
            self.stop()
            raise

    def map(self, tasks: Sequence[tuple], check: Callable[[], None] | None = None) -> Iterator[Any]:
        """The result of ``fn(*task)`` for each task, in order; a task's exception is
        raised here, when its turn comes. ``check`` is called every tenth of a second
        while waiting (it raises to stop)."""
        ahead = len(self._procs) * _AHEAD_PER_WORKER
        ready: queue.Queue[tuple[str, Any]] = queue.Queue(maxsize=max(1, ahead))
        done = threading.Event()

        def hand(status: str, value: Any) -> None:
            while not done.is_set():  # a caller that stopped takes nothing more
                try:
                    ready.put((status, value), timeout=0.1)
                    return
                except queue.Full:
                    pass

        def read() -> None:
            try:
                for value in self._in_order(tasks, done.is_set):
                    hand("ok", value)
                hand("end", None)
            except BaseException as exc:  # noqa: BLE001 - raised in the caller's thread
                hand("error", exc)

        reader = threading.Thread(target=read, name="smartcontext-parse-results", daemon=True)
        reader.start()
        try:
            while True:
                try:
                    status, value = ready.get(timeout=0.1)
                except queue.Empty:
                    if check is not None:
                        check()
                    continue
                if status == "end":
                    return
                if status == "error":
                    raise value
                yield value
        finally:
            done.set()
            reader.join(1.0)

    def _in_order(self, tasks: Sequence[tuple], stopped: Callable[[], bool]) -> Iterator[Any]:
        """``map``'s results read from the pipes (in its reader thread), until ``stopped()``."""
        busy: dict[int, int] = {}  # worker index -> task index
        done: dict[int, tuple[str, Any]] = {}
        sent = 0
        ahead = len(self._procs) * _AHEAD_PER_WORKER
        for want in range(len(tasks)):
            while want not in done:
                for w in range(len(self._procs)):
                    if w not in busy and sent < len(tasks) and sent <= want + ahead:
                        self._conns[w].send(tasks[sent])
                        busy[w], sent = sent, sent + 1
                if stopped():
                    return
                self._collect(busy, done)
            status, value = done.pop(want)
            if status == "error":
                raise value
            yield value

    def _collect(self, busy: dict[int, int], done: dict[int, tuple[str, Any]]) -> None:
        waiting = {self._conns[w]: w for w in busy}
        sentinels = {self._procs[w].sentinel: w for w in busy}
        # A timeout, so a caller's generator can be closed between waits (Ctrl-C, a stop).
        for ready in wait([*waiting, *sentinels], timeout=0.1):
            w = waiting.get(ready)  # type: ignore[call-overload]
            if w is None:
                w = sentinels[ready]
                if self._conns[w].poll():
                    continue  # it answered, then ended: the answer is read first
                raise WorkerDied(f"a parse worker ended unexpectedly (exit code {self._procs[w].exitcode})")
            try:
                done[busy.pop(w)] = self._conns[w].recv()
            except (EOFError, OSError):
                raise WorkerDied(f"a parse worker ended unexpectedly (exit code {self._procs[w].exitcode})") from None

    def close(self) -> None:
        """Let the workers finish and end (after a complete ``map``)."""
        for conn in self._conns:
            try:
                conn.send(None)
            except OSError:
                pass
        deadline = time.monotonic() + 5
        for proc in self._procs:
            proc.join(max(0.0, deadline - time.monotonic()))
        self.stop()

    def stop(self) -> None:
        """Kill the workers now and close their pipes: nothing waits on them afterwards."""
        for proc in self._procs:
            if proc.is_alive():
                try:
                    proc.kill()
                except (OSError, AttributeError):
                    pass
        for proc in self._procs:
            proc.join(5)
        for conn in self._conns:
            conn.close()
        self._procs, self._conns = [], []

    def __enter__(self) -> "ParsePool":
        return self

    def __exit__(self, kind, exc, tb) -> None:
        if kind is None:
            self.close()
        else:
            self.stop()

