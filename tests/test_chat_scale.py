"""Long chats: past ``APPEND_FROM`` messages a chat grows by JSON Lines segments beside
its JSON file, so adding a message writes (and re-indexes) one small segment whatever
the chat's length; reading puts the pieces back in order; a rewrite folds them in; a
line torn by a crash is ignored. The automatic history ranks the chat's messages through the
workspace index's keyword search, scoped to the chat.
Small chats built in temp folders, with the thresholds lowered; each test on SQLite and on
PostgreSQL (``conftest.store_env``)."""

from __future__ import annotations

import json

import pytest

from smartcontext.chat import files
from smartcontext.chat.files import ChatFile, Message
from smartcontext.tools import ToolRegistry
from smartcontext.workspace import Workspace

pytestmark = pytest.mark.usefixtures("store_env")


@pytest.fixture
def long_chat(tmp_path, monkeypatch):
    monkeypatch.setattr(files, "APPEND_FROM", 6)
    monkeypatch.setattr(files, "SEGMENT_LINES", 3)
    monkeypatch.setenv("SMARTCONTEXT_EMBEDDING_MODEL", "none")
    memory = tmp_path / ".memory"
    memory.mkdir()
    msgs = [{"id": f"m{n}", "role": "user", "content": f"old message {n} about gardening"} for n in range(6)]
    (memory / "long.json").write_text(json.dumps({"messages": msgs, "topics": []}))
    return tmp_path


def test_appends_go_to_segments_and_read_back_in_order(long_chat):
    base = long_chat / ".memory" / "long.json"
    before = base.read_bytes()
    chat = Workspace.open(long_chat).chat("long")
    for n in range(7):
        chat.add_message("user", f"new message {n}", id=f"n{n}")
    assert base.read_bytes() == before  # the JSON file is never rewritten by an add
    segments = sorted(p.name for p in (long_chat / ".memory").glob("*.jsonl"))
    assert segments == ["long.00001.jsonl", "long.00002.jsonl", "long.00003.jsonl"]
    assert [json.loads(line)["id"] for line in (long_chat / ".memory" / segments[0]).read_text().splitlines()] == \
        ["n0", "n1", "n2"]
    ids = [m.id for m in ChatFile(long_chat / ".memory", "long").load().messages]
    assert ids == [f"m{n}" for n in range(6)] + [f"n{n}" for n in range(7)]
    with pytest.raises(Exception, match="already has a message"):
        chat.add_message("user", "again", id="n3")
    # Another process reads the same chat.
    assert [m.id for m in Workspace.open(long_chat).chat("long").messages()] == ids


def test_topics_are_a_log_line_and_a_rewrite_folds_the_segments(long_chat):
    ws = Workspace.open(long_chat)
    chat = ws.chat("long")
    chat.add_message("user", "be concise", id="s1")
    chat.add_message("user", "tomatoes need staking in the garden", id="g1")
    topics = chat.extract_topics("local").topics
    assert ChatFile(long_chat / ".memory", "long").load().topics == topics
    seg = (long_chat / ".memory" / "long.00001.jsonl").read_text().splitlines()
    assert json.loads(seg[-1]) == {"topics": topics}
    # A rewrite (here an import's merge) puts everything back in the JSON file.
    src = long_chat / "more.json"
    src.write_text(json.dumps([{"role": "user", "content": "imported later"}]))
    ws.chats().import_file(src, chat_id="long")
    assert not list((long_chat / ".memory").glob("*.jsonl"))
    data = json.loads((long_chat / ".memory" / "long.json").read_text())
    assert [m["id"] for m in data["messages"]][6:8] == ["s1", "g1"] and data["topics"] == topics
    assert data["messages"][-1]["content"] == "imported later"


def test_a_line_torn_by_a_crash_is_ignored_and_the_next_add_starts_afresh(long_chat):
    chat = Workspace.open(long_chat).chat("long")
    chat.add_message("user", "first appended", id="a1")
    seg = long_chat / ".memory" / "long.00001.jsonl"
    with seg.open("a") as handle:
        handle.write('{"id": "torn", "role": "user", "cont')
    assert [m.id for m in chat.messages()][-1] == "a1"
    chat.add_message("user", "after the crash", id="a2")
    assert [m.id for m in chat.messages()][-2:] == ["a1", "a2"]


def test_segments_are_indexed_and_the_history_finds_their_messages(long_chat):
    registry = ToolRegistry.open(long_chat)
    try:
        registry.context.ready_workspace()
        for n, text in enumerate(["the ferry to Naxos leaves at seven", "sourdough needs flour",
                                  "bring the ferry tickets"]):
            assert registry.call("chat_add_message", {"chat_id": "long", "role": "user", "content": text,
                                                      "id": f"x{n}"})["success"]
        ws = registry.context.workspace
        cat = ws.catalogue()
        indexed = {cat.entries[r].qualname for r in cat.by_path.get(".memory/long.00001.jsonl", [])}
        assert indexed == {"x0", "x1", "x2"}
        hits = ws.search("Naxos ferry", mode="keyword")
        assert any(h.path == ".memory/long.00001.jsonl" for h in hits)
        hist = registry.call("chat_history", {"chat_id": "long", "message": "when does the ferry leave?",
                                              "max_tokens": 40})
        assert hist["success"] and "x0" in hist["message_ids"] and hist["total_messages"] == 9
    finally:
        registry.close()


def test_keyword_ranking_is_the_index_search_scoped_to_the_chat_and_follows_appends(long_chat):
    memory = long_chat / ".memory"
    (memory / "other.json").write_text(json.dumps({"messages": [
        {"id": "o1", "role": "user", "content": "the ferry to Naxos, ferry tickets, ferry times"}], "topics": []}))
    ws = Workspace.open(long_chat)
    try:
        ws.index(embeddings=False)
        chat = ws.chats().chat("long")
        for n, text in enumerate(["The ferry to Naxos", "Sourdough starter", "ferries and ferry tickets, ferry times"]):
            chat.add_message("Caroline" if n == 2 else "user", text, id=f"f{n}", extract=False)
        ranked = chat.keyword_ranking("ferry", 10)
        assert ranked[:2] == ["f2", "f0"] and "o1" not in ranked  # the other chat is out of scope
        # A speaker is searchable with the text; the one a history's message names is the
        # speaker signal's (auto_filter's boost), not a keyword as well.
        assert any(h.path == ".memory/long.00001.jsonl" for h in ws.search("Caroline", mode="keyword"))
        assert chat.keyword_ranking("what did Caroline say", 10) == []
        assert chat.keyword_ranking("Caroline's tickets", 10) == ["f2"]
        chat.add_message("user", "getNetrcAuth fails in get_netrc_auth", id="f3", extract=False)
        assert chat.keyword_ranking("netrc auth", 10) == ["f3"]  # appended, re-indexed, found
        assert chat.keyword_ranking("netrc auth", 10, sync=False) == ["f3"]
    finally:
        ws.close()


def test_token_counts_come_from_the_index_rows_and_are_exact(long_chat):
    from smartcontext.chat.auto import render_message
    from smartcontext.tokens import count_many

    ws = Workspace.open(long_chat)
    try:
        ws.index(embeddings=False)
        chat = ws.chats().chat("long")
        chat.add_message("user", "a longer message, with punctuation: it counts exactly!", id="t1",
                         timestamp="2026-01-02T03:04:05+0000", extract=False)
        chat.sync_index()  # the library's add does not index (the tools re-index what they write)
        messages = chat.messages()
        rows = chat.index_rows()
        assert rows is not None and set(rows.by_message) == {m.id for m in messages}
        exact = count_many([render_message(m) for m in messages])
        assert [rows.by_message[m.id][1] for m in messages] == exact
        fresh = ws.chats().chat("long")  # a new Chat: counts read from the rows, none computed
        assert fresh.token_counts(messages, "cl100k_base", fresh.index_rows()) == exact
        assert fresh._token_memo == {}
        assert fresh.token_counts(messages, "o200k_base", fresh.index_rows()) == count_many(
            [render_message(m) for m in messages], "o200k_base")  # another encoding: counted here
    finally:
        ws.close()

def test_a_keyword_only_history_does_not_import_numpy(long_chat):
    """numpy's import (0.1-0.3 s on this machine) was a fifth of a long chat's first
    history with embeddings off: that history is plain Python, numpy waits for vectors."""
    import os
    import subprocess
    import sys

    code = ("import sys; from smartcontext.tools import ToolRegistry\n"
            "reg = ToolRegistry.open(sys.argv[1]); reg.context.ready_workspace()\n"
            "before = 'numpy' in sys.modules\n"
            "got = reg.call('chat_history', {'chat_id': 'long', 'message': 'gardening tips?'})\n"
            "assert got['success'] and got['mode'] == 'auto', got\n"
            "print(before, 'numpy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code, str(long_chat)], capture_output=True, text=True, check=True,
                         env={**os.environ, "SMARTCONTEXT_EMBEDDING_MODEL": "none"}).stdout.split()
    if out[0] == "True":
        pytest.skip("something before the history imported numpy already")
    assert out == ["False", "False"]


def test_an_answer_in_a_long_chat_is_appended_and_compaction_rewrites(long_chat, openai_stub):
    """An agent's answer in a long chat adds lines (the question, the answer, the session's
    summary) and never rewrites the JSON file; a half-written line (a crash during that
    write) leaves the chat as it was; a compacted tool result (a message changed in
    place) makes the one rewrite, which folds the lines back in."""
    from smartcontext.agent import AgentSessions
    from smartcontext.sources.chat import parse_chat_file

    (long_chat / "tomatoes.md").write_text("# Tomatoes\n\nStake them early and water twice a week.\n")
    server = openai_stub([{"content": "Stake them early."},
                          {"tool_calls": [{"id": "c1", "name": "read_file", "arguments": {"path": "tomatoes.md"}}]},
                          {"content": "Water them twice a week."}])
    memory = long_chat / ".memory"
    base = memory / "long.json"
    before = base.read_bytes()
    with AgentSessions(long_chat, model="openai/scripted", api_base=server.url) as sessions:
        first = sessions.reply("long", "How do I grow tomatoes?")
        assert base.read_bytes() == before
        data = ChatFile(memory, "long").load()
        assert [m.id for m in data.messages][:6] == [f"m{n}" for n in range(6)]
        assert [(m.role, m.content) for m in data.messages[6:]] == [
            ("user", "How do I grow tomatoes?"), ("assistant", "Stake them early.")]
        assert data.messages[-1].id == first["message_id"] and data.messages[-1].extra["sent"]["total_messages"] == 6
        assert data.extra["agent"]["turns"] == 1 and data.extra["agent"]["model"] == "openai/scripted"
        segments = sorted(memory.glob("long.*.jsonl"))
        lines = [json.loads(line) for seg in segments for line in seg.read_text().splitlines()]
        assert [rec.get("id") for rec in lines if "set" not in rec] == [m.id for m in data.messages[6:]]
        assert lines[-1] == {"set": {"agent": data.extra["agent"]}}
        # The index takes the messages of the lines, not the summary.
        parsed = parse_chat_file(f".memory/{segments[-1].name}", segments[-1].read_text())
        assert not parsed.warnings and all(i.qualname != "set" for i in parsed.items)
        # A crash in the middle of an append: the torn line is not read.
        with segments[-1].open("a") as handle:
            handle.write('{"id": "torn", "role": "assistant", "content": "half an ans')
        assert [m.id for m in ChatFile(memory, "long").load().messages] == [m.id for m in data.messages]
        # A tool round: its result is compacted once the model has read it, a change to a
        # message already written, so the chat is rewritten, the lines folded in.
        # (The summary that follows is a line again.)
        sessions.reply("long", "How often should I water them?")
    saved = json.loads(base.read_text())
    assert [m["role"] for m in saved["messages"][6:]] == ["user", "assistant", "user", "assistant", "tool", "assistant"]
    assert saved["messages"][10]["_compacted"] and "torn" not in {m["id"] for m in saved["messages"]}
    lines = [json.loads(line) for seg in memory.glob("long.*.jsonl") for line in seg.read_text().splitlines()]
    assert [list(rec) for rec in lines] == [["set"]]
    assert ChatFile(memory, "long").load().extra["agent"]["turns"] == 2
