"""What the explanation of a context costs: warm ``Workspace.context`` with
``explain=False`` against ``explain=True`` (what ``--json``, the MCP tool and
``--explain`` ask for), on a checkout of this repository.

    python bench/explain.py            # 15 rounds per question and budget
    python bench/explain.py --quick    # 5 rounds

The two settings alternate within each round, so drift in machine load falls on both.
Reported: the median of each question's per-round time, summed over the questions, for
each setting, and their ratio; as wall-clock time and as the process's CPU time (on a
shared, loaded machine the wall clock mostly measures waiting for a core).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
QUESTIONS = [
    "How does plan_budget fit ranked items into max_tokens?",
    "Where is the folder walk cached between processes?",
    "How are tool results compacted for the agent?",
    "What happens to the catalogue when the index changes?",
    "How does hybrid search fuse keyword and vector ranks?",
    "Where are .gitignore files read during discovery?",
    "How does the MCP server answer a context call?",
    "How is a chat's history filtered by topic?",
]


def checkout(dest: Path) -> Path:
    """This repository's committed tree (HEAD), unpacked into ``dest``."""
    data = subprocess.run(["git", "-C", str(ROOT), "archive", "HEAD"], capture_output=True, check=True).stdout
    with tarfile.open(fileobj=BytesIO(data)) as tar:
        tar.extractall(dest, filter="data")
    return dest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rounds", type=int)
    args = parser.parse_args()
    rounds = args.rounds or (5 if args.quick else 15)
    sys.path.insert(0, str(ROOT / "src"))
    from smartcontext import Workspace

    with tempfile.TemporaryDirectory() as tmp:
        tree = checkout(Path(tmp) / "repo")
        ws = Workspace.open(tree)
        ws.config.embeddings.enabled = False
        stats = ws.index()
        print(f"{tree.name}: {stats.files_seen} files, {stats.items} items "
              f"({platform.python_version()}, {os.cpu_count()} CPUs)")
        for budget in (8000, 2000):
            times: dict[bool, dict[str, list[float]]] = {False: {}, True: {}}
            cpu: dict[bool, dict[str, list[float]]] = {False: {}, True: {}}
            omitted = []
            for q in QUESTIONS:  # warm-up: catalogue, tokenizer, caches
                ws.context(q, max_tokens=budget, explain=True)
                ws.context(q, max_tokens=budget, explain=False)
            for r in range(rounds):
                for q in QUESTIONS:
                    for explain in ((False, True) if r % 2 == 0 else (True, False)):
                        t, c = time.perf_counter(), time.process_time()
                        res = ws.context(q, max_tokens=budget, explain=explain)
                        times[explain].setdefault(q, []).append(time.perf_counter() - t)
                        cpu[explain].setdefault(q, []).append(time.process_time() - c)
                        if explain and r == 0:
                            omitted.append(sum(res.omitted_counts.values()))
            for what, table in (("wall", times), ("cpu", cpu)):
                med = {e: sum(statistics.median(v) for v in table[e].values()) for e in table}
                per_q = {e: med[e] / len(QUESTIONS) * 1000 for e in med}
                print(f"budget {budget}, {what}: without {per_q[False]:.1f} ms, with {per_q[True]:.1f} ms per "
                      f"question (median of {rounds} rounds); explain costs "
                      f"{100 * (med[True] / med[False] - 1):+.1f}%")
            print(f"  {statistics.mean(omitted):.0f} candidates left out on average")
        ws.close()


if __name__ == "__main__":
    main()
