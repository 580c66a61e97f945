"""Ranking ablations in minutes: ask the benchmark sets again over indexes already built.

``bench/code_context.py`` and ``bench/code_questions.py`` index every tree cold in a
process of its own, which is what a user meets but takes most of an hour on ``dev2.json``.
A ranking change does not change the index, so this script reopens the indexes those runs
left in their trees and asks every question once per variant, in one process, scoring
exactly as they do (their ``score`` functions). A variant names the profile constants
(module attributes of ``retrieval/scoring.py``) and options it sets:

    python bench/code_context.py --no-embeddings --methods smartcontext        # builds the indexes
    python bench/ablate.py dev tests-out:exclude=1 kept:TEST_PRIOR=1.0 demoted:TEST_PRIOR=0.3
    python bench/ablate.py questions default: tests-out:exclude=1
    python bench/ablate.py dev2 --work bench/.work/dev2 default:
    python bench/ablate.py questions --dataset bench/data/code-questions-2.json --work bench/.work/code-questions-2 default:

``exclude=1`` leaves test files out (``--exclude-tests``); ``tokens=N`` sets the budget; any
other ``NAME=VALUE`` sets ``scoring.NAME`` for that variant (``pipeline.NAME`` sets a
constant of ``context/pipeline.py``, e.g. ``pipeline.REFILL=0``; likewise ``budgeter.``,
``entities.``, ``keyword.``, ``english.`` and ``model.`` for the budgeter, the entity extractor,
the keyword search, its word tables and the items' summaries). SWE-bench instances are those whose base commit has a
tree with an index under ``WORK/repos``; multi-file instances are reported apart. Questions
are reported whole and by kind.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _swebench as sw
import code_context as cc
import code_questions as cq

DATASETS = sw.BENCH_DIR.parent.parent / "shared" / "datasets"
SETS = {"dev": DATASETS / "swe-bench-lite" / "dev.json", "dev2": DATASETS / "swe-bench-lite" / "dev2.json"}
OPTIONS = ("exclude", "tokens")
# Modules whose constants a variant may set as ``MODULE.NAME``.
MODULES = {"pipeline": "smartcontext.context.pipeline", "budgeter": "smartcontext.context.budgeter",
           "entities": "smartcontext.retrieval.entities", "keyword": "smartcontext.retrieval.keyword",
           "reports": "smartcontext.retrieval.reports", "english": "smartcontext.retrieval.english",
           "model": "smartcontext.model"}


def parse_variant(text: str) -> tuple[str, dict[str, str]]:
    name, _, rest = text.partition(":")
    pairs = [kv.split("=", 1) for kv in rest.split(",") if kv]
    if not name or any(len(p) != 2 for p in pairs):
        raise SystemExit(f"bad variant {text!r}: NAME:KEY=VALUE,KEY=VALUE")
    return name, dict(pairs)


def _home(scoring, key: str):
    """The module a constant lives in: ``MODULE.NAME`` one of MODULES, a bare ``NAME`` the
    scoring module's."""
    import importlib

    module = key.rpartition(".")[0]
    return importlib.import_module(MODULES[module]) if module else scoring


def ask(ws, scoring, question: str, opts: dict[str, str], default_tokens: int):
    """One answer with the variant's constants set, and the constants put back after."""
    constants = {k: v for k, v in opts.items() if k not in OPTIONS}
    for k in constants:
        if not hasattr(_home(scoring, k), k.rpartition(".")[2]):
            raise SystemExit(f"{_home(scoring, k).__name__} has no {k.rpartition('.')[2]}")
    saved = {k: getattr(_home(scoring, k), k.rpartition(".")[2]) for k in constants}
    try:
        for k, v in constants.items():
            # An int constant (a count, a slice bound) stays an int; a switch stays a bool.
            kind = type(saved[k]) if isinstance(saved[k], (bool, int)) else float
            setattr(_home(scoring, k), k.rpartition(".")[2], kind(float(v)))
        res = ws.context(question, max_tokens=int(opts.get("tokens", default_tokens)),
                         exclude_tests=opts.get("exclude", "0") == "1", format="markdown")
    finally:
        for k, v in saved.items():
            setattr(_home(scoring, k), k.rpartition(".")[2], v)
    return {"ranked": list(res.files), "context_text": res.text,
            "context_files": list(dict.fromkeys(si.item.path for si in res.items))}


def indexed_trees(instances: list[dict], work: Path):
    """(tree, instances) for each base commit of ``instances`` whose tree under
    ``WORK/repos`` has an index (one tree serves every instance of its commit)."""
    groups: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for inst in instances:
        groups[(inst["repo"], inst["base_commit"])].append(inst)
    trees = {p.name: p for p in (work / "repos").iterdir() if (p / ".smartcontext").is_dir()}
    for members in groups.values():
        tree = next((trees[i["instance_id"]] for i in members if i["instance_id"] in trees), None)
        if tree is not None:
            yield tree, members


def run_swebench(name: str, work: Path, variants, Workspace, scoring) -> dict[str, list[dict]]:
    results: dict[str, list[dict]] = {v: [] for v, _ in variants}
    for tree, members in indexed_trees(sw.load_instances(SETS[name]), work):
        with Workspace.open(tree) as ws:
            for inst in members:
                for vname, opts in variants:
                    r = cc.score(inst, ask(ws, scoring, inst["problem_statement"], opts, 8000), 8000)
                    r.update(instance_id=inst["instance_id"], multi=len(inst["gold_files"]) > 1)
                    results[vname].append(r)
    for vname, rows in results.items():
        for label, sub in (("all", rows), ("one-file", [r for r in rows if not r["multi"]]),
                           ("multi-file", [r for r in rows if r["multi"]])):
            if sub:
                hunks = sum(r["hunks"] for r in sub)
                print(f"{name} {vname:12s} {label:10s} n={len(sub):3d}  Acc@1 {cc.pct([r['acc@1'] for r in sub]):5.1f}"
                      f"  Acc@5 {cc.pct([r['acc@5'] for r in sub]):5.1f}  Acc@10 {cc.pct([r['acc@10'] for r in sub]):5.1f}"
                      f"  in context {cc.pct([r['in_context'] for r in sub]):5.1f}"
                      f"  hunks {100 * sum(r['hunks_shown'] for r in sub) / max(1, hunks):5.1f}")
    return results


def run_questions(work: Path, variants, Workspace, scoring, dataset: Path = cq.DEFAULT_DATASET) -> dict[str, list[dict]]:
    data = json.loads(dataset.read_text(encoding="utf-8"))
    results: dict[str, list[dict]] = {v: [] for v, _ in variants}
    for repo, commit in data["repos"].items():
        tree = work / "repos" / f"{repo.replace('/', '+')}-{commit[:12]}"
        if not (tree / ".smartcontext").is_dir():
            continue
        questions = [q for q in data["questions"] if q["repo"] == repo]
        gold = {(g["path"], s["line"]): cq.symbol_lines(tree, g["path"], s["line"])
                for q in questions for g in q["gold"] for s in g["symbols"]}
        with Workspace.open(tree) as ws:
            for q in questions:
                for vname, opts in variants:
                    r = cq.score(q, ask(ws, scoring, q["question"], opts, 4000), gold)
                    r.update(id=q["id"], kind=q["kind"])
                    results[vname].append(r)
    for vname, rows in results.items():
        s = cq.summarise(rows)
        print(f"questions {vname:12s} n={s['questions']}  Acc@1 any {s['any@1']:.2f}  Acc@5 any {s['any@5']:.2f}"
              f"  Acc@1 first {s['first@1']:.2f}  Acc@5 first {s['first@5']:.2f}"
              f"  symbols shown {s['symbols']:.3f}  whole {s['whole']:.3f}")
        kinds = {k: cq.summarise([r for r in rows if r["kind"] == k]) for k in sorted({r["kind"] for r in rows})}
        print(f"questions {vname:12s} by kind (n Acc@1/Acc@5/symbols): " + "; ".join(
            f"{k} {g['questions']} {g['any@1']:.2f}/{g['any@5']:.2f}/{g['symbols']:.2f}" for k, g in kinds.items()))
    return results


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("set", choices=("dev", "dev2", "questions"))
    p.add_argument("variants", nargs="+", help="NAME:KEY=VALUE,... (NAME: for the defaults)")
    p.add_argument("--work", type=Path, default=None,
                   help="the bench's --work folder (default: bench/.work, or bench/.work/code-questions)")
    p.add_argument("--out", type=Path, default=None, help="write the per-question rows as JSON here")
    p.add_argument("--dataset", type=Path, default=None,
                   help="another set of the same format, with the --work its run used: for questions "
                        "bench/data/code-questions-2.json; for dev or dev2 a file of SWE-bench instances "
                        "(bench/heldout.py's, bench/dev2_pool.py's)")
    args = p.parse_args(argv)
    variants = [parse_variant(v) for v in args.variants]
    work = args.work or (sw.WORK_DIR / "code-questions" if args.set == "questions" else sw.WORK_DIR)
    if not (work / "repos").is_dir():
        print(f"no trees found under {work / 'repos'}: run the benchmark first (see the docstring)", file=sys.stderr)
        return 2
    from smartcontext import Workspace
    from smartcontext.retrieval import scoring

    t0 = time.perf_counter()
    if args.set == "questions":
        results = run_questions(work, variants, Workspace, scoring, args.dataset or cq.DEFAULT_DATASET)
    else:
        if args.dataset is not None:
            SETS[args.set] = args.dataset
        results = run_swebench(args.set, work, variants, Workspace, scoring)
    if args.out:
        args.out.write_text(json.dumps(results, indent=1), encoding="utf-8")
    print(f"{time.perf_counter() - t0:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
