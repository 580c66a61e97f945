"""One answer shape per result type: for status, search, similar, context, the chat history
and Smart Connections' similar_notes, the CLI's ``--json``, the MCP tool (through the SDK's
own client, over stdio) and the HTTP route (Starlette's TestClient) answer the same keys.

One small workspace (code, notes, a Smart Connections folder, a chat), indexed once with
embeddings by the CLI; each front end is asked every question once, and each result type
is compared in its own test.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from starlette.testclient import TestClient
from test_mcp_server import make_folder, payload, stdio_session

from smartcontext.server.http import build_app
from smartcontext.tools import ToolRegistry

SRC = str(Path(__file__).resolve().parents[1] / "src")
QUESTION = "How does apply_discount work?"
NOTE = "notes/Gardening.md"
CHAT = "c1"
TIMEOUT = 300
EMBEDDING_KEYS = {"state", "model", "embedded", "total", "items_per_second", "error"}

# result type -> (CLI arguments after the folder's own, MCP/HTTP tool and arguments, HTTP route)
QUESTIONS: dict[str, tuple[list[str], tuple[str, dict[str, Any]], tuple[str, str, dict[str, Any]]]] = {
    "status": (["status", "{folder}", "--json"], ("status", {}), ("GET", "/api/status", {})),
    "search": (["search", "discount", "{folder}", "--json"], ("search", {"query": "discount"}),
               ("POST", "/api/search", {"query": "discount"})),
    "similar": (["similar", NOTE, "{folder}", "--json"], ("similar", {"path": NOTE}),
                ("POST", "/api/similar", {"path": NOTE})),
    # include_items: the tool leaves the item list out unless asked; --json always has it.
    "context": (["context", QUESTION, "{folder}", "--json"], ("context", {"question": QUESTION, "include_items": True}),
                ("POST", "/api/context", {"question": QUESTION, "include_items": True})),
    "chat_history": (["chat", "context", CHAT, "{folder}", "--json"], ("chat_history", {"chat_id": CHAT}),
                     ("POST", f"/api/chats/{CHAT}/history", {})),
    "similar_notes": (["sc", "similar", NOTE, "{folder}", "--json", "--min-score", "0"],
                      ("similar_notes", {"path": NOTE, "minScore": 0}),
                      ("POST", "/api/tools/similar_notes", {"path": NOTE, "minScore": 0})),
}


def cli(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SMARTCONTEXT_")}
    env["PYTHONPATH"] = SRC + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-m", "smartcontext", *args], capture_output=True, text=True,
                          timeout=TIMEOUT, env=env, stdin=subprocess.DEVNULL)


@pytest.fixture(scope="module")
def answers(tmp_path_factory) -> dict[str, dict[str, dict[str, Any]]]:
    """front end ("cli", "mcp", "http") -> result type -> its answer, without ``success``."""
    folder = make_folder(tmp_path_factory.mktemp("shapes") / "ws", smart_connections=True)
    for args in (["chat", "add", CHAT, "user", "How do I water tomatoes?", str(folder), "--no-extract"],
                 ["index", str(folder)]):  # with embeddings (the default): similar needs them
        done = cli(*args)
        assert done.returncode == 0, done.stderr

    out: dict[str, dict[str, dict[str, Any]]] = {"cli": {}, "mcp": {}, "http": {}}
    for kind, (args, _, _) in QUESTIONS.items():
        done = cli(*[a.format(folder=folder) for a in args])
        assert done.returncode == 0, (kind, done.stderr)
        out["cli"][kind] = json.loads(done.stdout)

    async def ask_mcp() -> None:
        with anyio.fail_after(TIMEOUT):
            async with stdio_session(folder, {}) as session:
                for kind, (_, (tool, arguments), _) in QUESTIONS.items():
                    out["mcp"][kind] = payload(await session.call_tool(tool, arguments))

    anyio.run(ask_mcp)

    registry = ToolRegistry.open(folder)
    try:
        with TestClient(build_app(registry), base_url="http://127.0.0.1:8766") as client:
            for kind, (_, _, (method, route, body)) in QUESTIONS.items():
                got = client.get(route) if method == "GET" else client.post(route, json=body)
                out["http"][kind] = got.json()
    finally:
        registry.close()

    for front in ("mcp", "http"):
        for kind, data in out[front].items():
            assert data.pop("success") is True, (front, kind, data)
    return out


def same_keys(answers: dict[str, dict[str, dict[str, Any]]], kind: str) -> dict[str, dict[str, Any]]:
    """The three answers of ``kind``, after checking their keys agree."""
    by_front = {front: answers[front][kind] for front in ("cli", "mcp", "http")}
    keys = {front: sorted(data) for front, data in by_front.items()}
    assert keys["cli"] == keys["mcp"] == keys["http"], keys
    return by_front


def result_keys(data: dict[str, Any]) -> set[str]:
    return {key for hit in data["results"] for key in hit}


def test_status_has_one_shape(answers):
    by_front = same_keys(answers, "status")
    for data in by_front.values():
        assert set(data["embedding"]) == EMBEDDING_KEYS
        assert data["embedding"]["total"] == data["embedding"]["embedded"] > 0
    assert by_front["cli"]["files"] == by_front["mcp"]["files"] == by_front["http"]["files"]


def test_search_has_one_shape_with_the_same_embedding_object(answers):
    by_front = same_keys(answers, "search")
    assert len({frozenset(result_keys(d)) for d in by_front.values()}) == 1
    for data in by_front.values():
        assert data["results"] and set(data["embedding"]) == EMBEDDING_KEYS
    status = answers["cli"]["status"]["embedding"]
    assert by_front["cli"]["embedding"]["embedded"] == status["embedded"]


def test_similar_has_one_shape(answers):
    by_front = same_keys(answers, "similar")
    assert len({frozenset(result_keys(d)) for d in by_front.values()}) == 1
    paths = {front: [hit["path"] for hit in data["results"]] for front, data in by_front.items()}
    assert paths["cli"] and paths["cli"] == paths["mcp"] == paths["http"]


def test_context_has_one_shape_with_the_embedding_object(answers):
    by_front = same_keys(answers, "context")
    for data in by_front.values():
        assert set(data["embedding"]) == EMBEDDING_KEYS and data["items"]
    # The tool leaves each item's text out ('text' already holds it); --json keeps it.
    item_keys = {front: {k for item in data["items"] for k in item} for front, data in by_front.items()}
    assert item_keys["mcp"] == item_keys["http"] == item_keys["cli"] - {"text", "docstring"}
    ids = {front: [item["id"] for item in data["items"]] for front, data in by_front.items()}
    assert ids["cli"] == ids["mcp"] == ids["http"]


def test_chat_history_has_one_shape(answers):
    by_front = same_keys(answers, "chat_history")
    assert all(data["messages"] for data in by_front.values())


def test_similar_notes_has_one_shape(answers):
    by_front = same_keys(answers, "similar_notes")
    assert len({frozenset(result_keys(d)) for d in by_front.values()}) == 1
    paths = {front: [hit["path"] for hit in data["results"]] for front, data in by_front.items()}
    assert paths["cli"] and paths["cli"] == paths["mcp"] == paths["http"]
