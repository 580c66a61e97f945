"""CLI start-up (issue 12): wall and CPU time of one `smartcontext context` / `search`
process on a sympy-size index.

The repository is a sympy checkout under bench/.work/sympy (made from the stored mirror
with `git archive` when missing), else the largest repository in the main checkout's
bench/.work/repos; `--repo` picks another. It is indexed once (keyword index, no
embeddings). Then each command runs `--runs` times as a fresh process in the repository
folder (so it finds its workspace as a user's shell would); wall time is measured around
the process, CPU time (user + system) and peak memory come from the child's rusage.

Modules are byte-compiled once into bench/.work/pycache first, as an installed package's
are (the shell here sets PYTHONDONTWRITEBYTECODE, which would compile every module on
every run).

Rows:
- `python -c pass` and `--version`: the interpreter's and the CLI's floor;
- `context` / `search` with the saved catalogue (the normal case);
- `context` after deleting the saved catalogue (the first question after `index`, which
  builds and saves it);
- `context` after deleting the saved walk (`.smartcontext/walk.bin`: the first question
  after a folder's listing changed, which walks the whole folder again);
- with `--baseline SRC`: the same commands run by another source tree (e.g. the main
  checkout's src) on its own copy of the repository and index, in the same run.

    python bench/startup.py                       # 7 runs each, table to bench/results/startup.md
    python bench/startup.py --quick               # 3 runs each
    python bench/startup.py --baseline /work/main/src
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
WORK = HERE / ".work"
MIRROR = Path("/work/.mirror/sympy+sympy/repo")
REPOS = ROOT.parent / "main" / "bench" / ".work" / "repos"
RESULTS = HERE / "results" / "startup.md"
QUESTION = "how does simplify handle trigonometric functions"
QUERY = "trigsimp"


def find_repo(explicit: Path | None) -> tuple[Path, str]:
    if explicit is not None:
        return explicit.resolve(), explicit.name
    sympy = WORK / "sympy"
    if not (sympy / "sympy").is_dir() and MIRROR.is_dir():
        sympy.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", "--git-dir", str(MIRROR), "archive", "HEAD"],
                                 check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(sympy)], input=archive, check=True)
    if (sympy / "sympy").is_dir():
        return sympy, "sympy (stored mirror, HEAD)"
    candidates = [p for p in REPOS.iterdir() if p.is_dir()] if REPOS.is_dir() else []
    if not candidates:
        raise SystemExit("no repository: pass --repo PATH")
    biggest = max(candidates, key=lambda p: sum(f.stat().st_size for f in p.rglob("*.py")))
    return biggest, f"{biggest.name} (no sympy checkout)"


def environment(src: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(PYTHONPATH=str(src), PYTHONPYCACHEPREFIX=str(WORK / "pycache"),
               SMARTCONTEXT_EMBEDDING_MODEL="none")
    return env


def ensure_index(repo: Path, env: dict[str, str]) -> float:
    # A root marker, so the commands find the workspace from inside the folder.
    (repo / ".git").mkdir(exist_ok=True)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "smartcontext", "index", str(repo), "--no-embeddings"],
                   env=env, check=True, capture_output=True)
    return time.perf_counter() - t0


def run_once(args: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float, float]:
    """(wall s, CPU s, peak RSS MB) of one process."""
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, *args], cwd=cwd, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed ({proc.returncode}): {err[-500:]}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def measure(label: str, args: list[str], cwd: Path, env: dict[str, str], runs: int,
            before=None) -> dict:
    walls, cpus, rss = [], [], []
    for _ in range(runs):
        if before is not None:
            before()
        w, c, m = run_once(args, cwd, env)
        walls.append(w)
        cpus.append(c)
        rss.append(m)
    return {"label": label, "wall": statistics.median(walls) * 1000,
            "cpu": statistics.median(cpus) * 1000, "rss": max(rss), "runs": runs}


def suite(name: str, repo: Path, src: Path, runs: int) -> list[dict]:
    env = environment(src)
    cat = repo / ".smartcontext" / "catalogue.bin"
    ctx = ["-m", "smartcontext", "context", QUESTION]
    saved = " (saved catalogue)" if name == "this tree" else ""
    rows = [
        measure(f"{name}: `context`{saved}", ctx, repo, env, runs),
        measure(f"{name}: `search`", ["-m", "smartcontext", "search", QUERY], repo, env, runs),
    ]
    if cat.exists() or name == "this tree":
        rows.append(measure(f"{name}: `context`, catalogue rebuilt", ctx, repo, env, runs,
                            before=lambda: cat.unlink(missing_ok=True)))
        run_once(ctx, repo, env)  # leave a saved catalogue behind
    walk = repo / ".smartcontext" / "walk.bin"
    if walk.exists():
        rows.append(measure(f"{name}: `context`, folder walked again", ctx, repo, env, runs,
                            before=lambda: walk.unlink(missing_ok=True)))
        run_once(ctx, repo, env)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repo", type=Path)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="3 runs of each command")
    parser.add_argument("--baseline", type=Path, help="another src folder to time on its own copy")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    runs = 3 if args.quick else args.runs

    try:
        load_before = os.getloadavg()[0]
    except OSError:
        load_before = float("nan")
    repo, repo_label = find_repo(args.repo)
    src = ROOT / "src"
    env = environment(src)
    index_seconds = ensure_index(repo, env)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(src)], env=env, check=False)
    run_once(["-m", "smartcontext", "context", QUESTION], repo, env)  # warm: page cache, catalogue
    rows = [
        measure("`python -c pass`", ["-c", "pass"], repo, env, runs),
        measure("`smartcontext --version`", ["-m", "smartcontext", "--version"], repo, env, runs),
        *suite("this tree", repo, src, runs),
    ]
    if args.baseline is not None:
        base_repo = WORK / f"{repo.name}-baseline"
        if not base_repo.exists():
            shutil.copytree(repo, base_repo, ignore=shutil.ignore_patterns(".smartcontext"))
        base_env = environment(args.baseline.resolve())
        ensure_index(base_repo, base_env)
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(args.baseline)], env=base_env, check=False)
        run_once(["-m", "smartcontext", "context", QUESTION], base_repo, base_env)
        rows += suite("baseline", base_repo, args.baseline.resolve(), runs)

    status = subprocess.run([sys.executable, "-m", "smartcontext", "status", "--json"], cwd=repo, env=env,
                            capture_output=True, text=True).stdout
    table = ["| process | wall ms (median) | CPU ms (median) | peak RSS MB |", "|---|---:|---:|---:|"]
    for r in rows:
        table.append(f"| {r['label']} | {r['wall']:.0f} | {r['cpu']:.0f} | {r['rss']:.0f} |")
    cmd = "python bench/startup.py" + (" --quick" if args.quick else "") + (
        f" --baseline {args.baseline}" if args.baseline else "")
    try:
        load = os.getloadavg()[0]
    except OSError:
        load = float("nan")
    text = "\n".join([
        "# CLI start-up (issue 12)", "",
        f"Command: `{cmd}`  ",
        f"Repository: {repo_label}; index (re)checked in {index_seconds:.1f} s. "
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"load average {load_before:.1f} at the start, {load:.1f} at the end; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. "
        f"{runs} runs each, modules byte-compiled.", "",
        f"Question: `{QUESTION}`; search: `{QUERY}`.", "",
        *table, "",
        "Index status: " + " ".join(status.split())[:300], "",
    ])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
