"""A full disk, recognised whatever reported it (SQLite, the OS, PostgreSQL), as one
error that says where and how much to free.

A full disk is not a damaged index: the write that failed was rolled back, and the
advice for a damaged index (rebuild it) would only write more.
"""

from __future__ import annotations

import errno
import math
import os
import sqlite3
from pathlib import Path

from .errors import DiskFull

# Room to ask for at least: an index run writes its log (WAL) and new pages before it
# can give old ones back, so a few MB of slack is not enough for long.
_MIN_FREE_MB = 16
_FULL_ERRNOS = (errno.ENOSPC, errno.EDQUOT)
_PG_DISK_FULL = "53100"  # SQLSTATE disk_full


def is_disk_full(exc: BaseException) -> bool:
    if isinstance(exc, DiskFull):
        return True
    if isinstance(exc, OSError) and exc.errno in _FULL_ERRNOS:
        return True
    if isinstance(exc, sqlite3.Error):
        code = getattr(exc, "sqlite_errorcode", None)
        return code == sqlite3.SQLITE_FULL or (code is None and "disk is full" in str(exc))
    return getattr(exc, "sqlstate", None) == _PG_DISK_FULL


def is_disk_full_at(path: str | os.PathLike[str], below: int = 64 * 1024) -> bool:
    """Whether the file system holding ``path`` has (almost) no room left: SQLite reports
    a shared-memory file it could not size as an I/O error, not as a full disk."""
    try:
        st = os.statvfs(os.path.dirname(os.path.abspath(path)))
    except OSError:
        return False
    return st.f_bavail * st.f_frsize < below


def disk_full(where: str | os.PathLike[str] | None, index: str | os.PathLike[str] | None = None,
              server: str | None = None) -> DiskFull:
    """The error for a full disk at ``where`` (a file or folder being written).
    ``index``: the index file, whose size sets how much to free; ``server``: a database
    server whose disk is full (not this computer's)."""
    if server is not None:
        return DiskFull(f"no space left on the database server {server}: free space on its disk "
                        f"and run the command again")
    need = _MIN_FREE_MB
    if index is not None:
        size = sum(size_of(Path(str(index) + suffix)) for suffix in ("", "-wal"))
        need = max(need, math.ceil(size / 2**20))
    device = _device(Path(where)) if where is not None else "the disk"
    return DiskFull(f"no space left on {device}: free {need} MB and run the command again")


def size_of(path: Path) -> int:
    """The file's size, 0 when it cannot be read."""
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _device(path: Path) -> str:
    """``/mount/point (device)`` of the file system holding ``path``."""
    path = Path(os.path.abspath(path))
    mount = path
    while not mount.exists() and mount != mount.parent:
        mount = mount.parent
    while not os.path.ismount(mount) and mount != mount.parent:
        mount = mount.parent
    source = None
    try:
        with open("/proc/self/mounts", encoding="utf-8") as fh:
            for line in fh:
                fields = line.split()
                if len(fields) > 1 and fields[1].replace("\\040", " ") == str(mount):
                    source = fields[0]  # the last entry for a mount point is the one in force
    except OSError:  # not Linux: the mount point alone
        pass
    return f"{mount} ({source})" if source else str(mount)
