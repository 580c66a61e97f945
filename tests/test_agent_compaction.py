"""The shared compaction of tool results (vault-agent-fixes-plan.md, Tasks 3f and 4)."""

import json

from smartcontext.agent.compaction import SUMMARY_CHARS, build_tool_stub, compact_tool_messages
from smartcontext.tokens import count_tokens


def stub(data) -> dict:
    return json.loads(build_tool_stub(json.dumps(data) if not isinstance(data, str) else data))


class TestAgentCompaction:
    """The seed's test, word for word in substance."""

    def test_compact_tool_messages_after_tool_round(self):
        messages = [
            {"role": "system", "content": "prompt"},
            {"role": "user", "content": "search"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "call_1", "function": {"name": "search_vault"}, "type": "function"}
            ]},
            {"role": "tool", "tool_call_id": "call_1",
             "content": json.dumps({"success": True, "results": [{"source": "a.md", "content": "long..."}]})},
        ]
        compact_tool_messages(messages)

        tool_msg = messages[3]
        assert tool_msg["_compacted"] is True
        parsed = json.loads(tool_msg["content"])
        assert parsed["status"] == "success"


def test_stub_keeps_status_error_message_and_path():
    assert stub({"success": True, "message": "Created a.md", "path": "a.md"}) == {
        "status": "success", "message": "Created a.md", "path": "a.md"}
    assert stub({"success": False, "error": "File not found: x.md"}) == {"status": "error", "error": "File not found: x.md"}
    assert stub({"message": "no flag"}) == {"status": "unknown", "message": "no flag"}


def test_stub_counts_results_and_lists_their_files():
    data = {"success": True, "results": [{"source": "a.md", "content": "x" * 500, "heading": "## A"},
                                         {"source": "b/c.md", "content": "y"}, "plain string", {"no": "source"}]}
    assert stub(data) == {"status": "success", "result_count": 4, "files": ["a.md", "b/c.md"]}
    # Results without sources: a count and no files key.
    assert stub({"success": True, "results": ["x.md", "y.md"]}) == {"status": "success", "result_count": 2}
    assert stub({"success": True, "results": "not a list"}) == {"status": "success"}


def test_stub_replaces_content_by_its_length_and_keeps_the_date():
    content = "# Note\n" + "word " * 1000
    assert stub({"success": True, "content": content, "path": "n.md"}) == {
        "status": "success", "path": "n.md", "has_content": True, "content_length": len(content)}
    assert stub({"success": True, "date": "2026-11-23", "weekday": "Monday"}) == {"status": "success", "date": "2026-11-23"}


def test_non_json_results_are_cut_to_200_characters():
    text = "plain text answer " * 50
    assert stub(text) == {"status": "unknown", "summary": text[:SUMMARY_CHARS]}
    assert stub("short") == {"status": "unknown", "summary": "short"}
    # JSON that is not an object is summarised the same way.
    assert stub("[1, 2, 3]") == {"status": "unknown", "summary": "[1, 2, 3]"}


def test_a_message_is_compacted_once_and_the_saving_is_exact():
    big = json.dumps({"success": True, "content": "lorem ipsum " * 400, "path": "a.md"})
    small = json.dumps({"success": False, "error": "File not found: b.md"})
    messages = [
        {"role": "user", "content": "read them"},
        {"role": "tool", "tool_call_id": "c1", "id": "m1", "timestamp": "t", "content": big},
        {"role": "tool", "tool_call_id": "c2", "id": "m2", "content": small},
    ]
    saved = compact_tool_messages(messages)
    stubs = [messages[1]["content"], messages[2]["content"]]
    assert saved == count_tokens(big) + count_tokens(small) - sum(count_tokens(s) for s in stubs)
    assert saved > 700
    assert messages[1]["id"] == "m1" and messages[1]["timestamp"] == "t"  # our keys survive
    assert messages[0] == {"role": "user", "content": "read them"}
    again = [dict(m) for m in messages]
    assert compact_tool_messages(again) == 0
    assert again == messages  # a stub is never compacted into a stub of a stub


def test_keep_leaves_results_the_model_has_not_read():
    result = json.dumps({"success": True, "content": "x" * 300})
    messages = [{"role": "tool", "tool_call_id": "old", "content": result},
                {"role": "tool", "tool_call_id": "new", "content": result}]
    compact_tool_messages(messages, keep={"new"})
    assert messages[0]["_compacted"] is True
    assert messages[1] == {"role": "tool", "tool_call_id": "new", "content": result}
