"""Paths from users and models, confined to the vault; writes that never leave a file half-done.

Rules (checked after symlinks are resolved, so a link cannot smuggle a path out):
- the path must end up inside the vault root (``..`` and absolute paths elsewhere are
  refused; an absolute path that lies inside the vault is accepted);
- no component may be hidden (``.obsidian``, ``.git``, ``.smartcontext``, ``.env``...):
  those hold settings, plugin data with API keys, and our own index, none of which a
  model should read or change.
"""

from __future__ import annotations

import errno
import os
import shutil
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from ..errors import InvalidArgument, PathOutsideWorkspace

NEW_FILE_MODE = 0o644


def resolve_in_vault(
    root: Path,
    rel: str,
    *,
    must_exist: bool = False,
    allow_hidden: bool = False,
    allow_root: bool = False,
) -> Path:
    """The real path of ``rel`` inside ``root``.

    Raises InvalidArgument (not a string, empty, NUL byte, the root where a file is
    needed), PathOutsideWorkspace (outside the vault or hidden) or FileNotFoundError
    (``must_exist`` and nothing there).
    """
    if not isinstance(rel, str):
        raise InvalidArgument(f"path must be a string, not {type(rel).__name__}")
    text = rel.strip().replace("\\", "/")
    if "\x00" in text:
        raise InvalidArgument("path contains a NUL character")
    if not text and not allow_root:
        raise InvalidArgument("path cannot be empty")
    root_real = Path(root).resolve()
    candidate = Path(text) if os.path.isabs(text) else root_real / text
    lexical = Path(os.path.normpath(candidate))
    real = lexical.resolve()
    for p in (lexical, real):
        if p != root_real and not p.is_relative_to(root_real):
            raise PathOutsideWorkspace(f"Path is outside the vault: {rel} (use a path relative to the vault root)")
    if real == root_real and not allow_root:
        raise InvalidArgument(f"{rel!r} is the vault root, not a file")
    if not allow_hidden:
        for p in (lexical, real):
            hidden = next((part for part in p.relative_to(root_real).parts if part.startswith(".")), None)
            if hidden:
                raise PathOutsideWorkspace(
                    f"{rel} is inside a hidden file or folder ({hidden}); vault tools do not read or write there"
                )
    if must_exist and not real.exists():
        raise FileNotFoundError(f"File not found: {rel}")
    return real


def rel_path(root: Path, path: Path) -> str:
    """``path`` relative to the vault root, with ``/`` separators."""
    return PurePosixPath(Path(path).relative_to(Path(root).resolve())).as_posix()


@dataclass(frozen=True)
class VaultFile:
    rel: str  # relative to the vault root, "/" separated
    mtime_ns: int
    size: int


def walk_vault(root: Path, folder: Path | None = None, *, recursive: bool = True) -> list[VaultFile]:
    """Files under ``folder`` (default: the root), sorted by path, with their stamps.

    Skips hidden files and folders, symlinked folders, and symlinks that point outside
    the vault or into a hidden place. Uses scandir so a large vault costs one stat per
    file and no Path objects.
    """
    root_real = os.path.realpath(root)
    start = os.path.realpath(folder) if folder is not None else root_real
    cut = len(root_real) + 1
    found: list[VaultFile] = []
    stack = [start]
    while stack:
        try:
            with os.scandir(stack.pop()) as scan:
                entries = list(scan)
        except OSError:
            continue
        for entry in entries:
            if entry.name.startswith("."):
                continue
            try:
                if entry.is_dir(follow_symlinks=False):
                    if recursive:
                        stack.append(entry.path)
                    continue
                if entry.is_symlink():
                    target = os.path.realpath(entry.path)
                    inside = target.startswith(root_real + os.sep)
                    hidden = any(part.startswith(".") for part in target[cut:].split(os.sep))
                    if not inside or hidden or not os.path.isfile(target):
                        continue
                    st = os.stat(target)
                elif entry.is_file(follow_symlinks=False):
                    st = entry.stat(follow_symlinks=False)
                else:
                    continue
            except OSError:
                continue  # vanished or unreadable while walking
            found.append(VaultFile(entry.path[cut:].replace(os.sep, "/"), st.st_mtime_ns, st.st_size))
    found.sort(key=lambda f: f.rel)
    return found


def atomic_write(path: Path, data: bytes, *, overwrite: bool) -> None:
    """Write ``data`` to ``path`` through a temp file in the same folder.

    Readers see the old content or the new, never a mix. Without ``overwrite`` an
    existing file is never replaced (FileExistsError), even if it appears meanwhile.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o7777 if path.exists() else NEW_FILE_MODE
    fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        if overwrite:
            os.replace(tmp, path)
        else:
            _link_no_clobber(tmp, path)
    finally:
        with suppress(FileNotFoundError):
            tmp.unlink()


def move_no_clobber(source: Path, destination: Path) -> None:
    """Rename ``source`` to ``destination``, refusing to replace an existing file."""
    destination.parent.mkdir(parents=True, exist_ok=True)
    if destination.exists() and os.path.samefile(source, destination):
        # Same file under another spelling (case-insensitive file systems): a rename.
        os.rename(source, destination)
        return
    _link_no_clobber(source, destination)
    with suppress(FileNotFoundError):
        source.unlink()


def _link_no_clobber(source: Path, destination: Path) -> None:
    # link() fails if the destination exists, atomically; rename() would replace it.
    try:
        os.link(source, destination)
        return
    except FileExistsError:
        raise
    except OSError:
        pass  # no hard links here (some network and FAT file systems): check, then move
    if destination.exists() or destination.is_symlink():
        raise FileExistsError(errno.EEXIST, "File exists", str(destination))
    try:
        os.rename(source, destination)
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
        shutil.move(str(source), str(destination))


# One lock per lock file for the threads of this process (flock alone would also do it,
# since every call opens its own descriptor, but this skips a system call per waiter).
_THREAD_LOCKS: dict[str, threading.Lock] = {}
_THREAD_LOCKS_GUARD = threading.Lock()


@contextmanager
def write_lock(lock_file: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``lock_file`` (created if needed) for a read-modify-write.

    Every writer of a vault, in any process (two MCP servers, a CLI loop, the web app),
    takes the same lock around "read the note, change it, write it back", so no write is
    lost to a concurrent one. Uses ``fcntl.flock``, released by the kernel when the
    process dies; where there is no ``fcntl`` (Windows) or the lock file cannot be
    created (read-only folder, where the write fails anyway) only threads are serialised.
    """
    key = os.fspath(lock_file)
    with _THREAD_LOCKS_GUARD:
        thread_lock = _THREAD_LOCKS.setdefault(key, threading.Lock())
    with thread_lock:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not POSIX
            yield
            return
        try:
            Path(lock_file).parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(key, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError:
            yield
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing the descriptor releases the lock


def resolve_unlinked(root: Path, rel: str) -> Path:
    """``root/rel`` for a file of our own inside the folder (chat and agent-session files).

    The checks of ``resolve_in_vault`` (no ``..`` out, no absolute path elsewhere, no NUL;
    hidden folders such as ``.memory`` allowed), and stricter: no component from the root
    down (the ``.memory`` folder, the file itself) may be a symbolic link, even one that
    points inside. These files are read, rewritten and renamed over: through a link, a
    read would hand out an outside file and a write would copy it in, or land outside.
    Raises PathOutsideWorkspace naming the link.
    """
    real = resolve_in_vault(root, rel, allow_hidden=True)
    root_real = Path(root).resolve()
    text = rel.strip().replace("\\", "/")
    lexical = Path(os.path.normpath(Path(text) if os.path.isabs(text) else root_real / text))
    if real != lexical:
        raise PathOutsideWorkspace(f"{rel} goes through a symbolic link; chat and session files are never "
                                   "read or written through links (replace the link with the file itself)")
    check_no_links(root_real, lexical)
    return lexical


def check_no_links(root_real: Path, path: Path) -> None:
    """PathOutsideWorkspace when a component of ``path`` below ``root_real`` is a symbolic
    link now (``resolve_unlinked`` checks once; callers that create folders later check
    again right before they open)."""
    current = root_real
    for part in path.relative_to(root_real).parts:
        current = current / part
        if current.is_symlink():
            raise PathOutsideWorkspace(
                f"{current.relative_to(root_real).as_posix()} is a symbolic link; chat and session files "
                "are never read or written through links (replace the link with the file or folder itself)"
            )
