"""CLI start-up (issues 12 and 24): wall and CPU time and peak memory of one `smartcontext
context` / `search` process on a sympy-size index, and of a cold `index`, each against the
peer contextsmith 0.1.1 in the same run.

The repository is a sympy checkout under bench/.work/sympy (made from the stored mirror
with `git archive` when missing), else the largest repository in the main checkout's
bench/.work/repos; `--repo` picks another. It is indexed once (keyword index, no
embeddings). Then each command runs `--runs` times as a fresh process in the repository
folder (so it finds its workspace as a user's shell would); wall time is measured around
the process, CPU time (user + system) from the child's rusage, peak memory from GNU time
(`/usr/bin/time`; the rusage's peak counts the spawning process's memory too).

Modules are byte-compiled once into bench/.work/pycache first, as an installed package's
are (the shell here sets PYTHONDONTWRITEBYTECODE, which would compile every module on
every run).

Rows:
- `python -c pass` and `--version`: the interpreter's and the CLI's floor;
- `context` / `search` with the saved catalogue (the normal case);
- `context` right after `index` re-indexed one changed file (the first question to see
  the new index: it opens the catalogue `index` saved, or patches and saves it itself);
- `context` after deleting the saved catalogue (which it builds and saves);
- `context` after deleting the saved walk (`.smartcontext/walk.bin`: the first question
  after a folder's listing changed, which walks the whole folder again);
- with `--baseline SRC`: the same commands run by another source tree (e.g. the main
  checkout's src) on its own copy of the repository and index, in the same run;
- `context` on a notes vault indexed with vectors (`--vault`, default the hub vault of the
  main checkout's bench/.work, 36,962 vectors), with its default embedding model, on a copy
  of its own (and the baseline's, alternated, with `--baseline`);
- against contextsmith (its own venv, `--contextsmith-venv`, made with the pinned versions
  of bench/code_context.py when missing; offline, its cl100k file seeded as
  bench/_swebench.py does): `context` at 8,000 tokens on its own copy of the repository
  and index, and a cold `index` of each (index removed before every run), the two tools
  run in turn (A B A B ...) so a drift of the machine's speed hits both alike. Peak memory
  is the largest single process of a run (index workers are processes of their own).

    python bench/startup.py                       # 7 runs each (3 cold indexes), table to bench/results/startup.md
    python bench/startup.py --quick               # 3 runs each (1 cold index)
    python bench/startup.py --baseline /work/main/src
    python bench/startup.py --no-peer             # without contextsmith
    python bench/startup.py --vault-only --runs 5 # only the vault rows
    python bench/startup.py --work /tmp/me/bench  # copies, indexes and caches there, not in bench/.work
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
BUDGET = 8000
PYTHON = sys.executable  # main() puts clean_python() here
# A notes vault indexed with vectors (the hub vault, 36,962 x 256): `--vault`.
VAULT = ROOT.parent / "main" / "bench" / ".work" / "vault" / "hub-full-embed"
VAULT_QUESTION = "how do I sync my vault across devices"
PEER_VENVS = (WORK / "venv-contextsmith", ROOT.parent / "main" / "bench" / ".work" / "venv-contextsmith")


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


def clean_python() -> str:
    """This interpreter in a venv of its own that sees its packages but runs none of its
    site-packages' start-up hooks (``.pth`` files: here a sandbox's certificate hook that
    imports certifi, about a tenth of a second per process under load). contextsmith runs
    from a venv too, so both tools start as a fresh install would."""
    import sysconfig

    venv = WORK / "venv-clean"
    python = venv / "bin" / "python"
    if not python.is_file():
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    paths = sysconfig.get_paths()
    site = next(venv.glob("lib/python*/site-packages"))
    # Listed in a .pth, a folder joins sys.path without its own .pth files being run.
    (site / "base-packages.pth").write_text("\n".join(dict.fromkeys([paths["purelib"], paths["platlib"]])) + "\n")
    return str(python)


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


# A child's own rusage counts, as its peak, the memory of the process it was spawned from
# (Linux records the parent's high-water mark at the child's exec after vfork): the bench's
# own 80 MB showed as every row's peak. GNU time reports its child's peak alone.
GNU_TIME = "/usr/bin/time" if Path("/usr/bin/time").is_file() else None


def run_once(args: list[str], cwd: Path, env: dict[str, str], python: str | None = None
             ) -> tuple[float, float, float]:
    """(wall s, CPU s, peak RSS MB) of one process (peak: of the largest single process)."""
    argv = [python or PYTHON, *args]
    if GNU_TIME:
        argv = [GNU_TIME, "-f", "peak-kb %M", *argv]
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    peak = usage.ru_maxrss / 1024
    if GNU_TIME:
        head, _, last = err.rstrip("\n").rpartition("\n")
        if last.startswith("peak-kb "):
            err, peak = head, int(last.split()[1]) / 1024
    if proc.returncode not in (0, 1) or (proc.returncode == 1 and "Traceback" in err):  # 1: no match
        raise SystemExit(f"{' '.join(args)} failed ({proc.returncode}): {err[-500:]}")
    return wall, usage.ru_utime + usage.ru_stime, peak


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
    probe = repo / "_startup_probe.py"
    edits = iter(range(1_000_000))

    def edit_and_index() -> None:
        # One file changed and `index` run (not timed): the question after it is the
        # first to see the new index.
        probe.write_text(f"PROBE = {next(edits)}\n")
        subprocess.run([PYTHON, "-m", "smartcontext", "index", str(repo), "--no-embeddings"],
                       cwd=repo, env=env, check=True, capture_output=True)

    rows.append(measure(f"{name}: `context`, first after `index` (one file changed)", ctx, repo, env, runs,
                        before=edit_and_index))
    probe.unlink()
    subprocess.run([PYTHON, "-m", "smartcontext", "index", str(repo), "--no-embeddings"],
                   cwd=repo, env=env, check=True, capture_output=True)
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


class Tool:
    """One way of running a command: its interpreter, environment and folder."""

    def __init__(self, python: str, env: dict[str, str], cwd: Path):
        self.python, self.env, self.cwd = python, env, cwd

    def run(self, args: list[str]) -> tuple[float, float, float]:
        return run_once(args, self.cwd, self.env, self.python)


def measure_pair(label: str, ours: tuple[Tool, list[str]], peer: tuple[Tool, list[str]], runs: int,
                 before_ours=None, before_peer=None, warmup: bool = True) -> dict:
    """The two commands in turn (A B A B ...): medians of each and the median of the
    pairwise wall ratios (a drift of the machine's speed hits both of a pair alike)."""
    if warmup:
        ours[0].run(ours[1])
        peer[0].run(peer[1])
    got: dict[str, list[tuple[float, float, float]]] = {"ours": [], "peer": []}
    for _ in range(runs):
        for side, (tool, args), before in (("ours", ours, before_ours), ("peer", peer, before_peer)):
            if before is not None:
                before()
            got[side].append(tool.run(args))
    out: dict = {"label": label, "runs": runs}
    for side, rows in got.items():
        out[side] = {"wall": statistics.median(r[0] for r in rows), "cpu": statistics.median(r[1] for r in rows),
                     "rss": max(r[2] for r in rows)}
    out["pairwise"] = statistics.median(a[0] / b[0] for a, b in zip(got["ours"], got["peer"]))
    return out


def vault_rows(vault: Path, src: Path, baseline: Path | None, runs: int) -> list[dict]:
    """`context` on a vault indexed with vectors (its default embedding model), by this
    tree and, with ``--baseline``, by the other one in turn, each on its own copy (the
    files each writes beside the index stay its own)."""
    def tool(name: str, tree: Path, vectors: bool) -> Tool:
        copy = WORK / f"{vault.name}-{name}"
        if not copy.exists():
            shutil.copytree(vault, copy)
        env = environment(tree)
        if vectors:
            env.pop("SMARTCONTEXT_EMBEDDING_MODEL")
        return Tool(PYTHON, env, copy)

    args = ["-m", "smartcontext", "context", VAULT_QUESTION]
    rows = []
    for vectors in (True, False):
        label = f"`context` on the vault, vectors {'on' if vectors else 'off'}"
        ours = tool("this-tree", src, vectors)
        if baseline is None:
            ours.run(args)
            walls, cpus, rss = zip(*(ours.run(args) for _ in range(runs)))
            rows.append({"label": label, "runs": runs, "ours": {
                "wall": statistics.median(walls), "cpu": statistics.median(cpus), "rss": max(rss)}})
        else:
            rows.append(measure_pair(label, (ours, args), (tool("baseline", baseline, vectors), args), runs))
    return rows


def vault_table(rows: list[dict]) -> list[str]:
    paired = any("peer" in r for r in rows)
    head = "| process | this tree wall s | CPU s | peak MB |" + (" baseline wall s | CPU s | peak MB | ratio (pairwise median) |" if paired else "")
    table = [head, "|---|---:|---:|---:|" + ("---:|---:|---:|---:|" if paired else "")]
    for r in rows:
        o = r["ours"]
        line = f"| {r['label']} ({r['runs']} runs) | {o['wall']:.3f} | {o['cpu']:.3f} | {o['rss']:.0f} |"
        if "peer" in r:
            p = r["peer"]
            line += f" {p['wall']:.3f} | {p['cpu']:.3f} | {p['rss']:.0f} | {o['wall'] / p['wall']:.2f}x ({r['pairwise']:.2f}x) |"
        table.append(line)
    return table


def peer_tools(repo: Path, venv: Path | None) -> tuple[Tool, Path]:
    """contextsmith's venv Python (made with the pinned versions when missing), run
    offline on its own copy of ``repo``."""
    sys.path.insert(0, str(HERE))
    import _swebench as sw
    from code_context import contextsmith_python

    if venv is None:
        venv = next((v for v in PEER_VENVS if (v / "bin" / "python").is_file()), PEER_VENVS[0])
    python, why = contextsmith_python(venv.resolve())
    if python is None:
        raise SystemExit(f"contextsmith cannot run: {why} (or pass --no-peer)")
    peer_repo = WORK / f"{repo.name}-contextsmith"
    if not peer_repo.exists():
        shutil.copytree(repo, peer_repo, ignore=shutil.ignore_patterns(".smartcontext", ".contextsmith"))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONDONTWRITEBYTECODE")}
    # Offline: its rank file where tiktoken looks first; git never finds a repository
    # above the copy (it asks git for its root).
    env.update(TIKTOKEN_CACHE_DIR=str(sw.seed_tiktoken_cache(WORK / "tiktoken-cache")),
               GIT_CEILING_DIRECTORIES=str(peer_repo.parent))
    subprocess.run([str(python), "-m", "compileall", "-q", str(Path(venv) / "lib")], env=env,
                   capture_output=True, check=False)
    return Tool(str(python), env, peer_repo), peer_repo


def peer_rows(repo: Path, src: Path, venv: Path | None, runs: int, index_runs: int) -> tuple[list[dict], str]:
    """Smart Context against contextsmith: interpreter floor, cold index, context."""
    peer, peer_repo = peer_tools(repo, venv)
    ours_cold_repo = WORK / f"{repo.name}-cold"
    if not ours_cold_repo.exists():
        shutil.copytree(repo, ours_cold_repo, ignore=shutil.ignore_patterns(".smartcontext", ".contextsmith"))
    (ours_cold_repo / ".git").mkdir(exist_ok=True)
    env = environment(src)
    ours = Tool(PYTHON, env, repo)
    ours_cold = Tool(PYTHON, env, ours_cold_repo)
    version = subprocess.run([peer.python, "-c", "import importlib.metadata as m; print(m.version('contextsmith'))"],
                             capture_output=True, text=True, env=peer.env).stdout.strip()
    rows = [
        measure_pair("`python -c pass` (each tool's interpreter)", (ours, ["-c", "pass"]), (peer, ["-c", "pass"]), runs),
        measure_pair(
            "cold `index` (no vectors)",
            (ours_cold, ["-m", "smartcontext", "index", str(ours_cold_repo), "--no-embeddings"]),
            (peer, ["-m", "contextsmith", "index", str(peer_repo)]), index_runs,
            before_ours=lambda: shutil.rmtree(ours_cold_repo / ".smartcontext", ignore_errors=True),
            before_peer=lambda: shutil.rmtree(peer_repo / ".contextsmith", ignore_errors=True),
            warmup=False,
        ),
        # contextsmith's index is the one its last cold run left.
        measure_pair(
            f"`context` at {BUDGET:,} tokens (index built)",
            (ours, ["-m", "smartcontext", "context", QUESTION, "--max-tokens", str(BUDGET)]),
            (peer, ["-m", "contextsmith", "context", QUESTION, "--budget", str(BUDGET), "--path", "."]), runs,
        ),
    ]
    return rows, f"contextsmith {version or '?'} ({peer.python})"


def peer_table(rows: list[dict]) -> list[str]:
    table = ["| process | Smart Context wall s | contextsmith wall s | ratio (pairwise median) "
             "| Smart Context peak MB | contextsmith peak MB |", "|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        o, p = r["ours"], r["peer"]
        table.append(f"| {r['label']} ({r['runs']} runs each) | {o['wall']:.3f} | {p['wall']:.3f} "
                     f"| {o['wall'] / p['wall']:.2f}x ({r['pairwise']:.2f}x) | {o['rss']:.0f} | {p['rss']:.0f} |")
    return table


def main() -> None:
    global PYTHON, WORK
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repo", type=Path)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="3 runs of each command")
    parser.add_argument("--baseline", type=Path, help="another src folder to time on its own copy")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--no-peer", action="store_true", help="leave out the contextsmith comparison")
    parser.add_argument("--contextsmith-venv", type=Path, help="contextsmith's venv (made when missing)")
    parser.add_argument("--index-runs", type=int, help="cold index runs of each tool (default 3, --quick 1)")
    parser.add_argument("--vault", type=Path, default=VAULT if VAULT.is_dir() else None,
                        help="a vault indexed with vectors, copied and asked `context` (default: the hub vault)")
    parser.add_argument("--no-vault", action="store_true", help="leave out the vault with vectors")
    parser.add_argument("--vault-only", action="store_true",
                        help="only the vault rows (with --baseline, the two trees in turn)")
    parser.add_argument("--work", type=Path, default=WORK,
                        help="where the repository copies, their indexes and the caches go (default "
                             "bench/.work; another folder leaves a shared one untouched)")
    args = parser.parse_args()
    runs = 3 if args.quick else args.runs
    index_runs = args.index_runs or (1 if args.quick else 3)

    try:
        load_before = os.getloadavg()[0]
    except OSError:
        load_before = float("nan")
    WORK = args.work.resolve()
    WORK.mkdir(parents=True, exist_ok=True)
    if args.vault_only:
        vault_only(args, runs, load_before)
        return
    repo, repo_label = find_repo(args.repo)
    PYTHON = clean_python()
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
    vault: list[dict] = []
    if args.vault is not None and not args.no_vault:
        vault = vault_rows(args.vault.resolve(), src, args.baseline.resolve() if args.baseline else None, runs)
    peer: list[dict] = []
    peer_label = ""
    if not args.no_peer:
        peer, peer_label = peer_rows(repo, src, args.contextsmith_venv, runs, index_runs)

    status = subprocess.run([sys.executable, "-m", "smartcontext", "status", "--json"], cwd=repo, env=env,
                            capture_output=True, text=True).stdout
    table = ["| process | wall ms (median) | CPU ms (median) | peak RSS MB |", "|---|---:|---:|---:|"]
    for r in rows:
        table.append(f"| {r['label']} | {r['wall']:.0f} | {r['cpu']:.0f} | {r['rss']:.0f} |")
    cmd = "python bench/startup.py" + (f" --runs {args.runs}" if args.runs != 7 and not args.quick else "") + (
        " --quick" if args.quick else "") + (
        f" --baseline {args.baseline}" if args.baseline else "") + (" --no-peer" if args.no_peer else "") + (
        " --no-vault" if args.no_vault else "") + (
        f" --index-runs {args.index_runs}" if args.index_runs else "")
    try:
        load = os.getloadavg()[0]
    except OSError:
        load = float("nan")
    text = "\n".join([
        "# CLI start-up (issues 12 and 24)", "",
        f"Command: `{cmd}`  ",
        f"Repository: {repo_label}; index (re)checked in {index_seconds:.1f} s. "
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"load average {load_before:.1f} at the start, {load:.1f} at the end; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. "
        f"{runs} runs each, modules byte-compiled.", "",
        f"Question: `{QUESTION}`; search: `{QUERY}`.", "",
        *table, "",
        *([f"Vault with vectors ({args.vault}; question `{VAULT_QUESTION}`), each tree on its own copy"
           + (", in turn" if args.baseline else "") + ", medians, largest process:", "", *vault_table(vault), ""]
          if vault else []),
        *([f"Against {peer_label}, in turn, medians (wall), largest single process (peak):", "",
           *peer_table(peer), ""] if peer else []),
        "Index status: " + " ".join(status.split())[:300], "",
    ])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(text)


def vault_only(args: argparse.Namespace, runs: int, load_before: float) -> None:
    """``--vault-only``: the vault rows alone, printed and written to ``--out``."""
    global PYTHON
    if args.vault is None:
        raise SystemExit("no vault: pass --vault PATH")
    PYTHON = clean_python()
    src = ROOT / "src"
    for tree in (src, args.baseline):
        if tree is not None:
            subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree)], env=environment(tree), check=False)
    vault = vault_rows(args.vault.resolve(), src, args.baseline.resolve() if args.baseline else None, runs)
    load = os.getloadavg()[0]
    cmd = f"python bench/startup.py --vault-only --runs {runs}" + (f" --baseline {args.baseline}" if args.baseline else "")
    text = "\n".join([
        "# CLI start-up: the vault with vectors (issue 24)", "",
        f"Command: `{cmd}`  ",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"load average {load_before:.1f} at the start, {load:.1f} at the end; "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. Modules byte-compiled.", "",
        f"Vault: {args.vault}; question `{VAULT_QUESTION}`; each tree on its own copy"
        + (", in turn" if args.baseline else "") + ", medians, largest process:", "",
        *vault_table(vault), "",
    ])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
