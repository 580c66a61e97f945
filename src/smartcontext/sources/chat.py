"""Chat source: each message of ``.memory/{chat_id}.json`` is an item of kind ``message``.

So chat messages sit in the same index as code and notes, and the same keyword and
vector search ranks them (``chat.auto`` filters a chat's history with it, scoped to the
chat's rows). The item's ``name`` is the message's role (or speaker), indexed for
full-text search with the text, so a search also matches who said it; lines are message ordinals (1-based), which keeps ``start_line`` ordered in time.
An item's ``tokens`` is the exact count of the message's rendered history line
(``render_line``, in ``INDEX_ENCODING``), not the estimate other items carry.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ChatFileError
from ..model import Item, ItemKind, ParsedFile
from ..words import fts_text
from .base import BaseSource, decode

CHAT_LANGUAGE = "chat"
# Roles that say nothing about the content; any other role is a speaker's name (an
# imported group chat, a transcript) and is embedded with the text, as a reader sees it.
GENERIC_ROLES = frozenset({"user", "assistant", "system", "tool", "function", "developer"})
# The model truncates long texts itself; cutting characters first saves tokenising.
MAX_EMBED_CHARS = 2000


# The encoding of the exact counts the index keeps for message items (the default of
# ``[context] encoding``); a history counted in another encoding counts for itself.
INDEX_ENCODING = "cl100k_base"


def render_line(role: str, content: str, timestamp: str | None) -> str:
    """A message as the model reads it in a history: date (when known), role, text."""
    head = f"[{timestamp}] " if timestamp else ""
    return f"{head}{role}: {content}"


def message_embed_text(role: str, content: str) -> str:
    """The text a message is embedded from, by the index and by the chat's vector cache
    alike (``Caroline: ...`` for a named speaker), so the model sees it once."""
    text = content if role.lower() in GENERIC_ROLES else f"{role}: {content}"
    return text[:MAX_EMBED_CHARS] or " "


# -- the chat file format (``chat.files`` reads and writes it under its lock) ---------


def content_text(content: Any) -> str:
    """A message's text: a string, or the parts of a content list (OpenAI's and
    Anthropic's): text parts as written, a tool call as ``[tool call NAME ARGS]``, a tool
    result's own content; images and other parts without words are left out."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict):
                text = _part_text(part)
                if text:
                    parts.append(text)
        return "\n".join(parts)
    return "" if content is None else str(content)


def _part_text(part: dict[str, Any]) -> str:
    if isinstance(part.get("text"), str):
        return part["text"]
    kind = part.get("type")
    if kind == "tool_use" and isinstance(part.get("name"), str):
        return tool_call_text(part["name"], part.get("input"))
    if kind == "tool_result":
        return content_text(part.get("content"))
    return ""


def tool_call_text(name: str, arguments: Any) -> str:
    """A tool call as a line of the chat: what was asked for is context too."""
    if isinstance(arguments, str):
        args = arguments.strip()
    else:
        args = json.dumps(arguments, ensure_ascii=False, sort_keys=True) if arguments is not None else ""
    return f"[tool call {name} {args}]" if args not in ("", "{}") else f"[tool call {name}]"


@dataclass(slots=True)
class Message:
    """One message. ``extra`` keeps the keys of the file this class does not name.
    (Slots: a long chat makes 50,000 of them, a quarter faster.)"""

    id: str
    role: str
    content: str
    timestamp: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"id": self.id, "role": self.role, "content": self.content}
        if self.timestamp is not None:
            d["timestamp"] = self.timestamp
        return {**self.extra, **d}


@dataclass
class ChatData:
    """The parsed content of a chat file."""

    messages: list[Message] = field(default_factory=list)
    topics: list[dict[str, Any]] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {**self.extra, "messages": [m.to_dict() for m in self.messages], "topics": self.topics}

    def sticky_ids(self) -> list[str]:
        """Message ids of the sticky topic (instructions kept in every history)."""
        ids: list[str] = []
        for t in self.topics:
            if t.get("sticky"):
                ids.extend(str(i) for i in t.get("message_ids", []))
        return ids

    def message_ids(self) -> set[str]:
        return {m.id for m in self.messages}


_MESSAGE_KEYS = frozenset(("id", "role", "content", "timestamp"))


def parse_chat(raw: Any, where: str) -> ChatData:
    """Check and convert the JSON of a chat file; ``where`` names it in errors."""
    if not isinstance(raw, dict):
        raise ChatFileError(f"{where}: a chat file is a JSON object with 'messages' and 'topics'")
    messages_raw = raw.get("messages", [])
    topics_raw = raw.get("topics", [])
    if not isinstance(messages_raw, list):
        raise ChatFileError(f"{where}: 'messages' must be a list")
    if not isinstance(topics_raw, list) or not all(isinstance(t, dict) for t in topics_raw):
        raise ChatFileError(f"{where}: 'topics' must be a list of objects")
    messages: list[Message] = []
    seen: set[str] = set()
    for n, m in enumerate(messages_raw):
        if not isinstance(m, dict):
            raise ChatFileError(f"{where}: message {n + 1} is not an object")
        mid = m.get("id")
        if isinstance(mid, int) and not isinstance(mid, bool):
            mid = str(mid)
        if not isinstance(mid, str) or not mid:
            raise ChatFileError(
                f"{where}: message {n + 1} has no 'id' (every message needs a unique string id; "
                "import other formats with `smartcontext chat import`)"
            )
        if mid in seen:
            raise ChatFileError(f"{where}: message id {mid!r} appears twice")
        seen.add(mid)
        role = m.get("role", "user")
        if not isinstance(role, str):
            raise ChatFileError(f"{where}: message {mid!r} has a 'role' that is not a string")
        ts = m.get("timestamp")
        content = m.get("content")
        # A long chat is read on its history's first answer: the common message (the
        # known keys only, string content) costs no further call.
        extra = {} if m.keys() <= _MESSAGE_KEYS else {k: v for k, v in m.items() if k not in _MESSAGE_KEYS}
        messages.append(Message(mid, role, content if type(content) is str else content_text(content),
                                None if ts is None else str(ts), extra))
    extra = {k: v for k, v in raw.items() if k not in ("messages", "topics")}
    return ChatData(messages, list(topics_raw), extra)


_SEGMENT_NAME = re.compile(r"^[A-Za-z0-9_-]{1,128}\.\d{5,}\.jsonl$")


def is_chat_path(path: str) -> bool:
    """``.memory/{chat_id}.json`` (at any depth), but not the embedding sidecar; or a long
    chat's log segment, ``.memory/{chat_id}.00001.jsonl``."""
    parts = path.split("/")
    if len(parts) < 2 or parts[-2] != ".memory":
        return False
    name = parts[-1]
    return (name.endswith(".json") and not name.endswith(".embeddings.json")) or bool(_SEGMENT_NAME.match(name))


def segment_records(text: str) -> Iterator[tuple[int, Any, str | None]]:
    """Each non-blank line of a log segment (JSON Lines): ``(line number, record, None)``,
    or ``(line number, None, why)`` for a line that is not JSON. A last line without its
    newline that is not JSON is half an append cut short (the message was never added):
    left out without a word."""
    lines = text.split("\n")
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            yield n, json.loads(line), None
        except json.JSONDecodeError as exc:
            if n < len(lines):
                yield n, None, exc.msg


def is_topics_record(rec: Any) -> bool:
    """A segment line holding the chat's topics rather than a message."""
    return isinstance(rec, dict) and "topics" in rec and "id" not in rec


def is_keys_record(rec: Any) -> bool:
    """A segment line setting keys of the chat itself (``{"set": {"agent": {...}}}``: an
    agent session's summary after an answer) rather than a message."""
    return isinstance(rec, dict) and "id" not in rec and isinstance(rec.get("set"), dict)


def _segment_messages(path: str, text: str) -> tuple[ChatData, list[str]]:
    """The messages of a log segment (topics and keys records skipped; a line that is not
    JSON is not indexed, with a warning)."""
    records, warnings = [], []
    for n, rec, bad in segment_records(text):
        if bad is not None:
            warnings.append(f"{path}: line {n} is not valid JSON ({bad}); line not indexed")
        elif not is_topics_record(rec) and not is_keys_record(rec):
            records.append(rec)
    return parse_chat({"messages": records}, path), warnings


def _keep_from() -> int:
    from . import chat_cache

    return chat_cache.CACHE_FROM_BYTES


def parse_chat_file(path: str, text: str) -> ParsedFile:
    """Items for the messages of one chat file; an invalid file gives a warning, no items."""
    parsed = ParsedFile(path=path, language=CHAT_LANGUAGE)
    text = text[1:] if text.startswith("\ufeff") else text  # a byte-order mark is not JSON
    try:
        if path.endswith(".jsonl"):
            data, warnings = _segment_messages(path, text)
            parsed.warnings.extend(warnings)
        else:
            data = parse_chat(json.loads(text), path)
            # A long chat's parse is kept beside the index for the chat layer, which reads
            # files strictly: not when a byte was replaced decoding it.
            if len(text) >= _keep_from() and "\ufffd" not in text:
                parsed.aside = data
    except json.JSONDecodeError as exc:
        parsed.warnings.append(f"{path}: not valid JSON ({exc.msg}); chat not indexed")
        return parsed
    except ChatFileError as exc:
        parsed.warnings.append(f"{exc}; chat not indexed")
        return parsed
    from ..tokens import count_many  # tiktoken: only when a chat is indexed

    chat_id = os.path.basename(path).split(".")[0]
    sticky = set(data.sticky_ids())
    # Exact counts of the rendered lines, once, when the file is indexed: a history of a
    # long chat reads them with its rows instead of tokenising 50,000 lines per process.
    counts = count_many([render_line(m.role, m.content, m.timestamp) for m in data.messages], INDEX_ENCODING)
    for n, (m, tokens) in enumerate(zip(data.messages, counts), start=1):
        meta = {"chat_id": chat_id, "message_id": m.id, "role": m.role, "ordinal": n}
        if m.timestamp:
            meta["timestamp"] = m.timestamp
        if m.id in sticky:
            meta["sticky"] = True
        parsed.items.append(
            Item(
                id=f"{path}#{m.id}", path=path, kind=ItemKind.MESSAGE, name=m.role,
                qualname=m.id, start_line=n, end_line=n, text=m.content,
                language=CHAT_LANGUAGE, meta=meta, tokens=tokens,
            )
        )
    return parsed


class ChatSource(BaseSource):
    name = "chat"
    language = CHAT_LANGUAGE
    # A chat file written by ``json.dumps`` is one line: data, not minified code.
    long_lines = True

    def language_for(self, path: str) -> str | None:
        return CHAT_LANGUAGE if is_chat_path(path) else None

    def parse(self, path: str, data: bytes, language: str) -> ParsedFile:
        return parse_chat_file(path, decode(data))

    def keep_aside(self, abs_path: Path, digest: str, data: ChatData) -> None:
        """Keep a long chat's parse beside the index (``digest``: the SHA-1 of the bytes
        parsed), so the chat's first history reads it instead of parsing the file."""
        from . import chat_cache

        chat_cache.save(abs_path, digest, data)

    def fts_bodies(self, items: list[Item], text: str) -> list[str]:
        # The speaker is searchable with the text ("what did Caroline say"): the name
        # column of the full-text index holds the message id.
        return [fts_text(f"{it.name} {it.text}") for it in items]
