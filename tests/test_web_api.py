"""The HTTP API of ``smartcontext serve web``: every route family answers the JSON of the
CLI's --json and the MCP tools, events reach WebSocket clients, and the server refuses
foreign hosts and origins, oversized bodies and malformed JSON clearly.

Driven through Starlette's TestClient (the app, its lifespan and its WebSocket run for
real in a portal thread), on real folders with real indexes; the Host of every request
is 127.0.0.1 as a local browser sends it."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from conftest import SAMPLE_REPO, write_tree
from starlette.testclient import TestClient
from starlette.websockets import WebSocketDisconnect

from smartcontext.server.http import build_app, build_index
from smartcontext.server.hub import INDEX_PROGRESS, MESSAGE_ADDED, ProgressEvents
from smartcontext.tools import ToolRegistry
from web_support import server_env

# Every test once on SQLite and once on PostgreSQL (conftest.store_env).
pytestmark = pytest.mark.usefixtures("store_env")


BASE = "http://127.0.0.1:8766"
WS_URL = "ws://127.0.0.1:8766/ws"
NOTES = {
    "notes/Gardening.md": "# Gardening\n\nTomatoes need staking and [[Watering]] every morning.\n",
    "notes/Watering.md": "# Watering\n\nDrip irrigation saves water for the tomatoes.\n",
    "notes/Taxes.md": "# Taxes\n\nFile the tax forms before April.\n",
}


def make_folder(root: Path) -> Path:
    write_tree(root, SAMPLE_REPO)
    return write_tree(root, NOTES)


@pytest.fixture
def app_client(tmp_path, static_model):
    registry = ToolRegistry.open(make_folder(tmp_path / "ws"))
    app = build_app(registry)
    with TestClient(app, base_url=BASE) as client:
        yield client, registry, app
    registry.close()


class Inbox:
    """The events of one WebSocket in order; ``take`` returns the first not yet taken of
    an event, reading more only when the ones received hold none."""

    def __init__(self, ws):
        self.ws = ws
        self.waiting: list[dict] = []

    def take(self, event: str, limit: int = 100) -> dict:
        for n, msg in enumerate(self.waiting):
            if msg["event"] == event:
                return self.waiting.pop(n)
        for _ in range(limit):
            msg = json.loads(self.ws.receive_text())
            if msg["event"] == event:
                return msg
            self.waiting.append(msg)
        raise AssertionError(f"no {event} among {limit} messages")


def settle(client, timeout: float = 120) -> None:
    """Until the server's background embedder has given every item its vector, so two
    answers compared across requests rank over the same vectors."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        st = client.get("/api/status").json()
        if st["embedding"]["embedded"] == st["embedding"]["total"] and st["embedding"]["state"] != "running":
            return
        time.sleep(0.2)
    pytest.fail(f"the server's background embedding did not finish: {st['embedding']}")


def test_workspace_routes_answer_the_tool_json(app_client):
    client, registry, _ = app_client
    context = client.post("/api/context", json={"question": "How does the cart apply discounts?", "max_tokens": 1500})
    assert context.status_code == 200
    settle(client)  # the first question built the index; vectors land in the background
    context = client.post("/api/context", json={"question": "How does the cart apply discounts?", "max_tokens": 1500})
    data = context.json()
    assert data == registry.call("context", {"question": "How does the cart apply discounts?", "max_tokens": 1500})
    assert data["success"] and 0 < data["token_count"] <= 1500 and "shop/pricing.py" in data["files"]

    search = client.post("/api/search", json={"query": "irrigation", "mode": "keyword"}).json()
    assert search["success"] and search["results"][0]["path"] == "notes/Watering.md"

    status = client.get("/api/status").json()
    assert status["success"] and status["indexed"] and status["files"] == len(SAMPLE_REPO) + len(NOTES)

    refused = client.post("/api/context", json={"question": ""})
    assert refused.status_code == 400 and refused.json()["success"] is False
    assert "question" in refused.json()["error"]


def test_similar_needs_vectors_then_answers(app_client):
    client, registry, _ = app_client
    no_vectors = client.post("/api/similar", json={"path": "notes/Gardening.md"})
    assert no_vectors.status_code == 400 and "embeddings" in no_vectors.json()["error"]
    assert client.post("/api/similar", json={}).status_code == 400

    with registry.context.index_lock.writer:
        registry.context.workspace.index(embeddings=True)
    found = client.post("/api/similar", json={"path": "notes/Gardening.md", "limit": 2}).json()
    assert found["success"] and found["count"] == 2
    assert found["results"][0]["path"] == "notes/Watering.md"


def test_every_tool_is_offered_and_called_by_name(app_client):
    client, registry, _ = app_client
    listed = client.get("/api/tools").json()
    assert [t["name"] for t in listed["tools"]] == registry.names()

    read = client.post("/api/tools/read_file", json={"path": "notes/Taxes.md"}).json()
    assert read["success"] and "April" in read["content"]
    created = client.post("/api/tools/create_file", json={"path": "notes/New.md", "content": "# New\n"})
    assert created.json()["success"] and (registry.context.root / "notes/New.md").is_file()

    outside = client.post("/api/tools/read_file", json={"path": "../secret.md"})
    assert outside.status_code == 400 and outside.json()["success"] is False
    bad_args = client.post("/api/tools/read_file", json={"nope": 1})
    assert bad_args.status_code == 400 and "path" in bad_args.json()["error"]
    unknown = client.post("/api/tools/format_disk", json={})
    assert unknown.status_code == 404 and "format_disk" in unknown.json()["error"]


def test_chat_routes_commands_and_events(app_client):
    client, registry, _ = app_client
    assert client.get("/api/chats").json() == {"success": True, "chats": [], "count": 0}

    with client.websocket_connect(WS_URL) as ws:
        inbox = Inbox(ws)
        inbox.take("smartcontext.connected")
        turns = [("user", "be concise"),
                 ("user", "Which ferry goes from Piraeus to Naxos?"),
                 ("assistant", "Blue Star ferries sail from Piraeus to Naxos daily."),
                 ("user", "How do I feed a sourdough starter?"),
                 ("assistant", "Feed the sourdough starter flour and water every day.")]
        for n, (role, content) in enumerate(turns):
            added = client.post("/api/chats/trip/messages", json={"role": role, "content": content, "id": f"m{n}"})
            assert added.status_code == 200 and added.json()["message"]["id"] == f"m{n}"
            assert inbox.take(MESSAGE_ADDED)["data"]["message"]["content"] == content
        # After an assistant reply the topics are extracted again (the local method here).
        topics_event = inbox.take("smart_context.topics_updated")
        assert topics_event["data"]["chat_id"] == "trip"

        chat = client.get("/api/chats/trip").json()
        assert [m["id"] for m in chat["messages"]] == [f"m{n}" for n in range(5)]
        topics = client.get("/api/chats/trip/topics").json()
        assert topics["total_messages"] == 5 and topics["topics"] == chat["topics"]
        sticky = [t for t in topics["topics"] if t.get("sticky")]
        assert sticky and sticky[0]["label"] == "Instructions & Preferences" and "m0" in sticky[0]["message_ids"]
        label = next(t["label"] for t in topics["topics"] if not t.get("sticky"))

        answer = client.post("/api/execute_command",
                             json={"command": "smart_context.set_filter", "args": {"topics": [label], "chat_id": "trip"}})
        assert answer.status_code == 200
        body = answer.json()
        assert body["status"] == "success" and body["active_topics"] == [label]
        changed = inbox.take("smart_context.filter_changed")
        assert changed["data"] == {"active_topics": [label], "chat_id": "trip"}
        highlight = inbox.take("smart_context.highlight_applied")
        history = client.post("/api/chats/trip/history", json={"mode": "topics", "include_messages": False}).json()
        assert highlight["data"]["message_ids"] == history["message_ids"]
        assert "m0" in history["message_ids"]  # sticky: always in context

        state = client.get("/api/state").json()
        assert state["active_topics"] == [label] and state["current_chat_id"] == "trip" and state["embedding_search"]

        off = client.post("/api/execute_command",
                          json={"command": "smart_context.set_similarity_mode", "args": {"enabled": False}}).json()
        assert off["embedding_search"] is False
        assert inbox.take("smart_context.filter_changed")["data"]["active_topics"] == []
        assert client.get("/api/state").json()["active_topics"] == []

    extracted = client.post("/api/chats/trip/topics", json={"method": "local"}).json()
    assert extracted["success"] and extracted["method"].startswith("local")
    events = client.get("/api/events", params={"limit": 200}).json()
    assert {"smart_context.filter_changed", "smart_context.highlight_applied"} <= {e["event"] for e in events["events"]}
    assert client.get("/api/chats").json()["chats"] == ["trip"]

    unknown = client.post("/api/execute_command", json={"command": "smart_context.drop_tables", "args": {}})
    assert unknown.status_code == 404 and "smart_context.set_filter" in unknown.json()["error"]
    bad = client.post("/api/execute_command", json={"command": "smart_context.set_filter", "args": {}})
    assert bad.status_code == 400 and bad.json()["success"] is False
    assert client.get("/api/chats/..%2Fetc").status_code in (400, 404)
    bad_id = client.get("/api/chats/no.dots")
    assert bad_id.status_code == 400 and "invalid chat id" in bad_id.json()["error"]
    assert client.get("/api/events", params={"since": "yesterday"}).status_code == 400


def test_index_progress_reaches_the_websocket(tmp_path):
    registry = ToolRegistry.open(make_folder(tmp_path / "ws"))
    app = build_app(registry)
    try:
        with TestClient(app, base_url=BASE) as client, client.websocket_connect(WS_URL) as ws:
            Inbox(ws).take("smartcontext.connected")
            build_index(registry, ProgressEvents(app.state.hub))
            seen = []
            while True:
                msg = json.loads(ws.receive_text())
                assert msg["event"] == INDEX_PROGRESS
                seen.append(msg["data"])
                if msg["data"]["phase"] in ("done", "error"):
                    break
            assert seen[-1] == {"phase": "done"}
            parse = [d for d in seen if d["phase"] == "parse"]
            assert parse[0]["done"] == 0 and parse[-1]["done"] == parse[-1]["total"] == len(SAMPLE_REPO) + len(NOTES)
            assert client.get("/api/status").json()["indexed"]
    finally:
        registry.close()


def test_refuses_foreign_hosts_origins_big_and_malformed_bodies(tmp_path):
    registry = ToolRegistry.open(make_folder(tmp_path / "ws"))
    try:
        with TestClient(build_app(registry, max_body=2000), base_url=BASE) as client:
            foreign = client.get("/api/status", headers={"Host": "evil.example"})
            assert foreign.status_code == 421 and foreign.json()["success"] is False
            rebound = client.post("/api/tools/create_file", json={"path": "x.md", "content": "x"},
                                  headers={"Origin": "http://evil.example"})
            assert rebound.status_code == 403 and not (registry.context.root / "x.md").exists()
            same_site = client.get("/api/status", headers={"Origin": "http://127.0.0.1:8766"})
            assert same_site.status_code == 200
            with pytest.raises(Exception):
                with client.websocket_connect(WS_URL, headers={"Origin": "http://evil.example"}) as ws:
                    ws.receive_text()

            big = client.post("/api/context", content=b'{"question": "' + b"x" * 5000 + b'"}',
                              headers={"Content-Type": "application/json"})
            assert big.status_code == 413

            for raw, why in ((b"{not json", "not valid JSON"), (b"[1, 2]", "JSON object"),
                             (b"\xff\xfe", "not valid JSON")):
                bad = client.post("/api/search", content=raw, headers={"Content-Type": "application/json"})
                assert bad.status_code == 400, raw
                assert bad.json()["success"] is False and why in bad.json()["error"]

            missing = client.get("/api/nothing")
            assert missing.status_code == 404 and missing.json()["success"] is False
            wrong_method = client.get("/api/context")
            assert wrong_method.status_code == 405 and wrong_method.json()["success"] is False

            page = client.get("/")
            assert page.status_code == 200 and "sc-panel" in page.text
            assert "script-src 'self'" in page.headers["content-security-policy"]
            assert client.get("/static/panel.js").status_code == 200
            assert client.get("/search").status_code == 200
    finally:
        registry.close()


def test_cli_reports_a_taken_port_and_a_missing_folder(tmp_path):
    import socket

    folder = make_folder(tmp_path / "ws")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        busy = subprocess.run([sys.executable, "-m", "smartcontext", "serve", "web", str(folder), "--port", str(port),
                               "--no-browser"], capture_output=True, text=True, timeout=60, env=server_env(),
                              stdin=subprocess.DEVNULL)
    assert busy.returncode == 1 and "choose another with --port" in busy.stderr and "Traceback" not in busy.stderr
    missing = subprocess.run([sys.executable, "-m", "smartcontext", "serve", "web", str(tmp_path / "absent"),
                              "--no-browser"], capture_output=True, text=True, timeout=60, env=server_env(),
                             stdin=subprocess.DEVNULL)
    assert missing.returncode == 1 and "no such folder" in missing.stderr


def files_outside_index(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and ".smartcontext" not in p.relative_to(root).parts}


def test_other_origins_non_json_writes_and_reading_gets_change_nothing(tmp_path):
    """Safe by default: only this server's own origin, JSON for every write (refused before
    the body is read), and a GET that selects nothing."""
    registry = ToolRegistry.open(make_folder(tmp_path / "ws"))
    root = registry.context.root
    try:
        with TestClient(build_app(registry, max_body=2000), base_url=BASE) as client:
            for chat in ("trip", "bank"):
                assert client.post(f"/api/chats/{chat}/messages", json={"role": "user", "content": f"hi {chat}"}).is_success
            chosen = client.post("/api/execute_command",
                                 json={"command": "smart_context.set_filter", "args": {"topics": [], "chat_id": "trip"}})
            assert chosen.status_code == 200
            before, state = files_outside_index(root), client.get("/api/state").json()
            create = {"path": "pwned.md", "content": "# pwned\n"}

            # Another port, another host name for this computer, another scheme, a sandboxed page.
            for origin in ("http://127.0.0.1:9999", "http://localhost:8766", "https://127.0.0.1:8766", "null"):
                refused = client.post("/api/tools/create_file", json=create, headers={"Origin": origin})
                assert refused.status_code == 403, origin
                assert refused.json()["success"] is False and "Origin" in refused.json()["error"]
                with pytest.raises(WebSocketDisconnect):
                    with client.websocket_connect(WS_URL, headers={"Origin": origin}) as ws:
                        ws.receive_text()
            wrong_port = client.get("/api/status", headers={"Host": "127.0.0.1:9999"})
            assert wrong_port.status_code == 421
            # A bare loopback name is this computer, this port; its page's Origin carries the port.
            bare = client.post("/api/tools/create_file", json=create,
                               headers={"Host": "127.0.0.1", "Origin": "http://127.0.0.1"})
            assert bare.status_code == 403

            writes = [("/api/tools/create_file", create),
                      ("/api/chats/trip/messages", {"role": "user", "content": "injected"}),
                      ("/api/execute_command", {"command": "smart_context.set_similarity_mode", "args": {"enabled": False}})]
            for path, body in writes:
                for kind in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", None):
                    headers = {"Content-Type": kind} if kind else {}
                    refused = client.post(path, content=json.dumps(body).encode(), headers=headers)
                    assert refused.status_code == 415, (path, kind)
                    assert "application/json" in refused.json()["error"]
            # Refused on its headers: a body over the limit is not even read.
            big = client.post("/api/search", content=b"x" * 5000, headers={"Content-Type": "text/plain"})
            assert big.status_code == 415

            # A page elsewhere on this computer (same site, other port) cannot even read-trigger.
            img = client.get("/api/chats/bank/topics", headers={"Sec-Fetch-Site": "same-site", "Sec-Fetch-Mode": "no-cors"})
            assert img.status_code == 403
            # Reading a chat's topics does not make it the current chat.
            topics = client.get("/api/chats/bank/topics")
            assert topics.status_code == 200 and topics.json()["total_messages"] == 1
            assert client.get("/api/chats/nope/topics").status_code == 400

            assert files_outside_index(root) == before and not (root / "pwned.md").exists()
            assert client.get("/api/state").json() == state and state["current_chat_id"] == "trip"

            # What still works: this server's own origin, JSON with a charset, a link to the page.
            own = client.post("/api/tools/create_file", json=create, headers={"Origin": "http://127.0.0.1:8766"})
            assert own.status_code == 200 and (root / "pwned.md").is_file()
            charset = client.post("/api/search", content=b'{"query": "tomatoes", "mode": "keyword"}',
                                  headers={"Content-Type": "application/json; charset=utf-8"})
            assert charset.status_code == 200 and charset.json()["success"]
            local_name = client.get("/api/status", headers={"Host": "localhost:8766", "Origin": "http://localhost:8766"})
            assert local_name.status_code == 200
            assert client.get("/api/status", headers={"Host": "127.0.0.1", "Origin": "http://127.0.0.1:8766"}).is_success
            linked = client.get("/", headers={"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate"})
            assert linked.status_code == 200 and "sc-panel" in linked.text
            with client.websocket_connect(WS_URL, headers={"Origin": "http://127.0.0.1:8766"}) as ws:
                assert json.loads(ws.receive_text())["event"] == "smartcontext.connected"
    finally:
        registry.close()


def test_access_token_by_header_cookie_or_once_in_the_address(tmp_path):
    from smartcontext.errors import InvalidArgument

    registry = ToolRegistry.open(make_folder(tmp_path / "ws"))
    try:
        with pytest.raises(InvalidArgument, match="token"):
            build_app(registry, host="0.0.0.0")  # beyond this computer: a token is required
        with pytest.raises(InvalidArgument, match="8 to 256 letters"):
            build_app(registry, token="a b;c=d")  # it could not travel in a cookie as it is

        with TestClient(build_app(registry, token="s3cret-token"), base_url=BASE) as client:
            for headers in ({}, {"Authorization": "Bearer wrong"}, {"Cookie": "smartcontext-token-8766=wrong"},
                            {"Cookie": "smartcontext-token-9999=s3cret-token"}):
                refused = client.get("/api/status", headers=headers)
                assert refused.status_code == 401, headers
                assert refused.json()["success"] is False and "token" in refused.json()["error"]
            assert client.get("/").status_code == 401
            assert client.post("/api/tools/create_file", json={"path": "x.md", "content": "x"}).status_code == 401
            assert not (registry.context.root / "x.md").exists()
            with pytest.raises(WebSocketDisconnect):
                with client.websocket_connect(WS_URL) as ws:
                    ws.receive_text()

            bearer = client.get("/api/status", headers={"Authorization": "Bearer s3cret-token"})
            assert bearer.status_code == 200 and "set-cookie" not in bearer.headers
            # Once in the address: the page answers with the cookie and an address without it.
            once = client.get("/", params={"chat": "trip", "token": "s3cret-token"}, follow_redirects=False)
            assert once.status_code == 303 and once.headers["location"] == "/?chat=trip"
            cookie = once.headers["set-cookie"]
            assert cookie.startswith("smartcontext-token-8766=s3cret-token;")
            assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
            assert client.get("/api/status").status_code == 200  # the client kept the cookie
            assert client.delete("/api/agent/sessions/agent-nothere").status_code == 404  # no body: no type needed
            labelled = client.request("DELETE", "/api/agent/sessions/agent-nothere", content=b"x",
                                      headers={"Content-Type": "text/plain"})
            assert labelled.status_code == 415
            with client.websocket_connect(WS_URL) as ws:
                assert json.loads(ws.receive_text())["event"] == "smartcontext.connected"
            # The token does not lift the other checks.
            foreign = client.post("/api/tools/create_file", json={"path": "x.md", "content": "x"},
                                  headers={"Origin": "http://127.0.0.1:9999"})
            assert foreign.status_code == 403 and not (registry.context.root / "x.md").exists()

        # Beyond loopback, any name this computer is reached by, with the token and a matching Origin.
        with TestClient(build_app(registry, host="0.0.0.0", token="t0k-laptop"), base_url="http://laptop.lan:8766") as client:
            assert client.get("/api/status").status_code == 401
            ok = client.get("/api/status", headers={"Authorization": "Bearer t0k-laptop", "Origin": "http://laptop.lan:8766"})
            assert ok.status_code == 200
            other = client.get("/api/status", headers={"Authorization": "Bearer t0k-laptop", "Origin": "http://evil.example"})
            assert other.status_code == 403
    finally:
        registry.close()


def test_cli_token_is_printed_in_the_address_and_required(tmp_path):
    folder = make_folder(tmp_path / "ws")
    proc = subprocess.Popen([sys.executable, "-m", "smartcontext", "serve", "web", str(folder), "--port", "0",
                             "--no-browser", "--no-warm", "--token"], env=server_env(), stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stderr.readline()
        url = line.rsplit(" at ", 1)[-1].strip()
        assert url.startswith("http://127.0.0.1:") and "/?token=" in url, line
        base, token = url.split("/?token=")
        assert len(token) >= 32
        assert httpx.get(base + "/api/status", timeout=30).status_code == 401
        assert httpx.get(base + "/api/status", headers={"Authorization": f"Bearer {token}"}, timeout=30).status_code == 200
        with httpx.Client(follow_redirects=True, timeout=30) as browser:  # keeps the cookie it is given
            page = browser.get(url)
            assert browser.get(base + "/api/status").status_code == 200
        assert page.status_code == 200 and str(page.url) == base + "/" and "sc-panel" in page.text
    finally:
        from test_mcp_server import stop

        stop(proc)
