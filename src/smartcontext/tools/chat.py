"""Chat tools: the seed's three ``smart_context.*`` commands, the filtered history, topic
extraction, adding a message and the recent events.

MCP tool names may not hold dots in many clients, so ``smart_context.set_filter`` is the
tool ``smart_context_set_filter`` (same arguments, same answer). Every answer also lists
the ``events`` the call emitted, so clients that cannot subscribe still see them.

Locking: the tools that change the chat state (filter, mode, topics, messages) run one at
a time under the server's chat lock, so each answer lists only its own events. The index
is shared as the other tools share it: ``chat_history`` ranks the chat's messages by the
index's keyword search scoped to the chat's rows, under the shared read lock;
``chat_add_message`` appends and re-indexes the file it wrote (a long chat's last log
segment) under the write lock, and extracts topics after releasing it (an LLM call never
holds up readers).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from ..errors import SmartContextError
from .spec import ToolContext, ToolSpec

CHAT_ID = {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,128}$",
           "description": "The chat: .memory/{chat_id}.json. Default: the current chat."}


def chat_tools(ctx: ToolContext) -> list[ToolSpec]:
    def chats():
        return ctx.workspace.chats()

    def with_events(run: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        seen: list[dict[str, Any]] = []
        unsubscribe = chats().subscribe("*", lambda e, p: seen.append({"event": e, "data": p}))
        try:
            answer = run()
        finally:
            unsubscribe()
        return {**answer, "events": seen}

    def set_filter(args: dict[str, Any]) -> dict[str, Any]:
        return with_events(lambda: chats().set_filter(args["topics"], args.get("chat_id")))

    def get_topics(args: dict[str, Any]) -> dict[str, Any]:
        return chats().get_topics(args.get("chat_id"))

    def set_similarity_mode(args: dict[str, Any]) -> dict[str, Any]:
        return with_events(lambda: chats().set_similarity_mode(args["enabled"]))

    def history(args: dict[str, Any]) -> dict[str, Any]:
        chat = chats().chat(args.get("chat_id"), must_exist=True)
        pending = args.get("message")
        # The history ranks through the index: built on first need (as every reading tool
        # does), kept current by chat_add_message (it re-indexes what it writes) and by the
        # server's re-check of the folder for files changed by others.
        ctx.ready_workspace()
        with ctx.reading():
            result = chat.history(pending, mode=args.get("mode"), max_tokens=args.get("max_tokens"),
                                  share=args.get("share"), sync=False)
        return result.to_dict(include_messages=args.get("include_messages", True))

    def extract(args: dict[str, Any]) -> dict[str, Any]:
        return with_events(lambda: chats().chat(args.get("chat_id"), must_exist=True).extract_topics(args.get("method", "auto")).to_dict())

    def add_message(args: dict[str, Any]) -> dict[str, Any]:
        def run() -> dict[str, Any]:
            chat = chats().chat(args["chat_id"])
            with ctx.index_lock.writer:  # the chat file is indexed: no reader sees it half-updated
                msg = chat.add_message(args["role"], args["content"], id=args.get("id"), extract=False)
                ctx.files_changed([chat.last_written or chat.rel_path])  # a long chat: its last segment only
            out: dict[str, Any] = {"message": msg.to_dict(), "chat_id": chat.chat_id}
            if chat.extracts_after(args["role"], args.get("extract")):
                try:
                    out["extraction"] = chat.extract_topics().to_dict()
                except SmartContextError as exc:
                    # The message is stored: say so, and why the topics were not redone
                    # (a failure here made clients retry, and store the message twice).
                    out["extraction"] = {"error": str(exc), "topics": chat.load().topics}
            return out

        return with_events(run)

    def events(args: dict[str, Any]) -> dict[str, Any]:
        found = chats().recent_events(args.get("since", 0.0), args.get("limit", 50))
        return {"events": found, "count": len(found)}

    obj = lambda props, required=(): {"type": "object", "properties": props,  # noqa: E731
                                      "required": list(required), "additionalProperties": False}
    # One chat-state change at a time (events are collected per call); never taken by a
    # thread that holds the index lock, so the two cannot deadlock.
    lock = ctx.shared("chat_lock", threading.RLock)
    return [
        ToolSpec("smart_context_set_filter",
                 "Select chat topics (labels from smart_context_get_topics): the history sent to the model "
                 "keeps each topic's messages (a topic listing message_ids keeps those; others, the messages "
                 "similar to the label), plus the sticky instructions; topics that selected no message are "
                 "named in matched_nothing. An empty list clears the filter. Emits "
                 "smart_context.filter_changed (and highlight_applied).",
                 obj({"topics": {"type": "array", "items": {"type": "string", "maxLength": 200}, "maxItems": 50},
                      "chat_id": CHAT_ID}, ["topics"]),
                 set_filter, read_only=False, provider="chat", lock=lock),
        ToolSpec("smart_context_get_topics",
                 "The topics of a chat ({label, count}, message_ids for topics that keep their members, plus "
                 "the sticky 'Instructions & Preferences' entry with its message_ids) and its total_messages.",
                 obj({"chat_id": CHAT_ID}), get_topics, provider="chat", lock=lock),
        ToolSpec("smart_context_set_similarity_mode",
                 "Turn the topic filter's embedding search on or off (off: the whole history is sent).",
                 obj({"enabled": {"type": "boolean"}}, ["enabled"]),
                 set_similarity_mode, read_only=False, provider="chat", lock=lock),
        ToolSpec("chat_history",
                 "The messages of a chat to send with the next model call. mode auto (default with a "
                 "message): the messages that best answer 'message' within a token budget, sticky "
                 "instructions always in; topics: the active topic filter; threshold: cosine to the message "
                 ">= the similarity threshold; all. Returns message_ids, messages and status_line.",
                 obj({"chat_id": CHAT_ID,
                      "message": {"type": "string", "maxLength": 20000, "description": "The pending user message."},
                      "mode": {"type": "string", "enum": ["auto", "topics", "threshold", "all"]},
                      "max_tokens": {"type": "integer", "minimum": 1, "maximum": 1_000_000},
                      "share": {"type": "number", "exclusiveMinimum": 0, "maximum": 1,
                                "description": "Budget as a share of the history's tokens (default 0.25)."},
                      "include_messages": {"type": "boolean", "default": True}}),
                 history, provider="chat"),
        ToolSpec("chat_extract_topics",
                 "Regenerate a chat's topics now (LLM of the 'fast' category when configured, else the local "
                 "method) and write them to the chat file. Says which method produced them.",
                 obj({"chat_id": CHAT_ID, "method": {"type": "string", "enum": ["auto", "llm", "local"]}}),
                 extract, read_only=False, provider="chat", lock=lock),
        ToolSpec("chat_add_message",
                 "Append a message to a chat (created on its first message). After an assistant message "
                 "the topics are extracted again.",
                 obj({"chat_id": CHAT_ID, "role": {"type": "string", "enum": ["user", "assistant", "system", "tool"]},
                      "content": {"type": "string", "maxLength": 200_000},
                      "id": {"type": "string", "minLength": 1, "maxLength": 200},
                      "extract": {"type": "boolean"}}, ["chat_id", "role", "content"]),
                 add_message, read_only=False, provider="chat", lock=lock),
        ToolSpec("smart_context_events",
                 "Recent chat events (topics_updated, filter_changed, highlight_applied), oldest first; pass "
                 "the last event's time as 'since' to get only newer ones.",
                 obj({"since": {"type": "number", "minimum": 0},
                      "limit": {"type": "integer", "minimum": 1, "maximum": 200}}),
                 events, provider="chat"),
    ]
