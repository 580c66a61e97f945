"""Files a process saves for the next one (the saved catalogue, the last folder walk, the
parsed token ranks): a first line naming the format, the CRC-32 of the rest, then the
payload. A torn, damaged or foreign file reads as missing, so the caller rebuilds it;
writes go to a temporary file renamed over the old one, so a reader never sees half.
"""

from __future__ import annotations

import marshal
import mmap
import os
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

# A temporary file is named ``<file>.<pid>~<random>.tmp``: the process that wrote it is
# known, so one left by a killed process is told from one being written now.
_PID_END = "~"


def read_sealed(path: Path, magic: bytes) -> memoryview | None:
    """The payload saved at ``path`` under ``magic``, or None when it is missing, of
    another format, or does not match its checksum."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    head = len(magic)
    if not data.startswith(magic) or len(data) < head + 4:
        return None
    payload = memoryview(data)[head + 4:]
    if zlib.crc32(payload) != int.from_bytes(data[head:head + 4], "big"):
        return None
    return payload


def load_sealed(path: Path, magic: bytes) -> Any:
    """The value ``save_sealed`` wrote at ``path`` (marshal), or None when unreadable."""
    payload = read_sealed(path, magic)
    if payload is None:
        return None
    try:
        return marshal.loads(payload)
    except (ValueError, EOFError, TypeError):
        return None


def save_sealed(path: Path, magic: bytes, value: Any) -> None:
    """Write ``value`` (marshal) at ``path`` atomically; raises OSError."""
    write_sealed(path, magic, marshal.dumps(value))


def map_read_only(path: Path, min_size: int) -> mmap.mmap | None:
    """``path`` mapped read-only, or None when it cannot be opened or is shorter than
    ``min_size`` bytes (its header)."""
    mapped = map_with_stat(path, min_size)
    return None if mapped is None else mapped[0]


def map_with_stat(path: Path, min_size: int) -> tuple[mmap.mmap, os.stat_result] | None:
    """``map_read_only`` with the ``stat`` of the very file mapped (not of one renamed
    over it since)."""
    try:
        with open(path, "rb") as fh:
            st = os.fstat(fh.fileno())
            if st.st_size < min_size:
                return None
            return mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ), st
    except (OSError, ValueError):
        return None


def remember(path: Path, magic: bytes, memo: dict, key: Any, value: Any, kept: int) -> None:
    """Add ``key: value`` to ``memo`` (a dict read with ``load_sealed``), drop its oldest
    entries past ``kept`` and save it; a cache folder that cannot be written is no error
    (the caller works it out again next time)."""
    memo[key] = value
    while len(memo) > kept:
        memo.pop(next(iter(memo)))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        save_sealed(path, magic, memo)
    except OSError:
        pass


def write_sealed(path: Path, magic: bytes, payload: bytes | Sequence[bytes]) -> None:
    """Save ``payload`` (bytes, or a sequence of parts written one after another, so a
    large payload is never joined in memory) at ``path`` atomically; raises OSError
    (nothing is left behind, unless the process is killed: ``remove_stale_temps`` takes
    those away)."""
    parts = [payload] if isinstance(payload, (bytes, bytearray, memoryview)) else payload
    crc = 0
    for part in parts:
        crc = zlib.crc32(part, crc)
    write_parts(path, magic + crc.to_bytes(4, "big"), parts)


def write_parts(path: Path, head: bytes, parts: Sequence[bytes | bytearray | memoryview], durable: bool = False
                ) -> os.stat_result | None:
    """``head`` then ``parts`` at ``path`` atomically (a temporary file named so that
    ``remove_stale_temps`` knows its writer, then a rename); raises OSError, leaving nothing.
    ``durable``: the contents reach the disk before the rename (a crash then leaves the old
    file or the whole new one, never a new name over unwritten pages), and the new file's
    ``stat`` after the rename is returned (None when another file is there already)."""
    fd, tmp = _new_temp(path)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(head)
            for part in parts:
                f.write(part)
            if durable:
                f.flush()
                os.fsync(f.fileno())
                inode = os.fstat(f.fileno()).st_ino
        os.replace(tmp, path)
        if durable:
            st = os.stat(path)  # a rename moves the change time: taken after it
            return st if st.st_ino == inode else None
        return None
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _new_temp(path: Path) -> tuple[int, str]:
    """A new file beside ``path`` named ``<name>.<pid>~<random>.tmp``, opened for writing
    (what ``tempfile.mkstemp`` makes, without importing tempfile, which with shutil, random,
    bz2 and lzma cost a process that saves one small file about 9 ms)."""
    for _ in range(100):
        tmp = str(path.parent / f"{path.name}.{os.getpid()}{_PID_END}{os.urandom(6).hex()}.tmp")
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name beside {path}")


def remove_stale_temps(folder: Path) -> int:
    """Remove the temporary files of ``write_sealed`` in ``folder`` whose process is gone
    (killed mid-write); returns how many. Files being written now are left alone."""
    removed = 0
    try:
        names = [p for p in folder.iterdir() if p.name.endswith(".tmp") and _PID_END in p.name]
    except OSError:
        return 0
    for tmp in names:
        pid = tmp.name[: tmp.name.rindex(_PID_END)].rpartition(".")[2]
        if not pid.isdigit() or _alive(int(pid)):
            continue
        try:
            tmp.unlink()
            removed += 1
        except OSError:
            pass
    return removed


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: alive
        return True
    return True
