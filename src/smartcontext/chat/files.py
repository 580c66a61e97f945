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
import functools
import json
import threading
import os
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ChatFileError, InvalidArgument
from ..memory import collector_paused
from ..safeio import read_regular
from ..sources import chat_cache as filecache
# The file format lives with the chat source, below this layer: the indexer reads chat
# files without importing the chat package (which sits above the index).
from ..sources.chat import ChatData, Message, content_text, parse_chat  # noqa: F401 (re-exported)
from ..sources.chat import is_keys_record, is_topics_record, segment_records
from ..vault.paths import NEW_FILE_MODE, atomic_write, check_no_links, resolve_unlinked

MEMORY_DIR = ".memory"
STICKY_LABEL = "Instructions & Preferences"
EMBEDDINGS_SUFFIX = ".embeddings.json"
_CHAT_ID = re.compile(r"^[A-Za-z0-9_-]{1,128}$")
# Parsed chat files by path, with the (inode, mtime, size) they were read at: a filter
# run on every model call must not re-read an unchanged long chat. ``load`` hands out
# new lists (and topic dicts) around the shared Message objects, which nobody edits:
# ``update`` always works on a fresh parse.
_parsed: dict[str, tuple[tuple[int, int, int], "ChatData"]] = {}
# Log segments by path, and a long chat's messages put together, keyed by what they hold.
_segments_read: dict[str, tuple[tuple[int, int, int], "_Segment"]] = {}
_combined: dict[str, tuple[Any, "ChatData"]] = {}
_ids_memo: dict[str, tuple[tuple["Message", ...], set[str]]] = {}
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


def extends(before: Sequence[Message], messages: Sequence[Message]) -> bool:
    """Whether ``messages`` is ``before`` with messages appended. Messages are never edited
    in place and a chat read again shares the objects it read before (a rewrite parses
    anew), so the same objects at the first, middle and last places of ``before`` say so
    without walking 50,000 of them."""
    n = len(before)
    return n <= len(messages) and all(before[i] is messages[i] for i in {0, n // 2, n - 1} if n)


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


# A chat this long grows by appending lines (below: rewriting and re-indexing the whole
# file costs a few milliseconds).
APPEND_FROM = 200
# Lines per log segment: an append re-indexes only its segment, so this bounds that work.
SEGMENT_LINES = 256
_SEGMENT = re.compile(r"^(?P<chat>[A-Za-z0-9_-]{1,128})\.(?P<n>\d{5,})\.jsonl$")


def segment_chat_id(name: str) -> str | None:
    """The chat a log segment's file name belongs to (``trip.00001.jsonl`` -> ``trip``)."""
    m = _SEGMENT.fullmatch(name)
    return m.group("chat") if m else None


@dataclass
class _Segment:
    messages: list[Message]
    topics: list[dict[str, Any]] | None  # the last topics record of the segment
    keys: dict[str, Any]  # the chat's own keys its keys records set, the last of each winning
    lines: int
    ends_clean: bool  # ends with a newline (a crash mid-append can leave half a line)


class ChatFile:
    """One chat: ``load`` to read, ``append`` to add a message, ``update`` to change it
    under the lock.

    A chat is ``{chat_id}.json`` and, once it holds ``APPEND_FROM`` messages, the JSON
    Lines segments beside it, ``{chat_id}.00001.jsonl``...: one message (or one topics
    record, ``{"topics": [...]}``, or one keys record, ``{"set": {"agent": {...}}}``) per
    line, appended, ``SEGMENT_LINES`` per segment. Reading is the JSON file's messages,
    then the segments' in order; the last topics record wins, and the last value of each
    key set. ``update`` (a rewrite) folds the segments back into the JSON file.
    """

    def __init__(self, memory_dir: Path, chat_id: str):
        self.chat_id = check_chat_id(chat_id)
        self.path = memory_path(memory_dir, f"{chat_id}.json")
        self.memory_dir = self.path.parent
        self.lock_path = self.memory_dir / f"{chat_id}.json.lock"

    def exists(self) -> bool:
        recheck(self.path)
        return self.path.is_file() or bool(self.segments())

    def segments(self) -> list[Path]:
        """The chat's log segments, in order (regular files only: links are not followed)."""
        found = []
        try:
            with os.scandir(self.memory_dir) as entries:
                for entry in entries:
                    m = _SEGMENT.fullmatch(entry.name)
                    if m and m.group("chat") == self.chat_id and entry.is_file(follow_symlinks=False):
                        found.append((int(m.group("n")), Path(entry.path)))
        except (FileNotFoundError, NotADirectoryError):
            return []
        return [p for _, p in sorted(found)]

    def load(self) -> ChatData:
        """The chat; an absent file is an empty chat."""
        recheck(self.path)
        base = self._load_base()
        segments = self.segments()
        if not segments:
            return _copy(base)
        parts = [(p, self._load_segment(p)) for p in segments]
        # Keyed by the very objects read (held by the key, so never confused with new ones).
        key = (base, *(seg for _, seg in parts))
        with _parsed_lock:
            hit = _combined.get(str(self.path))
        if hit is not None and len(hit[0]) == len(key) and all(a is b for a, b in zip(hit[0], key)):
            return _copy(hit[1])
        messages = list(base.messages)
        seen = base.message_ids()
        topics = base.topics
        extra = base.extra
        for _, seg in parts:
            for m in seg.messages:
                if m.id not in seen:  # a rewrite cut short keeps both copies: one counts
                    seen.add(m.id)
                    messages.append(m)
            if seg.topics is not None:
                topics = seg.topics
            if seg.keys:
                extra = {**extra, **seg.keys}
        data = ChatData(messages, topics, extra)
        with _parsed_lock:
            _combined[str(self.path)] = (key, data)
        return _copy(data)

    def _load_base(self) -> ChatData:
        try:
            st = self.path.stat()
        except FileNotFoundError:
            return _EMPTY
        sig = (st.st_ino, st.st_mtime_ns, st.st_size)
        with _parsed_lock:
            hit = _parsed.get(str(self.path))
        if hit is not None and hit[0] == sig:
            return hit[1]
        try:
            # Never blocks: a FIFO or device named like a chat is refused, not opened.
            # No link followed; a byte-order mark (Windows editors write one) is not JSON.
            raw_bytes = read_regular(self.path, follow_symlinks=False)
            sha1 = filecache.digest(raw_bytes) if len(raw_bytes) >= filecache.CACHE_FROM_BYTES else None
            cached = filecache.load(self.path, sha1) if sha1 else None
            text = "" if cached is not None else raw_bytes.decode("utf-8-sig")
        except FileNotFoundError:
            return _EMPTY
        except (OSError, UnicodeDecodeError) as exc:
            raise ChatFileError(f"cannot read chat file {self.path}: {exc}") from exc
        if cached is not None:
            data = cached
        else:
            try:
                with collector_paused():
                    raw = json.loads(text)
                    data = parse_chat(raw, str(self.path))
            except json.JSONDecodeError as exc:
                raise ChatFileError(
                    f"{self.path} is not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno}); "
                    "it was left untouched: fix or move it"
                ) from None
            if sha1:
                filecache.save(self.path, sha1, data)
        with _parsed_lock:
            _parsed[str(self.path)] = (sig, data)
        return data

    def _load_segment(self, path: Path) -> _Segment:
        try:
            st = path.stat()
            sig = (st.st_ino, st.st_mtime_ns, st.st_size)
            with _parsed_lock:
                hit = _segments_read.get(str(path))
            if hit is not None and hit[0] == sig:
                return hit[1]
            if hit is not None and hit[0][0] == sig[0] and hit[0][2] < sig[2] and hit[1].ends_clean:
                # The same file, grown by appends: parse only the new lines, and keep the
                # earlier messages as the same objects (callers reuse what they computed).
                seg = self._parse_segment(path, _read_from(path, hit[0][2]), hit[1])
                with _parsed_lock:
                    _segments_read[str(path)] = (sig, seg)
                return seg
            raw = read_regular(path, follow_symlinks=False).decode("utf-8-sig")
        except FileNotFoundError:
            return _Segment([], None, {}, 0, True)
        except (OSError, UnicodeDecodeError) as exc:
            raise ChatFileError(f"cannot read chat segment {path}: {exc}") from exc
        seg = self._parse_segment(path, raw, None)
        with _parsed_lock:
            _segments_read[str(path)] = (sig, seg)
        return seg

    @staticmethod
    def _parse_segment(path: Path, raw: str, before: "_Segment | None") -> "_Segment":
        """Lines of a segment (``raw``: the whole file, or what follows ``before``)."""
        ends_clean = raw.endswith("\n") or raw == ""
        count = raw.count("\n") + (0 if ends_clean else 1)
        records, topics, keys = [], None, {}
        for n, rec, bad in segment_records(raw):
            if bad is not None:
                raise ChatFileError(f"{path}: line {n} is not valid JSON ({bad}); "
                                    "it was left untouched: fix or remove that line")
            if is_topics_record(rec):
                topics = parse_chat({"topics": rec["topics"]}, f"{path}: line {n}").topics
            elif is_keys_record(rec):
                keys.update(parse_chat(rec["set"], f"{path}: line {n}").extra)
            else:
                records.append(rec)
        messages = parse_chat({"messages": records}, str(path)).messages
        if before is None:
            return _Segment(messages, topics, keys, count, ends_clean)
        return _Segment(before.messages + messages, before.topics if topics is None else topics,
                        {**before.keys, **keys}, before.lines + count, ends_clean)

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
        returns what ``change`` returned. A file that fails to load is never written.
        The log segments are folded into the JSON file (written first, then removed)."""
        with self.locked():
            self._forget()  # read what is on disk now
            data = self.load()
            segments = self.segments()
            result = change(data)
            recheck(self.path)
            self._write(data)
            for seg in segments:
                with suppress(FileNotFoundError):
                    seg.unlink()
            self._forget()
            return result

    def append(self, message: Message) -> Path:
        """Add ``message`` at the end (InvalidArgument if its id is taken); returns the
        file written. A short chat is rewritten; a long one gets a line in its last log
        segment, so adding costs the same at 50 messages or 50,000."""
        with self.locked():
            data = self.load()
            if message.id in self._ids(data):
                raise InvalidArgument(f"chat {self.chat_id} already has a message {message.id!r}")
            segments = self.segments()
            if not segments and len(data.messages) < APPEND_FROM:
                data.messages.append(message)
                recheck(self.path)
                self._write(data)
                return self.path
            return self._append_lines(segments, [message.to_dict()])

    def append_turn(self, messages: Sequence[Message], keys: dict[str, Any]) -> Path:
        """Add ``messages`` at the end and set the chat's own ``keys`` (an agent session's
        summary), under one lock, as ``append`` does: lines in the last log segment for a
        long chat (written at once), a rewrite for a short one. InvalidArgument if an id
        is taken (nothing is written then); returns the file written."""
        if keys.keys() & {"messages", "topics"}:
            raise InvalidArgument("append_turn sets the chat's own keys, not its messages or topics")
        with self.locked():
            data = self.load()
            ids = self._ids(data)
            taken = [m.id for m in messages if m.id in ids]
            if taken or len({m.id for m in messages}) < len(messages):
                raise InvalidArgument(f"chat {self.chat_id} already has a message {(taken or [''])[0]!r}")
            segments = self.segments()
            if not segments and len(data.messages) < APPEND_FROM:
                data.messages.extend(messages)
                data.extra.update(keys)
                recheck(self.path)
                self._write(data)
                return self.path
            return self._append_lines(segments, [m.to_dict() for m in messages] + [{"set": keys}])

    def append_topics(self, topics: list[dict[str, Any]]) -> Path:
        """Record ``topics`` (a log line for a long chat, else a rewrite); the file written."""
        with self.locked():
            segments = self.segments()
            if not segments and len(self.load().messages) < APPEND_FROM:
                self._forget()
                data = self.load()
                data.topics = topics
                self._write(data)
                return self.path
            return self._append_lines(segments, [{"topics": topics}])

    def _ids(self, data: ChatData) -> set[str]:
        """The message ids of ``data`` (as ``load`` returned it), kept with the chat's
        cached read: adding to a long chat must not collect 50,000 ids each time."""
        with _parsed_lock:
            hit = _ids_memo.get(str(self.path))
        if hit is not None and extends(hit[0], data.messages):
            ids = hit[1]
            ids.update(m.id for m in data.messages[len(hit[0]):])
        else:
            ids = {m.id for m in data.messages}
        with _parsed_lock:
            _ids_memo[str(self.path)] = (tuple(data.messages), ids)
        return ids

    def _append_lines(self, segments: list[Path], records: list[dict[str, Any]]) -> Path:
        """``records`` as lines at the end of the last segment (a new one when they do not
        fit), in one write and one fsync: a crash can tear the last line only, which
        readers leave out."""
        last = self._load_segment(segments[-1]) if segments else None
        if last is not None and last.lines + len(records) <= SEGMENT_LINES:
            path = segments[-1]
        else:
            n = int(_SEGMENT.fullmatch(segments[-1].name).group("n")) + 1 if segments else 1  # type: ignore[union-attr]
            path = self.memory_dir / f"{self.chat_id}.{n:05d}.jsonl"
        line = "".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records)
        recheck(path)
        if last is not None and path == segments[-1] and not last.ends_clean:
            # Half a line left by an append cut short (never acknowledged): cut it off.
            raw = read_regular(path, follow_symlinks=False)
            os.truncate(path, raw.rfind(b"\n") + 1)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), NEW_FILE_MODE)
        try:
            os.write(fd, line.encode("utf-8"))
            os.fsync(fd)
        finally:
            os.close(fd)
        return path

    def _write(self, data: ChatData) -> None:
        if len(data.messages) < APPEND_FROM:
            write_json_atomic(self.path, data.to_dict())
        else:
            # One message a line: still JSON to read and edit, written at the C encoder's
            # speed (an indented dump of 50,000 messages takes seconds).
            dumps = functools.partial(json.dumps, ensure_ascii=False)
            rest = {k: v for k, v in data.to_dict().items() if k != "messages"}
            body = ",\n".join("    " + dumps(m.to_dict()) for m in data.messages)
            tail = "".join(f",\n  {dumps(k)}: {dumps(v)}" for k, v in rest.items())
            atomic_write(self.path, f'{{\n  "messages": [\n{body}\n  ]{tail}\n}}\n'.encode("utf-8"),
                         overwrite=True)

    def _forget(self) -> None:
        with _parsed_lock:
            _parsed.pop(str(self.path), None)
            _combined.pop(str(self.path), None)
            for key in [k for k in _segments_read if Path(k).parent == self.memory_dir]:
                _segments_read.pop(key, None)


_EMPTY = ChatData()


def _read_from(path: Path, offset: int) -> str:
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        chunks = []
        while chunk := os.pread(fd, 1 << 20, offset):
            chunks.append(chunk)
            offset += len(chunk)
        return b"".join(chunks).decode("utf-8")
    finally:
        os.close(fd)
