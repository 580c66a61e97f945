"""Reading files that may not be files: a FIFO, a socket or a device in a folder must
never block a reader (opening a FIFO for reading waits for a writer, forever).

``read_regular`` opens without blocking, checks on the open descriptor that it is a
regular file (no race between a check and the open), and only then reads.
"""

from __future__ import annotations

import errno
import os
import stat

_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)


class NotRegularFile(OSError):
    """The path names a FIFO, socket, device or folder, not a regular file."""


def read_regular(path: str | os.PathLike[str], max_bytes: int | None = None, *,
                 follow_symlinks: bool = True) -> bytes:
    """The bytes of the regular file at ``path`` (symlinks followed unless
    ``follow_symlinks`` is False: then a link is an OSError(ELOOP)).

    Raises NotRegularFile (an OSError) for anything else, without blocking, and
    OSError(EFBIG) when the file is larger than ``max_bytes``.
    """
    fd = os.open(path, _FLAGS if follow_symlinks else _FLAGS | getattr(os, "O_NOFOLLOW", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegularFile(errno.EINVAL, "not a regular file", os.fspath(path))
        if max_bytes is not None and st.st_size > max_bytes:
            raise OSError(errno.EFBIG, f"larger than {max_bytes} bytes", os.fspath(path))
        chunks = []
        while True:
            chunk = os.read(fd, max(st.st_size + 1, 1 << 16))
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def is_regular(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` (symlinks followed) is a regular file; never opens it."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


__all__ = ["NotRegularFile", "is_regular", "read_regular"]
