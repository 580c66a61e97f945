"""Embeddings off (``SMARTCONTEXT_EMBEDDING_MODEL=none`` or ``model = "none"``) is a
supported mode for chats: an assistant message is stored and reported as stored, topics
come from the messages' words, the automatic history is keyword-only and the topic filter
keeps the messages that use a label's words."""

from __future__ import annotations

import pytest

from smartcontext.errors import InvalidArgument
from smartcontext.tools import ToolRegistry
from smartcontext.workspace import Workspace

from test_chat import CHAT, make_chat


@pytest.fixture(params=["env", "toml"])
def folder(request, tmp_path, monkeypatch):
    make_chat(tmp_path, "trip")
    if request.param == "env":
        monkeypatch.setenv("SMARTCONTEXT_EMBEDDING_MODEL", "none")
    else:
        monkeypatch.delenv("SMARTCONTEXT_EMBEDDING_MODEL", raising=False)
        (tmp_path / "smartcontext.toml").write_text('[embeddings]\nmodel = "none"\n')
    return tmp_path


def test_tools_store_report_and_answer_without_embeddings(folder):
    registry = ToolRegistry.open(folder)
    try:
        got = registry.call("chat_add_message", {"chat_id": "trip", "role": "assistant",
                                                 "content": "The Naxos ferry leaves Piraeus at 7:25."})
        assert got["success"] is True, got
        assert "error" not in got["extraction"] and got["extraction"]["method"].startswith("local:")
        labels = [t["label"] for t in got["extraction"]["topics"] if not t.get("sticky")]
        assert 1 <= len(labels) <= 8
        contents = [m.content for m in registry.context.workspace.chats().chat("trip").messages()]
        assert contents.count("The Naxos ferry leaves Piraeus at 7:25.") == 1
        hist = registry.call("chat_history", {"chat_id": "trip", "message": "which ferry goes to Naxos?", "share": 0.3})
        assert hist["success"] is True, hist
        assert hist["mode"] == "auto" and hist["signals"] == ["keyword"]
        assert {"u4", "a4"} & set(hist["message_ids"]) and "u7" not in hist["message_ids"]
    finally:
        registry.close()


def test_topic_filter_by_words_and_threshold_mode_explains(folder):
    ws = Workspace.open(folder)
    sc = ws.chats()
    chat = sc.chat("trip")
    topics = chat.extract_topics("local").topics
    naxos = next(t["label"] for t in topics if "Naxos" in t["label"] or "Ferry" in t["label"])
    sc.set_filter([naxos], chat_id="trip")
    kept = chat.history()
    assert kept.mode == "topics" and {"u5", "a5"} <= set(kept.message_ids)
    assert {"u1", "u6"} <= set(kept.message_ids)  # sticky instructions always in
    assert "u7" not in kept.message_ids and len(kept.message_ids) < len(CHAT)
    with pytest.raises(InvalidArgument, match="embeddings are off"):
        chat.history("ferry", mode="threshold")


def test_cli_adds_an_answer_once_and_answers_a_keyword_history(folder):
    """The same through the CLI, as a subprocess: the assistant's message is stored and
    reported as stored (exit 0, once), and the history for a pending message is keyword-only."""
    import json
    import os
    import subprocess
    import sys

    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "smartcontext", "chat", *args], cwd=folder, env=dict(os.environ),
                              capture_output=True, text=True, timeout=120)

    added = cli("add", "trip", "assistant", "- The Naxos ferry leaves Piraeus at 7:25.", str(folder), "--json")
    assert added.returncode == 0, added.stderr
    reply = json.loads(added.stdout)
    assert reply["message"]["content"] == "- The Naxos ferry leaves Piraeus at 7:25." and "error" not in reply["extraction"]
    contents = [m.content for m in Workspace.open(folder).chats().chat("trip").messages()]
    assert contents.count("- The Naxos ferry leaves Piraeus at 7:25.") == 1
    hist = cli("context", "trip", str(folder), "--message", "which ferry goes to Naxos?", "--share", "0.3", "--json")
    assert hist.returncode == 0, hist.stderr
    got = json.loads(hist.stdout)
    assert got["mode"] == "auto" and got["signals"] == ["keyword"], got
    assert {"u4", "a4"} & set(got["message_ids"]) and "u7" not in got["message_ids"]
