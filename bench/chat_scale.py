"""Long chats: adding a message, the automatic history and memory at 1,000, 10,000 and
50,000 messages, through the tools a server runs (``chat_add_message``, ``chat_history``
of the registry behind the MCP and HTTP servers, with the workspace indexed).

Each size runs in its own process (so its peak memory is its own), on a generated chat
of two speakers talking about a rotating set of subjects, about 190 bytes a message (the
size of the 50,000-message, 9.6 MB chat of issue 25). Embeddings are off (keyword-only
history) unless ``--model`` names one: the numbers are the chat layer's, not a model's.

The measured process opens the folder as a server does, indexes it (the chat's messages
are items of the index), then answers. Rows: ``add``: median and worst of ``--adds`` user messages appended (file write plus
re-index of what changed); ``history cold``: the first automatic history of the process
(reads the chat file and the chat's rows in the index: ids, exact token counts); ``history, restarted``: the
first history of a second process on the same folder (a server restarted: the index current, the
chat's parse kept beside it); ``history warm``: median over the
questions, with an add between each (so every answer sees a new message); ``peak RSS``.
Both first histories also give the process's CPU time for the call (in parentheses): on a
busy two-core machine the wall time is mostly waiting for a core.

Python compiles a module it finds no bytecode for on every import when
``PYTHONDONTWRITEBYTECODE`` is set (it is in some sandboxes; an installed package has its
bytecode): run this once without it, or its first histories include compiling.

    python bench/chat_scale.py --quick            # 1,000 and 10,000 messages
    python bench/chat_scale.py                    # 1,000, 10,000 and 50,000
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SUBJECTS = [
    ("ferry", "Naxos", "Piraeus", "harbour", "tickets", "crossing"),
    ("sourdough", "starter", "flour", "oven", "crust", "proofing"),
    ("asyncio", "coroutine", "event loop", "socket", "await", "gather"),
    ("garden", "tomatoes", "watering", "compost", "seedlings", "stakes"),
    ("taxes", "receipts", "deadline", "accountant", "deduction", "forms"),
    ("marathon", "training", "intervals", "shoes", "recovery", "pace"),
    ("guitar", "chords", "strings", "tuning", "capo", "rhythm"),
    ("apartment", "lease", "landlord", "deposit", "heating", "repairs"),
]
FILLER = ("I think we should look again at the {b} and the {c} before deciding anything about the {a}; "
          "last time the {d} was the hard part, and the {e} took longer than planned ({n}).")
QUESTIONS = ["When does the ferry to Naxos leave from Piraeus?", "How do I feed a sourdough starter?",
             "Why does the asyncio event loop block on the socket?", "What did we say about the lease deposit?",
             "Which interval training plan did we pick for the marathon?"]


def message(n: int) -> dict:
    words = SUBJECTS[(n // 40) % len(SUBJECTS)]
    text = FILLER.format(a=words[0], b=words[1], c=words[2], d=words[3], e=words[4], n=n)
    return {"id": f"m{n}", "role": "Caroline" if n % 2 else "Melanie", "content": text,
            "timestamp": f"2026-01-{1 + n % 28:02d}T{n % 24:02d}:00:00+0000"}


def make_folder(size: int, model: str) -> Path:
    """A workspace with one chat of ``size`` messages (written here, in the parent process,
    so building it is not counted in the measured process's memory)."""
    root = Path(tempfile.mkdtemp(prefix="chat-scale-"))
    (root / ".memory").mkdir()
    (root / "notes.md").write_text("# Notes\n\nA workspace with one long chat.\n")
    chat = {"messages": [message(n) for n in range(size)], "topics": []}
    (root / ".memory" / "long.json").write_text(json.dumps(chat, indent=2))
    # The chat is over the default 1 MB file limit: raised, so the index holds all of it.
    (root / "smartcontext.toml").write_text(f'[index]\nmax_file_bytes = 100000000\n\n[embeddings]\nmodel = "{model}"\n')
    return root


def run_restart(root: Path, size: int, adds: int) -> dict:
    """A second process on the same folder, as a server restarted: the index is current
    and the chat was read before (its parse kept beside the index); its first history."""
    from smartcontext.tools import ToolRegistry

    reg = ToolRegistry.open(root)
    try:
        reg.context.ready_workspace()
        t0, c0 = time.perf_counter(), time.process_time()
        got = reg.call("chat_history", {"chat_id": "long", "message": QUESTIONS[0], "include_messages": False})
        restart, cpu = time.perf_counter() - t0, time.process_time() - c0
        assert got["success"] and got["total_messages"] == size + adds, got
    finally:
        reg.close()
    return {"history_restart_ms": 1000 * restart, "history_restart_cpu_ms": 1000 * cpu}


def run_one(root: Path, size: int, adds: int) -> dict:
    from smartcontext.tools import ToolRegistry

    reg = ToolRegistry.open(root)
    try:
        reg.context.ready_workspace()
        t0, c0 = time.perf_counter(), time.process_time()
        first = reg.call("chat_history", {"chat_id": "long", "message": QUESTIONS[0], "include_messages": False})
        cold, cold_cpu = time.perf_counter() - t0, time.process_time() - c0
        assert first["success"], first
        add_times, warm = [], []
        for n in range(adds):
            t0 = time.perf_counter()
            got = reg.call("chat_add_message", {"chat_id": "long", "role": "user",
                                                "content": f"One more thing about the ferry tickets, number {n}."})
            add_times.append(time.perf_counter() - t0)
            assert got["success"], got
            q = QUESTIONS[n % len(QUESTIONS)]
            t0 = time.perf_counter()
            hist = reg.call("chat_history", {"chat_id": "long", "message": q, "include_messages": False})
            warm.append(time.perf_counter() - t0)
            assert hist["success"] and hist["total_messages"] == size + n + 1, hist
        files = sorted(p.name for p in (root / ".memory").iterdir())
    finally:
        reg.close()
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"size": size, "file_mb": (root / ".memory" / "long.json").stat().st_size / 1e6,
            "add_p50_ms": 1000 * statistics.median(add_times), "add_max_ms": 1000 * max(add_times),
            "history_cold_ms": 1000 * cold, "history_cold_cpu_ms": 1000 * cold_cpu, "history_warm_ms": 1000 * statistics.median(warm),
            "peak_rss_mb": peak_kb / 1024, "segments": sum(f.endswith(".jsonl") for f in files)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="1,000 and 10,000 messages only")
    ap.add_argument("--sizes", type=int, nargs="*", help="chat sizes (default 1000 10000 50000)")
    ap.add_argument("--adds", type=int, default=30, help="messages added per size (default 30)")
    ap.add_argument("--model", default="none", help='embedding model (default "none": keyword-only)')
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)  # internal: run one size, print JSON
    ap.add_argument("--root", help=argparse.SUPPRESS)
    ap.add_argument("--restart", action="store_true", help=argparse.SUPPRESS)  # internal: with --one
    args = ap.parse_args()
    if args.one:
        run = run_restart if args.restart else run_one
        print(json.dumps(run(Path(args.root), args.one, args.adds)))
        return
    sizes = args.sizes or ([1000, 10000] if args.quick else [1000, 10000, 50000])
    rows = []
    for size in sizes:
        root = make_folder(size, args.model)
        try:
            row = {}
            for extra in ([], ["--restart"]):
                out = subprocess.run([sys.executable, __file__, "--one", str(size), "--root", str(root),
                                      "--adds", str(args.adds), *extra], capture_output=True, text=True, check=True,
                                     env={**os.environ, "SMARTCONTEXT_EMBEDDING_MODEL": args.model})
                row.update(json.loads(out.stdout.strip().splitlines()[-1]))
        finally:
            shutil.rmtree(root, ignore_errors=True)
        rows.append(row)
        print(f"{size}: {rows[-1]}", file=sys.stderr)
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"Command: `python bench/chat_scale.py{' --quick' if args.quick else ''}`, "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {os.cpu_count()} cores, load average {load} "
          f"at the end; embeddings: {args.model}; {args.adds} adds per size.\n")
    print("| messages | chat file | add p50 | add worst | history cold (CPU) | history, restarted (CPU) "
          "| history warm p50 | peak RSS |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['size']:,} | {r['file_mb']:.1f} MB | {r['add_p50_ms']:.1f} ms | {r['add_max_ms']:.1f} ms | "
              f"{r['history_cold_ms']:.0f} ms ({r['history_cold_cpu_ms']:.0f}) | "
              f"{r['history_restart_ms']:.0f} ms ({r['history_restart_cpu_ms']:.0f}) | {r['history_warm_ms']:.1f} ms | "
              f"{r['peak_rss_mb']:.0f} MB |")


if __name__ == "__main__":
    main()
