"""Benchmark the Smart Connections reader: load, change checks, memory, search latency,
and the same searches as MCP tool calls (``--no-served`` leaves those out).

    python bench/smart_connections.py            # real vault (if present) + 4,000 generated notes
    python bench/smart_connections.py --quick    # 500 generated notes, fewer repetitions

Two vaults:
- the real plugin output in ../shared/datasets/smart-connections-vault.tar.gz (an error
  when absent; ``--no-real`` leaves it out). No package ships its model, bge-micro-v2, so
  free-text search is measured twice there: in keyword-rerank mode (the vault's own
  embeddings off) and in shipped-model mode (``smartcontext index`` embeds the notes'
  sections into the vault's index with the bundled MiniLM, once; then queries answer by
  meaning; ``--no-shipped`` leaves it out);
- a generated ``.smart-env`` of N notes shaped like the real one (one entry per note,
  4 embedded heading blocks, 8 short paragraph blocks without vectors, an older
  superseded note entry for 40% of notes, the plugin's metadata fields), with 384-d
  vectors stored under ``sentence-transformers/all-MiniLM-L6-v2`` so that the bundled
  MiniLM embeds queries and the model mode is measured end to end.

Targets from the issue: cold load of 4,000 notes < 1 s; warm no-change check < 5 ms;
search < 20 ms; warm similar_notes and semantic_search over MCP < 5 ms p50. Times are wall-clock medians on this machine; compare ratios across runs.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import sys
import tarfile
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from smartcontext import Workspace
from smartcontext.smart_connections import ajson
from smartcontext.smart_connections.cache import VectorCache
from smartcontext.smart_connections.reader import SmartConnections
from smartcontext.smart_connections.store import ParseStore

DATASET = ROOT.parent / "shared" / "datasets" / "smart-connections-vault.tar.gz"
GEN_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
QUERIES = [
    "gpu scheduling on kubernetes", "quantization of model weights", "attention is all you need",
    "cost optimization for inference", "distributed training checkpoints", "vector database search",
    "rdma infiniband networking", "evaluation as infrastructure", "paged attention vllm",
    "observability and tracing", "routing gateway between models", "weekly review of progress",
]
WORDS = ["gpu", "cluster", "kernel", "tensor", "model", "weights", "training", "inference", "latency", "batch", "token", "cache", "memory", "network", "storage", "queue", "scheduler", "pod", "node", "driver", "compiler", "graph", "attention", "layer", "vector", "index", "search", "query", "ranking", "budget", "cost", "review", "plan", "week", "goal", "paper", "note", "idea", "draft", "recipe", "garden", "music", "travel", "health", "finance", "meeting", "project", "roadmap", "design", "test", "deploy", "monitor", "alert"]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms"


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


def median_time(fn, runs: int) -> float:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def median_cpu(fn, runs: int) -> float:
    """CPU seconds of this process: steadier than wall time on a shared machine."""
    times = []
    for _ in range(runs):
        t = time.process_time()
        fn()
        times.append(time.process_time() - t)
    return statistics.median(times)


# -- the generated vault --------------------------------------------------------------


def generate_vault(root: Path, n_notes: int, seed: int = 1) -> dict:
    """Notes and a `.smart-env` like the plugin's, with clustered random 384-d vectors."""
    rng = np.random.default_rng(seed)
    env = root / ".smart-env"
    multi = env / "multi"
    multi.mkdir(parents=True)
    (env / "smart_env.json").write_text(json.dumps(
        {"smart_sources": {"embed_model": {"adapter": "transformers", "transformers": {"model_key": GEN_MODEL}}}}
    ))
    centers = rng.normal(size=(40, 384))
    now = 1_780_000_000_000

    def vec(center: np.ndarray) -> list[float]:
        v = center + 0.6 * rng.normal(size=384)
        v /= np.linalg.norm(v)
        return [round(float(x), 8) for x in v]

    def entry(key: str, value) -> str:
        return f"{json.dumps(key, ensure_ascii=False)}: {json.dumps(value, ensure_ascii=False, separators=(',', ':'))},"

    total_bytes = 0
    for i in range(n_notes):
        folder = f"Area {i % 20:02d}/Sub {i % 7}"
        path = f"{folder}/Note {i:05d}.md"
        topic = centers[i % len(centers)]
        words = rng.choice(WORDS, size=220)
        headings = [f"Section {k} {words[k]}" for k in range(4)]
        body = [f"---\ntags: [topic/{i % 40}, area{i % 20}]\n---", f"# Note {i}", ""]
        spans = {}
        for k, h in enumerate(headings):
            start = len(body) + 1
            body.append(f"## {h}")
            for p in range(2):
                body.append(" ".join(words[k * 50 + p * 25 : k * 50 + p * 25 + 25]) + f" #tag{(i + k) % 50}")
            body.append("")
            spans[f"#Note {i}#{h}"] = [start, len(body)]
        note = root / path
        note.parent.mkdir(parents=True, exist_ok=True)
        note.write_text("\n".join(body) + "\n", encoding="utf-8")

        blocks = dict(spans)
        for sub, span in list(spans.items()):
            blocks[f"{sub}#{{1}}"] = [span[0] + 1, span[0] + 1]
            blocks[f"{sub}#{{2}}"] = [span[0] + 2, span[0] + 2]

        def source_entry(at: int, path: str = path, i: int = i, topic: np.ndarray = topic, blocks: dict = blocks) -> str:
            return entry(f"smart_sources:{path}", {
                "path": path, "last_embed": {"hash": f"h{i}{at}", "at": at},
                "embeddings": {GEN_MODEL: {"vec": vec(topic), "last_embed": {"hash": f"h{i}{at}", "tokens": 300}}},
                "last_read": {"hash": f"h{i}{at}", "at": at}, "class_name": "SmartSource",
                "last_import": {"mtime": at, "size": 2000, "at": at, "hash": f"h{i}{at}"},
                "blocks": blocks, "outlinks": [{"title": f"Note {(i + 1) % n_notes:05d}", "target": f"Note {(i + 1) % n_notes:05d}", "line": 5}],
                "metadata": {"tags": [f"topic/{i % 40}"]}, "task_lines": [], "tasks": {}, "codeblock_ranges": [],
            })

        lines = []
        if rng.random() < 0.4:
            lines.append(source_entry(now - 86_400_000))  # an older state, superseded below
        lines.append(source_entry(now))
        for sub, span in blocks.items():
            embedded = not sub.endswith("}")
            lines.append(entry(f"smart_blocks:{path}{sub}", {
                "path": None, "last_embed": {"hash": f"b{i}" if embedded else None},
                "embeddings": {GEN_MODEL: {"vec": vec(topic)}} if embedded else {},
                "text": None, "length": 0, "last_read": {"hash": f"r{i}", "at": now},
                "key": f"{path}{sub}", "lines": span, "size": 400 if embedded else 80,
                "outlinks": [], "class_name": "SmartBlock",
            }))
        data = "\n" + "\n".join(lines)
        fname = re.sub(r"[\s/.]", "_", path) + ".ajson"
        (multi / fname).write_text(data, encoding="utf-8")
        total_bytes += len(data.encode("utf-8"))
    return {"notes": n_notes, "ajson_mb": total_bytes / 1e6}


# -- measurements ---------------------------------------------------------------------


def bench_load(multi: Path, model_key: str, runs: int) -> dict:
    out: dict = {}

    def cold(include_blocks: bool = True) -> VectorCache:
        c = VectorCache(multi, preferred_keys=[model_key], include_blocks=include_blocks)
        c.refresh()
        return c

    out["cold"] = median_time(cold, runs)
    out["cold_cpu"] = median_cpu(cold, runs)
    out["cold_notes_only"] = median_time(lambda: cold(False), runs)
    with tempfile.TemporaryDirectory(prefix="sc-store-") as store_dir:
        store_path = Path(store_dir) / "sc.sqlite"
        first = time.perf_counter()
        VectorCache(multi, preferred_keys=[model_key], store=ParseStore(store_path)).refresh()
        out["cold_with_store_save"] = time.perf_counter() - first

        def restore() -> None:
            c = VectorCache(multi, preferred_keys=[model_key], store=ParseStore(store_path))
            assert c.refresh().files_read == 0
            c.store.close()

        out["cold_restore"] = median_time(restore, runs)
        out["cold_restore_cpu"] = median_cpu(restore, runs)
        out["store_bytes"] = sum(p.stat().st_size for p in Path(store_dir).iterdir())  # + WAL
    saved = ajson._fastjson
    if saved is not None:
        ajson._fastjson = None  # what a machine without orjson gets
        try:
            out["cold_stdlib_json"] = median_time(cold, max(1, runs // 2))
        finally:
            ajson._fastjson = saved
    cache = cold()
    out["notes"], out["blocks"] = cache.counts()
    out["files"] = len(cache.files)
    out["dim"] = cache.dim
    used_rows = int(cache.alive().sum())
    out["vectors_bytes"] = used_rows * (cache.dim or 0) * 4
    out["notes_vectors_bytes"] = out["notes"] * (cache.dim or 0) * 4
    out["matrix_bytes"] = cache.memory_bytes()

    watched = VectorCache(multi, preferred_keys=[model_key], sweep_interval=0)
    watched.refresh()
    out["watching"] = watched.watching
    t = []
    for _ in range(2000):
        s = time.perf_counter()
        assert watched.refresh().check == "cached"
        t.append(time.perf_counter() - s)
    out["check_watch_p50"], out["check_watch_p95"] = pct(t, 50), pct(t, 95)
    cached = VectorCache(multi, preferred_keys=[model_key], sweep_interval=3600, watch=False)
    cached.refresh()
    t = []
    for _ in range(2000):
        s = time.perf_counter()
        assert cached.refresh().check == "cached"
        t.append(time.perf_counter() - s)
    out["check_cached_p50"], out["check_cached_p95"] = pct(t, 50), pct(t, 95)
    swept = VectorCache(multi, preferred_keys=[model_key], sweep_interval=0, watch=False)
    swept.refresh()
    t = []
    for _ in range(max(10, runs * 5)):
        s = time.perf_counter()
        assert swept.refresh().check == "swept"
        t.append(time.perf_counter() - s)
    out["check_swept_p50"], out["check_swept_p95"] = pct(t, 50), pct(t, 95)

    # One file rewritten by the plugin: append its note's entry again.
    name = sorted(swept.files)[len(swept.files) // 2]
    target = multi / name
    original = target.read_bytes()
    first_entry = original.strip().split(b"\n")[0]
    for label, cache in (("reload_one_file", swept), ("reload_one_file_watch", watched)):
        t = []
        for _ in range(5):
            with target.open("ab") as fh:
                fh.write(b"\n" + first_entry)
            s = time.perf_counter()
            st = cache.refresh()
            t.append(time.perf_counter() - s)
            assert st.files_read == 1, st
        out[label] = statistics.median(t)
    target.write_bytes(original)
    watched.close()

    tracemalloc.start()
    kept = cold()
    current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    out["tracemalloc_current"], out["tracemalloc_peak"] = current, peak
    del kept
    return out


def bench_search(vault: Path, runs: int, **options) -> dict:
    sc = SmartConnections(vault, use_hf_cache=False, sweep_interval=1.0, **options)
    sc.refresh()
    first = time.perf_counter()
    res = sc.semantic_search(QUERIES[0])  # builds the query model or the keyword index
    out = {"mode": res.mode, "first_query": time.perf_counter() - first}
    if res.mode == "keyword-rerank":
        # What a new process pays once the vault's workspace index exists (a new reader
        # opens the vault's workspace anew).
        again = SmartConnections(vault, use_hf_cache=False, sweep_interval=1.0, **options)
        again.refresh()
        first = time.perf_counter()
        again.semantic_search(QUERIES[1])
        out["first_query_indexed"] = time.perf_counter() - first
        again.close()
    times = []
    for q in QUERIES:  # each query once more, as the first time: embedding included
        sc._query_vectors.clear()
        s = time.perf_counter()
        sc.semantic_search(q, limit=10)
        times.append(time.perf_counter() - s)
    out["search_fresh_p50"], out["search_fresh_p95"] = pct(times, 50), pct(times, 95)
    for label, kwargs in (
        ("notes", {}),
        ("both", {"scope": "both"}),
        ("filtered", {"scope": "both", "paths": [sc._cache.note_paths()[0].split("/")[0]], "tags": ["topic"]}),
    ):
        times = []
        for r in range(runs):
            for q in QUERIES:
                s = time.perf_counter()
                sc.semantic_search(q, limit=10, **kwargs)
                times.append(time.perf_counter() - s)
        out[f"search_{label}_p50"], out[f"search_{label}_p95"] = pct(times, 50), pct(times, 95)
    paths = [sc._cache.note_paths()[i] for i in range(0, len(sc._cache.note_paths()), max(1, len(sc._cache.note_paths()) // 50))]
    times = []
    for p in paths:
        s = time.perf_counter()
        sc.similar_notes(p, limit=10)
        times.append(time.perf_counter() - s)
    out["similar_p50"], out["similar_p95"] = pct(times, 50), pct(times, 95)
    if res.mode == "model":
        qm = sc._find_query_model().embedder
        times = []
        for q in QUERIES * runs:
            s = time.perf_counter()
            qm.embed_query(q)
            times.append(time.perf_counter() - s)
        out["embed_query_p50"] = pct(times, 50)
    sc.close()
    return out


def bench_served(vault: Path, runs: int) -> dict:
    """``similar_notes`` and ``semantic_search`` as an agent gets them: tool calls over MCP
    (the SDK's stdio client, a ``smartcontext serve mcp`` process on the vault), each tool
    called once untimed first. The reader figures above say nothing about a server that
    rebuilds its reader per call; these do."""
    from served import bench_mcp

    sc = SmartConnections(vault, use_hf_cache=False)
    sc.refresh()
    notes = [p for p in sc._cache.note_paths() if sc._cache.has_rows(p)]
    sc.close()
    paths = notes[:: max(1, len(notes) // 50)]
    args = {
        "similar_notes": [{"path": p, "limit": 10} for p in paths],
        "semantic_search": [{"query": q, "limit": 10} for q in QUERIES * runs],
    }
    # The same settings as bench_search: the vault's own embeddings off (no background
    # embedding competes with the calls; the real vault answers by keyword-rerank).
    times = bench_mcp(vault, args, "stdio", {"SMARTCONTEXT_EMBEDDING_MODEL": "none"})
    return {
        "mcp_similar_p50": pct(times["similar_notes"], 50) / 1000, "mcp_similar_p95": pct(times["similar_notes"], 95) / 1000,
        "mcp_search_p50": pct(times["semantic_search"], 50) / 1000, "mcp_search_p95": pct(times["semantic_search"], 95) / 1000,
    }


def bench_shipped(vault: Path) -> dict:
    """Shipped-model mode on a vault whose plugin model is missing: the first query embeds
    every section (once), a new process finds them on disk, then queries cost a query
    embedding and a matrix product."""
    os.environ.pop("SMARTCONTEXT_EMBEDDING_MODEL", None)
    sc = SmartConnections(vault, use_hf_cache=False, sweep_interval=1.0)
    sc.refresh()
    before = sc.semantic_search(QUERIES[0])  # a whole vault is left to `index`: keyword-rerank
    ws = Workspace.open(vault)
    cpu, first = time.process_time(), time.perf_counter()
    stats = ws.index()  # what the answer's warning asks for: `smartcontext index VAULT`
    out = {"mode_before_index": before.mode, "index_embed": time.perf_counter() - first,
           "index_embed_cpu": time.process_time() - cpu, "sections": stats.embedded + stats.embed_cache_hits}
    ws.close()
    sc.close()
    again = SmartConnections(vault, use_hf_cache=False, sweep_interval=1.0)
    again.refresh()
    first = time.perf_counter()
    res = again.semantic_search(QUERIES[1])
    out["first_query_indexed"] = time.perf_counter() - first
    out["mode"], out["method"] = res.mode, res.method
    times = []
    for q in QUERIES:
        again._query_vectors.clear()
        s = time.perf_counter()
        again.semantic_search(q, limit=10)
        times.append(time.perf_counter() - s)
    out["search_fresh_p50"], out["search_fresh_p95"] = pct(times, 50), pct(times, 95)
    again.close()
    return out


def table(rows: list[tuple[str, str, str]]) -> str:
    lines = ["| measurement | real vault | generated |", "|---|---|---|"]
    lines += [f"| {a} | {b} | {c} |" for a, b, c in rows]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="500 generated notes, fewer repetitions")
    ap.add_argument("--notes", type=int, default=None, help="generated notes (default 4000; 500 with --quick)")
    ap.add_argument("--runs", type=int, default=None, help="repetitions per timing (default 5; 2 with --quick)")
    ap.add_argument("--dataset", type=Path, default=DATASET, help="the real vault's .tar.gz")
    ap.add_argument("--no-real", action="store_true", help="measure the generated vault only")
    ap.add_argument("--no-shipped", action="store_true", help="leave out shipped-model mode on the real vault")
    ap.add_argument("--no-served", action="store_true", help="leave out the tool calls over MCP")
    args = ap.parse_args()
    if not args.no_real and not args.dataset.is_file():
        # Loud, not a note: a run without the real vault must be asked for (--no-real).
        raise SystemExit(f"error: dataset not found: {args.dataset} (pass --dataset PATH, or --no-real)")
    n_notes = args.notes or (500 if args.quick else 4000)
    runs = args.runs or (2 if args.quick else 5)

    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="sc-bench-") as tmp:
        tmp = Path(tmp)
        if not args.no_real:
            real = tmp / "real"
            with tarfile.open(args.dataset) as tar:
                tar.extractall(real, filter="data")
            ajson_mb = sum(f.stat().st_size for f in (real / ".smart-env" / "multi").iterdir()) / 1e6
            results["real"] = {"ajson_mb": ajson_mb, **bench_load(real / ".smart-env" / "multi", "TaylorAI/bge-micro-v2", runs)}
            # keyword-rerank: what answers without the plugin's model when the vault's own
            # embeddings are off (with them on, shipped-model mode answers, measured below)
            os.environ["SMARTCONTEXT_EMBEDDING_MODEL"] = "none"
            results["real"].update(bench_search(real, runs))
            if not args.no_served:
                results["real"].update(bench_served(real, runs))
            os.environ.pop("SMARTCONTEXT_EMBEDDING_MODEL")
            if not args.no_shipped:
                results["shipped"] = bench_shipped(real)
        else:
            print("(real vault left out: --no-real)", file=sys.stderr)
        gen = tmp / "gen"
        t = time.perf_counter()
        info = generate_vault(gen, n_notes)
        print(f"generated {n_notes} notes ({info['ajson_mb']:.0f} MB of .ajson) in {time.perf_counter() - t:.1f} s",
              file=sys.stderr)
        results["gen"] = {**info, **bench_load(gen / ".smart-env" / "multi", GEN_MODEL, runs)}
        results["gen"].update(bench_search(gen, runs))
        if not args.no_served:
            results["gen"].update(bench_served(gen, runs))

    r, g = results.get("real", {}), results["gen"]

    def cell(d: dict, key: str, fmt) -> str:
        return fmt(d[key]) if key in d else "-"

    mb = lambda b: f"{b / 1e6:.1f} MB"
    rows = [
        ("notes / blocks with vectors", cell(r, "notes", lambda _: f"{r['notes']} / {r['blocks']}"),
         f"{g['notes']} / {g['blocks']}"),
        (".ajson on disk", cell(r, "ajson_mb", lambda v: f"{v:.1f} MB"), f"{g['ajson_mb']:.1f} MB"),
        ("cold load (all vectors)", cell(r, "cold", ms), ms(g["cold"])),
        ("cold load (all vectors), CPU time", cell(r, "cold_cpu", ms), ms(g["cold_cpu"])),
        ("cold load (notes only)", cell(r, "cold_notes_only", ms), ms(g["cold_notes_only"])),
        ("cold load, stdlib json (no orjson)", cell(r, "cold_stdlib_json", ms), cell(g, "cold_stdlib_json", ms)),
        ("first load + saving the parse store", cell(r, "cold_with_store_save", ms), ms(g["cold_with_store_save"])),
        ("cold load of a new process from the store", cell(r, "cold_restore", ms), ms(g["cold_restore"])),
        ("cold load from the store, CPU time", cell(r, "cold_restore_cpu", ms), ms(g["cold_restore_cpu"])),
        ("parse store on disk", cell(r, "store_bytes", mb), mb(g["store_bytes"])),
        ("no-change check, inotify watch (p50 / p95)", cell(r, "check_watch_p50", lambda _: f"{ms(r['check_watch_p50'])} / {ms(r['check_watch_p95'])}"),
         f"{ms(g['check_watch_p50'])} / {ms(g['check_watch_p95'])}" + ("" if g.get("watching") else " (no watch: sweep)")),
        ("no-change check without a watch, between sweeps (p50 / p95)", cell(r, "check_cached_p50", lambda _: f"{ms(r['check_cached_p50'])} / {ms(r['check_cached_p95'])}"),
         f"{ms(g['check_cached_p50'])} / {ms(g['check_cached_p95'])}"),
        ("no-change check without a watch, stat sweep of every file (p50 / p95)", cell(r, "check_swept_p50", lambda _: f"{ms(r['check_swept_p50'])} / {ms(r['check_swept_p95'])}"),
         f"{ms(g['check_swept_p50'])} / {ms(g['check_swept_p95'])}"),
        ("one file appended: watch + reload", cell(r, "reload_one_file_watch", ms), ms(g["reload_one_file_watch"])),
        ("one file appended: sweep + reload", cell(r, "reload_one_file", ms), ms(g["reload_one_file"])),
        ("vectors float32 (all / notes only)", cell(r, "vectors_bytes", lambda _: f"{mb(r['vectors_bytes'])} / {mb(r['notes_vectors_bytes'])}"),
         f"{mb(g['vectors_bytes'])} / {mb(g['notes_vectors_bytes'])}"),
        ("matrix + row arrays (nbytes)", cell(r, "matrix_bytes", mb), mb(g["matrix_bytes"])),
        ("tracemalloc after load / peak during load", cell(r, "tracemalloc_peak", lambda _: f"{mb(r['tracemalloc_current'])} / {mb(r['tracemalloc_peak'])}"),
         f"{mb(g['tracemalloc_current'])} / {mb(g['tracemalloc_peak'])}"),
        ("search mode", cell(r, "mode", str), g["mode"]),
        ("first query (loads model / builds keyword index)", cell(r, "first_query", ms), ms(g["first_query"])),
        ("first query of a new process, keyword index already on disk", cell(r, "first_query_indexed", ms),
         cell(g, "first_query_indexed", ms)),
        ("search notes, new query (embedding included) p50 / p95", cell(r, "search_fresh_p50", lambda _: f"{ms(r['search_fresh_p50'])} / {ms(r['search_fresh_p95'])}"),
         f"{ms(g['search_fresh_p50'])} / {ms(g['search_fresh_p95'])}"),
        ("search notes, repeated query p50 / p95", cell(r, "search_notes_p50", lambda _: f"{ms(r['search_notes_p50'])} / {ms(r['search_notes_p95'])}"),
         f"{ms(g['search_notes_p50'])} / {ms(g['search_notes_p95'])}"),
        ("search notes+blocks p50 / p95", cell(r, "search_both_p50", lambda _: f"{ms(r['search_both_p50'])} / {ms(r['search_both_p95'])}"),
         f"{ms(g['search_both_p50'])} / {ms(g['search_both_p95'])}"),
        ("search with path+tag filter p50 / p95", cell(r, "search_filtered_p50", lambda _: f"{ms(r['search_filtered_p50'])} / {ms(r['search_filtered_p95'])}"),
         f"{ms(g['search_filtered_p50'])} / {ms(g['search_filtered_p95'])}"),
        ("  of which query embedding p50", "-", cell(g, "embed_query_p50", ms)),
        ("similar_notes p50 / p95", cell(r, "similar_p50", lambda _: f"{ms(r['similar_p50'])} / {ms(r['similar_p95'])}"),
         f"{ms(g['similar_p50'])} / {ms(g['similar_p95'])}"),
        ("similar_notes over MCP stdio p50 / p95", cell(r, "mcp_similar_p50", lambda _: f"{ms(r['mcp_similar_p50'])} / {ms(r['mcp_similar_p95'])}"),
         cell(g, "mcp_similar_p50", lambda _: f"{ms(g['mcp_similar_p50'])} / {ms(g['mcp_similar_p95'])}")),
        ("semantic_search over MCP stdio, repeated query p50 / p95", cell(r, "mcp_search_p50", lambda _: f"{ms(r['mcp_search_p50'])} / {ms(r['mcp_search_p95'])}"),
         cell(g, "mcp_search_p50", lambda _: f"{ms(g['mcp_search_p50'])} / {ms(g['mcp_search_p95'])}")),
    ]
    print(f"## Smart Connections reader ({'quick' if args.quick else 'full'})\n")
    print(f"`python bench/smart_connections.py{' --quick' if args.quick else ''}` - {time.strftime('%Y-%m-%d')}, "
          f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"load average {os.getloadavg()[0]:.1f}; generated vault: {n_notes} notes; medians of {runs} runs\n")
    print(table(rows))
    sh = results.get("shipped")
    if sh:
        print(f"\nReal vault, shipped-model mode ({sh['method']}):\n")
        print("| measurement | value |\n|---|---|")
        print(f"| before `index`: a query answers by | {sh['mode_before_index']} (and says to run `index`) |")
        print(f"| `smartcontext index`: embeds every section once ({sh['sections']:,}) | {sh['index_embed']:.1f} s "
              f"(CPU {sh['index_embed_cpu']:.1f} s; {sh['sections'] / sh['index_embed']:.1f} sections/s) |")
        print(f"| first query of a new process, vectors on disk | {ms(sh['first_query_indexed'])} |")
        print(f"| search notes, new query (query embedding included) p50 / p95 | "
              f"{ms(sh['search_fresh_p50'])} / {ms(sh['search_fresh_p95'])} |")


if __name__ == "__main__":
    main()
