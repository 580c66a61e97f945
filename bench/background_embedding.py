"""Questions while a server embeds in the background (issue 8, "never block").

    python bench/background_embedding.py            # the hub vault (6,571 notes), 180 s window
    python bench/background_embedding.py --quick    # 600 of its notes, 60 s window

The Obsidian hub vault is unpacked and indexed keyword + graph only (what a server's
first build does). Then, through the real tool registry of a server (``ToolRegistry``,
the MCP server's own), the same questions are asked twice:

1. during: embeddings on (the shipped MiniLM), the registry's background embedder
   running, questions asked for the window (or until it finishes);
2. idle: the same server state (embeddings on, the vectors stored so far, the query
   model loaded) with the embedder stopped, so both phases do the same work per
   question (hybrid and context also embed the query) and differ only in the embedder.

Questions come at an agent's pace (``--pause`` seconds between them, 0.2 by default) in
both phases: asked back to back with no pause, they would take every cycle the
low-priority embedder could use.

It reports the latency of ``search`` (keyword mode: the pure cost of sharing the
machine and the index with the embedder; hybrid: also embeds the query and uses the
vectors landed so far) and ``context``, idle vs during as a ratio, the longest wait of
any question, how the vector count grew and the embedder's rate. Before this change a
server's refresh embedded under the index lock, so the first question after a change
waited for the whole embedding (the issue measured more than 75 s).

Results: ``bench/results/background_embedding[.quick].json``; the table for
docs/benchmarks.md is printed.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
import tarfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

from _vault_common import load_average, machine, median, quantile  # noqa: E402

from smartcontext import Workspace  # noqa: E402
from smartcontext.tools import ToolRegistry  # noqa: E402

ARCHIVE = ROOT.parent / "shared" / "datasets" / "obsidian-hub-vault.tar.gz"
WORK = ROOT / "bench" / ".work" / "background_embedding"
QUESTIONS = [
    "how do I sync my vault between devices", "dataview query for tasks due this week",
    "daily notes template", "graph view settings", "css snippet to change the theme font",
    "publish a vault as a website", "templater plugin date format", "backlinks and unlinked mentions",
    "kanban board plugin", "zettelkasten workflow", "spaced repetition flashcards", "canvas and excalidraw",
]


def prepare(notes: int | None, seed: int = 7) -> Path:
    """A fresh copy of the hub vault (or ``notes`` of its notes), indexed keyword + graph only."""
    if not ARCHIVE.exists():
        sys.exit(f"error: dataset not found: {ARCHIVE}")
    pristine = WORK / "pristine"
    if not pristine.exists():
        pristine.mkdir(parents=True)
        with tarfile.open(ARCHIVE) as tar:
            tar.extractall(pristine, filter="data")
    vault = WORK / ("vault-quick" if notes else "vault")
    if vault.exists():
        shutil.rmtree(vault)
    all_notes = sorted(p for p in pristine.rglob("*.md"))
    chosen = random.Random(seed).sample(all_notes, notes) if notes else all_notes
    for src in chosen:
        dst = vault / src.relative_to(pristine)
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dst)
    (vault / "smartcontext.toml").write_text('[embeddings]\nmodel = "local:minilm"\n')
    ws = Workspace.open(vault)
    ws.index(embeddings=False)
    ws.close()
    return vault


def ask(reg: ToolRegistry, name: str, args: dict) -> tuple[float, dict]:
    t0 = time.perf_counter()
    out = reg.call(name, args)
    elapsed = time.perf_counter() - t0
    if not out.get("success"):
        raise SystemExit(f"error: {name} failed: {out.get('error')}")
    return elapsed, out


def round_of_questions(reg: ToolRegistry, timings: dict[str, list[float]], log: list[dict], pause: float) -> None:
    for q in QUESTIONS:
        for name, args in (("search", {"query": q, "mode": "keyword"}), ("search", {"query": q}),
                           ("context", {"question": q, "max_tokens": 2000})):
            key = name if name == "context" else f"search {args.get('mode', 'hybrid')}"
            time.sleep(pause)
            elapsed, out = ask(reg, name, args)
            timings.setdefault(key, []).append(elapsed)
            emb = out.get("embedding")
            if emb:
                log.append({"t": time.monotonic(), "vectors": f"{emb['embedded']:,} / {emb['total']:,}",
                            "embedding": emb["state"]})


def measure(vault: Path, window: float, pause: float) -> dict:
    os.environ.pop("SMARTCONTEXT_EMBEDDING_MODEL", None)
    during: dict[str, list[float]] = {}
    progress: list[dict] = []
    reg = ToolRegistry.open(vault, refresh_interval=-1)
    try:
        ws = reg.context.workspace
        reg.context.ready_workspace()  # the first question's path: starts the background embedder
        job = ws.background
        start_vectors = ws.vector_progress()
        cpu0, t0 = time.process_time(), time.monotonic()
        round_of_questions(reg, {}, [], pause)  # warm: catalogue, page cache, query model
        while time.monotonic() - t0 < window and job.running:
            round_of_questions(reg, during, progress, pause)
        elapsed = time.monotonic() - t0
        cpu = time.process_time() - cpu0
        state = job.state().to_dict()
        job.stop(wait=60)
        end_vectors = ws.vector_progress()
        idle: dict[str, list[float]] = {}
        for _ in range(2):
            round_of_questions(reg, idle, [], pause)
    finally:
        reg.close()
    return {
        "idle": idle, "during": during, "window_s": round(elapsed, 1), "process_cpu_s": round(cpu, 1),
        "vectors_start": start_vectors, "vectors_end": end_vectors, "embedder": state,
        "progress": [{"t": round(p["t"] - t0, 2), "vectors": p["vectors"]} for p in progress[:: max(1, len(progress) // 20)]],
    }


def ms(x: float) -> str:
    return f"{x * 1000:,.1f} ms"


def table(result: dict) -> str:
    rows = ["| question | idle p50 | during p50 | ratio p50 | idle p95 | during p95 | longest during |",
            "|---|---:|---:|---:|---:|---:|---:|"]
    for key in ("search keyword", "search hybrid", "context"):
        a, b = result["idle"].get(key, []), result["during"].get(key, [])
        if not a or not b:
            continue
        rows.append(
            f"| `{key}` | {ms(median(a))} | {ms(median(b))} | {median(b) / median(a):.2f}x | "
            f"{ms(quantile(a, 0.95))} | {ms(quantile(b, 0.95))} | {ms(max(b))} |"
        )
    s, e = result["vectors_start"], result["vectors_end"]
    emb = result["embedder"]
    rows.append("")
    rows.append(
        f"Vectors {s[0]:,} / {s[1]:,} -> {e[0]:,} / {e[1]:,} in {result['window_s']} s while "
        f"{sum(len(v) for v in result['during'].values())} questions were answered; background "
        f"embedder {emb.get('items_per_second')} items/s (state {emb.get('state')}); "
        f"{result['pause_s']} s between questions; load average at the end {result['load_average_end']}."
    )
    return "\n".join(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="600 notes, a 60 s window")
    ap.add_argument("--notes", type=int, default=None, help="sample this many notes (default: all)")
    ap.add_argument("--window", type=float, default=None, help="seconds of questions during embedding")
    ap.add_argument("--pause", type=float, default=0.2, help="seconds between questions")
    args = ap.parse_args()
    notes = args.notes or (600 if args.quick else None)
    window = args.window or (60.0 if args.quick else 180.0)
    vault = prepare(notes)
    result = measure(vault, window, args.pause)
    result.update({
        "command": " ".join(["python", "bench/background_embedding.py", *sys.argv[1:]]),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": machine(), "load_average_end": load_average(), "notes": notes or "all",
        "pause_s": args.pause,
    })
    out = ROOT / "bench" / "results" / f"background_embedding{'.quick' if args.quick else ''}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2, default=str))
    print(table(result))
    print(f"\n(raw results: {out.relative_to(ROOT)})")


if __name__ == "__main__":
    main()
