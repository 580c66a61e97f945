"""Which files of one folder changed since the last look (Linux inotify, through ctypes).

The plugin appends to existing ``.ajson`` files, which leaves the folder's mtime alone,
so without notifications every file has to be stat-ed to notice a change (~40 ms for
4,000 files on a busy machine). An inotify watch on the folder reports the names of the
files written, created, deleted or renamed, and asking it costs one non-blocking read.

Not available (another OS, the watch limit reached, a network filesystem that sends no
events): ``FolderWatch.open`` returns None and the cache falls back to stat sweeps.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import struct
import sys
import weakref
from pathlib import Path

IN_MODIFY = 0x00000002
IN_ATTRIB = 0x00000004
IN_CLOSE_WRITE = 0x00000008
IN_MOVED_FROM = 0x00000040
IN_MOVED_TO = 0x00000080
IN_CREATE = 0x00000100
IN_DELETE = 0x00000200
IN_DELETE_SELF = 0x00000400
IN_MOVE_SELF = 0x00000800
IN_Q_OVERFLOW = 0x00004000
IN_IGNORED = 0x00008000
IN_NONBLOCK = os.O_NONBLOCK
IN_CLOEXEC = getattr(os, "O_CLOEXEC", 0o2000000)

_WATCH_MASK = (
    IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE
    | IN_DELETE_SELF | IN_MOVE_SELF
)
# The watch itself is gone or events were lost: only a full sweep can tell what changed.
_LOST = IN_Q_OVERFLOW | IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF
_EVENT = struct.Struct("iIII")  # wd, mask, cookie, len; then `len` bytes of name

_libc = None


def _load_libc():
    global _libc
    if _libc is None:
        name = ctypes.util.find_library("c") or "libc.so.6"
        lib = ctypes.CDLL(name, use_errno=True)
        lib.inotify_init1.argtypes = [ctypes.c_int]
        lib.inotify_init1.restype = ctypes.c_int
        lib.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        lib.inotify_add_watch.restype = ctypes.c_int
        _libc = lib
    return _libc


class FolderWatch:
    """Names of changed entries in one folder; ``poll()`` returns None when it cannot tell."""

    def __init__(self, fd: int, folder: Path):
        self.folder = folder
        self._fd = fd
        self.broken = False
        self._finalizer = weakref.finalize(self, os.close, fd)

    @classmethod
    def open(cls, folder: str | Path) -> FolderWatch | None:
        if not sys.platform.startswith("linux"):
            return None
        try:
            libc = _load_libc()
            fd = libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
            if fd < 0:
                return None
            wd = libc.inotify_add_watch(fd, os.fsencode(str(folder)), _WATCH_MASK)
            if wd < 0:
                os.close(fd)
                return None
        except (OSError, AttributeError):
            return None
        return cls(fd, Path(folder))

    def poll(self) -> set[str] | None:
        """Entry names touched since the last poll (empty: nothing), or None: sweep instead."""
        if self.broken:
            return None
        names: set[str] = set()
        while True:
            try:
                data = os.read(self._fd, 65536)
            except BlockingIOError:
                return names
            except OSError as exc:
                if exc.errno == errno.EINTR:
                    continue
                self.close()
                return None
            if not data:
                return names
            pos = 0
            while pos + _EVENT.size <= len(data):
                _wd, mask, _cookie, length = _EVENT.unpack_from(data, pos)
                raw = data[pos + _EVENT.size : pos + _EVENT.size + length].rstrip(b"\0")
                pos += _EVENT.size + length
                if mask & _LOST:
                    self.close()
                    return None
                if raw:
                    names.add(os.fsdecode(raw))

    def close(self) -> None:
        self.broken = True
        self._finalizer()
