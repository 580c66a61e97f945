"""Chat source: each message of ``.memory/{chat_id}.json`` is an item of kind ``message``.

So chat messages sit in the same index as code and notes, and the same keyword and
vector search ranks them (``chat.auto`` filters a chat's history with it). The item's
``name`` is the message's role (or speaker), so full-text search also matches who said
it; lines are message ordinals (1-based), which keeps ``start_line`` ordered in time.
"""

from __future__ import annotations

import json
import os

from ..model import Item, ItemKind, ParsedFile
from .base import BaseSource, decode

CHAT_LANGUAGE = "chat"
# Roles that say nothing about the content; any other role is a speaker's name (an
# imported group chat, a transcript) and is embedded with the text, as a reader sees it.
GENERIC_ROLES = frozenset({"user", "assistant", "system", "tool", "function", "developer"})
# The model truncates long texts itself; cutting characters first saves tokenising.
MAX_EMBED_CHARS = 2000


def message_embed_text(role: str, content: str) -> str:
    """The text a message is embedded from, by the index and by the chat's vector cache
    alike (``Caroline: ...`` for a named speaker), so the model sees it once."""
    text = content if role.lower() in GENERIC_ROLES else f"{role}: {content}"
    return text[:MAX_EMBED_CHARS] or " "


def is_chat_path(path: str) -> bool:
    """``.memory/{chat_id}.json`` (at any depth), but not the embedding sidecar."""
    parts = path.split("/")
    return (
        len(parts) >= 2 and parts[-2] == ".memory" and parts[-1].endswith(".json")
        and not parts[-1].endswith(".embeddings.json")
    )


def parse_chat_file(path: str, text: str) -> ParsedFile:
    """Items for the messages of one chat file; an invalid file gives a warning, no items."""
    from ..chat.files import parse_chat  # the one definition of a valid chat file
    from ..errors import ChatFileError

    parsed = ParsedFile(path=path, language=CHAT_LANGUAGE)
    try:
        # A byte-order mark (Windows editors write one) is not JSON; the chat layer skips it too.
        data = parse_chat(json.loads(text[1:] if text.startswith("\ufeff") else text), path)
    except json.JSONDecodeError as exc:
        parsed.warnings.append(f"{path}: not valid JSON ({exc.msg}); chat not indexed")
        return parsed
    except ChatFileError as exc:
        parsed.warnings.append(f"{exc}; chat not indexed")
        return parsed
    chat_id = os.path.basename(path)[: -len(".json")]
    sticky = set(data.sticky_ids())
    for n, m in enumerate(data.messages, start=1):
        meta = {"chat_id": chat_id, "message_id": m.id, "role": m.role, "ordinal": n}
        if m.timestamp:
            meta["timestamp"] = m.timestamp
        if m.id in sticky:
            meta["sticky"] = True
        parsed.items.append(
            Item(
                id=f"{path}#{m.id}", path=path, kind=ItemKind.MESSAGE, name=m.role,
                qualname=m.id, start_line=n, end_line=n, text=m.content,
                language=CHAT_LANGUAGE, meta=meta,
            )
        )
    return parsed


class ChatSource(BaseSource):
    name = "chat"
    language = CHAT_LANGUAGE

    def language_for(self, path: str) -> str | None:
        return CHAT_LANGUAGE if is_chat_path(path) else None

    def parse(self, path: str, data: bytes, language: str) -> ParsedFile:
        return parse_chat_file(path, decode(data))
