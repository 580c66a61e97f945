"""Unknown chat ids and topic labels are errors with the closest names, in every front
end (CLI exit 1; ``success: false`` from the tools and the HTTP API), and a refused
filter changes nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from starlette.testclient import TestClient

from smartcontext.errors import ChatNotFound
from smartcontext.server.http import build_app
from smartcontext.tools import ToolRegistry
from smartcontext.workspace import Workspace

from test_chat import make_chat

ENV = {"SMARTCONTEXT_EMBEDDING_MODEL": "none"}


def cli(root, *args):
    return subprocess.run([sys.executable, "-m", "smartcontext", *args, str(root)], env={**os.environ, **ENV},
                          capture_output=True, text=True, timeout=120)


@pytest.fixture
def folder(tmp_path, monkeypatch):
    for k, v in ENV.items():
        monkeypatch.setenv(k, v)
    make_chat(tmp_path, "trip")
    sc = Workspace.open(tmp_path).chats()
    sc.chat("trip").extract_topics("local")
    return tmp_path


def test_library_names_the_closest_chat_and_topic(folder):
    sc = Workspace.open(folder).chats()
    with pytest.raises(ChatNotFound, match="did you mean 'trip'"):
        sc.chat("trp", must_exist=True)
    labels = [t["label"] for t in sc.get_topics("trip")["topics"]]
    with pytest.raises(ChatNotFound, match=f"did you mean {labels[0]!r}"):
        sc.set_filter([labels[0][:-1]], chat_id="trip")
    # Case and spacing may differ: the chat's own spelling is kept.
    assert sc.set_filter([labels[0].upper()], chat_id="trip")["active_topics"] == [labels[0]]


def test_cli_unknown_chat_or_topic_exits_1_and_sets_no_filter(folder):
    for args in (("chat", "context", "nosuchchat"), ("chat", "topics", "nosuchchat"),
                 ("chat", "context", "trp", "--message", "ferry"),
                 ("chat", "filter", "nosuchchat", "--topic", "Naxos Island"),
                 ("chat", "filter", "trip", "--topic", "No Such Topic")):
        done = cli(folder, *args)
        assert done.returncode == 1, (args, done.stdout, done.stderr)
        assert "no chat" in done.stderr or "no topic" in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "did you mean 'trip'" in cli(folder, "chat", "context", "trp").stderr
    state = Workspace.open(folder).chats().state()
    assert state["active_topics"] == [] and state["current_chat_id"] == "trip"
    done = cli(folder, "chat", "context", "trip", "--json")
    assert done.returncode == 0 and json.loads(done.stdout)["mode"] == "all"


def test_tools_and_http_answer_success_false(folder):
    registry = ToolRegistry.open(folder)
    try:
        for tool, args in (("chat_history", {"chat_id": "nosuch", "mode": "all"}),
                           ("smart_context_get_topics", {"chat_id": "nosuch"}),
                           ("chat_extract_topics", {"chat_id": "nosuch"}),
                           ("smart_context_set_filter", {"chat_id": "nosuch", "topics": []}),
                           ("smart_context_set_filter", {"chat_id": "trip", "topics": ["No Such Topic"]})):
            got = registry.call(tool, args)
            assert got["success"] is False and ("no chat" in got["error"] or "no topic" in got["error"]), got
        with TestClient(build_app(registry), base_url="http://127.0.0.1:8766") as client:
            r = client.get("/api/chats/nosuch")
            assert r.status_code == 400 and r.json()["success"] is False and "no chat 'nosuch'" in r.json()["error"]
            r = client.post("/api/chats/tirp/history", json={"mode": "all"})
            assert r.json()["success"] is False and "did you mean 'trip'" in r.json()["error"]
            assert client.get("/api/chats/trip").json()["total_messages"] > 0
            # The page opens a chat it is about to write with ?new=1: empty, not an error.
            fresh = client.get("/api/chats/fresh?new=1")
            assert fresh.status_code == 200 and fresh.json()["messages"] == []
        assert registry.context.workspace.chats().state()["active_topics"] == []
    finally:
        registry.close()


def test_mcp_answers_success_false_with_the_closest_names(folder):
    """The same refusals through a real MCP client over stdio."""
    from test_mcp_server import payload, run, stdio_session

    async def scenario() -> None:
        async with stdio_session(folder, ENV) as session:
            for tool, args, says in (
                ("chat_history", {"chat_id": "tirp", "mode": "all"}, "did you mean 'trip'"),
                ("smart_context_get_topics", {"chat_id": "nosuch"}, "no chat 'nosuch'"),
                ("smart_context_set_filter", {"chat_id": "trip", "topics": ["No Such Topic"]}, "no topic"),
            ):
                data = payload(await session.call_tool(tool, args))
                assert data["success"] is False and says in data["error"], (tool, data)

    run(scenario)
    assert Workspace.open(folder).chats().state()["active_topics"] == []
