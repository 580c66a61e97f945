"""Chat and agent-session files stay inside the folder, in every front end.

Hostile layouts, each built in a temp folder beside an "outside" folder holding a chat
file and an agent session with a secret: ``.memory/evil.json`` a link to the outside
chat, ``.memory/agent-...json`` a link to the outside session, ``.memory`` itself a link
to the outside folder; and hostile ids (``..``, absolute, a trailing newline). Each is
tried through the CLI (a subprocess), the MCP server (a real stdio client) and the HTTP
API (Starlette's TestClient over the real app). Nothing outside may be read (the secret
never appears in an answer) or written (the outside folder's files and bytes are the
same after every call, and the links are still links)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from starlette.testclient import TestClient
from test_mcp_server import payload, run, stdio_session

from smartcontext.server.http import build_app
from smartcontext.tools import ToolRegistry

SECRET = "SECRET-OUTSIDE-7f3a"
SESSION = "agent-0123456789ab"
ENV = {"SMARTCONTEXT_EMBEDDING_MODEL": "none"}
HOSTILE_IDS = ["../outside/stolen", "/etc/passwd", "evil\n", ".memory/../x", "a/b"]


def outside_folder(tmp_path: Path) -> Path:
    out = tmp_path / "outside"
    out.mkdir()
    chat = {"messages": [{"id": "s1", "role": "user", "content": f"the key is {SECRET}"}], "topics": []}
    (out / "evil.json").write_text(json.dumps(chat))
    session = {**chat, "agent": {"title": SECRET, "created": "x", "updated": "x"}}
    (out / f"{SESSION}.json").write_text(json.dumps(session))
    return out


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def layouts(tmp_path: Path) -> list[tuple[str, Path, Path]]:
    """(name, workspace, outside folder) for each hostile layout."""
    made = []
    for name in ("file-links", "folder-link"):
        base = tmp_path / name
        base.mkdir()
        out = outside_folder(base)
        ws = base / "ws"
        (ws / "notes").mkdir(parents=True)
        (ws / "notes" / "a.md").write_text("# A\n\nA note about ferries.\n")
        if name == "file-links":
            (ws / ".memory").mkdir()
            (ws / ".memory" / "evil.json").symlink_to(out / "evil.json")
            (ws / ".memory" / f"{SESSION}.json").symlink_to(out / f"{SESSION}.json")
        else:
            (ws / ".memory").symlink_to(out, target_is_directory=True)
        made.append((name, ws, out))
    return made


def assert_untouched(ws: Path, out: Path, before: dict[str, bytes], answer: str) -> None:
    assert SECRET not in answer, answer
    assert snapshot(out) == before
    memory = ws / ".memory"
    if memory.is_symlink():
        assert memory.resolve() == out.resolve()
    else:
        assert (memory / "evil.json").is_symlink() and (memory / f"{SESSION}.json").is_symlink()


def cli(ws: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, **ENV}
    return subprocess.run([sys.executable, "-m", "smartcontext", *args], cwd=ws, env=env,
                          capture_output=True, text=True, timeout=120)


def test_library_refuses_links_and_hostile_ids(tmp_path):
    from smartcontext.chat.files import ChatFile
    from smartcontext.errors import InvalidArgument, PathOutsideWorkspace

    for _, ws, out in layouts(tmp_path):
        before = snapshot(out)
        for chat_id in ("evil", SESSION):
            with pytest.raises(PathOutsideWorkspace):
                ChatFile(ws / ".memory", chat_id).load()
            with pytest.raises(PathOutsideWorkspace):
                ChatFile(ws / ".memory", chat_id).update(lambda d: None)
        # A new chat may not be created through a linked .memory either.
        if (ws / ".memory").is_symlink():
            with pytest.raises(PathOutsideWorkspace):
                ChatFile(ws / ".memory", "fresh").update(lambda d: None)
        for bad in HOSTILE_IDS:
            with pytest.raises(InvalidArgument):
                ChatFile(ws / ".memory", bad)
        assert_untouched(ws, out, before, "")


def test_cli_reads_and_writes_nothing_outside(tmp_path):
    for name, ws, out in layouts(tmp_path):
        before = snapshot(out)
        calls = [
            ("chat", "context", "evil", "--mode", "all"),
            ("chat", "context", "evil", "--message", "what is the key"),
            ("chat", "topics", "evil", "--extract", "--method", "local"),
            ("chat", "add", "evil", "user", "hello"),
            ("chat", "add", "fresh", "user", "hello"),
            ("chat", "context", SESSION, "--mode", "all"),
            ("chat", "add", "evil\n", "user", "hello"),
            ("chat", "context", "../outside/evil", "--mode", "all"),
        ]
        for args in calls:
            if name == "file-links" and args[2] == "fresh":
                continue  # a plain new chat in a real .memory folder is fine
            done = cli(ws, *args, str(ws))
            assert done.returncode == 1, (name, args, done.stdout, done.stderr)
            assert_untouched(ws, out, before, done.stdout + done.stderr)
        listed = cli(ws, "chat", "list", str(ws), "--json")
        assert json.loads(listed.stdout)["chats"] == []


def test_mcp_reads_and_writes_nothing_outside(tmp_path):
    for name, ws, out in layouts(tmp_path):
        before = snapshot(out)

        async def scenario() -> None:
            async with stdio_session(ws, ENV) as session:
                calls = [
                    ("chat_history", {"chat_id": "evil", "mode": "all"}),
                    ("chat_history", {"chat_id": "evil", "message": "what is the key"}),
                    ("chat_history", {"chat_id": SESSION, "mode": "all"}),
                    ("smart_context_get_topics", {"chat_id": "evil"}),
                    ("chat_extract_topics", {"chat_id": "evil", "method": "local"}),
                    ("chat_add_message", {"chat_id": "evil", "role": "user", "content": "hello"}),
                    ("smart_context_set_filter", {"chat_id": "evil", "topics": []}),
                ]
                if name == "folder-link":
                    calls.append(("chat_add_message", {"chat_id": "fresh", "role": "user", "content": "hi"}))
                for bad in HOSTILE_IDS:
                    calls.append(("chat_history", {"chat_id": bad, "mode": "all"}))
                    calls.append(("chat_add_message", {"chat_id": bad, "role": "user", "content": "hi"}))
                for tool, args in calls:
                    data = payload(await session.call_tool(tool, args))
                    assert data["success"] is False, (name, tool, args, data)
                    assert_untouched(ws, out, before, json.dumps(data))

        run(scenario)


def test_http_reads_and_writes_nothing_outside(tmp_path, monkeypatch):
    for key, value in ENV.items():
        monkeypatch.setenv(key, value)
    for name, ws, out in layouts(tmp_path):
        before = snapshot(out)
        registry = ToolRegistry.open(ws)
        try:
            with TestClient(build_app(registry), base_url="http://127.0.0.1:8766") as client:
                calls = [
                    ("GET", "/api/chats/evil", None),
                    ("POST", "/api/chats/evil/history", {"mode": "all"}),
                    ("POST", "/api/chats/evil/history", {"message": "what is the key"}),
                    ("GET", "/api/chats/evil/topics", None),
                    ("POST", "/api/chats/evil/topics", {"method": "local"}),
                    ("POST", "/api/chats/evil/messages", {"role": "user", "content": "hello"}),
                    ("GET", f"/api/agent/sessions/{SESSION}", None),
                    ("DELETE", f"/api/agent/sessions/{SESSION}", None),
                    ("POST", f"/api/agent/sessions/{SESSION}/messages", {"text": "hello"}),
                    ("GET", "/api/chats/evil%0A", None),
                    ("POST", "/api/chats/..%2Foutside%2Fevil/history", {"mode": "all"}),
                ]
                if name == "folder-link":
                    calls.append(("POST", "/api/chats/fresh/messages", {"role": "user", "content": "hi"}))
                    calls.append(("POST", "/api/agent/sessions", {"title": "new"}))
                for method, url, body in calls:
                    r = client.request(method, url, json=body)
                    assert r.status_code >= 400, (name, method, url, r.text)
                    assert_untouched(ws, out, before, r.text)
                listed = client.get("/api/chats").json()
                assert listed["chats"] == []
                sessions = client.get("/api/agent/sessions").json()
                assert SECRET not in json.dumps(sessions)
        finally:
            registry.close()
