"""Fault injection, the long runs (the fast ones are in tests/test_robustness.py).

1. ``--kills N``: start ``smartcontext index`` on a cold repository, SIGKILL or SIGTERM it
   at a random moment (seeded), then check: no worker process left alive, the index file
   passes ``PRAGMA integrity_check``, ``status`` answers, and a final ``index`` completes
   with every file. Repeated N times on the same folder, so runs resume each other.
2. A 10 MB one-line note (size limit raised): indexed within a time and memory bound, and
   ``context`` finds text in it.

Linux only (processes are counted through /proc). Every loop is bounded.

    python bench/robustness.py              # 20 kills
    python bench/robustness.py --quick      # 5 kills
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
WORK = HERE / ".work" / "robustness"
ENV = dict(os.environ, PYTHONPATH=str(ROOT / "src"), SMARTCONTEXT_EMBEDDING_MODEL="none")
CLI = [sys.executable, "-c", "from smartcontext.cli import main; main()"]

sys.path.insert(0, str(ROOT / "tests"))
from proc_support import alive, children_of  # noqa: E402  (shared with the tests)


def make_repo(root: Path, files: int, functions: int) -> None:
    pkg = root / "pkg"
    pkg.mkdir(parents=True)
    body = "".join(f"def f{i}(x):\n    '''Doc {i}.'''\n    return x * {i}\n\n" for i in range(functions))
    for n in range(files):
        (pkg / f"m{n}.py").write_text(f'"""Module {n}."""\n' + body)


def integrity(folder: Path) -> str:
    db = folder / ".smartcontext" / "index.db"
    if not db.exists():
        return "no index yet"
    con = sqlite3.connect(db)
    try:
        return con.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        con.close()


def kill_runs(kills: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    repo = WORK / "repo"
    make_repo(repo, files=240, functions=300)
    problems: list[str] = []
    orphans = 0
    for run in range(kills):
        sig = rng.choice([signal.SIGKILL, signal.SIGTERM])
        delay = rng.uniform(0.2, 4.0)
        if run % 4 == 3:  # now and then start over from nothing
            shutil.rmtree(repo / ".smartcontext", ignore_errors=True)
        proc = subprocess.Popen([*CLI, "index", str(repo), "--no-embeddings"], env=ENV,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        seen: set[int] = set()
        deadline = time.monotonic() + delay
        while time.monotonic() < deadline and proc.poll() is None:
            seen.update(children_of(proc.pid))
            time.sleep(0.02)
        if proc.poll() is None:
            os.kill(proc.pid, sig)
        try:
            _, err = proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            problems.append(f"run {run}: output pipes still open 20 s after {sig.name}")
            proc.kill()
            _, err = proc.communicate()
        time.sleep(1.0)
        left = [p for p in seen if alive(p)]
        orphans += len(left)
        for p in left:
            os.kill(p, signal.SIGKILL)
        state = integrity(repo)
        if state not in ("ok", "no index yet"):
            problems.append(f"run {run}: integrity {state}")
        if b"Traceback" in err:
            problems.append(f"run {run}: traceback after {sig.name}")
        print(f"run {run:2d}: {sig.name} after {delay:.2f} s, exit {proc.returncode}, workers seen {len(seen)}, "
              f"left alive {len(left)}, integrity {state}", flush=True)
    final = subprocess.run([*CLI, "index", str(repo), "--no-embeddings", "--json"], env=ENV,
                           capture_output=True, text=True, timeout=600)
    if final.returncode:
        problems.append(f"final index failed: {final.stderr.strip()}")
    else:
        stats = json.loads(final.stdout)
        if stats["files_seen"] != 240 or stats["skipped_total"]:
            problems.append(f"final index: {stats['files_seen']} files seen, {stats['skipped_total']} skipped")
    print(f"{kills} kills: {orphans} orphaned workers, final index {'ok' if not final.returncode else 'failed'}")
    if orphans:
        problems.append(f"{orphans} orphaned workers")
    return problems


def one_line_file() -> list[str]:
    folder = WORK / "big"
    folder.mkdir(parents=True)
    (folder / "smartcontext.toml").write_text("[index]\nmax_file_bytes = 20000000\n")
    rng = random.Random(1)
    words = ["alpha", "beta", "gamma", "delta", "harbour", "lantern", "quartz", "meadow", "river", "signal"]
    text = " ".join(rng.choice(words) + str(rng.randrange(1000)) for _ in range(1_400_000))[:10_000_000]
    (folder / "big.md").write_text(text + "\n")
    problems = []
    t0 = time.perf_counter()
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    out = subprocess.run([*CLI, "index", str(folder), "--no-embeddings"], env=ENV, capture_output=True,
                         text=True, timeout=300)
    seconds = time.perf_counter() - t0
    peak_mb = max(before, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) / 1024
    ctx = subprocess.run([*CLI, "context", "lantern31 meadow272", str(folder), "--max-tokens", "1000"],
                         env=ENV, capture_output=True, text=True, timeout=120)
    print(f"10 MB one-line note: index {seconds:.1f} s, peak {peak_mb:.0f} MB; context "
          f"{'non-empty' if ctx.stdout.strip() else 'EMPTY'}")
    if out.returncode or seconds > 120 or peak_mb > 1000:
        problems.append(f"10 MB line: exit {out.returncode}, {seconds:.0f} s, {peak_mb:.0f} MB")
    if ctx.returncode or "big.md" not in ctx.stdout:
        problems.append("10 MB line: context is empty")
    return problems


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    if not sys.platform.startswith("linux"):
        raise SystemExit("Linux only: processes are counted through /proc")
    if args.quick:
        args.kills = 5
    shutil.rmtree(WORK, ignore_errors=True)
    WORK.mkdir(parents=True)
    problems = kill_runs(args.kills, args.seed) + one_line_file()
    shutil.rmtree(WORK, ignore_errors=True)
    if problems:
        print("PROBLEMS:\n" + "\n".join(f"- {p}" for p in problems))
        sys.exit(1)
    print("all checks passed")


if __name__ == "__main__":
    main()
