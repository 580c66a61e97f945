"""Import the chat formats people have into ``.memory/{chat_id}.json``.

- an OpenAI-style ``messages`` list (``[{"role", "content"}...]``, bare or as
  ``{"messages": [...]}``), the shape of chat-completion requests and of most exports;
- a ChatGPT data export's ``conversations.json``: a list of conversations whose
  ``mapping`` is a tree of nodes; the thread shown to the user is the path from the root
  to ``current_node``;
- a Claude data export's ``conversations.json``: a list of conversations with their
  ``chat_messages`` (``sender`` human or assistant).

Anthropic-style requests fit the first shape too: their top-level ``system`` prompt becomes
the first message, and tool calls and tool results are kept as text (``sources.chat.content_text``).

A message keeps its own id when it has one; otherwise its id comes from its content
(``c`` + a hash of role, text and timestamp; the second identical message gets ``-2``),
so it does not depend on where the message sits in the list. Re-importing merges
(``merge_messages``): new messages are added in their place, a message whose id the chat
holds with another text is updated, and no message of the chat is ever dropped; all under
the chat file's lock, written atomically.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..errors import ChatFileError
from ..safeio import read_regular
from .files import ChatData, ChatFile, Message, content_text
from ..sources.chat import tool_call_text

FORMATS = ("auto", "openai", "chatgpt", "claude", "smartcontext")


@dataclass
class ImportResult:
    chats: list[dict[str, Any]] = field(default_factory=list)  # {chat_id, title, added, skipped, total}
    format: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"format": self.format, "chats": self.chats,
                "added": sum(c["added"] for c in self.chats)}


def _iso(ts: Any) -> str | None:
    if isinstance(ts, (int, float)) and not isinstance(ts, bool):
        return datetime.fromtimestamp(ts, tz=timezone.utc).isoformat(timespec="seconds")
    return ts if isinstance(ts, str) and ts else None


def _safe_id(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "-", text).strip("-")[:128] or "chat"


def detect_format(raw: Any) -> str:
    if isinstance(raw, list) and raw and all(isinstance(c, dict) and "mapping" in c for c in raw):
        return "chatgpt"
    if isinstance(raw, dict) and "mapping" in raw:
        return "chatgpt"
    if isinstance(raw, list) and raw and all(isinstance(c, dict) and "chat_messages" in c for c in raw):
        return "claude"
    if isinstance(raw, dict) and isinstance(raw.get("chat_messages"), list):
        return "claude"
    if isinstance(raw, dict) and isinstance(raw.get("messages"), list):
        msgs = raw["messages"]
        if msgs and all(isinstance(m, dict) and "id" in m for m in msgs):
            return "smartcontext"
        return "openai"
    if isinstance(raw, list) and all(isinstance(m, dict) and "role" in m for m in raw):
        return "openai"
    raise ChatFileError(
        "unrecognised chat format: expected an OpenAI-style messages list, a ChatGPT or "
        "Claude conversations.json export, or a Smart Context chat file"
    )


def content_id(role: str, text: str, timestamp: str | None) -> str:
    """A message id from what the message says: the same message imported again (from
    another export, with messages removed or added around it) gets the same id."""
    digest = hashlib.sha256(f"{role}\x00{timestamp or ''}\x00{text}".encode("utf-8", "surrogatepass")).hexdigest()
    return f"c{digest[:16]}"


def openai_messages(raw: Any, where: str) -> list[Message]:
    msgs = raw["messages"] if isinstance(raw, dict) else raw
    system = content_text(raw.get("system")) if isinstance(raw, dict) else ""
    if system.strip():  # Anthropic's requests keep the system prompt beside the messages
        msgs = [{"role": "system", "content": system}, *msgs]
    out: list[Message] = []
    seen: dict[str, int] = {}
    for n, m in enumerate(msgs, start=1):
        if not isinstance(m, dict) or not isinstance(m.get("role"), str):
            raise ChatFileError(f"{where}: message {n} has no 'role'")
        text = content_text(m.get("content"))
        calls = [_openai_call_text(c) for c in m.get("tool_calls") or [] if isinstance(c, dict)]
        text = "\n".join(t for t in (text, *calls) if t)
        ts = _iso(m.get("timestamp") or m.get("created_at"))
        mid = m.get("id")
        if isinstance(mid, (str, int)) and not isinstance(mid, bool) and str(mid):
            mid = str(mid)
        else:
            # "ok" said twice is two messages: the k-th repeat gets a suffix, still stable.
            mid = content_id(m["role"], text, ts)
            seen[mid] = seen.get(mid, 0) + 1
            if seen[mid] > 1:
                mid = f"{mid}-{seen[mid]}"
        extra = {k: m[k] for k in ("name", "tool_calls", "tool_call_id") if k in m}
        out.append(Message(mid, m["role"], text, ts, extra))
    return out


def _openai_call_text(call: dict[str, Any]) -> str:
    fn = call.get("function")
    if not isinstance(fn, dict):
        return ""
    name = fn.get("name") if isinstance(fn.get("name"), str) else ""
    return tool_call_text(name, fn.get("arguments")) if name else ""


_CLAUDE_ROLES = {"human": "user", "assistant": "assistant"}


def claude_messages(conv: dict[str, Any], where: str) -> list[Message]:
    """A Claude export conversation's messages, oldest first; a message's ``content``
    blocks are preferred to its ``text`` (they hold the tool calls too)."""
    msgs = conv.get("chat_messages")
    if not isinstance(msgs, list):
        raise ChatFileError(f"{where}: a Claude conversation without 'chat_messages'")
    out: list[Message] = []
    for n, m in enumerate(msgs, start=1):
        if not isinstance(m, dict):
            raise ChatFileError(f"{where}: message {n} is not an object")
        role = _CLAUDE_ROLES.get(str(m.get("sender")), str(m.get("sender") or "user"))
        text = content_text(m.get("content")) or content_text(m.get("text"))
        if not text.strip():
            continue
        ts = _iso(m.get("created_at"))
        mid = str(m.get("uuid") or content_id(role, text, ts))
        out.append(Message(mid, role, text, ts))
    return out


def chatgpt_thread(conv: dict[str, Any]) -> list[Message]:
    """The messages on the path from the root to ``current_node``, oldest first."""
    mapping = conv.get("mapping")
    if not isinstance(mapping, dict):
        raise ChatFileError("a ChatGPT conversation without a 'mapping'")
    node_id = conv.get("current_node")
    if node_id not in mapping:
        # No current node: follow the last child from the root.
        roots = [k for k, v in mapping.items() if isinstance(v, dict) and not v.get("parent")]
        node_id = roots[0] if roots else None
        while node_id and mapping.get(node_id, {}).get("children"):
            node_id = mapping[node_id]["children"][-1]
    path: list[dict[str, Any]] = []
    seen: set[str] = set()
    while node_id and node_id in mapping and node_id not in seen:
        seen.add(node_id)
        path.append(mapping[node_id])
        node_id = mapping[node_id].get("parent")
    out: list[Message] = []
    for node in reversed(path):
        msg = node.get("message")
        if not isinstance(msg, dict):
            continue
        role = (msg.get("author") or {}).get("role") or "user"
        content = msg.get("content") or {}
        parts = content.get("parts") if isinstance(content, dict) else None
        text = content_text(parts if parts is not None else content.get("text") if isinstance(content, dict) else content)
        meta = msg.get("metadata") or {}
        if not text.strip() or meta.get("is_visually_hidden_from_conversation"):
            continue  # empty system scaffolding and hidden turns are not part of the chat
        out.append(Message(str(msg.get("id") or node.get("id")), role, text, _iso(msg.get("create_time"))))
    return out


def _same_text(a: Message, b: Message) -> bool:
    return (a.role, a.content, a.timestamp) == (b.role, b.content, b.timestamp)


def merge_messages(have: list[Message], incoming: list[Message]) -> tuple[list[Message], int, int, int]:
    """``have`` with ``incoming`` merged in: ``(messages, added, updated, unchanged)``.

    An incoming message is the chat's message with the same id, or else (chats imported
    before ids came from content, which numbered messages by position) the first
    not-yet-matched message with the same role, text and timestamp. A matched message
    whose text, role or timestamp differ is updated in place (its other keys kept); a
    new one goes right after the last matched message before it in the import (right
    before the first matched one when none was, at the end when nothing matched); every
    message of the chat stays, in its order."""
    by_id = {m.id: i for i, m in enumerate(have)}
    by_text: dict[tuple[str, str, str | None], list[int]] = {}
    for pos, m in enumerate(have):
        by_text.setdefault((m.role, m.content, m.timestamp), []).append(pos)
    merged = list(have)
    matched: set[int] = set()
    first_seen: set[int] = set()  # the chat's message the import's first known one is
    after: dict[int, list[Message]] = {}  # new messages by the index they follow (-1: the start)
    anchor = -1
    added = updated = unchanged = 0
    taken_ids = set(by_id)
    for m in incoming:
        i: int | None = by_id.get(m.id)
        if i is None or i in matched:
            candidates = [j for j in by_text.get((m.role, m.content, m.timestamp), []) if j not in matched]
            i = candidates[0] if candidates else None
        if i is None:
            if m.id in taken_ids:
                continue  # the same id twice in one import: the first one counts
            taken_ids.add(m.id)
            after.setdefault(anchor, []).append(m)
            added += 1
            continue
        if not matched:
            first_seen.add(i)
        matched.add(i)
        anchor = i
        old = merged[i]
        if old.id == m.id and not _same_text(old, m):
            merged[i] = Message(old.id, m.role, m.content, m.timestamp, {**old.extra, **m.extra})
            updated += 1
        else:
            unchanged += 1
    # New messages before the first known one go right before it; with none known (an
    # import of new messages only) they follow the chat.
    leading = after.pop(-1, [])
    first = next((i for i in range(len(merged)) if i in matched and i in first_seen), None)
    out: list[Message] = []
    for i, m in enumerate(merged):
        if i == first:
            out.extend(leading)
        out.append(m)
        out.extend(after.get(i, []))
    if first is None:
        out.extend(leading)
    return out, added, updated, unchanged


def _merge(memory_dir: Path, chat_id: str, messages: list[Message], title: str | None) -> dict[str, Any]:
    cf = ChatFile(memory_dir, chat_id)

    def add(data: ChatData) -> tuple[int, int, int, int]:
        data.messages, added, updated, unchanged = merge_messages(data.messages, messages)
        if title and "title" not in data.extra:
            data.extra["title"] = title
        return added, updated, unchanged, len(data.messages)

    added, updated, skipped, total = cf.update(add)
    return {"chat_id": chat_id, "title": title, "added": added, "updated": updated, "skipped": skipped,
            "total": total}


def import_chats(memory_dir: Path, source: str | Path, chat_id: str | None = None, format: str = "auto") -> ImportResult:
    """Import ``source`` into chat files of ``memory_dir``.

    chat_id: the chat to write (OpenAI lists; default: the file's name). A ChatGPT or
             Claude export holds many conversations: each goes to its own chat, named by its id.
    """
    if format not in FORMATS:
        raise ChatFileError(f"unknown import format {format!r}; formats: {', '.join(FORMATS)}")
    path = Path(source)
    try:
        raw = json.loads(read_regular(path).decode("utf-8-sig"))
    except FileNotFoundError:
        raise ChatFileError(f"no such file: {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ChatFileError(f"cannot read {path}: {exc}") from exc
    except json.JSONDecodeError as exc:
        raise ChatFileError(f"{path} is not valid JSON ({exc.msg} at line {exc.lineno})") from None
    fmt = detect_format(raw) if format == "auto" else format
    result = ImportResult(format=fmt)
    if fmt == "chatgpt":
        convs = raw if isinstance(raw, list) else [raw]
        for n, conv in enumerate(convs, start=1):
            if not isinstance(conv, dict):
                raise ChatFileError(f"{path}: conversation {n} is not an object")
            cid = chat_id if chat_id and len(convs) == 1 else _safe_id(
                str(conv.get("conversation_id") or conv.get("id") or f"{path.stem}-{n}"))
            msgs = chatgpt_thread(conv)
            result.chats.append(_merge(memory_dir, cid, msgs, conv.get("title")))
        return result
    if fmt == "claude":
        convs = raw if isinstance(raw, list) else [raw]
        for n, conv in enumerate(convs, start=1):
            if not isinstance(conv, dict):
                raise ChatFileError(f"{path}: conversation {n} is not an object")
            cid = chat_id if chat_id and len(convs) == 1 else _safe_id(str(conv.get("uuid") or f"{path.stem}-{n}"))
            msgs = claude_messages(conv, f"{path}: conversation {n}")
            name = conv.get("name") if isinstance(conv.get("name"), str) and conv.get("name") else None
            result.chats.append(_merge(memory_dir, cid, msgs, name))
        return result
    if fmt == "smartcontext":
        from .files import parse_chat

        data = parse_chat(raw, str(path))
        msgs = data.messages
    else:
        msgs = openai_messages(raw, str(path))
    title = raw.get("title") if isinstance(raw, dict) else None
    result.chats.append(_merge(memory_dir, chat_id or _safe_id(path.stem), msgs, title))
    return result
