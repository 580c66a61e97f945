"""find_backlinks on the Obsidian hub vault: from the index (links are edges) against
reading every note, through the tool registry as the servers call it.

    python bench/backlinks.py                       # SQLite, the full hub vault
    python bench/backlinks.py --store URL           # PostgreSQL (URL of a server; &workspace= is added)
    python bench/backlinks.py --quick               # 500 notes

The vault is unpacked from ../shared/datasets/obsidian-hub-vault.tar.gz (or --vault) and
indexed without embeddings first (not timed). Every name is asked twice; the table gives
the first call (a new registry) and p50 / p95 / max of the rest, and the same through the
vault tools without an index (each note read and its links resolved).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _vault_hub import ARCHIVE_NAME, list_notes, unpack  # noqa: E402

DATASETS = Path(__file__).resolve().parents[2] / "shared" / "datasets"


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def timings(call, names: list[str]) -> tuple[float, list[float]]:
    start = time.perf_counter()
    call(names[0])
    first = (time.perf_counter() - start) * 1000
    warm = []
    for name in names * 2:
        start = time.perf_counter()
        call(name)
        warm.append((time.perf_counter() - start) * 1000)
    return first, warm


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--vault", type=Path, help="an unpacked vault (default: the hub vault, unpacked)")
    parser.add_argument("--store", default="", help="a PostgreSQL URL (default: SQLite in the vault)")
    parser.add_argument("--quick", action="store_true", help="500 notes of the hub vault")
    parser.add_argument("--names", type=int, default=20, help="notes asked for")
    args = parser.parse_args()
    os.environ["SMARTCONTEXT_EMBEDDING_MODEL"] = "none"
    if args.store:
        sep = "&" if "?" in args.store else "?"
        os.environ["SMARTCONTEXT_STORE_URL"] = f"{args.store}{sep}workspace=bench_backlinks"

    from smartcontext.tools import ToolRegistry
    from smartcontext.vault import VaultTools
    from smartcontext.workspace import Workspace

    vault = args.vault
    if vault is None:
        vault = Path(tempfile.mkdtemp(prefix="sc-backlinks-")) / "hub"
        unpack(DATASETS / ARCHIVE_NAME, vault)
        if args.quick:
            keep = set(sorted(list_notes(vault))[:500])
            for note in list_notes(vault):
                if note not in keep:
                    (vault / note).unlink()
    notes = sorted(list_notes(vault))
    names = [Path(n).stem for n in random.Random(7).sample(notes, min(args.names, len(notes)))]
    start = time.perf_counter()
    with Workspace.open(vault) as ws:
        stats = ws.index(embeddings=False)
    print(f"indexed {stats.files_seen} files, {stats.edges} edges in {time.perf_counter() - start:.1f} s "
          f"({'PostgreSQL' if args.store else 'SQLite'})")

    registry = ToolRegistry.open(vault, refresh_interval=-1)
    try:
        def indexed(name: str) -> None:
            assert registry.call("find_backlinks", {"note_name": name})["success"]

        first, warm = timings(indexed, names)
    finally:
        registry.close()
    reading = VaultTools(vault)
    old_first, old_warm = timings(lambda name: reading.find_backlinks(name), names)

    print(f"| path | first call | p50 | p95 | max |\n|---|---|---|---|---|")
    for label, f, w in (("from the index", first, warm), ("reading the notes", old_first, old_warm)):
        print(f"| {label} | {f:.1f} ms | {statistics.median(w):.1f} ms | {quantile(w, 0.95):.1f} ms | {max(w):.1f} ms |")
    if args.store:
        from smartcontext.store.postgres import drop_workspace

        drop_workspace(args.store, "bench_backlinks")


if __name__ == "__main__":
    main()
