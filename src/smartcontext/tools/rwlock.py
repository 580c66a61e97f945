"""A readers-writer lock: any number of readers at once, one writer alone.

Tools that only read (``context``, ``search``, ``read_file``...) take ``lock.reader`` and
run side by side (SQLite in WAL mode serves concurrent reads); a refresh of the index or a
write to the vault takes ``lock.writer`` and waits for the readers in flight. A waiting
writer stops new readers (so a steady stream of reads cannot starve it). Both sides are
re-entrant per thread, and a thread holding the writer may also read.
"""

from __future__ import annotations

import threading
from typing import Any


class ReadWriteLock:
    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._readers: dict[int, int] = {}  # thread id -> depth
        self._writer: int | None = None
        self._writer_depth = 0
        self._writers_waiting = 0
        self.reader = _Side(self.acquire_read, self.release_read)
        self.writer = _Side(self.acquire_write, self.release_write)

    def acquire_read(self) -> None:
        me = threading.get_ident()
        with self._cond:
            if self._writer == me or me in self._readers:
                self._readers[me] = self._readers.get(me, 0) + 1
                return
            while self._writer is not None or self._writers_waiting:
                self._cond.wait()
            self._readers[me] = 1

    def release_read(self) -> None:
        me = threading.get_ident()
        with self._cond:
            depth = self._readers[me] - 1
            if depth:
                self._readers[me] = depth
            else:
                del self._readers[me]
                self._cond.notify_all()

    def acquire_write(self, timeout: float | None = None) -> bool:
        me = threading.get_ident()
        with self._cond:
            if self._writer == me:
                self._writer_depth += 1
                return True
            if me in self._readers:
                raise RuntimeError("a reader cannot become a writer (it would wait for itself)")
            self._writers_waiting += 1
            try:
                ok = self._cond.wait_for(lambda: self._writer is None and not self._readers, timeout)
            finally:
                self._writers_waiting -= 1
            if not ok:
                self._cond.notify_all()
                return False
            self._writer, self._writer_depth = me, 1
            return True

    def release_write(self) -> None:
        with self._cond:
            self._writer_depth -= 1
            if not self._writer_depth:
                self._writer = None
                self._cond.notify_all()

    # threading.Lock-like use means "write": ``with lock:`` and ``acquire``/``release``.
    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        return self.acquire_write(None if blocking and timeout < 0 else (timeout if blocking else 0))

    def release(self) -> None:
        self.release_write()

    def __enter__(self) -> "ReadWriteLock":
        self.acquire_write()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release_write()


class _Side:
    def __init__(self, acquire, release) -> None:
        self._acquire, self._release = acquire, release

    def __enter__(self) -> None:
        self._acquire()

    def __exit__(self, *exc: Any) -> None:
        self._release()
