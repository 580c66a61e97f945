"""Chat files: ``.memory/{chat_id}.json`` holding ``messages`` and ``topics``.

    {"messages": [{"id": "a1", "role": "user", "content": "...", "timestamp": "..."}],
     "topics": [{"label": "Python Async", "count": 2},
                {"label": "Instructions & Preferences", "sticky": true,
                 "message_ids": ["a1"], "count": 1}]}

Every change is a read-modify-write under an exclusive lock on a side file
(``{chat_id}.json.lock``), written through a temp file and a rename: two writers never
lose each other's messages, and readers see the old file or the new one. A file that is
not valid JSON, or a message without an id, raises ``ChatFileError`` and is never
rewritten. Keys this module does not know (in the file or in a message) are kept.
"""

from __future__ import annotations

import copy
import fcntl
import json
import threading
import os
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..errors import ChatFileError, InvalidArgument
from ..safeio import read_regular
# The file format lives with the chat source, below this layer: the indexer reads chat
# files without importing the chat package (which sits above the index).
from ..sources.chat import ChatData, Message, content_text, parse_chat  # noqa: F401 (re-exported)
from ..vault.paths import atomic_write, check_no_links, resolve_unlinked

MEMORY_DIR = ".memory"
STICKY_LABEL = "Instructions & Preferences"
EMBEDDINGS_SUFFIX = ".embeddings.json"
_CHAT_ID = re.compile(r"^[A-Za-z0-9_-]{1,128}$")
# Parsed chat files by path, with the (inode, mtime, size) they were read at: a filter
# run on every model call must not re-read an unchanged long chat. ``load`` hands out
# new lists (and topic dicts) around the shared Message objects, which nobody edits:
# ``update`` always works on a fresh parse.
_parsed: dict[str, tuple[tuple[int, int, int], "ChatData"]] = {}
_parsed_lock = threading.Lock()


def check_chat_id(chat_id: Any) -> str:
    """``chat_id`` when it can name a file (letters, digits, ``-``, ``_``), else InvalidArgument."""
    # fullmatch: ``$`` alone would let "name\n" through and name a file "name\n.json".
    if not isinstance(chat_id, str) or not _CHAT_ID.fullmatch(chat_id):
        raise InvalidArgument(
            f"invalid chat id {chat_id!r}: use 1-128 letters, digits, '-' or '_' "
            "(it names the file .memory/{chat_id}.json)"
        )
    return chat_id


def _copy(data: ChatData) -> ChatData:
    return ChatData(list(data.messages), copy.deepcopy(data.topics), copy.deepcopy(data.extra))


def write_json_atomic(path: Path, data: Any) -> None:
    atomic_write(path, json.dumps(data, ensure_ascii=False, indent=2).encode("utf-8"), overwrite=True)


def memory_path(memory_dir: Path, name: str) -> Path:
    """``memory_dir/name`` confined to the folder that holds ``memory_dir`` (the
    workspace): through the vault's path layer, with no symbolic link on the way
    (PathOutsideWorkspace otherwise). Every chat, sidecar and session file is named here."""
    memory_dir = Path(memory_dir)
    return resolve_unlinked(memory_dir.parent, f"{memory_dir.name}/{name}")


def recheck(path: Path) -> None:
    """Refuse ``path`` if a link appeared on its way since it was resolved (right before
    a read or write: a folder may be swapped for a link meanwhile)."""
    check_no_links(path.parent.parent, path)


class ChatFile:
    """One chat file: ``load`` to read, ``update`` to change it under the lock."""

    def __init__(self, memory_dir: Path, chat_id: str):
        self.chat_id = check_chat_id(chat_id)
        self.path = memory_path(memory_dir, f"{chat_id}.json")
        self.memory_dir = self.path.parent
        self.lock_path = self.memory_dir / f"{chat_id}.json.lock"

    def exists(self) -> bool:
        recheck(self.path)
        return self.path.is_file()

    def load(self) -> ChatData:
        """The chat; an absent file is an empty chat."""
        recheck(self.path)
        try:
            st = self.path.stat()
        except FileNotFoundError:
            return ChatData()
        sig = (st.st_ino, st.st_mtime_ns, st.st_size)
        with _parsed_lock:
            hit = _parsed.get(str(self.path))
        if hit is not None and hit[0] == sig:
            return _copy(hit[1])
        try:
            # Never blocks: a FIFO or device named like a chat is refused, not opened.
            # No link followed; a byte-order mark (Windows editors write one) is not JSON.
            text = read_regular(self.path, follow_symlinks=False).decode("utf-8-sig")
        except FileNotFoundError:
            return ChatData()
        except (OSError, UnicodeDecodeError) as exc:
            raise ChatFileError(f"cannot read chat file {self.path}: {exc}") from exc
        try:
            raw = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ChatFileError(
                f"{self.path} is not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno}); "
                "it was left untouched: fix or move it"
            ) from None
        data = parse_chat(raw, str(self.path))
        with _parsed_lock:
            _parsed[str(self.path)] = (sig, data)
        return _copy(data)

    @contextmanager
    def locked(self) -> Iterator[None]:
        """An exclusive lock on the chat, across threads and processes."""
        recheck(self.path)
        self.memory_dir.mkdir(parents=True, exist_ok=True)
        recheck(self.path)
        fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    def update(self, change: Callable[[ChatData], Any]) -> Any:
        """Read, apply ``change`` (which edits the ChatData in place), write atomically;
        returns what ``change`` returned. A file that fails to load is never written."""
        with self.locked():
            with _parsed_lock:
                _parsed.pop(str(self.path), None)  # read what is on disk now
            data = self.load()
            result = change(data)
            recheck(self.path)
            write_json_atomic(self.path, data.to_dict())
            with _parsed_lock:
                _parsed.pop(str(self.path), None)
            return result
