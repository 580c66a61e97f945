"""The served path: MCP round trips next to the same answers in process.

    python bench/served.py             # 4,000 generated notes, 200 calls per tool
    python bench/served.py --quick     # 500 notes, 40 calls per tool
    python bench/served.py --transport http

One folder: a generated Obsidian vault with a Smart Connections ``.smart-env`` (the
generator of ``bench/smart_connections.py``: N notes, 4 embedded heading blocks each,
384-d vectors stored under all-MiniLM-L6-v2, so the bundled MiniLM embeds queries and
``semantic_search`` runs in model mode) plus one chat of 300 messages in ``.memory/``.
The index is built once before anything is timed, with the default settings (the
static model's vectors), so the server has nothing left to embed in the background; each tool is called once untimed (the first call loads the reader, the query
model, the catalogue), then ``--calls`` times, cycling through different notes/queries.

Three figures per tool, wall-clock p50 / p95 in milliseconds:
- library: the library call (``SmartConnections``, ``Workspace.search``/``context``,
  ``Chat.history``) on objects kept between calls;
- registry: ``ToolRegistry.call`` in process, i.e. the tool handler with its argument
  check, locks and index freshness checks, without a transport;
- MCP: the SDK's own client (``stdio_client`` spawning ``smartcontext serve mcp``, or
  ``streamable_http_client`` against ``--transport http``) timing ``call_tool`` from
  request to parsed answer.
The difference between MCP and registry is the transport (JSON-RPC encoding, a pipe or
a socket, the SDK's task hops); between registry and library, what the tool adds. The
last column is the server's CPU time per call (from /proc), which, unlike wall time, does
not grow when other work takes the machine's cores.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, AsyncIterator

import anyio
import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))
sys.path.insert(0, str(HERE))

from mcp import ClientSession, StdioServerParameters, stdio_client  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

from smart_connections import QUERIES, WORDS, generate_vault  # noqa: E402
from smartcontext import Workspace  # noqa: E402
from smartcontext.smart_connections import SmartConnections  # noqa: E402
from smartcontext.tools import ToolRegistry  # noqa: E402

CHAT_ID = "bench"
CHAT_MESSAGES = 300
CONTEXT_TOKENS = 2000
# get_current_date does next to nothing: its row is the floor of a served call.
TOOLS = ("get_current_date", "similar_notes", "semantic_search", "search", "context", "chat_history")


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else float("nan")


def make_chat(ws: Workspace, n: int, seed: int = 2) -> None:
    rng = np.random.default_rng(seed)
    chat = ws.chats().chat(CHAT_ID)
    for i in range(n):
        words = " ".join(rng.choice(WORDS, size=int(rng.integers(8, 40))))
        chat.add_message("user" if i % 2 == 0 else "assistant", f"{QUERIES[i % len(QUERIES)]}: {words}", extract=False)


def arguments(notes: list[str], calls: int) -> dict[str, list[dict[str, Any]]]:
    """``calls`` argument sets per tool, each different from the one before."""
    step = max(1, len(notes) // calls)
    q = lambda i: QUERIES[i % len(QUERIES)]  # noqa: E731
    return {
        "get_current_date": [{} for _ in range(calls)],
        "similar_notes": [{"path": notes[(i * step) % len(notes)], "limit": 10} for i in range(calls)],
        "semantic_search": [{"query": q(i), "limit": 10} for i in range(calls)],
        "search": [{"query": q(i), "limit": 10, "mode": "hybrid"} for i in range(calls)],
        "context": [{"question": q(i), "max_tokens": CONTEXT_TOKENS} for i in range(calls)],
        "chat_history": [{"chat_id": CHAT_ID, "message": q(i), "include_messages": False} for i in range(calls)],
    }


def time_calls(call: Callable[[dict[str, Any]], Any], args: list[dict[str, Any]]) -> list[float]:
    call(args[-1])  # untimed: the first call loads what later calls share
    times = []
    for a in args:
        s = time.perf_counter()
        call(a)
        times.append((time.perf_counter() - s) * 1000)
    return times


def bench_library(vault: Path, args: dict[str, list[dict[str, Any]]]) -> dict[str, list[float]]:
    ws = Workspace.open(vault)
    sc = SmartConnections(vault, workspace=lambda: ws)
    chat = ws.chats().chat(CHAT_ID)
    calls: dict[str, Callable[[dict[str, Any]], Any]] = {
        "similar_notes": lambda a: sc.similar_notes(a["path"], limit=a["limit"]),
        "semantic_search": lambda a: sc.semantic_search(a["query"], limit=a["limit"]),
        "search": lambda a: ws.search(a["query"], limit=a["limit"], mode=a["mode"]),
        "context": lambda a: ws.context(a["question"], max_tokens=a["max_tokens"]),
        "chat_history": lambda a: chat.history(a["message"]),
    }
    try:
        return {name: time_calls(calls[name], args[name]) for name in TOOLS if name in calls}
    finally:
        sc.close()
        ws.close()


def bench_registry(vault: Path, args: dict[str, list[dict[str, Any]]]) -> dict[str, list[float]]:
    registry = ToolRegistry.open(vault)

    def call(name: str) -> Callable[[dict[str, Any]], Any]:
        def run(a: dict[str, Any]) -> None:
            answer = registry.call(name, a)
            if not answer.get("success"):
                raise SystemExit(f"error: {name} failed in process: {answer.get('error')}")
        return run

    try:
        return {name: time_calls(call(name), args[name]) for name in TOOLS}
    finally:
        registry.close()


def server_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SMARTCONTEXT_")}
    env.update(extra or {})
    env["PYTHONUNBUFFERED"] = "1"
    # The server runs the same source tree as the in-process figures.
    env["PYTHONPATH"] = os.pathsep.join([str(HERE.parent / "src"), *filter(None, [env.get("PYTHONPATH")])])
    return env


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@asynccontextmanager
async def mcp_session(vault: Path, transport: str, env: dict[str, str] | None = None) -> AsyncIterator[ClientSession]:
    command = [sys.executable, "-m", "smartcontext", "serve", "mcp", str(vault)]
    if transport == "stdio":
        params = StdioServerParameters(command=command[0], args=command[1:] + ["--transport", "stdio"],
                                       env=server_env(env), cwd=str(vault))
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                yield session
        return
    port = free_port()
    proc = subprocess.Popen(command + ["--transport", "http", "--port", str(port)], env=server_env(env),
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"error: the HTTP server did not start: {proc.stderr.read().decode()[-2000:]}")
                time.sleep(0.1)
        async with streamable_http_client(f"http://127.0.0.1:{port}/mcp") as (read, write, *_):
            async with ClientSession(read, write) as session:
                await session.initialize()
                yield session
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def children_cpu() -> float | None:
    """CPU seconds (user + system) used so far by this process's children (the server),
    from /proc; None where there is no /proc. Unlike wall time, it does not grow when
    other work on a shared machine takes the cores."""
    proc = Path("/proc")
    if not proc.is_dir():
        return None
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for stat in proc.glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == os.getpid():  # fields[1]: the parent's pid
            total += (int(fields[11]) + int(fields[12])) / tick  # utime, stime
    return total


def bench_mcp(
    vault: Path, args: dict[str, list[dict[str, Any]]], transport: str, env: dict[str, str] | None = None,
    server_cpu: dict[str, float] | None = None,
) -> dict[str, list[float]]:
    """Milliseconds per ``call_tool`` for each tool of ``args``, in one server; the
    server's mean CPU milliseconds per call go to ``server_cpu`` (by tool)."""
    out: dict[str, list[float]] = {}
    server_cpu = {} if server_cpu is None else server_cpu

    async def call(session: ClientSession, name: str, a: dict[str, Any]) -> None:
        result = await session.call_tool(name, a)
        if result.is_error:
            raise SystemExit(f"error: {name} failed over MCP: {result.content[-1].text[:500]}")

    async def main() -> None:
        async with mcp_session(vault, transport, env) as session:
            for name, calls in args.items():
                await call(session, name, calls[-1])  # untimed, as in process
                times = []
                cpu = children_cpu()
                for a in calls:
                    s = time.perf_counter()
                    await call(session, name, a)
                    times.append((time.perf_counter() - s) * 1000)
                out[name] = times
                if cpu is not None:
                    server_cpu[name] = (children_cpu() - cpu) * 1000 / len(calls)

    anyio.run(main)
    return out


def prepare(vault: Path, n_notes: int) -> list[str]:
    """The vault, its chat, its keyword index and its parse store; the notes' paths."""
    generate_vault(vault, n_notes)
    ws = Workspace.open(vault)
    make_chat(ws, CHAT_MESSAGES)
    ws.index()  # with the default model's vectors, so no background embedding competes
    ws.close()
    sc = SmartConnections(vault)
    sc.refresh()  # parses every .ajson once and saves the parse store, as a first run does
    notes = [p for p in sc._cache.note_paths() if sc._cache.has_rows(p)]
    sc.close()
    return notes


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="500 notes, 40 calls per tool")
    ap.add_argument("--notes", type=int, default=None, help="generated notes (default 4000; 500 with --quick)")
    ap.add_argument("--calls", type=int, default=None, help="timed calls per tool (default 200; 40 with --quick)")
    ap.add_argument("--transport", choices=("stdio", "http"), default="stdio")
    ap.add_argument("--json", type=Path, default=None, help="also write the raw figures here")
    a = ap.parse_args()
    n_notes = a.notes or (500 if a.quick else 4000)
    calls = a.calls or (40 if a.quick else 200)
    for key in [k for k in os.environ if k.startswith("SMARTCONTEXT_")]:
        del os.environ[key]  # the default settings, in process as in the server

    with tempfile.TemporaryDirectory(prefix="served-bench-") as tmp:
        vault = Path(tmp) / "vault"
        started = time.perf_counter()
        notes = prepare(vault, n_notes)
        print(f"prepared {n_notes} notes, {CHAT_MESSAGES} chat messages in {time.perf_counter() - started:.1f} s",
              file=sys.stderr)
        args = arguments(notes, calls)
        cpu: dict[str, float] = {}
        figures = {
            "library": bench_library(vault, args),
            "registry": bench_registry(vault, args),
            f"MCP {a.transport}": bench_mcp(vault, args, a.transport, server_cpu=cpu),
        }

    cols = list(figures)
    print(f"## Served path ({'quick' if a.quick else 'full'})\n")
    print(f"`python bench/served.py{' --quick' if a.quick else ''}"
          f"{' --transport http' if a.transport == 'http' else ''}` - {time.strftime('%Y-%m-%d')}, "
          f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"load average {os.getloadavg()[0]:.1f}; {n_notes} generated notes with Smart Connections vectors, "
          f"a {CHAT_MESSAGES}-message chat; {calls} calls per tool; p50 / p95 ms\n")
    print("| tool | " + " | ".join(cols) + " | MCP server CPU per call (mean) |")
    print("|---|" + "---|" * (len(cols) + 1))
    for name in TOOLS:
        cells = [f"{pct(figures[c][name], 50):.2f} / {pct(figures[c][name], 95):.2f}" if name in figures[c] else "-"
                 for c in cols]
        cells.append(f"{cpu[name]:.2f}" if name in cpu else "-")
        print(f"| {name} | " + " | ".join(cells) + " |")
    if a.json:
        a.json.write_text(json.dumps({"notes": n_notes, "calls": calls, "figures": figures, "server_cpu_ms": cpu}))


if __name__ == "__main__":
    main()
