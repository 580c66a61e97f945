"""The agent's chat sessions over the web server's HTTP API, against the scripted
OpenAI-compatible server (``openai_stub``): create, list, read, send with the answer
streamed as NDJSON (and as WebSocket events), delete; the same answer as the library's."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import write_tree
from starlette.testclient import TestClient

from smartcontext.agent import AgentSessions
from smartcontext.config import ChatConfig
from smartcontext.server.http import build_app
from smartcontext.tools import ToolRegistry
import test_agent
from test_web_api import BASE, NOTES, WS_URL, Inbox

MODEL = "openai/scripted"
QUESTION = "How do I water the tomatoes?"
SCRIPT = [
    {"tool_calls": [{"id": "c1", "name": "read_file", "arguments": {"path": "notes/Watering.md"}},
                    {"id": "c2", "name": "read_file", "arguments": {"path": "notes/Missing.md"}}]},
    {"content": "Use drip irrigation (notes/Watering.md)."},
]


def make_vault(root: Path, api_base: str) -> Path:
    write_tree(root, NOTES)
    (root / "smartcontext.toml").write_text(f'[llm]\nagent = "{MODEL}"\napi_base = "{api_base}"\n')
    return root


def comparable(result: dict) -> dict:
    return test_agent.comparable({k: v for k, v in result.items() if k not in ("type", "success")})


def test_sessions_stream_answers_like_the_library(tmp_path, openai_stub):
    web_model = openai_stub(SCRIPT)
    registry = ToolRegistry.open(make_vault(tmp_path / "web", web_model.url))
    try:
        with TestClient(build_app(registry), base_url=BASE) as client:
            assert client.get("/api/agent/sessions").json() == {"success": True, "sessions": [], "count": 0}
            created = client.post("/api/agent/sessions", json={"title": "Garden"}).json()
            sid = created["id"]
            assert created["success"] and sid.startswith("agent-") and created["messages"] == []

            with client.websocket_connect(WS_URL) as ws:
                inbox = Inbox(ws)
                inbox.take("smartcontext.connected")
                with client.stream("POST", f"/api/agent/sessions/{sid}/messages", json={"text": QUESTION}) as reply:
                    assert reply.status_code == 200
                    assert reply.headers["content-type"].startswith("application/x-ndjson")
                    lines = [json.loads(line) for line in reply.iter_lines() if line]
                pushed = inbox.take("smartcontext.agent_event")
            types = [e["type"] for e in lines]
            assert types[-1] == "result" and types[-2] == "done"
            assert {"tool_call", "tool_result", "assistant"} <= set(types)
            assert pushed["data"]["session_id"] == sid and pushed["data"]["type"] == lines[0]["type"]
            results = {e["id"]: e for e in lines if e["type"] == "tool_result"}
            assert results["c1"]["success"] and results["c2"]["success"] is False
            final = lines[-1]
            assert final["success"] and final["answer"] == "Use drip irrigation (notes/Watering.md)."
            assert final["rounds"] == 2 and final["session_id"] == sid

            stored = client.get(f"/api/agent/sessions/{sid}").json()
            assert stored["title"] == "Garden" and stored["turns"] == 1
            assert [m["role"] for m in stored["messages"]] == ["user", "assistant", "tool", "tool", "assistant"]
            listed = client.get("/api/agent/sessions").json()
            assert [s["id"] for s in listed["sessions"]] == [sid]

            assert client.post(f"/api/agent/sessions/{sid}/messages", json={"text": " "}).status_code == 400
            missing = client.post("/api/agent/sessions/agent-nothere/messages", json={"text": "hi"})
            assert missing.status_code == 404 and missing.json()["success"] is False
            assert client.get("/api/agent/sessions/notasession").status_code == 404
            # The script is used up: the model fails, as one JSON answer without streaming.
            failed = client.post(f"/api/agent/sessions/{sid}/messages", json={"text": "And then?", "stream": False})
            assert failed.status_code == 502 and "script exhausted" in failed.json()["error"]

            assert client.delete(f"/api/agent/sessions/{sid}").json() == {"success": True, "deleted": sid}
            assert client.get(f"/api/agent/sessions/{sid}").status_code == 404
    finally:
        registry.close()

    library_model = openai_stub(SCRIPT)
    with AgentSessions(make_vault(tmp_path / "lib", library_model.url), history_tokens=ChatConfig.history_tokens,
                       context_tokens=ChatConfig.context_tokens) as sessions:
        lib = sessions.send(sessions.create("Garden")["id"], QUESTION)
    assert comparable(lib) == comparable(final)
    assert web_model.requests[0]["messages"][-1] == library_model.requests[0]["messages"][-1]


def test_no_model_configured_is_a_clear_refusal(tmp_path):
    registry = ToolRegistry.open(write_tree(tmp_path / "ws", NOTES))
    try:
        with TestClient(build_app(registry), base_url=BASE) as client:
            sid = client.post("/api/agent/sessions", json={}).json()["id"]
            refused = client.post(f"/api/agent/sessions/{sid}/messages", json={"text": "hello"})
            assert refused.status_code == 400 and "needs a language model" in refused.json()["error"]
            assert client.get(f"/api/agent/sessions/{sid}").json()["messages"] == []
    finally:
        registry.close()
