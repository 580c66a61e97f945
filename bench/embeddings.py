"""Embedding speed and quality (issue 8): how fast each embedding option embeds the hub
vault's sections, and what it does to retrieval quality on LoCoMo.

Options (each measured in a worker process of its own, so its CPU time and memory are its own):
  minilm            today's settings: all-MiniLM-L6-v2 int8, 256 tokens, model batches of 16,
                    texts handed over 32 at a time in index order (what `index` does)
  minilm-sorted     the same model, all pending texts sorted by length first (less padding)
  minilm-128        sorted, and cut at 128 tokens instead of 256
  minilm-1thread    sorted, one onnxruntime thread (CPU per item; two can run side by side)
  static            the static model distilled from the shipped MiniLM (`local:static`)

Speed: MiniLM options embed a fixed random sample of the hub vault's sections (their
time for the whole vault is extrapolated); the static model embeds all of them, and its
one-time build from MiniLM is timed in a fresh cache folder. Items/s are wall time; CPU
seconds (all threads of the worker) are reported beside them because the machine is shared.
End to end, the whole hub vault is then indexed with the static model through
`Workspace.index(embeddings=True)` (parse, store, embed), and the index size measured.
Quality: bench/vault.py's LoCoMo part (keyword / semantic / hybrid Recall@10), once per model.

    python bench/embeddings.py --quick     # 150-section sample, one LoCoMo conversation
    python bench/embeddings.py             # 600-section sample, all 5 conversations

Results: bench/results/embeddings.md and .json (embeddings.quick.* with --quick).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import resource
import shlex
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _vault_hub as hub
import _vault_locomo as locomo
from _vault_common import DATASETS, RESULTS_DIR, clean_env, fmt, load_average, machine, peak_rss_mb
from _vault_common import run_worker as run_in_worker

WORK = Path(__file__).resolve().parent / ".work" / "embeddings"
TODAY_HANDOVER = 32  # Workspace.index hands embed_pending batches of [embeddings] batch_size

# name -> (spec, options, sorted, what it is)
OPTIONS: dict[str, tuple[str, dict[str, Any], bool, str]] = {
    "minilm": ("local:minilm", {}, False, "today: MiniLM int8, 256 tokens, batches of 16, texts in index order"),
    "minilm-sorted": ("local:minilm", {}, True, "MiniLM, all texts sorted by length"),
    "minilm-128": ("local:minilm", {"max_length": 128}, True, "MiniLM, sorted, cut at 128 tokens"),
    "minilm-1thread": ("local:minilm", {"threads": 1}, True, "MiniLM, sorted, 1 onnxruntime thread"),
    "static": ("local:static", {}, True, "static model distilled from MiniLM (PCA 256, Zipf SIF)"),
}
LOCOMO_MODELS = {"minilm": "local:minilm", "static": "local:static"}


def cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


# ---------------------------------------------------------------- workers


def worker_texts(job: dict) -> dict:
    """Index the hub vault without embeddings and dump each item's embedding text."""
    from smartcontext import Workspace
    from smartcontext.indexer import embed_text

    clean_env()
    root = Path(job["root"])
    hub.copy_tree(Path(job["pristine"]), root)
    ws = Workspace.open(root)
    ws.index(embeddings=False)
    rows = ws.store.items_by_rowids([r.rowid for r in ws.store.item_light_rows()])
    texts = [embed_text(rows[r].item) for r in sorted(rows)]
    ws.close()
    Path(job["out"]).write_text(json.dumps(texts))
    return {"items": len(texts)}


def worker_speed(job: dict) -> dict:
    from smartcontext.embeddings import get_embedder

    clean_env()
    spec, options, length_sorted, _ = OPTIONS[job["option"]]
    texts = json.loads(Path(job["texts"]).read_text())
    if job.get("sample"):
        texts = [texts[i] for i in job["sample"]]
    emb = get_embedder(spec, **options)
    emb.embed(["warm up: load the model"])  # loading (or reading a cached table) is not per-item work
    order = sorted(range(len(texts)), key=lambda i: len(texts[i])) if length_sorted else list(range(len(texts)))
    # Character length orders texts nearly as token length does, without tokenising twice.
    c0, t0 = cpu_seconds(), time.perf_counter()
    out = []
    for start in range(0, len(order), job["handover"]):
        out.append(emb.embed([texts[i] for i in order[start : start + job["handover"]]]))
    wall, cpu = time.perf_counter() - t0, cpu_seconds() - c0
    res = {"option": job["option"], "name": emb.name, "dim": emb.dim, "items": len(texts),
           "wall_s": wall, "cpu_s": cpu, "items_per_s": len(texts) / wall, "items_per_cpu_s": len(texts) / cpu,
           "peak_rss_mb": peak_rss_mb()}
    if hasattr(emb, "_load"):
        tok = emb._load().tokenizer  # the embedder's own tokenizer, truncation included
        lengths = [len(e.ids) for e in tok.encode_batch(texts)]
        res["mean_tokens"] = sum(lengths) / max(1, len(lengths))
        res["truncated_share"] = sum(1 for n in lengths if n >= emb.max_length) / max(1, len(lengths))
    return res


def worker_static_build(job: dict) -> dict:
    """The static model's one-time build, in an empty cache folder (a fresh machine)."""
    from smartcontext.embeddings.local_onnx import default_model_files
    from smartcontext.embeddings.static import StaticEmbedder

    with tempfile.TemporaryDirectory() as cache:
        model, tokenizer = default_model_files()
        emb = StaticEmbedder(model, tokenizer, cache=cache)
        c0, t0 = cpu_seconds(), time.perf_counter()
        emb.prepare()
        wall, cpu = time.perf_counter() - t0, cpu_seconds() - c0
        size = emb.cache_path.stat().st_size
        c1, t1 = cpu_seconds(), time.perf_counter()
        StaticEmbedder(model, tokenizer, cache=cache).prepare()  # a later process: read the cache
        load_wall, load_cpu = time.perf_counter() - t1, cpu_seconds() - c1
    return {"build_wall_s": wall, "build_cpu_s": cpu, "cache_bytes": size,
            "load_wall_s": load_wall, "load_cpu_s": load_cpu, "peak_rss_mb": peak_rss_mb()}


def index_bytes(root: Path) -> int:
    import sqlite3

    folder = root / ".smartcontext"
    db = sqlite3.connect(folder / "index.db")
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # so the main file holds every page
    db.close()
    return sum(p.stat().st_size for p in folder.glob("index.db*"))


def worker_hub_index(job: dict) -> dict:
    """The whole hub vault indexed with vectors through the engine, and its index size."""
    from smartcontext import Workspace

    clean_env()
    os.environ["SMARTCONTEXT_EMBEDDING_MODEL"] = job["model"]
    root = Path(job["root"])
    hub.copy_tree(Path(job["pristine"]), root)
    ws = Workspace.open(root)
    vectors = job["model"] != "none"
    if vectors:
        ws.embedder().embed(["warm up: load the model"])
    c0, t0 = cpu_seconds(), time.perf_counter()
    st = ws.index(embeddings=vectors)
    wall, cpu = time.perf_counter() - t0, cpu_seconds() - c0
    counts = ws.store.counts()
    ws.close()
    return {"model": job["model"], "cold_s": wall, "cpu_s": cpu, "seconds": st.seconds, "embedded": st.embedded,
            "items": counts["items"], "index_bytes": index_bytes(root), "peak_rss_mb": peak_rss_mb()}


def worker_locomo(job: dict) -> dict:
    res = locomo.run(job)
    res["index_bytes"] = index_bytes(Path(job["root"]))
    res.pop("questions", None)
    return res


WORKERS = {"texts": worker_texts, "speed": worker_speed, "static-build": worker_static_build,
           "hub-index": worker_hub_index, "locomo": worker_locomo}


def run_worker(kind: str, job: dict, label: str, timeout: int) -> dict:
    return run_in_worker(__file__, kind, job, label, WORK, timeout, "embeddings")


# ---------------------------------------------------------------- orchestration


def hub_texts(args: argparse.Namespace) -> Path:
    archive = args.datasets / hub.ARCHIVE_NAME
    if not archive.exists():
        raise SystemExit(f"error: dataset not found: {archive} (pass --datasets DIR)")
    pristine, out = WORK / "hub-src", WORK / "hub-texts.json"
    if not pristine.exists():
        hub.unpack(archive, pristine)
    if not out.exists():
        run_worker("texts", {"pristine": str(pristine), "root": str(WORK / "hub-texts"), "out": str(out)},
                   "hub-texts", args.timeout)
    return out


def run_all(args: argparse.Namespace) -> dict[str, Any]:
    texts_file = hub_texts(args)
    n_items = len(json.loads(texts_file.read_text()))
    sample = sorted(random.Random(args.seed).sample(range(n_items), min(args.sample, n_items)))
    out: dict[str, Any] = {"hub_items": n_items, "sample": len(sample), "speed": {}}
    for name in args.options:
        job = {"option": name, "texts": str(texts_file), "handover": TODAY_HANDOVER,
               "sample": None if name == "static" else sample}
        out["speed"][name] = run_worker("speed", job, f"speed-{name}", args.timeout)
    if "static" in args.options:
        out["static_build"] = run_worker("static-build", {}, "static-build", args.timeout)
        out["hub_index"] = run_worker("hub-index", {"model": "local:static", "pristine": str(WORK / "hub-src"),
                                                    "root": str(WORK / "hub-static")}, "hub-index-static", args.timeout)
        out["hub_index_none"] = run_worker("hub-index", {"model": "none", "pristine": str(WORK / "hub-src"),
                                                         "root": str(WORK / "hub-none")}, "hub-index-none", args.timeout)
    dataset = args.datasets / "locomo" / "dev.json"
    if not dataset.exists():
        raise SystemExit(f"error: dataset not found: {dataset} (pass --datasets DIR)")
    out["locomo"] = {}
    for name, spec in LOCOMO_MODELS.items():
        if name in args.locomo:
            out["locomo"][name] = run_worker("locomo", {
                "dataset": str(dataset), "root": str(WORK / f"locomo-{name}"),
                "conversations": args.conversations, "model": spec}, f"locomo-{name}", args.timeout)
    return out


# ---------------------------------------------------------------- report


def report_lines(r: dict[str, Any]) -> list[str]:
    res, mach = r["results"], r["machine"]
    speed, n_hub = res["speed"], res["hub_items"]
    base = speed.get("minilm")
    lines = [
        "# Embeddings benchmark" + (" (quick)" if r["quick"] else ""), "",
        f"- command: `{r['command']}`", f"- date: {r['date']}",
        (f"- machine: {mach['nproc']} cores, {mach['cpu']}, Python {mach['python']}; load average at start "
         f"{r['load_start']}, at end {r['load_end']} (shared machine: compare ratios and CPU seconds)"),
        f"- hub vault: {n_hub:,} section items; MiniLM options embed a fixed sample of {res['sample']:,} of them",
        "", "## Speed on the hub vault's sections", "",
        "| option | what | texts | wall s | CPU s | items/s (wall) | items/CPU s | x today (wall) | x today (CPU) "
        "| hub vault, embedding only | mean tokens | cut | dim | peak RSS MB |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, s in speed.items():
        ratio_w = s["items_per_s"] / base["items_per_s"] if base else float("nan")
        ratio_c = s["items_per_cpu_s"] / base["items_per_cpu_s"] if base else float("nan")
        hub_s = n_hub / s["items_per_s"]
        lines.append(
            f"| {name} | {OPTIONS[name][3]} | {s['items']:,} | {fmt(s['wall_s'], 2)} | {fmt(s['cpu_s'], 2)} | "
            f"{fmt(s['items_per_s'], 1)} | {fmt(s['items_per_cpu_s'], 1)} | {fmt(ratio_w, 2)} | {fmt(ratio_c, 2)} | "
            f"{fmt(hub_s / 60, 1)} min{'' if s['items'] == n_hub else ' (extrapolated)'} | "
            f"{fmt(s.get('mean_tokens'), 0)} | {fmt(100 * s['truncated_share'], 1) + '%' if 'truncated_share' in s else '–'} "
            f"| {s['dim']} | {fmt(s['peak_rss_mb'], 0)} |")
    if "static_build" in res:
        b = res["static_build"]
        lines += ["", (f"Static model, one-time build from MiniLM in an empty cache: {fmt(b['build_wall_s'], 1)} s wall, "
                       f"{fmt(b['build_cpu_s'], 1)} CPU s; cache file {b['cache_bytes'] / 2**20:.1f} MiB; reading it in "
                       f"a later process {fmt(1000 * b['load_wall_s'], 0)} ms.")]
    if "hub_index" in res:
        h, z = res["hub_index"], res["hub_index_none"]
        lines += ["", "## The whole hub vault through `index` (parse, store, embed)", "",
                  "| model | cold index s | CPU s | embed s | texts embedded | index MB | bytes per vector |",
                  "|---|---|---|---|---|---|---|"]
        for row in (z, h):
            per_vec = (row["index_bytes"] - z["index_bytes"]) / max(1, row["embedded"]) if row is h else None
            lines.append(f"| {row['model']} | {fmt(row['cold_s'], 1)} | {fmt(row['cpu_s'], 1)} | "
                         f"{fmt(row['seconds'].get('embed'), 1)} | {row['embedded']:,} | "
                         f"{row['index_bytes'] / 1e6:.1f} | {fmt(per_vec, 0)} |")
    if res.get("locomo"):
        lines += ["", "## LoCoMo retrieval (bench/vault.py's LoCoMo part), categories 1-4", "",
                  "| model | mode | n | Recall@5 | Recall@10 | nDCG@10 | all@10 | index MB | index s |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for name, lr in res["locomo"].items():
            for mode, m in lr["results"]["cat 1-4"]["modes"].items():
                lines.append(
                    f"| {name} | {mode} | {m['n']} | {fmt(100 * m['r5'], 1)} | {fmt(100 * m['r10'], 1)} | "
                    f"{fmt(100 * m['ndcg10'], 1)} | {fmt(100 * m['all10'], 1)} | {lr['index_bytes'] / 1e6:.1f} | "
                    f"{fmt(lr['index_s'], 1)} |")
        lines += ["", "Category 5 (adversarial):", "", "| model | mode | n | Recall@10 |", "|---|---|---|---|"]
        for name, lr in res["locomo"].items():
            for mode, m in lr["results"]["cat 5"]["modes"].items():
                lines.append(f"| {name} | {mode} | {m['n']} | {fmt(100 * m['r10'], 1)} |")
    return lines


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="150-section sample, one LoCoMo conversation")
    p.add_argument("--datasets", type=Path, default=DATASETS)
    p.add_argument("--sample", type=int, default=None, help="hub sections for MiniLM options (default 600; quick 150)")
    p.add_argument("--conversations", type=int, default=None, help="LoCoMo conversations (default all 5; quick 1)")
    p.add_argument("--options", default=",".join(OPTIONS), help=f"comma-separated, of {', '.join(OPTIONS)}")
    p.add_argument("--locomo", default=",".join(LOCOMO_MODELS), help="models for LoCoMo ('' for none)")
    p.add_argument("--seed", type=int, default=13)
    p.add_argument("--out", type=Path, default=None, help="output path without suffix")
    p.add_argument("--timeout", type=int, default=7200, help="seconds per worker")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--job", type=Path, help=argparse.SUPPRESS)
    p.add_argument("--result", type=Path, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    args.sample = args.sample or (150 if args.quick else 600)
    args.conversations = args.conversations if args.conversations is not None else (1 if args.quick else 0)
    args.options = [o.strip() for o in args.options.split(",") if o.strip()]
    args.locomo = [o.strip() for o in args.locomo.split(",") if o.strip()]
    unknown = (set(args.options) - set(OPTIONS)) | (set(args.locomo) - set(LOCOMO_MODELS))
    if unknown:
        p.error(f"unknown options {sorted(unknown)}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.worker:
        result = WORKERS[args.worker](json.loads(args.job.read_text()))
        args.result.write_text(json.dumps(result, default=float))
        return 0
    WORK.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    report: dict[str, Any] = {
        "command": "python bench/embeddings.py" + (" " + shlex.join(sys.argv[1:]) if sys.argv[1:] else ""),
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": machine(), "load_start": load_average(), "quick": args.quick,
    }
    report["results"] = run_all(args)
    report["load_end"] = load_average()
    report["seconds"] = time.perf_counter() - t0
    out = args.out or RESULTS_DIR / ("embeddings.quick" if args.quick else "embeddings")
    out.parent.mkdir(parents=True, exist_ok=True)
    (out.parent / (out.name + ".json")).write_text(json.dumps(report, indent=1, default=float))
    text = "\n".join(report_lines(report)) + "\n"
    (out.parent / (out.name + ".md")).write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
