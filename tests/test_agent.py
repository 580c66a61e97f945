"""The agent against a scripted OpenAI-compatible server on 127.0.0.1 (``openai_stub``):
multi-round tool calling with tool errors and malformed arguments, compaction, persisted
sessions across a restart, the CLI agent giving the library's results, the round limit,
model failures, and the chat topic filter before each model call."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from smartcontext.agent import AgentSessions
from smartcontext.agent.loop import select_history
from smartcontext.agent.models import local_messages, local_reply, local_schema, model_settings
from smartcontext.errors import InvalidArgument, LLMError, SessionBusy, SessionNotFound

# Every test once on SQLite and once on PostgreSQL (conftest.store_env).
pytestmark = pytest.mark.usefixtures("store_env")


MODEL = "openai/scripted"
FERRY = "# Ferries\n\nBlue Star ferries sail from Piraeus to Naxos every day; the crossing takes five hours.\n\n" + \
        "Timetables change in winter. " * 80
VAULT = {
    "ferry.md": FERRY,
    "travel/naxos.md": "# Naxos\n\nThe island of [[ferry]] trips. Portara at sunset.\n",
    "bread.md": "# Sourdough\n\nFeed the starter flour and water daily.\n",
}
QUESTION = "Which ferry goes to Naxos?"
# Round 1: a good call and a tool error; round 2: arguments that are not JSON and an
# unknown tool; round 3: a schema violation and a good call; round 4: the answer. Then a
# second message, answered at once.
SCRIPT = [
    {"tool_calls": [{"id": "c1", "name": "read_file", "arguments": {"path": "ferry.md"}},
                    {"id": "c2", "name": "read_file", "arguments": {"path": "missing.md"}}]},
    {"tool_calls": [{"id": "c3", "name": "find_backlinks", "arguments": '{"note_name": "ferry"'},
                    {"id": "c4", "name": "delete_everything", "arguments": {}}]},
    {"tool_calls": [{"id": "c5", "name": "read_file", "arguments": {"paht": "ferry.md"}},
                    {"id": "c6", "name": "find_backlinks", "arguments": {"note_name": "ferry"}}]},
    {"content": "Blue Star ferries sail from Piraeus to Naxos daily (ferry.md)."},
    {"content": "Five hours."},
]


def make_vault(root: Path) -> Path:
    for rel, text in VAULT.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


@pytest.fixture
def vault(tmp_path):
    return make_vault(tmp_path / "vault")


def run_library(root: Path, url: str, messages=(QUESTION, "How long is the crossing?")):
    events: list[dict] = []
    with AgentSessions(root, model=MODEL, api_base=url) as sessions:
        sid = sessions.create("Ferries")["id"]
        results = [sessions.send(sid, m, on_event=events.append) for m in messages]
        stored = sessions.get(sid)
    return sid, results, events, stored


def comparable(result: dict) -> dict:
    """A result without what differs between runs: ids (also those of the messages sent)."""
    out = {k: v for k, v in result.items() if k not in ("session_id", "message_id")}
    if out.get("sent"):
        out["sent"] = {**out["sent"], "messages": [{k: v for k, v in m.items() if k != "id"}
                                                   for m in out["sent"]["messages"]]}
    return out


def test_multi_round_conversation_with_tool_errors_and_compaction(vault, openai_stub):
    server = openai_stub(SCRIPT)
    sid, (first, second), events, stored = run_library(vault, server.url)

    assert first["answer"] == "Blue Star ferries sail from Piraeus to Naxos daily (ferry.md)."
    assert first["rounds"] == 4 and first["stopped"] == "answer"
    calls = {c["id"]: c for c in first["tool_calls"]}
    assert [c["id"] for c in first["tool_calls"]] == ["c1", "c2", "c3", "c4", "c5", "c6"]
    assert calls["c1"]["success"] and calls["c6"]["success"]
    assert calls["c2"]["error"] == "File not found: missing.md"
    assert calls["c3"]["error"].startswith("Invalid arguments for find_backlinks: not valid JSON")
    assert "one JSON object" in calls["c3"]["error"]
    assert calls["c4"]["error"].startswith("Unknown tool: 'delete_everything'. Available tools: context, search")
    assert "unknown argument(s) paht" in calls["c5"]["error"] and "expected: path" in calls["c5"]["error"]
    assert second == {**second, "answer": "Five hours.", "rounds": 1, "tool_calls": [], "tokens_saved": 0}

    # The model read each result whole exactly once, then as a stub.
    bodies = server.requests
    assert len(bodies) == 5 and server.remaining == 0
    tool_msgs = [[m for m in b["messages"] if m["role"] == "tool"] for b in bodies]
    assert tool_msgs[0] == []
    assert "Blue Star ferries sail" in tool_msgs[1][0]["content"]  # round 2 sees c1 whole
    c1_stub = json.loads(tool_msgs[2][0]["content"])  # round 3: c1 compacted
    assert c1_stub == {"status": "success", "path": "ferry.md", "has_content": True, "content_length": len(FERRY)}
    assert json.loads(tool_msgs[2][2]["content"])["success"] is False  # c3 unread yet: whole
    assert all("status" in json.loads(m["content"]) for m in tool_msgs[4])  # second message: all stubs
    assert all(set(m) <= {"role", "content", "tool_calls", "tool_call_id"} for b in bodies for m in b["messages"])
    assert bodies[0]["messages"][0]["role"] == "system" and "tools" in bodies[0]
    assert {t["function"]["name"] for t in bodies[0]["tools"]} >= {"read_file", "search_vault", "context"}

    compactions = [e for e in events if e["type"] == "compaction"]
    assert [e["round"] for e in compactions] == [2, 3, 4]
    assert sum(e["tokens_saved"] for e in compactions) == first["tokens_saved"] > 500
    kinds = [e["type"] for e in events]
    assert kinds.count("done") == 2 and kinds.count("tool_call") == 6 and kinds.count("tool_result") == 6
    assert all(e["session_id"] == sid for e in events)
    assert kinds.index("tool_call") < kinds.index("tool_result") < kinds.index("compaction") < kinds.index("done")

    assert stored["title"] == "Ferries" and stored["turns"] == 2 and stored["rounds"] == 5
    assert stored["tokens_saved"] == first["tokens_saved"]
    tools_stored = [m for m in stored["messages"] if m["role"] == "tool"]
    assert len(tools_stored) == 6 and all(m["_compacted"] for m in tools_stored)


def test_a_restart_keeps_the_session(vault, openai_stub):
    server = openai_stub(SCRIPT[:1] + [{"content": "It is in ferry.md."}, {"content": "Still ferry.md."}])
    with AgentSessions(vault, model=MODEL, api_base=server.url) as sessions:
        sid = sessions.create()["id"]
        sessions.send(sid, QUESTION)
        before = sessions.get(sid)
    with AgentSessions(vault, model=MODEL, api_base=server.url) as again:  # a new process's view
        assert [s["id"] for s in again.list()] == [sid]
        assert again.get(sid) == before
        assert before["title"] == QUESTION
        answer = again.send(sid, "Are you sure?")
    assert answer["answer"] == "Still ferry.md."
    sent = server.requests[-1]["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "tool", "assistant", "user"]
    assert sent[1]["content"] == QUESTION and sent[-1]["content"] == "Are you sure?"
    # The session is a chat file in .memory/, written atomically (no temp file left).
    assert sorted(p.name for p in (vault / ".memory").iterdir()) == [f"{sid}.json", f"{sid}.json.lock"]


def _cli(*args: str, input: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "smartcontext", "agent", *args], capture_output=True, text=True,
                          input=input, timeout=300, env={**os.environ, "COLUMNS": "200"})


def test_the_cli_agent_gives_the_library_results(tmp_path, openai_stub):
    lib_root = make_vault(tmp_path / "lib" / "vault")
    cli_root = make_vault(tmp_path / "cli" / "vault")
    lib_server, cli_server = openai_stub(SCRIPT), openai_stub(SCRIPT)
    _, lib_results, _, lib_stored = run_library(lib_root, lib_server.url)

    first = _cli(str(cli_root), "-m", QUESTION, "--model", MODEL, "--api-base", cli_server.url, "--json")
    assert first.returncode == 0, first.stderr
    one = json.loads(first.stdout)
    second = _cli("How long is the crossing?", str(cli_root), "--session", one["session_id"],
                  "--model", MODEL, "--api-base", cli_server.url, "--json")
    assert second.returncode == 0, second.stderr
    two = json.loads(second.stdout)

    assert [comparable(one), comparable(two)] == [comparable(r) for r in lib_results]
    assert cli_server.requests == lib_server.requests  # the model saw the same conversation
    with AgentSessions(cli_root) as sessions:
        cli_stored = sessions.get(one["session_id"])

    def shape(stored):
        return [comparable({k: v for k, v in m.items() if k not in ("id", "timestamp")}) for m in stored["messages"]]

    assert shape(cli_stored) == shape(lib_stored)
    assert cli_stored["tokens_saved"] == lib_stored["tokens_saved"] > 500


def test_the_cli_prints_tool_calls_and_tokens_saved(vault, openai_stub):
    server = openai_stub(SCRIPT)
    done = _cli(str(vault), "--model", MODEL, "--api-base", server.url,
                input=f"{QUESTION}\n\nHow long is the crossing?\nexit\nnever sent\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["Blue Star ferries sail from Piraeus to Naxos daily (ferry.md).", "Five hours."]
    err = done.stderr
    assert 'tool read_file {"path": "ferry.md"} ok' in err
    assert "tool read_file {\"path\": \"missing.md\"} error: File not found: missing.md" in err
    assert "tool delete_everything {} error: Unknown tool: 'delete_everything'" in err
    assert "tokens saved by compaction" in err and "continue with --session agent-" in err
    assert server.remaining == 0  # "never sent" was after exit
    listed = json.loads(_cli(str(vault), "--list", "--json").stdout)
    assert listed["count"] == 1 and listed["sessions"][0]["title"] == QUESTION
    text = _cli(str(vault), "--list").stdout
    assert text.startswith(listed["sessions"][0]["id"]) and text.rstrip().endswith(QUESTION)


def test_cli_errors_are_one_line(vault, openai_stub):
    no_model = _cli(str(vault), "-m", "hello")
    assert no_model.returncode == 1
    assert "the agent needs a language model: pass --model" in no_model.stderr and "Traceback" not in no_model.stderr
    assert not (vault / ".memory").exists()  # no empty session left behind
    unknown = _cli(str(vault), "-m", "hello", "--session", "agent-nope", "--model", MODEL)
    assert unknown.returncode == 1 and "no agent session 'agent-nope'" in unknown.stderr


def test_round_limit_ends_with_a_call_without_tools(vault, openai_stub):
    loop_call = {"tool_calls": [{"name": "search_by_folder", "arguments": {"folder": ""}}]}
    server = openai_stub([loop_call, loop_call, {"tool_calls": [{"name": "read_file", "arguments": {}}],
                                                 "content": "Partial: ferry.md looks relevant."}])
    events: list[dict] = []
    with AgentSessions(vault, model=MODEL, api_base=server.url, max_rounds=3) as sessions:
        sid = sessions.create()["id"]
        result = sessions.send(sid, QUESTION, on_event=events.append)
    assert result["rounds"] == 3 and result["stopped"] == "round_limit"
    assert result["answer"] == "Partial: ferry.md looks relevant."
    assert [len(b.get("tools") or []) > 0 for b in server.requests] == [True, True, False]
    assert any(e["type"] == "error" and "round limit reached: 3 model calls" in e["error"] for e in events)
    # The two calls that repeated the server's ids got ids of their own.
    ids = [c["id"] for c in result["tool_calls"]]
    assert len(ids) == 2 and len(set(ids)) == 2


def test_a_failing_model_keeps_the_finished_rounds(vault, openai_stub):
    server = openai_stub([SCRIPT[0], {"status": 500, "error": "overloaded"}])
    events: list[dict] = []
    with AgentSessions(vault, model=MODEL, api_base=server.url) as sessions:
        sid = sessions.create()["id"]
        with pytest.raises(LLMError, match="the model openai/scripted failed"):
            sessions.send(sid, QUESTION, on_event=events.append)
        stored = sessions.get(sid)
    assert [m["role"] for m in stored["messages"]] == ["user", "assistant", "tool", "tool"]
    # (the client retried the 500 and then found the script exhausted)
    assert events[-1]["type"] == "error" and "InternalServerError" in events[-1]["error"]


def test_bad_input_changes_nothing(vault, openai_stub):
    server = openai_stub([])
    with AgentSessions(vault, model=MODEL, api_base=server.url) as sessions:
        sid = sessions.create()["id"]
        before = (vault / ".memory" / f"{sid}.json").read_bytes()
        with pytest.raises(InvalidArgument, match="the message is empty"):
            sessions.send(sid, "   ")
        for bad in ("agent-nope", "../../etc/passwd", "agent-../x", 42):
            with pytest.raises(SessionNotFound):
                sessions.get(bad)
        (vault / ".memory" / "trip.json").write_text('{"messages": []}')  # a chat, not a session
        with pytest.raises(SessionNotFound):
            sessions.send("trip", "hi")
        assert (vault / ".memory" / f"{sid}.json").read_bytes() == before
        assert server.requests == []
        sessions.delete(sid)
        assert sessions.list() == []
        with pytest.raises(SessionNotFound):
            sessions.delete(sid)
    assert not (vault / ".memory" / f"{sid}.json").exists()


def test_one_message_at_a_time_per_session(vault, openai_stub):
    release = threading.Event()
    server = openai_stub([{"content": "slow answer", "wait": release}])
    with AgentSessions(vault, model=MODEL, api_base=server.url) as sessions:
        sid = sessions.create()["id"]
        results: list[dict] = []
        worker = threading.Thread(target=lambda: results.append(sessions.send(sid, "first")))
        worker.start()
        try:
            for _ in range(600):
                if server.requests:
                    break
                threading.Event().wait(0.05)
            assert server.requests, "the first message never reached the model"
            with AgentSessions(vault, model=MODEL, api_base=server.url) as other:
                with pytest.raises(SessionBusy, match="is answering another message"):
                    other.send(sid, "second")
                with pytest.raises(SessionBusy):
                    other.delete(sid)
        finally:
            release.set()
            worker.join(60)
    assert results[0]["answer"] == "slow answer"


def test_the_topic_filter_runs_before_each_model_call(vault, openai_stub):
    server = openai_stub([{"content": "Feed it flour and water every day."},
                          {"content": "Blue Star ferries sail daily from Piraeus to Naxos."},
                          {"content": "Use rye flour for a livelier sourdough starter."}])
    events: list[dict] = []
    with AgentSessions(vault, model=MODEL, api_base=server.url) as sessions:
        sid = sessions.create()["id"]
        sessions.send(sid, "How do I feed a sourdough starter?")
        sessions.send(sid, "Which ferry goes from Piraeus to Naxos?")
        sc = sessions.workspace.chats()
        # A filter selects the session's own topics (an unknown label is refused).
        labels = [t["label"] for t in sc.chat(sid).extract_topics("local").topics if not t.get("sticky")]
        sc.set_filter([next(label for label in labels if "Sourdough" in label or "Starter" in label)], chat_id=sid)
        sessions.send(sid, "Which flour makes the starter livelier?", on_event=events.append)
    sent = [m["content"] for m in server.requests[-1]["messages"][1:]]
    assert "How do I feed a sourdough starter?" in sent
    assert "Which ferry goes from Piraeus to Naxos?" not in sent
    assert sent[-1] == "Which flour makes the starter livelier?"
    history = [e for e in events if e["type"] == "history"][0]
    assert history["mode"] == "topics" and history["sent"] < history["total"]


def test_select_history_keeps_tool_calls_with_their_results():
    msgs = [
        {"id": "u1", "role": "user", "content": "q"},
        {"id": "a1", "role": "assistant", "content": "", "tool_calls": [{"id": "t1"}, {"id": "t2"}]},
        {"id": "r1", "role": "tool", "tool_call_id": "t1", "content": "x"},
        {"id": "r2", "role": "tool", "tool_call_id": "t2", "content": "y"},
        {"id": "a2", "role": "assistant", "content": "answer"},
        {"id": "orphan", "role": "tool", "tool_call_id": "zz", "content": "z"},
        {"id": "u2", "role": "user", "content": "now"},
    ]
    ids = lambda kept: [m["id"] for m in select_history(msgs, 6, kept)]  # noqa: E731
    assert ids(None) == ["u1", "a1", "r1", "r2", "a2", "u2"]
    assert ids({"r2"}) == ["a1", "r1", "r2", "u2"]  # a result brings its call and siblings
    assert ids({"a1", "u1"}) == ["u1", "a1", "r1", "r2", "u2"]
    assert ids(set()) == ["u2"]  # this turn is always sent


def test_model_settings_resolution(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("SC_AGENT_KEY", "sk-test")
    config = {"fast": "openai/small", "agent": "openai/big", "api_base": "http://h/v1", "api_key_env": "SC_AGENT_KEY"}
    assert model_settings(config) == {"model": "openai/big", "api_base": "http://h/v1", "api_key": "sk-test"}
    assert model_settings({"fast": "openai/small"})["model"] == "openai/small"
    assert model_settings({}, "openai/x", "http://me/v1") == {"model": "openai/x", "api_base": "http://me/v1",
                                                              "api_key": "no-key"}
    with pytest.raises(LLMError, match="pass --model"):
        model_settings({})


def test_local_model_prompt_and_reply_shapes():
    tools = [{"type": "function", "function": {"name": "read_file", "description": "Read a note.",
                                               "parameters": {"properties": {"path": {"type": "string"}}}}}]
    msgs = [{"role": "system", "content": "S"}, {"role": "user", "content": "q"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "t1", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "a.md"}'}}]},
            {"role": "tool", "tool_call_id": "t1", "content": '{"status": "success"}'}]
    out = local_messages(msgs, tools)
    assert [m["role"] for m in out] == ["system", "user", "assistant", "user"]
    assert "- read_file: Read a note." in out[0]["content"] and '"tool": "none"' in out[0]["content"]
    assert out[3]["content"] == 'Result of read_file: {"status": "success"}'
    assert local_schema(["read_file"])["anyOf"][0]["properties"]["tool"] == {"enum": ["read_file"]}
    call = local_reply('{"tool": "read_file", "arguments": {"path": "a.md"}}')
    assert call.content == "" and call.tool_calls[0].name == "read_file"
    assert json.loads(call.tool_calls[0].arguments) == {"path": "a.md"}
    assert local_reply('```json\n{"tool": "none", "answer": "Done."}\n```').content == "Done."


@pytest.mark.skipif(os.environ.get("SMARTCONTEXT_TEST_LOCAL_LLM") != "1",
                    reason="runs the 491 MB local model; set SMARTCONTEXT_TEST_LOCAL_LLM=1")
def test_local_gguf_model_answers(vault):
    with AgentSessions(vault, model="local:qwen2.5-coder-0.5b", max_rounds=3) as sessions:
        sid = sessions.create()["id"]
        result = sessions.send(sid, "Read ferry.md and tell me which ferry goes to Naxos.")
        offered = {s.name for s in sessions.registry.specs() if s.provider in ("workspace", "vault")}
        stored = sessions.get(sid)
    print(json.dumps(result, indent=1))
    assert 1 <= result["rounds"] <= 3
    # The JSON schema holds the model to the offered tools' names.
    assert all(c["name"] in offered for c in result["tool_calls"])
    assert stored["messages"][-1] == {**stored["messages"][-1], "role": "assistant", "content": result["answer"]}


def test_streaming_gives_the_same_results_and_text_deltas(tmp_path, openai_stub):
    plain_server, streamed_server = openai_stub(SCRIPT), openai_stub(SCRIPT)
    _, plain, _, _ = run_library(make_vault(tmp_path / "a" / "vault"), plain_server.url)
    events: list[dict] = []
    with AgentSessions(make_vault(tmp_path / "b" / "vault"), model=MODEL, api_base=streamed_server.url,
                       stream=True) as sessions:
        sid = sessions.create("Ferries")["id"]
        streamed = [sessions.send(sid, m, on_event=events.append) for m in (QUESTION, "How long is the crossing?")]
    assert [comparable(r) for r in streamed] == [comparable(r) for r in plain]
    assert all(b["stream"] is True for b in streamed_server.requests)
    deltas = [e for e in events if e["type"] == "delta"]
    assert len(deltas) > 2 and "".join(e["text"] for e in deltas if e["round"] == 4) == plain[0]["answer"]
    kinds = [e["type"] for e in events]
    assert kinds.index("delta") < kinds.index("assistant")
