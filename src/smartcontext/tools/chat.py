"""Chat tools: the seed's three ``smart_context.*`` commands, the filtered history, topic
extraction, adding a message and the recent events.

MCP tool names may not hold dots in many clients, so ``smart_context.set_filter`` is the
tool ``smart_context_set_filter`` (same arguments, same answer). Every answer also lists
the ``events`` the call emitted, so clients that cannot subscribe still see them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

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
        chat = chats().chat(args.get("chat_id"))
        result = chat.history(args.get("message"), mode=args.get("mode"), max_tokens=args.get("max_tokens"),
                              share=args.get("share"))
        return result.to_dict(include_messages=args.get("include_messages", True))

    def extract(args: dict[str, Any]) -> dict[str, Any]:
        return with_events(lambda: chats().chat(args.get("chat_id")).extract_topics(args.get("method", "auto")).to_dict())

    def add_message(args: dict[str, Any]) -> dict[str, Any]:
        def run() -> dict[str, Any]:
            chat = chats().chat(args["chat_id"])
            msg = chat.add_message(args["role"], args["content"], id=args.get("id"),
                                   extract=args.get("extract"), background=False)
            out: dict[str, Any] = {"message": msg.to_dict(), "chat_id": chat.chat_id}
            if chat.last_extraction is not None and (args.get("extract") or args["role"] == "assistant"):
                out["extraction"] = chat.last_extraction.to_dict()
            return out

        return with_events(run)

    def events(args: dict[str, Any]) -> dict[str, Any]:
        found = chats().recent_events(args.get("since", 0.0), args.get("limit", 50))
        return {"events": found, "count": len(found)}

    obj = lambda props, required=(): {"type": "object", "properties": props,  # noqa: E731
                                      "required": list(required), "additionalProperties": False}
    lock = ctx.index_lock  # the automatic history reads and updates the index
    return [
        ToolSpec("smart_context_set_filter",
                 "Select chat topics (labels from smart_context_get_topics): the history sent to the model "
                 "keeps the messages similar to them, plus the sticky instructions. An empty list clears the "
                 "filter. Emits smart_context.filter_changed (and highlight_applied).",
                 obj({"topics": {"type": "array", "items": {"type": "string", "maxLength": 200}, "maxItems": 50},
                      "chat_id": CHAT_ID}, ["topics"]),
                 set_filter, read_only=False, provider="chat", lock=lock),
        ToolSpec("smart_context_get_topics",
                 "The topics of a chat ({label, count}, plus the sticky 'Instructions & Preferences' entry "
                 "with its message_ids) and its total_messages.",
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
                 history, provider="chat", lock=lock),
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
