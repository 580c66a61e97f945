"""Plain-English questions about code: which files and functions reach the model?

``code-questions/dev.json`` holds questions a developer new to pytest, flask or requests
might ask ("When pytest walks through a folder, how does it decide ..."), each with the
gold files and the functions or classes that answer it. Every method indexes each
repository (at the pinned commit, from a git mirror) once, cold, in a process of its own,
and answers every question of that repository with a 4,000-token budget. Scored as the
dataset's README says:

- file Acc@1 / Acc@5: a gold file among the top k files (``any``), and the strict variant,
  the first (most important) gold file among the top k (``first``);
- symbols shown: the share of a question's gold symbols whose definition line (``def`` /
  ``class``) is in the context, in a part of the context from the symbol's file, averaged
  over questions (a signature counts, as the README says: the line as a line of the
  context, or, spaces aside, inside one, as a signature listed on one line); ``whole``
  asks for the symbol's whole body (through ``end_lineno``), consecutively;
- broken down by question kind and by whether the question names an identifier.

Methods are those of ``bench/code_context.py`` (the same workers, the same settings):
BM25 over whole files, the peer contextsmith 0.1.1, and Smart Context with the CLI's
defaults (``Workspace.context(max_tokens)``: test files kept, ranked below the source;
``--exclude-tests`` leaves them out, and no gold file is a test).

    python bench/code_questions.py --no-embeddings     # all 36 questions, three methods
    python bench/code_questions.py --methods smartcontext --no-embeddings
"""

from __future__ import annotations

import argparse
import ast
import datetime as dt
import json
import os
import shlex
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _swebench as sw
import code_context as cc

DEFAULT_DATASET = sw.BENCH_DIR.parent.parent / "shared" / "datasets" / "code-questions" / "dev.json"
KS = (1, 5)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dataset", type=Path, default=DEFAULT_DATASET)
    p.add_argument("--mirrors", type=Path,
                   default=Path(os.environ.get("SWEBENCH_MIRRORS", str(sw.DEFAULT_MIRRORS))),
                   help="folder of bare git mirrors named owner+name (env SWEBENCH_MIRRORS)")
    p.add_argument("--work", type=Path, default=sw.WORK_DIR / "code-questions",
                   help="cache of trees, venvs and raw results")
    p.add_argument("--methods", default=",".join(cc.METHODS))
    p.add_argument("--embeddings", action=argparse.BooleanOptionalAction, default=True,
                   help="index with embeddings for smartcontext")
    p.add_argument("--repos", default="", help="comma-separated: flask,requests or pallets/flask")
    p.add_argument("--max-tokens", type=int, default=4000)
    p.add_argument("--exclude-tests", action=argparse.BooleanOptionalAction, default=False,
                   help="smartcontext: leave test files out (default: as the CLI, kept and ranked below the source)")
    p.add_argument("--contextsmith-venv", type=Path, default=None)
    p.add_argument("--store", default=None, metavar="URL",
                   help="index into this store (postgresql://...) instead of each tree's SQLite file; "
                        "keep results apart with --out")
    p.add_argument("--timeout", type=int, default=1800, help="seconds per method and question")
    p.add_argument("--out", type=Path, default=None,
                   help="report base name (default bench/results/code_questions[.quick])")
    return p.parse_args(argv)


# ---------------------------------------------------------------- gold


def symbol_lines(tree: Path, path: str, line: int) -> tuple[list[str], list[str]]:
    """The stripped, non-empty lines that show a symbol: its definition line, and its
    whole body (decorators excluded, through ``end_lineno``)."""
    source = (tree / path).read_text(encoding="utf-8", errors="replace")
    lines = source.splitlines()
    end = line
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.lineno == line:
            end = node.end_lineno or line
            break
    body = [s for s in (ln.strip() for ln in lines[line - 1 : end]) if s]
    return body[:1], body


def present(seq: list[str], where: dict[str, list[int]], run: list[str]) -> bool:
    return bool(run) and any(seq[p : p + len(run)] == run for p in where.get(run[0], ()))


def signature_shown(head: list[str], flat: str) -> bool:
    """The definition line inside a line of the context, spaces aside: a signature listed
    on one line (``- `def f( self, x, ) -> int:` lines 3-9``, a multi-line ``def`` joined)."""
    return bool(head) and " ".join(head[0].split()) in flat


def score(question: dict, answer: dict, gold_lines: dict) -> dict:
    gold_files = [g["path"] for g in question["gold"]]
    ranked = answer["ranked"]
    seq = sw.context_lines(answer["context_text"])
    flat = " ".join(answer["context_text"].split())
    where: dict[str, list[int]] = {}
    for pos, ln in enumerate(seq):
        where.setdefault(ln, []).append(pos)
    shown, whole = [], []
    in_context = set(answer["context_files"])
    for g in question["gold"]:
        for sym in g["symbols"]:
            head, body = gold_lines[(g["path"], sym["line"])]
            shown.append(g["path"] in in_context and (present(seq, where, head) or signature_shown(head, flat)))
            whole.append(present(seq, where, body))
    return {
        **{f"any@{k}": any(f in ranked[:k] for f in gold_files) for k in KS},
        **{f"first@{k}": gold_files[0] in ranked[:k] for k in KS},
        "symbols": sum(shown) / len(shown),
        "whole": sum(whole) / len(whole),
        "tokens": sw.count_tokens(answer["context_text"]),
        "top5": ranked[:5],
    }


def summarise(rows: list[dict]) -> dict:
    n = len(rows)

    def mean(key: str) -> float:
        return sum(float(r.get(key, 0)) for r in rows) / n if n else float("nan")

    return {"questions": n, "errors": sum("error" in r for r in rows),
            **{f"any@{k}": mean(f"any@{k}") for k in KS},
            **{f"first@{k}": mean(f"first@{k}") for k in KS},
            "symbols": mean("symbols"), "whole": mean("whole"),
            "tokens_max": max((r.get("tokens", 0) for r in rows), default=0)}


# ---------------------------------------------------------------- report


def render(report: dict) -> str:
    f = cc.fmt
    lines = [
        "# Plain-English questions about code",
        "",
        f"- command: `{report['command']}`",
        f"- date: {report['date']}",
        (f"- machine: {report['machine']['nproc']} cores, {report['machine']['cpu']}, "
         f"Python {report['machine']['python']}"),
        f"- questions: {report['n_questions']} on {', '.join(report['repos'])}; budget {report['max_tokens']} cl100k tokens",
    ]
    lines += [f"- {m}: {info}" for m, info in report["method_info"].items()]
    lines += [f"- **{m} skipped**: {why}" for m, why in report["skipped"].items()]
    lines += ["", "Acc@k `any`: a gold file in the top k; `first`: the first gold file in the top k. "
              "Symbols: share of gold definition lines shown (a signature counts); whole: whole bodies.", "",
              "| method | Acc@1 any | Acc@5 any | Acc@1 first | Acc@5 first | symbols shown | whole bodies | tokens max | errors |",
              "|---|---|---|---|---|---|---|---|---|"]
    for m, s in report["summary"].items():
        lines.append(f"| {m} | {f(s['any@1'], 2)} | {f(s['any@5'], 2)} | {f(s['first@1'], 2)} | {f(s['first@5'], 2)} "
                     f"| {f(s['symbols'], 2)} | {f(s['whole'], 2)} | {s['tokens_max']} | {s['errors']} |")
    for title, key in (("By kind", "by_kind"), ("By whether the question names an identifier", "by_identifier"),
                       ("By repository", "by_repo")):
        lines += ["", f"## {title}", "", "| group | n | method | Acc@1 any | Acc@5 any | symbols shown |",
                  "|---|---|---|---|---|---|"]
        for group, per in report[key].items():
            for m, s in per.items():
                lines.append(f"| {group} | {s['questions']} | {m} | {f(s['any@1'], 2)} | {f(s['any@5'], 2)} "
                             f"| {f(s['symbols'], 2)} |")
    methods = list(report["summary"])
    lines += ["", "## Per question", "", "Rank of the first gold file (– when outside the top 50), then symbols shown.", "",
              "| question | kind | " + " | ".join(methods) + " |", "|---|---|" + "---|" * len(methods)]
    for row in report["questions"]:
        cells = []
        for m in methods:
            r = row["methods"].get(m, {})
            cells.append("error" if "error" in r else f"{r['first_rank'] or '–'} {r['symbols']:.2f}")
        lines.append(f"| {row['id']} | {row['kind']} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    args.work = args.work.resolve()
    if not args.dataset.is_file():
        print(f"dataset not found: {args.dataset} (see ../shared/datasets/README.md)", file=sys.stderr)
        return 2
    data = json.loads(args.dataset.read_text(encoding="utf-8"))
    wanted = {r.strip() for r in args.repos.split(",") if r.strip()}
    questions = [q for q in data["questions"]
                 if not wanted or q["repo"] in wanted or q["repo"].split("/")[1] in wanted]
    if not questions:
        print("no question matches the selection", file=sys.stderr)
        return 2
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    unknown = set(methods) - set(cc.METHODS)
    if unknown:
        print(f"unknown method(s) {sorted(unknown)}; choose from {', '.join(cc.METHODS)}", file=sys.stderr)
        return 2

    active, skipped, method_info, cs_python = cc.prepare_methods(
        methods, args, args.contextsmith_venv or sw.WORK_DIR / "venv-contextsmith")

    tiktoken_dir = sw.seed_tiktoken_cache(sw.WORK_DIR / "tiktoken-cache")
    env = sw.git_isolated_env(args.work / "repos", {"TIKTOKEN_CACHE_DIR": str(tiktoken_dir),
                                                    "PYTHONDONTWRITEBYTECODE": "1"})
    env.pop("SMARTCONTEXT_STORE_URL", None)
    if args.store:  # as code_context.py: one schema per tree
        env["SMARTCONTEXT_STORE_URL"] = args.store
        if "smartcontext" in method_info:
            method_info["smartcontext"] += f"; store {args.store.split('@')[-1]}"

    by_repo: dict[str, list[dict]] = defaultdict(list)
    for q in questions:
        by_repo[q["repo"]].append(q)
    rows: list[dict] = []
    t_start = time.perf_counter()
    for repo, members in by_repo.items():
        commit = data["repos"][repo]
        fake = {"instance_id": f"{repo.replace('/', '+')}-{commit[:12]}", "repo": repo,
                "base_commit": commit, "version": ""}
        tree, _record = sw.prepare_tree(fake, args.mirrors, args.work)
        gold_lines = {(g["path"], s["line"]): symbol_lines(tree, g["path"], s["line"])
                      for q in members for g in q["gold"] for s in g["symbols"]}
        answers: dict[str, list[dict]] = {}
        for m in active:
            answers[m] = []
            for n, q in enumerate(members):
                job = {"key": f"{fake['instance_id']}-{q['id']}", "method": m, "tree": str(tree),
                       "max_tokens": args.max_tokens, "embeddings": args.embeddings,
                       "exclude_tests": args.exclude_tests,
                       "question": q["question"], "warm_questions": [], "reuse_index": n > 0,
                       "db_path": str(args.work / "indexes" / "contextsmith" / f"{fake['instance_id']}.db")}
                answers[m].append(cc.run_job(m, job, args, cs_python, env))
        for n, q in enumerate(members):
            row = {"id": q["id"], "repo": repo, "kind": q["kind"], "has_identifier": q["has_identifier"],
                   "methods": {}}
            for m in active:
                ans = answers[m][n]
                if "error" in ans:
                    row["methods"][m] = {"error": ans["error"]}
                    continue
                r = score(q, ans, gold_lines)
                first = q["gold"][0]["path"]
                r["first_rank"] = ans["ranked"].index(first) + 1 if first in ans["ranked"] else None
                row["methods"][m] = r
            rows.append(row)
            print(f"[{len(rows)}/{len(questions)}] {q['id']}: " + "  ".join(
                f"{m}={'ERR' if 'error' in r else (r['first_rank'] or '-')}/{r.get('symbols', 0):.2f}"
                for m, r in row["methods"].items()), file=sys.stderr)

    def group(key) -> dict:
        out: dict[str, dict] = {}
        for g in sorted({str(key(r)) for r in rows}):
            members = [r for r in rows if str(key(r)) == g]
            out[g] = {m: summarise([r["methods"][m] for r in members]) for m in active}
        return out

    report = {
        "command": "python " + " ".join(shlex.quote(a) for a in ([sys.argv[0]] + (argv if argv is not None else sys.argv[1:]))),
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": cc.machine(), "max_tokens": args.max_tokens, "n_questions": len(rows),
        "repos": list(by_repo), "method_info": method_info, "skipped": skipped,
        "wall_s": time.perf_counter() - t_start,
        "summary": {m: summarise([r["methods"][m] for r in rows]) for m in active},
        "by_kind": group(lambda r: r["kind"]),
        "by_identifier": group(lambda r: "names an identifier" if r["has_identifier"] else "plain words"),
        "by_repo": group(lambda r: r["repo"]),
        "questions": rows,
    }
    out = args.out or sw.BENCH_DIR / "results" / ("code_questions" + ("" if not wanted else ".subset"))
    out.parent.mkdir(parents=True, exist_ok=True)
    Path(str(out) + ".json").write_text(json.dumps(report, indent=1), encoding="utf-8")
    Path(str(out) + ".md").write_text(render(report), encoding="utf-8")
    print(render(report).split("## By kind")[0])
    print(f"wrote {out}.md and .json ({report['wall_s']:.0f} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
