"""The chat view's model loop over the web server's HTTP API, against the scripted
OpenAI-compatible server (``openai_stub``): any chat is answered (``/api/chats/{id}/reply``),
the model is sent exactly the filtered history, the sticky instructions and the folder's
context, each answer keeps what it was sent, an answer can be stopped, and with no model
the page is told how to configure one."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

from conftest import write_tree
from starlette.testclient import TestClient

from smartcontext.agent import AgentSessions
from smartcontext.agent.loop import SYSTEM_PROMPT
from smartcontext.server.http import build_app
from smartcontext.tools import ToolRegistry
from test_web_api import BASE, NOTES

MODEL = "openai/scripted"
MESSAGES = [
    ("m0", "user", "be concise"),
    ("m1", "user", "Which ferry goes from Piraeus to Naxos?"),
    ("m2", "assistant", "Blue Star ferries sail from Piraeus to Naxos every morning."),
    ("m3", "user", "How do I feed my sourdough starter?"),
    ("m4", "assistant", "Feed the sourdough starter equal weights of flour and water once a day."),
    ("m5", "user", "Is there a faster ferry to Naxos in summer?"),
    ("m6", "assistant", "SeaJets high-speed ferries reach Naxos in about three hours."),
]
TOPICS = [{"label": "Naxos Ferry", "count": 4, "message_ids": ["m1", "m2", "m5", "m6"]},
          {"label": "Sourdough Starter", "count": 2, "message_ids": ["m3", "m4"]},
          {"label": "Instructions & Preferences", "sticky": True, "message_ids": ["m0"], "count": 1}]
QUESTION = "How do I water the tomatoes on Naxos?"


def make_folder(root: Path, api_base: str | None) -> Path:
    """Notes, a chat with topics that keep their members, embeddings off (no model load)."""
    write_tree(root, NOTES)
    memory = root / ".memory"
    memory.mkdir()
    (memory / "trip.json").write_text(json.dumps({
        "messages": [{"id": i, "role": r, "content": c} for i, r, c in MESSAGES], "topics": TOPICS}))
    llm = f'[llm]\nagent = "{MODEL}"\napi_base = "{api_base}"\n' if api_base else ""
    (root / "smartcontext.toml").write_text('[embeddings]\nmodel = "none"\n' + llm)
    return root


def read_stream(client: TestClient, path: str, body: dict) -> list[dict]:
    with client.stream("POST", path, json=body) as reply:
        assert reply.status_code == 200, reply.read()
        return [json.loads(line) for line in reply.iter_lines() if line]


def test_a_chat_is_sent_its_filtered_history_its_instructions_and_the_context(tmp_path, openai_stub):
    model = openai_stub([{"content": "Water them at dawn (notes/Watering.md)."}])
    registry = ToolRegistry.open(make_folder(tmp_path / "ws", model.url))
    try:
        with TestClient(build_app(registry), base_url=BASE) as client:
            assert client.get("/api/model").json() == {"success": True, "configured": True, "model": MODEL,
                                                       "budgets": {"history_tokens": 4000, "context_tokens": 1500}}
            chosen = client.post("/api/execute_command", json={
                "command": "smart_context.set_filter", "args": {"topics": ["Naxos Ferry"], "chat_id": "trip"}}).json()
            assert chosen["success"], chosen
            kept = client.post("/api/chats/trip/history", json={"mode": "topics", "include_messages": False}).json()
            assert kept["message_ids"] == ["m0", "m1", "m2", "m5", "m6"]

            lines = read_stream(client, "/api/chats/trip/reply", {"text": QUESTION})
            result = lines[-1]
            assert result["type"] == "result" and result["success"], result
            assert result["answer"] == "Water them at dawn (notes/Watering.md)."
            assert any(e["type"] == "delta" for e in lines)

            sent = model.requests[0]["messages"]
            assert sent[0] == {"role": "system", "content": SYSTEM_PROMPT.format(name="ws")}
            assert sent[1]["role"] == "system" and sent[1]["content"].startswith("Context from the folder")
            assert "Drip irrigation" in sent[1]["content"]
            by_id = {i: (r, c) for i, r, c in MESSAGES}
            assert sent[2:] == [{"role": by_id[i][0], "content": by_id[i][1]} for i in kept["message_ids"]] + [
                {"role": "user", "content": QUESTION}]

            record = result["sent"]
            assert record["mode"] == "topics" and [m["id"] for m in record["messages"]] == kept["message_ids"]
            assert all(m["tokens"] > 0 for m in record["messages"]) and record["total_messages"] == len(MESSAGES)
            assert record["context"]["files"][0] == "notes/Watering.md"
            assert all(s["tokens"] > 0 and s["path"] for s in record["context"]["sections"])
            assert record["context_tokens"] > 0 and record["tools_tokens"] > 0 and record["system_tokens"] > 0

            stored = client.get("/api/chats/trip").json()["messages"]
            assert [m["role"] for m in stored[len(MESSAGES):]] == ["user", "assistant"]
            assert stored[-1]["sent"] == record  # the page shows it again after a reload
    finally:
        registry.close()


def test_without_topics_the_automatic_filter_keeps_the_instructions(tmp_path, openai_stub):
    model = openai_stub([{"content": "Blue Star."}])
    folder = make_folder(tmp_path / "ws", model.url)
    with AgentSessions(folder, history_tokens=40) as sessions:
        result = sessions.reply("trip", "Which ferry is fastest to Naxos?")
    record = result["sent"]
    ids = [m["id"] for m in record["messages"]]
    assert record["mode"] == "auto" and "m0" in ids and len(ids) < len(MESSAGES)
    assert sum(m["tokens"] for m in record["messages"]) == record["history_tokens"]
    assert [m["content"] for m in model.requests[0]["messages"][1:-1]] == [
        c for i, _, c in MESSAGES if i in ids]


def test_the_served_chat_uses_the_budgets_of_the_configuration(tmp_path, openai_stub):
    model = openai_stub([{"content": "Blue Star."}])
    folder = make_folder(tmp_path / "ws", model.url)
    config = folder / "smartcontext.toml"
    config.write_text(config.read_text() + "\n[chat]\nhistory_tokens = 40\ncontext_tokens = 0\n")
    registry = ToolRegistry.open(folder)
    try:
        with TestClient(build_app(registry), base_url=BASE) as client:
            info = client.get("/api/model").json()
            assert info["budgets"] == {"history_tokens": 40, "context_tokens": 0}
            result = read_stream(client, "/api/chats/trip/reply", {"text": "Which ferry is fastest to Naxos?"})[-1]
    finally:
        registry.close()
    record = result["sent"]
    assert record["mode"] == "auto" and len(record["messages"]) < len(MESSAGES) and record["history_tokens"] <= 40
    assert "context" not in record or not record["context"]
    sent = model.requests[0]["messages"]
    assert sent[0]["content"] == SYSTEM_PROMPT.format(name="ws")
    assert not any(m["content"].startswith("Context from the folder") for m in sent)


def test_stop_keeps_what_was_written(tmp_path, openai_stub):
    hold = threading.Event()
    model = openai_stub([{"content": "First part of the answer, then much more.", "hold": hold}])
    registry = ToolRegistry.open(make_folder(tmp_path / "ws", model.url))
    try:
        with TestClient(build_app(registry), base_url=BASE) as client:
            assert client.post("/api/chats/trip/stop", json={}).json() == {
                "success": True, "chat_id": "trip", "stopped": False}
            lines: list[dict] = []
            reader = threading.Thread(target=lambda: lines.extend(
                read_stream(client, "/api/chats/trip/reply", {"text": "Tell me everything"})))
            reader.start()
            deadline = time.monotonic() + 60
            while not model.requests and time.monotonic() < deadline:
                time.sleep(0.05)
            time.sleep(0.3)  # the first piece is out
            assert client.post("/api/chats/trip/stop", json={}).json()["stopped"] is True
            hold.set()
            reader.join(60)
            result = lines[-1]
            assert result["success"] and result["stopped"] == "user"
            assert "First part of the answer, then much more.".startswith(result["answer"])
            assert result["answer"] != "First part of the answer, then much more."
            last = client.get("/api/chats/trip").json()["messages"][-1]
            assert last["role"] == "assistant" and last["stopped"] is True and last["content"] == result["answer"]
    finally:
        registry.close()


def test_no_model_says_how_to_configure_one(tmp_path):
    registry = ToolRegistry.open(make_folder(tmp_path / "ws", None))
    try:
        with TestClient(build_app(registry), base_url=BASE) as client:
            info = client.get("/api/model").json()
            assert info["configured"] is False and "[llm]" in info["how"] and 'agent = "' in info["how"]
            refused = client.post("/api/chats/trip/reply", json={"text": "hello"})
            assert refused.status_code == 400 and "needs a language model" in refused.json()["error"]
            assert client.post("/api/chats/bad id/reply", json={"text": "hi"}).status_code in (400, 404)
            assert len(client.get("/api/chats/trip").json()["messages"]) == len(MESSAGES)
    finally:
        registry.close()
