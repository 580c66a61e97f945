"""Idle and trickling clients cannot starve the HTTP servers (issue 25).

Real sockets on 127.0.0.1 only, bounded in count and time: the web app served by uvicorn
with the guarded protocol (small limits, so the rules show within seconds), then both
servers as the CLI starts them (their default limits) with more idle connections than
they keep open, and a real request that still answers at once. Also: a request body the
API cannot read (nested too deeply, a lone surrogate) is a 400 saying so, not a 500."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import httpx
import pytest
from conftest import write_tree

from smartcontext.server.http import build_app
from smartcontext.server.limits import MAX_CONNECTIONS, guarded_protocol
from smartcontext.tools import ToolRegistry
from web_support import free_port, server_env

NOTES = {"notes/Garden.md": "# Garden\n\nTomatoes need [[Water]].\n", "notes/Water.md": "# Water\n\nDrip.\n"}
FAST_ENV = {"SMARTCONTEXT_EMBEDDING_MODEL": "none"}


@pytest.fixture
def registry(tmp_path, monkeypatch):
    monkeypatch.setenv("SMARTCONTEXT_EMBEDDING_MODEL", "none")
    reg = ToolRegistry.open(write_tree(tmp_path / "ws", NOTES))
    yield reg
    reg.close()


@contextmanager
def served(registry: ToolRegistry, **limits: float) -> Iterator[int]:
    """The web app on a free loopback port in this process, with ``limits``."""
    import uvicorn

    from smartcontext.server.mcp import bind

    sock = bind("127.0.0.1", 0)
    config = uvicorn.Config(build_app(registry), log_level="warning", lifespan="on", access_log=False,
                            http=guarded_protocol(**limits))
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
        time.sleep(0.05)
    try:
        yield sock.getsockname()[1]
    finally:
        server.should_exit = True
        thread.join(15)
        sock.close()


def connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=10)


def closed_within(sock: socket.socket, seconds: float) -> float:
    """Seconds until the server closes ``sock`` (reading what it sends); fails past ``seconds``."""
    start = time.monotonic()
    sock.settimeout(seconds)
    try:
        while sock.recv(4096):
            pass
    except (TimeoutError, socket.timeout):
        raise AssertionError(f"still open after {seconds} s") from None
    except ConnectionResetError:
        pass
    return time.monotonic() - start


def trickle(sock: socket.socket, data: bytes, pause: float, stop: threading.Event) -> None:
    for byte in data:
        if stop.is_set():
            return
        try:
            sock.sendall(bytes([byte]))
        except OSError:  # closed by the server: what the test waits for
            return
        time.sleep(pause)


def status(port: int, timeout: float = 5) -> int:
    return httpx.get(f"http://127.0.0.1:{port}/api/status", timeout=timeout).status_code


def test_silent_and_trickling_clients_are_closed_and_others_answered(registry):
    with served(registry, header_timeout=1.0, body_timeout=1.5, max_connections=50) as port:
        silent = connect(port)
        assert closed_within(silent, 5) < 4

        # Headers a byte every 0.2 s: still sending, but not done within the header timeout.
        stop = threading.Event()
        slow = connect(port)
        header = b"GET /api/status HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: " + b"a" * 200 + b"\r\n\r\n"
        sender = threading.Thread(target=trickle, args=(slow, header, 0.2, stop), daemon=True)
        sender.start()
        assert closed_within(slow, 6) < 4
        # A body promised and then sent a byte at a time.
        body = connect(port)
        body.sendall(b"POST /api/search HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 400\r\n\r\n{")
        sender2 = threading.Thread(target=trickle, args=(body, b" " * 399, 0.2, stop), daemon=True)
        sender2.start()
        assert closed_within(body, 8) < 5
        stop.set()
        for s in (silent, slow, body):
            s.close()

        # A kept-alive client that asks in time is served again and again.
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=5) as client:
            for _ in range(3):
                assert client.get("/api/status").json()["success"]
                time.sleep(0.5)


def test_more_idle_connections_than_the_cap_do_not_lock_out_a_request(registry):
    # The header timeout is long here: only the cap can make room for the real request.
    with served(registry, header_timeout=60, body_timeout=60, max_connections=20) as port:
        idle = [connect(port) for _ in range(60)]
        try:
            start = time.monotonic()
            assert status(port) == 200
            assert time.monotonic() - start < 3
            closed = 0
            for s in idle[:40]:  # the oldest were closed to make room for the newer ones
                s.settimeout(0.05)
                try:
                    closed += s.recv(1) == b""
                except (TimeoutError, socket.timeout):
                    pass
                except ConnectionResetError:
                    closed += 1
            assert closed >= 30
        finally:
            for s in idle:
                s.close()


def test_a_request_in_progress_is_not_cut_for_room_and_busy_is_503(registry):
    with served(registry, header_timeout=60, body_timeout=60, max_connections=2) as port:
        # Two connections each with a request whose body is still coming: busy, not idle.
        busy = []
        for _ in range(2):
            s = connect(port)
            s.sendall(b"POST /api/search HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                      b"Content-Length: 20\r\n\r\n{")
            busy.append(s)
        time.sleep(0.3)
        extra = connect(port)
        extra.settimeout(5)
        answer = extra.recv(4096)
        assert answer.startswith(b"HTTP/1.1 503") and b"too many open connections" in answer
        # The busy ones were kept and finish their requests.
        for s in busy:
            s.sendall(b'"query":"tomato"}' + b"  ")
            s.settimeout(10)
            assert s.recv(4096).startswith(b"HTTP/1.1 200")
            s.close()
        extra.close()


@pytest.mark.parametrize("body, says", [
    (b'{"question": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "nested too deeply"),
    (b'{"question": "\\ud800 tomatoes"}', "lone surrogate (\\\\ud800)"),
])
def test_unreadable_json_is_a_400_that_says_why(registry, body, says, caplog):
    from starlette.testclient import TestClient

    with TestClient(build_app(registry), base_url="http://127.0.0.1:8766", raise_server_exceptions=False) as client:
        got = client.post("/api/context", content=body, headers={"Content-Type": "application/json"})
    assert got.status_code == 400, got.text
    assert got.json()["success"] is False and says in got.text
    assert "Traceback" not in caplog.text and not [r for r in caplog.records if r.exc_info]


# -- both servers as the CLI starts them ---------------------------------------------------

def start(args: list[str], folder: Path, probe: str, port: int) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-m", "smartcontext", "serve", *args, str(folder), "--port", str(port)],
                            env=server_env(FAST_ENV), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while True:
        if proc.poll() is not None:
            raise AssertionError(f"server exited: {proc.stderr.read().decode(errors='replace')}")
        try:
            httpx.get(probe, timeout=1)
            return proc
        except httpx.TransportError:
            assert time.monotonic() < deadline, "the server did not start within 60 s"
            time.sleep(0.1)


@pytest.mark.parametrize("server", ["web", "mcp"])
def test_cli_servers_answer_past_more_idle_connections_than_they_keep(tmp_path, server):
    folder = write_tree(tmp_path / "ws", NOTES)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    if server == "web":
        proc = start(["web", "--no-browser"], folder, base + "/api/status", port)
    else:
        proc = start(["mcp", "--transport", "http"], folder, base + "/mcp", port)
    idle: list[socket.socket] = []
    try:
        idle = [connect(port) for _ in range(MAX_CONNECTIONS + 100)]
        start_at = time.monotonic()
        if server == "web":
            got = httpx.get(base + "/api/status", timeout=10)
            assert got.status_code == 200 and got.json()["success"]
        else:
            ping = httpx.post(base + "/mcp", timeout=10, content=b'{"jsonrpc":"2.0","id":1,"method":"ping"}',
                              headers={"Content-Type": "application/json",
                                       "Accept": "application/json, text/event-stream"})
            assert ping.status_code in (200, 400)  # answered (a ping without a session is refused)
        assert time.monotonic() - start_at < 5
        assert proc.poll() is None
    finally:
        for s in idle:
            s.close()
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        err = proc.stderr.read().decode(errors="replace")
        proc.stderr.close()
    assert "Traceback" not in err and "out of system resource" not in err


def stalled_websocket(port: int) -> socket.socket:
    """A WebSocket client of ``/ws`` that, once upgraded, never reads again (a frozen tab),
    with a small receive buffer so the server's sends to it stall soon."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.settimeout(10)
    sock.connect(("127.0.0.1", port))
    sock.sendall((f"GET /ws HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                  "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = sock.recv(1)
        assert chunk, "the server closed the WebSocket upgrade"
        head += chunk
    assert head.startswith(b"HTTP/1.1 101"), head
    return sock


def test_a_websocket_client_that_never_reads_does_not_slow_adding_messages(registry):
    """Every added message is an event to every connected tab; a tab that stopped reading
    loses its oldest events (the page re-reads the state when it reconnects), and adding
    a message never waits for it."""
    text = "A long note about the ferry timetable. " * 200  # 8 KB an event: buffers fill soon

    def add_times(client: httpx.Client, port: int, n: int, first: int) -> list[float]:
        times = []
        for i in range(first, first + n):
            t0 = time.perf_counter()
            r = client.post(f"http://127.0.0.1:{port}/api/chats/trip/messages",
                            json={"role": "user", "content": f"{i}: {text}"})
            times.append(time.perf_counter() - t0)
            assert r.status_code == 200 and r.json()["success"], r.text
        return sorted(times)

    with served(registry) as port, httpx.Client(timeout=30) as client:
        alone = add_times(client, port, 40, 0)
        frozen = stalled_websocket(port)
        try:
            stalled = add_times(client, port, 160, 40)  # 1.3 MB of events the tab never reads
        finally:
            frozen.close()
    assert stalled[len(stalled) // 2] < 2 * alone[len(alone) // 2] + 0.05, (alone, stalled)
    assert stalled[-1] < 1.0, stalled
