"""The MCP server end to end, driven by the MCP SDK's own clients.

stdio: the SDK's ``stdio_client`` spawns ``python -m smartcontext serve mcp <folder>`` and
talks the classic initialize handshake through ``ClientSession``.
HTTP: the server runs as a subprocess on a free 127.0.0.1 port; ``mcp.Client`` connects
to its URL (negotiating the newest protocol) and ``streamable_http_client`` +
``ClientSession`` connects the way current desktop clients do.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, AsyncIterator

import anyio
import httpx
import pytest
from conftest import SAMPLE_REPO, write_tree
from mcp import Client, ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

VAULT_NOTES = {
    "notes/Gardening.md": (
        "---\ntags: [garden]\n---\n# Gardening\n\nTomatoes need staking and [[Watering]] every morning.\n"
    ),
    "notes/Watering.md": "# Watering\n\nDrip irrigation saves water for the tomatoes.\n",
}
EXPECTED_TOOLS = {
    "context", "search", "status",
    "read_file", "create_file", "move_file", "batch_move_files", "append_to_file", "find_backlinks",
    "find_outlinks", "search_by_folder", "list_files_by_frontmatter", "update_frontmatter",
    "search_by_date_range", "save_preference", "list_preferences", "remove_preference",
    "log_interaction", "get_current_date", "search_vault", "keyword_search",
}
FAST_ENV = {"SMARTCONTEXT_EMBEDDING_MODEL": "none"}
TIMEOUT = 60


SC_MODEL = "TaylorAI/bge-micro-v2"
# Small vectors in the Smart Connections plugin's format, with a geometry chosen here:
# the two garden notes are close, the tax note is far from both.
SC_VECTORS = {
    "notes/Gardening.md": [1.0, 0.2, 0.0, 0.0],
    "notes/Watering.md": [0.9, 0.3, 0.1, 0.0],
    "notes/Taxes.md": [0.0, 0.0, 1.0, 0.2],
}


def make_folder(root: Path, smart_connections: bool = False) -> Path:
    write_tree(root, SAMPLE_REPO)
    write_tree(root, VAULT_NOTES)
    if smart_connections:
        write_tree(root, {"notes/Taxes.md": "# Taxes\n\nFile the forms before April.\n"})
        env = root / ".smart-env"
        (env / "multi").mkdir(parents=True)
        model = {"adapter": "transformers", "transformers": {"model_key": SC_MODEL}}
        settings = {"smart_sources": {"embed_model": model}}
        (env / "smart_env.json").write_text(json.dumps(settings), encoding="utf-8")
        for path, vec in SC_VECTORS.items():
            norm = sum(x * x for x in vec) ** 0.5
            entry = {"path": path, "embeddings": {SC_MODEL: {"vec": [x / norm for x in vec]}}}
            name = path.replace("/", "_").replace(".", "_") + ".ajson"
            (env / "multi" / name).write_text(f"{json.dumps('smart_sources:' + path)}: {json.dumps(entry)},\n")
    return root


def payload(result: Any) -> dict[str, Any]:
    """The JSON answer of a tool call; its isError flag must agree with ``success``.

    A context answer comes as two blocks: the context text as is, then the rest as JSON
    (also the structured content); it is put back together under ``text`` here."""
    assert all(block.type == "text" for block in result.content)
    if len(result.content) == 2:
        data = json.loads(result.content[1].text)
        assert result.structured_content == data and "text" not in data
        data["text"] = result.content[0].text
    else:
        assert len(result.content) == 1
        data = json.loads(result.content[0].text)
    assert isinstance(data, dict) and isinstance(data["success"], bool)
    assert result.is_error is (not data["success"])
    return data


def server_env(extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SMARTCONTEXT_")}
    env.update(extra)
    env["PYTHONUNBUFFERED"] = "1"
    return env


@asynccontextmanager
async def stdio_session(
    folder: Path, env: dict[str, str] | None = None, *options: str
) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "smartcontext", "serve", "mcp", str(folder), "--transport", "stdio", *options],
        env=server_env(env if env is not None else FAST_ENV),
        cwd=str(folder),
    )
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            yield session


def run(scenario, *args) -> None:
    async def main() -> None:
        with anyio.fail_after(TIMEOUT):
            await scenario(*args)

    anyio.run(main)


# -- checks shared by both transports --------------------------------------------------------


async def check_tools_listed(session: Any) -> None:
    listed = await session.list_tools()
    names = {t.name for t in listed.tools}
    assert EXPECTED_TOOLS <= names
    assert "index_documents" not in names
    for tool in listed.tools:
        assert tool.description and tool.input_schema["type"] == "object"
    by_name = {t.name: t for t in listed.tools}
    assert by_name["context"].input_schema["required"] == ["question"]
    assert by_name["read_file"].annotations.read_only_hint is True
    assert by_name["create_file"].annotations.read_only_hint is False
    return names


async def check_context_and_search(session: Any) -> None:
    answer = await session.call_tool(
        "context", {"question": "How does AuthService handle login?", "max_tokens": 1500})
    # The context is its own text block, read as is: no JSON escaping on top of the budget.
    assert len(answer.content) == 2 and answer.content[0].text.startswith("! ")
    assert "\\n" not in answer.content[0].text and "\n" in answer.content[0].text
    data = payload(answer)
    assert data["success"], data
    assert "def login(self, name, password)" in data["text"]
    assert data["files"][0] == "shop/auth.py"
    assert 0 < data["token_count"] <= 1500
    assert data["item_count"] > 0 and "warnings" in data
    assert "items" not in data  # item lists only when asked for

    found = payload(await session.call_tool("search", {"query": "apply_discount", "mode": "keyword", "limit": 3}))
    assert found["success"] and 1 <= found["count"] <= 3
    top = found["results"][0]
    assert top["path"] == "shop/pricing.py" and "apply_discount" in top["snippet"]
    assert len(top["snippet"]) <= 300  # snippets, not whole files

    notes = payload(await session.call_tool("search", {"query": "tomatoes", "tags": ["garden"]}))
    assert [r["path"] for r in notes["results"]] == ["notes/Gardening.md"]


async def check_vault_round_trip(session: Any) -> None:
    read = payload(await session.call_tool("read_file", {"path": "notes/Watering.md"}))
    assert read["success"] and "Drip irrigation" in read["content"]

    created = payload(await session.call_tool(
        "create_file", {"path": "notes/Compost", "content": "# Compost\n\nWorms turn peelings into humus.\n"}))
    assert created["success"] and created["path"] == "notes/Compost.md"
    again = payload(await session.call_tool("read_file", {"path": "notes/Compost.md"}))
    assert again["content"] == "# Compost\n\nWorms turn peelings into humus.\n"

    # The write re-indexed the note: both the search tool and the vault's own search find it.
    hits = payload(await session.call_tool("search", {"query": "peelings humus"}))
    assert hits["results"] and hits["results"][0]["path"] == "notes/Compost.md"
    vault_hits = payload(await session.call_tool("keyword_search", {"query": "humus"}))
    assert [r["source"] for r in vault_hits["results"]] == ["notes/Compost.md"]

    refused = payload(await session.call_tool("create_file", {"path": "notes/Compost.md", "content": "x"}))
    assert not refused["success"] and "exists" in refused["error"].lower()


async def check_malformed_calls(session: Any) -> None:
    cases = [
        ("context", {}, "question"),                                   # missing required argument
        ("context", {"question": 42}, "question"),                     # wrong type
        ("search", {"query": "x", "limit": "many"}, "limit"),          # wrong type, not coercible
        ("search", {"query": "x", "mode": "telepathic"}, "mode"),      # not in the enum
        ("search", {"query": "x", "colour": "red"}, "colour"),         # unknown argument
        ("no_such_tool", {"a": 1}, "Unknown tool"),
        ("read_file", {"path": "../../etc/passwd"}, "outside"),
        ("read_file", {"path": "/etc/passwd"}, "outside"),
        ("search", {"query": "y" * 600_000}, "query"),                 # past MAX_QUESTION_CHARS
        ("create_file", {"path": "big.md", "content": "z" * 2_100_000}, "limit"),
        ("move_file", {"source": "notes/Watering.md", "destination": "../escaped.md"}, "outside"),
    ]
    for name, args, expected in cases:
        data = payload(await session.call_tool(name, args))
        assert data["success"] is False, (name, args, data)
        assert expected.lower() in data["error"].lower(), (name, data["error"])
        assert len(data["error"]) < 2000  # a huge argument is not echoed back
    # numbers spelled as strings are fine, as models often send them
    spelled = payload(await session.call_tool("search", {"query": "cart", "limit": "2"}))
    assert spelled["success"] and spelled["count"] <= 2
    # after all that the server still answers, and nothing escaped the folder
    status = payload(await session.call_tool("status", {}))
    assert status["success"] and status["indexed"] and status["files"] >= 10
    assert payload(await session.call_tool("get_current_date", {}))["success"]


async def check_smart_connections(session: Any) -> None:
    similar = payload(await session.call_tool("similar_notes", {"path": "notes/Gardening.md"}))
    assert similar["success"], similar
    assert [r["path"] for r in similar["results"]] == ["notes/Watering.md"]  # Taxes is below minScore
    assert similar["mode"] == "vectors" and "load" not in similar

    found = payload(await session.call_tool("semantic_search", {"query": "tomatoes irrigation", "limit": 2}))
    assert found["success"], found
    assert found["results"][0]["path"] == "notes/Watering.md"
    assert found["mode"] in ("model", "keyword-rerank")

    outside = payload(await session.call_tool("similar_notes", {"path": "../../etc/passwd"}))
    assert not outside["success"] and "outside" in outside["error"]
    missing = payload(await session.call_tool("semantic_search", {"minScore": 0.5}))
    assert not missing["success"] and "query" in missing["error"]


# -- stdio ---------------------------------------------------------------------------------


def test_stdio_lists_tools_answers_context_and_search(tmp_path):
    folder = make_folder(tmp_path / "ws")

    async def scenario() -> None:
        async with stdio_session(folder) as session:
            names = await check_tools_listed(session)
            assert "semantic_search" not in names  # not an Obsidian vault: no Smart Connections tools
            await check_context_and_search(session)

    run(scenario)
    # the index was built by the server, without embeddings
    assert (folder / ".smartcontext" / "index.db").is_file()


def test_stdio_vault_round_trip_and_malformed_calls(tmp_path):
    folder = make_folder(tmp_path / "ws")

    async def scenario() -> None:
        async with stdio_session(folder, FAST_ENV, "--refresh-interval", "0") as session:
            await check_vault_round_trip(session)
            await check_malformed_calls(session)
            # a file written by another program is found by the next question
            (folder / "notes" / "Bees.md").write_text("# Bees\n\nPollinators love borage.\n", encoding="utf-8")
            hits = payload(await session.call_tool("search", {"query": "borage"}))
            assert [r["path"] for r in hits["results"]] == ["notes/Bees.md"]

    run(scenario)
    assert not (tmp_path / "escaped.md").exists()
    assert not (folder / "big.md").exists()


def test_cli_lists_tools_and_reports_a_missing_folder(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from smartcontext.cli import app

    monkeypatch.setenv("SMARTCONTEXT_EMBEDDING_MODEL", "none")
    folder = make_folder(tmp_path / "ws")
    listed = CliRunner().invoke(app, ["serve", "mcp", str(folder), "--list-tools"])
    assert listed.exit_code == 0, listed.output
    tools = {t["name"]: t for t in json.loads(listed.stdout)}
    assert EXPECTED_TOOLS <= set(tools) and "index_documents" not in tools
    assert tools["create_file"]["read_only"] is False and tools["context"]["read_only"] is True

    missing = CliRunner().invoke(app, ["serve", "mcp", str(tmp_path / "absent")])
    assert missing.exit_code == 1
    assert "no such folder" in missing.output and "Traceback" not in missing.output


# -- streamable HTTP ------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_http_server(folder: Path, env: dict[str, str]) -> tuple[subprocess.Popen, str]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "smartcontext", "serve", "mcp", str(folder), "--transport", "http",
         "--host", "127.0.0.1", "--port", str(port)],
        env=server_env(env), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}/mcp"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"server exited: {proc.stderr.read().decode(errors='replace')}")
        try:
            # Any HTTP answer means uvicorn is up; a bare GET without a session is refused.
            httpx.get(url, timeout=1.0)
            return proc, url
        except httpx.TransportError:
            time.sleep(0.1)
    proc.kill()
    raise AssertionError("the HTTP server did not start within 30 s")


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    if proc.stderr:
        proc.stderr.close()


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def http_server(tmp_path_factory, request):
    """One HTTP server per store: its index in the folder (SQLite) or in the test database."""
    folder = make_folder(tmp_path_factory.mktemp("http") / "ws", smart_connections=True)
    env = dict(FAST_ENV)
    if request.param == "postgres":
        base = request.getfixturevalue("pg_url")
        env["SMARTCONTEXT_STORE_URL"] = f"{base}{'&' if '?' in base else '?'}workspace=mcp_http"
    proc, url = start_http_server(folder, env)
    yield url, folder, proc
    stop(proc)
    if request.param == "postgres":
        from smartcontext.store.postgres import drop_workspace

        drop_workspace(request.getfixturevalue("pg_url"), "mcp_http", clear_cache=True)


def test_http_client_lists_tools_and_answers_context(http_server):
    url, _, proc = http_server

    async def scenario() -> None:
        async with Client(url) as client:
            names = await check_tools_listed(client)
            assert {"semantic_search", "similar_notes"} <= names
            await check_context_and_search(client)
            await check_smart_connections(client)

    run(scenario)
    assert proc.poll() is None


def test_http_session_vault_round_trip_and_malformed_calls(http_server):
    url, folder, proc = http_server

    async def scenario() -> None:
        async with streamable_http_client(url) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                await check_vault_round_trip(session)
                await check_malformed_calls(session)

    run(scenario)
    assert proc.poll() is None
    assert (folder / "notes" / "Compost.md").is_file()


def test_http_concurrent_clients_get_the_answers_of_one(http_server):
    """Reads run side by side on pooled SQLite readers and share remembered full-text
    answers: clients asking at once get exactly what one client alone gets."""
    url, _, proc = http_server
    calls = [
        ("search", {"query": "login password", "mode": "keyword", "limit": 5}),
        ("context", {"question": "how does login check the password", "max_tokens": 1000}),
        ("search_vault", {"query": "tomatoes water", "limit": 5}),
        ("read_file", {"path": "notes/Watering.md"}),
        ("search", {"query": "tomatoes", "mode": "keyword", "limit": 5}),
    ]

    async def ask(order: list[int]) -> list[tuple[int, dict[str, Any]]]:
        async with Client(url) as client:
            return [(i, payload(await client.call_tool(*calls[i]))) for i in order]

    answers: list[list[tuple[int, dict[str, Any]]]] = []

    async def scenario() -> None:
        alone = dict(await ask(list(range(len(calls)))))
        assert all(a["success"] for a in alone.values())
        assert alone[0]["results"] and alone[2]["results"] and "login" in alone[1]["text"]
        answers.append(list(alone.items()))

        async def one(who: int) -> None:
            # Each client asks in its own order, twice, so different calls overlap.
            order = [(who + k) % len(calls) for k in range(len(calls))] * 2
            answers.append(await ask(order))

        async with anyio.create_task_group() as tg:
            for who in range(8):
                tg.start_soon(one, who)

    run(scenario)
    alone = dict(answers[0])
    assert len(answers) == 9
    for got in answers[1:]:
        assert len(got) == 2 * len(calls)
        for i, answer in got:
            assert answer == alone[i], calls[i]
    assert proc.poll() is None


def test_http_refuses_foreign_hosts_and_garbage(http_server):
    url, _, proc = http_server
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    ping = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"})
    # DNS-rebinding protection: a page on another site must not reach the local server.
    foreign = httpx.post(url, headers={**headers, "Host": "evil.example"}, content=ping, timeout=5)
    assert foreign.status_code in (403, 421)
    garbage = httpx.post(url, headers=headers, content=b"{not json", timeout=5)
    assert garbage.status_code == 400 and garbage.json()["error"]["code"] == -32700

    async def still_answers() -> None:
        async with Client(url) as client:
            assert payload(await client.call_tool("status", {}))["success"]

    run(still_answers)
    assert proc.poll() is None


def test_http_refuses_other_origins_and_non_json_posts(http_server):
    """A page on another port of this computer cannot call the tools: the SDK alone let an
    Origin of 127.0.0.1 on any port through."""
    url, folder, proc = http_server
    port = url.split(":")[2].split("/")[0]
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    init = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                       "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                  "clientInfo": {"name": "test", "version": "1"}}})
    for origin in ("http://127.0.0.1:1", "http://localhost:" + port, "null"):
        refused = httpx.post(url, headers={**headers, "Origin": origin}, content=init, timeout=5)
        assert refused.status_code == 403, origin
    wrong_port = httpx.post(url, headers={**headers, "Host": "127.0.0.1:1"}, content=init, timeout=5)
    assert wrong_port.status_code == 421
    plain = httpx.post(url, headers={**headers, "Content-Type": "text/plain"}, content=init, timeout=5)
    assert plain.status_code == 415 and "application/json" in plain.json()["error"]
    # The server's own origin, as a page it served would send it, still works.
    own = httpx.post(url, headers={**headers, "Origin": f"http://127.0.0.1:{port}"}, content=init, timeout=30)
    assert own.status_code == 200 and "mcp-session-id" in own.headers
    assert proc.poll() is None


def test_http_listener_turns_nagle_off_on_connections():
    """uvicorn serves on the socket ``bind`` made; asyncio sets TCP_NODELAY on accepted
    connections only when that socket says it is TCP. Without it each answer's SSE chunks
    waited for the client's delayed ACK (about 40 ms a call)."""
    import asyncio

    from smartcontext.server.mcp import bind

    async def accepted_nodelay() -> int:
        seen: asyncio.Future[int] = asyncio.get_running_loop().create_future()

        class Probe(asyncio.Protocol):
            def connection_made(self, transport: asyncio.BaseTransport) -> None:
                sock = transport.get_extra_info("socket")
                seen.set_result(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
                transport.close()

        listener = bind("127.0.0.1", 0)
        server = await asyncio.get_running_loop().create_server(Probe, sock=listener)
        try:
            port = listener.getsockname()[1]
            with socket.create_connection(("127.0.0.1", port)):
                return await asyncio.wait_for(seen, 10)
        finally:
            server.close()

    assert asyncio.run(accepted_nodelay()) != 0


# -- semantic search with the local model ---------------------------------------------------


def test_semantic_search_with_local_model(tmp_path):
    """Vectors from `smartcontext index` (local MiniLM); the server embeds the query."""
    folder = make_folder(tmp_path / "ws")
    env = server_env({"SMARTCONTEXT_EMBEDDING_MODEL": "local:minilm"})
    indexed = subprocess.run([sys.executable, "-m", "smartcontext", "index", str(folder), "--json"],
                             capture_output=True, text=True, timeout=120, env=env, stdin=subprocess.DEVNULL)
    assert indexed.returncode == 0, indexed.stderr
    assert json.loads(indexed.stdout)["embedded"] > 0

    async def scenario() -> None:
        async with stdio_session(folder, {"SMARTCONTEXT_EMBEDDING_MODEL": "local:minilm"}) as session:
            # no shared words with the note ("Drip irrigation saves water for the tomatoes")
            data = payload(await session.call_tool(
                "search", {"query": "how should I hydrate my plants", "mode": "semantic", "limit": 3}))
            assert data["success"], data
            assert data["signals"] == ["semantic"]
            paths = [r["path"] for r in data["results"]]
            assert "notes/Watering.md" in paths[:2], paths

    run(scenario)
