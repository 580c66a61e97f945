"""Compaction of tool results, shared by every agent front end (the CLI agent and the
HTTP chat sessions run the same loop, which calls this after each round of tool calls).

A tool result the model has read is replaced in the history by a small stub (the seed's
``build_tool_stub``, vault-agent-fixes-plan.md Tasks 3f and 4): its status, error,
message, path, how many results and from which files, whether it held content and how
long, and the date. A result that is not JSON keeps its first 200 characters. A compacted
message carries ``_compacted`` and is never compacted twice.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from typing import Any

from ..tokens import DEFAULT_ENCODING, count_tokens

SUMMARY_CHARS = 200


def _length(value: Any) -> int:
    if isinstance(value, (str, list, dict)):
        return len(value)
    return len(json.dumps(value, ensure_ascii=False, default=str))


def build_tool_stub(content: Any) -> str:
    """A compact stub (JSON text) of one tool result (JSON text, usually ok/err)."""
    text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False, default=str)
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, TypeError):
        data = None
    if not isinstance(data, dict):
        # Not an ok/err object (prose, a bare list or number): its start is all we keep.
        return json.dumps({"status": "unknown", "summary": text[:SUMMARY_CHARS]}, ensure_ascii=False)

    stub: dict[str, Any] = {}
    stub["status"] = ("success" if data["success"] else "error") if "success" in data else "unknown"
    for key in ("error", "message", "path"):
        if key in data:
            stub[key] = data[key]
    results = data.get("results")
    if isinstance(results, list):
        stub["result_count"] = len(results)
        files = [r["source"] for r in results if isinstance(r, dict) and "source" in r]
        if files:
            stub["files"] = files
    if "content" in data:
        stub["has_content"] = True
        stub["content_length"] = _length(data["content"])
    if "date" in data:
        stub["date"] = data["date"]
    return json.dumps(stub, ensure_ascii=False)


def compact_tool_messages(
    messages: list[dict[str, Any]],
    keep: Collection[str] = (),
    encoding: str = DEFAULT_ENCODING,
) -> int:
    """Replace tool results with their stubs, in place; returns the tokens saved (exact
    counts of the contents before and after; negative when stubs of tiny results came
    out longer).

    keep: tool_call_ids whose results stay whole for now (those the model has not read
          yet: the loop compacts a round's results after the model answered them).
    Other keys of a message (its id, timestamp) are kept.
    """
    saved = 0
    for i, msg in enumerate(messages):
        if msg.get("role") != "tool" or msg.get("_compacted") or msg.get("tool_call_id") in keep:
            continue
        before = msg.get("content")
        if before is None:
            before = ""
        before_text = before if isinstance(before, str) else json.dumps(before, ensure_ascii=False, default=str)
        stub = build_tool_stub(before_text)
        saved += count_tokens(before_text, encoding) - count_tokens(stub, encoding)
        messages[i] = {**msg, "content": stub, "_compacted": True}
    return saved
