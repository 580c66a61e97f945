"""The chat commands through the CLI and the tool registry (the MCP server's tools):
thin calls into the same library functions, same answers."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from smartcontext.cli import app
from smartcontext.tools.registry import ToolRegistry

from test_chat import CHAT, make_chat

runner = CliRunner()


def cli(*args: str):
    result = runner.invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr if hasattr(result, "stderr") else ""


def test_cli_topics_filter_context_events(tmp_path, store_env):
    make_chat(tmp_path)
    root = str(tmp_path)
    code, out, _ = cli("chat", "topics", "c1", root, "--extract", "--method", "local", "--json")
    assert code == 0, out
    data = json.loads(out)
    assert data["status"] == "success" and data["total_messages"] == len(CHAT)
    assert data["extraction"]["method"].startswith("local:")
    label = next(t["label"] for t in data["topics"] if not t.get("sticky"))
    code, out, _ = cli("chat", "filter", "c1", root, "--topic", label, "--json")
    data = json.loads(out)
    assert data["active_topics"] == [label]
    assert [e["event"] for e in data["events"]] == ["smart_context.filter_changed", "smart_context.highlight_applied"]
    code, out, _ = cli("chat", "context", "c1", root, "--json")
    assert json.loads(out)["mode"] == "topics"
    code, out, _ = cli("chat", "mode", "off", root, "--json")
    assert json.loads(out)["embedding_search"] is False
    code, out, _ = cli("chat", "context", "c1", root, "--message", "ferry to Naxos", "--share", "0.3")
    assert code == 0 and "ferry" in out.lower() and "sourdough" not in out.lower()
    code, out, _ = cli("chat", "events", root, "--json")
    events = json.loads(out)["events"]
    assert events[-1]["event"] == "smart_context.filter_changed" and events[-1]["data"]["active_topics"] == []


def test_cli_errors_are_one_line_and_non_zero(tmp_path):
    (tmp_path / ".memory").mkdir()
    (tmp_path / ".memory" / "bad.json").write_text("{nope")
    result = runner.invoke(app, ["chat", "topics", "bad", str(tmp_path)])
    assert result.exit_code == 1
    assert "not valid JSON" in result.output and "Traceback" not in result.output
    result = runner.invoke(app, ["chat", "context", "../x", str(tmp_path)])
    assert result.exit_code == 1 and "invalid chat id" in result.output


def test_cli_import_and_add(tmp_path):
    src = tmp_path / "msgs.json"
    src.write_text(json.dumps([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]))
    code, out, _ = cli("chat", "import", str(src), str(tmp_path), "--chat-id", "imp", "--json")
    assert code == 0 and json.loads(out)["added"] == 2
    code, out, _ = cli("chat", "add", "imp", "user", "be concise", str(tmp_path), "--id", "x1", "--json")
    assert code == 0 and json.loads(out)["message"]["id"] == "x1"
    code, out, _ = cli("chat", "list", str(tmp_path), "--json")
    assert json.loads(out)["chats"] == ["imp"]


def test_tools_answer_the_seed_shapes_and_events(tmp_path, store_env):
    make_chat(tmp_path)
    reg = ToolRegistry.open(tmp_path)
    try:
        names = set(reg.names())
        assert {"smart_context_set_filter", "smart_context_get_topics", "smart_context_set_similarity_mode",
                "chat_history", "chat_extract_topics", "chat_add_message", "smart_context_events"} <= names
        got = reg.call("smart_context_get_topics", {"chat_id": "c1"})
        assert got == {"success": True, "status": "success", "topics": [], "total_messages": len(CHAT)}
        ex = reg.call("chat_extract_topics", {"chat_id": "c1", "method": "local"})
        assert ex["success"] and ex["events"][0]["event"] == "smart_context.topics_updated"
        sf = reg.call("smart_context_set_filter", {"topics": [], "chat_id": "c1"})
        assert sf["active_topics"] == [] and sf["events"][0]["data"] == {"active_topics": [], "chat_id": "c1"}
        hist = reg.call("chat_history", {"chat_id": "c1", "message": "sourdough starter smell", "max_tokens": 80})
        assert hist["success"] and hist["mode"] == "auto" and hist["tokens"] <= 80
        assert "a7" in hist["message_ids"] and {"u1", "u6"} <= set(hist["message_ids"])
        add = reg.call("chat_add_message", {"chat_id": "c1", "role": "assistant", "content": "Noted."})
        assert add["success"] and add["extraction"]["method"].startswith("local:")
        bad = reg.call("chat_history", {"chat_id": "../etc"})
        assert bad["success"] is False
        assert reg.call("smart_context_events", {})["count"] >= 3
    finally:
        reg.close()


def test_chat_tools_share_the_index_lock(tmp_path):
    # chat_history reads the index under the shared read lock: a writer keeps it waiting.
    # chat_add_message writes the indexed chat file under the write lock: a reader keeps it
    # waiting.
    import threading

    make_chat(tmp_path)
    reg = ToolRegistry.open(tmp_path)
    try:
        reg.call("chat_history", {"chat_id": "c1", "message": "sourdough"})  # builds the index first
        done = threading.Event()
        with reg.context.index_lock.writer:
            worker = threading.Thread(target=lambda: (
                reg.call("chat_history", {"chat_id": "c1", "message": "ferry to Naxos"}), done.set()))
            worker.start()
            assert not done.wait(0.5)
        assert done.wait(60)
        worker.join()
        answers: list = []
        with reg.context.reading():
            worker = threading.Thread(target=lambda: answers.append(
                reg.call("chat_add_message", {"chat_id": "c1", "role": "user", "content": "lighthouse"})))
            worker.start()
            worker.join(0.5)
            assert not answers
        worker.join(60)
        assert answers and answers[0]["success"], answers
        hist = reg.call("chat_history", {"chat_id": "c1", "message": "lighthouse", "max_tokens": 200})
        assert answers[0]["message"]["id"] in hist["message_ids"]
    finally:
        reg.close()
