"""Long chat files, parsed once and kept beside the index.

Reading a 50,000-message chat file (16 MB of JSON) and checking every message costs a
process about half a second before its first history can start. A chat of at least
``CACHE_FROM_BYTES`` is therefore kept parsed, as columns in ``marshal`` form (read back
at C speed), in ``<workspace>/.smartcontext/chats/{file name}.parsed``, together with the
SHA-1 of the bytes it was parsed from. A reader still reads and hashes the whole file
(tens of milliseconds): a cached parse is used only for the very bytes on disk now, so an
edited, appended or replaced file (even one of the same size and time) is parsed again.

The indexer writes it when it indexes such a chat (``ChatSource.keep_aside``), so the
first history after indexing reads it rather than parsing the file again; a chat read
that finds no current copy writes one.

The cache is an optimisation only: a folder without an index (no ``.smartcontext``), a
read-only one, a link where a folder should be, or a damaged cache file all fall back to
parsing, silently.
"""

from __future__ import annotations

import hashlib
import marshal
import os
import tempfile
from contextlib import suppress
from pathlib import Path

from ..memory import collector_paused
from ..safeio import read_regular
from ..sealed import remove_stale_temps
from .chat import ChatData, Message

# Below this a chat parses in a few milliseconds: not worth a second file.
CACHE_FROM_BYTES = 1 << 20
# The workspace's index folder (``workspace.INDEX_DIR``; sources sit below the workspace
# and do not import it).
INDEX_DIR = ".smartcontext"
_FORMAT = 1


def digest(data: bytes) -> str:
    return hashlib.sha1(data).hexdigest()


def _cache_file(chat_path: Path) -> Path | None:
    """Where the parse of ``chat_path`` (``<root>/.memory/x.json``) is kept; None when the
    workspace has no index folder, or a link stands in the way."""
    index_dir = chat_path.parent.parent / INDEX_DIR
    folder = index_dir / "chats"
    if not index_dir.is_dir() or index_dir.is_symlink() or folder.is_symlink():
        return None
    return folder / f"{chat_path.name}.parsed"


def load(chat_path: Path, sha1: str) -> ChatData | None:
    """The cached parse of ``chat_path`` if it was made from bytes hashing to ``sha1``."""
    where = _cache_file(chat_path)
    if where is None:
        return None
    try:
        record = marshal.loads(read_regular(where, follow_symlinks=False))
        fmt, key, ids, roles, contents, stamps, extras, topics, extra = record
        if fmt != _FORMAT or key != sha1 or not (len(ids) == len(roles) == len(contents) == len(stamps)):
            return None
        with collector_paused():
            messages = list(map(Message, ids, roles, contents, stamps))
        for i, more in extras.items():
            messages[i].extra = more
        return ChatData(messages, topics, extra)
    except (OSError, EOFError, ValueError, TypeError, IndexError, AttributeError):
        return None  # absent, damaged or of another format: parse the file


def save(chat_path: Path, sha1: str, data: ChatData) -> None:
    """Keep the parse of ``chat_path`` (made from bytes hashing to ``sha1``), best effort."""
    where = _cache_file(chat_path)
    if where is None:
        return
    ms = data.messages
    record = (_FORMAT, sha1, [m.id for m in ms], [m.role for m in ms], [m.content for m in ms],
              [m.timestamp for m in ms], {i: m.extra for i, m in enumerate(ms) if m.extra},
              data.topics, data.extra)
    tmp: str | None = None
    try:
        blob = marshal.dumps(record)
        where.parent.mkdir(exist_ok=True)
        remove_stale_temps(where.parent)  # left by a process killed while saving one
        # Named as ``sealed`` names its temporary files (the writer's pid in the name), so
        # one left by a killed process is told from one being written now. mkstemp
        # creates a new file: a link put in its place is never followed.
        fd, tmp = tempfile.mkstemp(dir=where.parent, prefix=f"{where.name}.{os.getpid()}~", suffix=".tmp")
        # Not synced: a copy cut short by a crash fails to load and is parsed again.
        with os.fdopen(fd, "wb") as handle:
            handle.write(blob)
        os.replace(tmp, where)
    except (OSError, ValueError):
        # A read-only or full disk, or a value marshal cannot hold: the next reader
        # parses the file again.
        if tmp is not None:
            with suppress(OSError):
                os.unlink(tmp)
