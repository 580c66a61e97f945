"""Fit the file-ranking constants for bug reports across repositories, and judge the fit by
leaving one repository out.

Which file ranks first for a question is ``context/pipeline._rank_files``: a file's
``scoring.file_scores`` (its whole-file BM25, its best symbols, the names, vectors,
traceback frames and title that reach it, times the test and auxiliary-folder priors),
over the best file's, plus FILE_BEST_ITEM_WEIGHT times its best item's final score. Those
constants were set one rule at a time; this script asks whether constants fitted over all
the bug reports we have rank better on repositories the fit never saw.

    python bench/fit_file_ranking.py collect --out F.json     # every set once: 1.5 min quiet
    python bench/fit_file_ranking.py fit F.json                # file-level constants: ~1.5 min
    python bench/fit_file_ranking.py pairwise F.json --use file,best,whole,symbols,items
    python bench/fit_file_ranking.py collect --set OWNER=0.5 --out runs/owner05.json
    python bench/fit_file_ranking.py select runs/*.json        # runs/base.json: no --set

``collect`` reopens the indexes bench/ablate.py reads (SWE-bench dev, the dev2 design
sample and held-out pool, both question sets; a set whose trees are not built is left out), asks each question once (with ``--set``'s constants, else the
current ones) and keeps, for every ranked file, its ``scoring.file_components`` (the
unweighted signals), the depth of its traceback frame and whether the report writes its
path, its item count and its best item's final score. ``fit`` re-ranks those files under
other file-level constants (the same arithmetic as file_scores and _rank_files; the item
scores stay those of the run), fits them by coordinate search once per repository on all
the other repositories' reports, and prints the cross-validated figures beside the current
constants' on the same reports. ``pairwise`` does the same with a linear model over the
signals; ``select`` chooses, per repository left out, among runs with item-level constants
set (those change the signals, so each value is a run of its own). Results and reading:
docs/benchmarks.md, "File ranking fitted across repositories".
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _swebench as sw
import ablate

# (set name, ablate set, work folder). The dev2 sets are the trees indexed under each
# folder; the dataset is dev2.json for both.
REPORT_SETS = (
    ("dev", "dev", sw.WORK_DIR),
    ("dev2", "dev2", sw.WORK_DIR / "dev2"),
    # bench/dev2_pool.py: the one-file reports outside the design sample (held out)
    ("dev2pool", "dev2", Path("/tmp/dev2-pool")),
)
QUESTION_SETS = (
    ("questions", Path(ablate.cq.DEFAULT_DATASET), sw.WORK_DIR / "code-questions"),
    ("questions2", sw.BENCH_DIR / "data" / "code-questions-2.json", Path("/tmp/cq8/cq2")),
)
SIGNALS = ("whole", "symbols", "names", "vectors", "frames", "title", "prior", "test")


# --- collect -------------------------------------------------------------------------

class Recorder:
    """Patches the scoring and pipeline functions to keep what one question's file ranking
    is made of; ``take`` returns it and starts afresh."""

    def __init__(self):
        from smartcontext.context import pipeline
        from smartcontext.retrieval import scoring

        self.scoring, self.pipeline = scoring, pipeline
        self.current: dict = {}
        components, frame_files, rank_files = scoring.file_components, scoring.frame_files, pipeline._rank_files
        self._saved = (components, frame_files, rank_files)

        def frames_spy(cat, entities, placed=None):
            out = frame_files(cat, entities, placed)
            saved = scoring.NAMED_PATH_FILE
            scoring.NAMED_PATH_FILE = 0.0
            try:
                pure = frame_files(cat, entities, placed)
            finally:
                scoring.NAMED_PATH_FILE = saved
            self.current["depth"] = {p: round(math.log(v) / math.log(scoring.FILE_FRAME_STEP)) for p, v in pure.items()}
            self.current["named_path"] = sorted(set(scoring.named_paths(cat, entities)))
            return out

        def components_spy(*args, **kwargs):
            out = components(*args, **kwargs)
            self.current["components"] = out
            return out

        def rank_spy(ranked, cat, file_rank):
            best, extra = pipeline._item_scores_by_file(ranked, cat)
            self.current["best"], self.current["extra"] = best, extra
            self.current["items"] = {p: len(cat.by_path.get(p, ())) for p in set(file_rank) | set(best)}
            return rank_files(ranked, cat, file_rank)

        scoring.frame_files, scoring.file_components, pipeline._rank_files = frames_spy, components_spy, rank_spy

    def restore(self) -> None:
        """Put the patched functions back."""
        self.scoring.file_components, self.scoring.frame_files, self.pipeline._rank_files = self._saved

    def take(self, ranked: list[str], gold: list[str]) -> dict:
        cur, self.current = self.current, {}
        comps, best, extra = cur.get("components", {}), cur.get("best", {}), cur.get("extra", {})
        # Every file file_scores ranked (any may move up), the first 100 of the others (they
        # follow all of those, by their best item), and the gold files.
        keep = set(comps) | set(ranked[:100]) | set(gold)
        pos = {p: i for i, p in enumerate(ranked)}
        files = {}
        for p in keep:
            c = comps.get(p)
            row = {k: round(c[k], 6) for k in SIGNALS} if c is not None else None
            files[p] = {"c": row, "depth": cur.get("depth", {}).get(p), "named": p in cur.get("named_path", ()),
                        "best": round(best.get(p, 0.0), 6), "extra": round(extra.get(p, 0.0), 6),
                        "pos": pos.get(p, 10**6), "items": cur.get("items", {}).get(p, 0)}
        return {"files": files, "ranked": ranked[:50], "n_scored": len(comps)}


def set_constants(pairs: dict[str, str]) -> None:
    """Set ``NAME=VALUE`` as bench/ablate.py does (``MODULE.NAME`` for another module's);
    ``cfg.NAME`` sets a field of every answer's ExtractionConfig (``cfg.entity_weight``:
    the profile's fusion weight of names)."""
    from smartcontext.context import pipeline
    from smartcontext.retrieval import scoring

    fields = {k.partition(".")[2]: float(v) for k, v in pairs.items() if k.startswith("cfg.")}
    for k, v in pairs.items():
        if k.startswith("cfg."):
            continue
        home, name = ablate._home(scoring, k), k.rpartition(".")[2]
        if not hasattr(home, name):
            raise SystemExit(f"{home.__name__} has no {name}")
        old = getattr(home, name)
        setattr(home, name, (type(old) if isinstance(old, (bool, int)) else float)(float(v)))
    if fields:
        extract = pipeline.SmartContextExtractor.extract

        def with_fields(self, question, format="mu"):
            for name, value in fields.items():
                setattr(self.config, name, value)
            return extract(self, question, format)

        pipeline.SmartContextExtractor.extract = with_fields


def collect(out: Path, only: set[str] | None, constants: dict[str, str] | None = None) -> None:
    from smartcontext import Workspace

    set_constants(constants or {})
    rec = Recorder()
    rows = []
    t0 = time.perf_counter()
    for name, kind, work in REPORT_SETS:
        if only and name not in only:
            continue
        if not (work / "repos").is_dir():
            print(f"{name}: no trees under {work / 'repos'}, left out (see the docstring)", file=sys.stderr)
            continue
        for tree, members in ablate.indexed_trees(sw.load_instances(ablate.SETS[kind]), work):
            with Workspace.open(tree) as ws:
                for inst in members:
                    res = ws.context(inst["problem_statement"], max_tokens=8000, format="markdown")
                    rows.append({"set": name, "id": inst["instance_id"], "repo": inst["repo"],
                                 "gold": inst["gold_files"], **rec.take(list(res.files), inst["gold_files"])})
        print(f"{name}: {sum(r['set'] == name for r in rows)} reports, {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    for name, dataset, work in QUESTION_SETS:
        if only and name not in only:
            continue
        data = json.loads(dataset.read_text(encoding="utf-8"))
        for repo, commit in data["repos"].items():
            tree = work / "repos" / f"{repo.replace('/', '+')}-{commit[:12]}"
            if not (tree / ".smartcontext").is_dir():
                continue
            with Workspace.open(tree) as ws:
                for q in (q for q in data["questions"] if q["repo"] == repo):
                    gold = [g["path"] for g in q["gold"]]
                    res = ws.context(q["question"], max_tokens=4000, format="markdown")
                    rows.append({"set": name, "id": q["id"], "repo": repo, "gold": gold, "question": True,
                                 **rec.take(list(res.files), gold)})
        print(f"{name}: {sum(r['set'] == name for r in rows)} questions, {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps(rows), encoding="utf-8")
    tmp.replace(out)


# --- re-rank -------------------------------------------------------------------------

# The constants a fit may move, with the values the coordinate search tries for each.
GRID = {
    "FILE_SYMBOL_WEIGHT": (0.0, 0.125, 0.25, 0.375, 0.5, 0.75, 1.0, 1.5, 2.0),
    "FILE_ENTITY_WEIGHT": (0.0, 0.125, 0.25, 0.375, 0.5, 0.75, 1.0, 1.5),
    "FILE_TITLE_WEIGHT": (0.0, 0.125, 0.25, 0.375, 0.5, 0.75, 1.0),
    "FILE_FRAME_WEIGHT": (0.0, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0),
    "FILE_FRAME_STEP": (0.25, 0.5, 0.75, 1.0),
    "NAMED_PATH_FILE": (0.0, 0.25, 0.5, 0.75, 1.0),
    "TEST_PRIOR": (0.1, 0.2, 0.3, 0.5, 0.7, 1.0),
    "AUX_PRIOR": (0.25, 0.5, 0.75, 1.0),
    "FILE_BEST_ITEM_WEIGHT": (0.0, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0),
}


def current_constants() -> dict[str, float]:
    from smartcontext.context import pipeline
    from smartcontext.retrieval import scoring

    return {k: float(getattr(pipeline if k == "FILE_BEST_ITEM_WEIGHT" else scoring, k)) for k in GRID}


def rerank(row: dict, k: dict[str, float]) -> list[str]:
    """The row's files ranked under constants ``k`` (file_scores, then _rank_files)."""
    scored, rest = {}, {}
    for p, f in row["files"].items():
        c = f["c"]
        if c is None:
            rest[p] = f["best"] + 0.1 * min(f["extra"], 2.0)
            continue
        frames = c["frames"]
        if f["depth"] is not None or f["named"]:
            frames = max(k["FILE_FRAME_STEP"] ** f["depth"] if f["depth"] is not None else 0.0,
                         k["NAMED_PATH_FILE"] if f["named"] else 0.0)
        s = (c["whole"] + k["FILE_SYMBOL_WEIGHT"] * c["symbols"] + k["FILE_ENTITY_WEIGHT"] * c["names"]
             + 0.25 * c["vectors"] + k["FILE_FRAME_WEIGHT"] * frames + k["FILE_TITLE_WEIGHT"] * c["title"])
        prior = c["prior"] if c["prior"] == 1.0 else k["AUX_PRIOR"]
        scored[p] = (s * prior * (k["TEST_PRIOR"] if c["test"] else 1.0), f["best"])
    top = max((v for v, _ in scored.values()), default=0.0) or 1.0
    combined = {p: v / top + k["FILE_BEST_ITEM_WEIGHT"] * b for p, (v, b) in scored.items()}
    files = row["files"]
    # Ties keep the order the pipeline gave them.
    first = sorted(combined, key=lambda p: (-combined[p], files[p]["pos"]))
    return first + sorted(rest, key=lambda p: (-rest[p], files[p]["pos"]))


def measures(row: dict, ranked: list[str]) -> dict[str, float]:
    gold = row["gold"]
    ranks = [ranked.index(g) + 1 if g in ranked else 10**6 for g in gold]
    worst, best = max(ranks), min(ranks)
    return {"acc@1": worst <= 1, "acc@5": worst <= 5, "acc@10": worst <= 10,
            "any@1": best <= 1, "any@5": best <= 5, "rr": 1.0 / best}


def objective(rows: list[dict], k: dict[str, float]) -> float:
    """What the fit maximises, per report (row_value), averaged."""
    return sum(row_value(r, rerank(r, k)) for r in rows) / max(1, len(rows))


def row_value(row: dict, ranked: list[str]) -> float:
    """One-file: Acc@1 + Acc@5 + Acc@10/2; several files: any of them in the top 5 + all of
    them; a little reciprocal rank of the best gold file to break ties."""
    m = measures(row, ranked)
    if len(row["gold"]) == 1:
        return m["acc@1"] + m["acc@5"] + 0.5 * m["acc@10"] + 0.1 * m["rr"]
    return m["any@5"] + m["acc@5"] + 0.1 * m["rr"]


def fit(rows: list[dict], start: dict[str, float], rounds: int = 3) -> dict[str, float]:
    """Coordinate search over GRID from ``start``: each constant in turn takes its best value
    with the others fixed (ties keep the current value), until a round changes nothing."""
    k = dict(start)
    best = objective(rows, k)
    for _ in range(rounds):
        moved = False
        for name, values in GRID.items():
            for v in values:
                if v == k[name]:
                    continue
                trial = {**k, name: v}
                score = objective(rows, trial)
                if score > best + 1e-9:
                    best, k, moved = score, trial, True
        if not moved:
            break
    return k


def key(row: dict) -> tuple[str, str]:
    """A report's key: an instance can be in two samples (its base commit shared), asked
    over each sample's own tree."""
    return row["set"], row["id"]


def table(rows: list[dict], ranks: dict[str, list[str]]) -> dict[str, float]:
    one = [r for r in rows if len(r["gold"]) == 1]
    multi = [r for r in rows if len(r["gold"]) > 1]

    def pct(sub, measure):
        return 100.0 * sum(measures(r, ranks[key(r)])[measure] for r in sub) / len(sub) if sub else float("nan")

    return {"n1": len(one), "acc@1": pct(one, "acc@1"), "acc@5": pct(one, "acc@5"), "acc@10": pct(one, "acc@10"),
            "nm": len(multi), "multi any@5": pct(multi, "any@5"), "multi all@5": pct(multi, "acc@5")}


def show(label: str, t: dict[str, float]) -> str:
    multi = f"  multi n={t['nm']:2d} any@5 {t['multi any@5']:5.1f} all@5 {t['multi all@5']:5.1f}" if t["nm"] else ""
    return (f"{label:28s} one-file n={t['n1']:3d} Acc@1 {t['acc@1']:5.1f} Acc@5 {t['acc@5']:5.1f}"
            f" Acc@10 {t['acc@10']:5.1f}{multi}")


def outranking(row: dict, gold: str) -> int | None:
    """How many files score at least as high as ``gold`` on every signal (and higher on one),
    the priors counting against: any weights at all rank those above it. None when file_scores
    did not rank it."""
    def signals(f):
        c = f["c"]
        return [c[k] for k in ("whole", "symbols", "names", "vectors", "frames", "title")] + [
            f["best"], -c["test"], -float(c["prior"] < 1.0)]

    g = row["files"].get(gold)
    if g is None or g["c"] is None:
        return None
    mine = signals(g)
    count = 0
    for p, f in row["files"].items():
        if p != gold and f["c"] is not None:
            theirs = signals(f)
            if all(a >= b - 1e-12 for a, b in zip(theirs, mine)) and any(a > b + 1e-12 for a, b in zip(theirs, mine)):
                count += 1
    return count


def run_fit(path: Path, out: Path | None, questions_in_fit: bool) -> int:
    rows = json.loads(path.read_text(encoding="utf-8"))
    reports = [r for r in rows if not r.get("question")]
    questions = [r for r in rows if r.get("question")]
    base = current_constants()
    # The re-ranking with the current constants must give the pipeline's own ranking.
    same = sum(rerank(r, base)[:10] == r["ranked"][:10] for r in rows)
    print(f"re-ranking reproduces the pipeline's top 10 for {same} of {len(rows)} questions")
    fit_rows = reports + (questions if questions_in_fit else [])
    repos = sorted({r["repo"] for r in reports})
    cv_rank: dict[str, list[str]] = {}
    folds = {}
    for repo in repos:
        train = [r for r in fit_rows if r["repo"] != repo]
        k = fit(train, base)
        folds[repo] = k
        for r in rows:
            if r["repo"] == repo:
                cv_rank[key(r)] = rerank(r, k)
    for r in questions:  # a question set's repository with no report: fitted on all reports
        if key(r) not in cv_rank:
            cv_rank[key(r)] = rerank(r, folds.setdefault(r["repo"], fit(fit_rows, base)))
    everything = fit(fit_rows, base)
    now = {key(r): rerank(r, base) for r in rows}
    fitted = {key(r): rerank(r, everything) for r in rows}
    print("\nconstants: current -> fitted on every repository")
    for name in GRID:
        print(f"  {name:22s} {base[name]:6.3f} -> {everything[name]:6.3f}")
    print("\nper fold (repository left out: its constants)")
    for repo, k in folds.items():
        n = sum(r["repo"] == repo for r in reports)
        print(f"  {repo:28s} n={n:3d} " + " ".join(f"{v:g}" for v in k.values()))
    print("\nleave one repository out: current constants / fitted on the other repositories / fitted on all (not held out)")
    groups = [("all reports", reports)] + [(name, [r for r in reports if r["set"] == name]) for name, _, _ in REPORT_SETS]
    groups += [(f"dev2 all ({name})", [r for r in reports if r["set"] != "dev"]) for name in ("3 samples",)]
    for label, sub in groups:
        if sub:
            print(show(f"{label} current", table(sub, now)))
            print(show(f"{label} CV", table(sub, cv_rank)))
            print(show(f"{label} all-data fit", table(sub, fitted)))
    print("\nper repository (one-file Acc@1/Acc@5): current -> CV")
    for repo in repos:
        sub = [r for r in reports if r["repo"] == repo]
        a, b = table(sub, now), table(sub, cv_rank)
        print(f"  {repo:28s} n1={a['n1']:3d} {a['acc@1']:5.1f}/{a['acc@5']:5.1f} -> {b['acc@1']:5.1f}/{b['acc@5']:5.1f}")
    print("\nthe most any weights could do, each report with weights of its own (one-file Acc@1/Acc@5):")
    for label, sub in groups:
        one = [r for r in sub if len(r["gold"]) == 1]
        if one:
            above = [outranking(r, r["gold"][0]) for r in one]
            print(f"  {label:28s} n={len(one):3d} {100 * sum(a == 0 for a in above) / len(one):5.1f} / "
                  f"{100 * sum(a is not None and a <= 4 for a in above) / len(one):5.1f}")
    for name, _, _ in QUESTION_SETS:
        sub = [r for r in questions if r["set"] == name]
        if sub:
            for label, ranks in (("current", now), ("CV", cv_rank), ("all-data fit", fitted)):
                print(f"{name} {label:13s} n={len(sub)} any@1 "
                      f"{sum(measures(r, ranks[key(r)])['any@1'] for r in sub) / len(sub):.2f} any@5 "
                      f"{sum(measures(r, ranks[key(r)])['any@5'] for r in sub) / len(sub):.2f}")
    if out:
        out.write_text(json.dumps({"current": base, "fitted": everything, "folds": folds}, indent=1), encoding="utf-8")
    return 0


def run_select(paths: list[Path]) -> int:
    """Item-level constants cannot be re-ranked offline: each variant is a ``collect`` run
    with them set. Left one repository out, the variant (the current constants among them)
    with the best objective on the other repositories answers that repository."""
    runs = {}
    for path in paths:
        rows = json.loads(path.read_text(encoding="utf-8"))
        runs[path.stem] = {key(r): r for r in rows}
    names = list(runs)
    ids = list(runs[names[0]])
    rows0 = runs[names[0]]
    # Each run's own ranking (its first 50 files): its constants were set when it was asked.
    ranks = {v: {i: r["ranked"] for i, r in runs[v].items()} for v in names}
    reports = [i for i in ids if not rows0[i].get("question")]
    repos = sorted({rows0[i]["repo"] for i in reports})

    def value(v, chosen_ids):
        return sum(per_row[v][i] for i in chosen_ids)

    per_row = {v: {i: row_value(rows0[i], ranks[v][i]) for i in ids} for v in names}
    print("variant (all reports, one-file Acc@1/Acc@5/Acc@10; per set dev, dev2, dev2pool Acc@1/Acc@5; questions any@1)")
    for v in names:
        def t(sub):
            return table([runs[v][i] for i in sub], ranks[v])
        a = t(reports)
        per = " ".join(f"{t([i for i in reports if rows0[i]['set'] == n])['acc@1']:5.1f}/"
                       f"{t([i for i in reports if rows0[i]['set'] == n])['acc@5']:5.1f}" for n, _, _ in REPORT_SETS)
        qs = " ".join(f"{sum(measures(rows0[i], ranks[v][i])['any@1'] for i in q) / len(q):.2f}"
                      for n, _, _ in QUESTION_SETS if (q := [i for i in ids if rows0[i]['set'] == n]))
        print(f"  {v:14s} {a['acc@1']:5.1f}/{a['acc@5']:5.1f}/{a['acc@10']:5.1f}  {per}  q {qs}")
    chosen, cv = {}, {}
    for repo in repos:
        train = [i for i in reports if rows0[i]["repo"] != repo]
        # The current constants win ties.
        v = max(names, key=lambda v: (value(v, train), v == "base"))
        chosen[repo] = v
        for i in ids:
            if rows0[i]["repo"] == repo:
                cv[i] = ranks[v][i]
    for i in ids:
        cv.setdefault(i, ranks[max(names, key=lambda v: (value(v, reports), v == "base"))][i])
    print("\nchosen per fold: " + ", ".join(f"{r.split('/')[1]} {v}" for r, v in chosen.items()))
    base_name = "base" if "base" in names else names[0]
    for label, sub in [("all reports", reports)] + [(n, [i for i in reports if rows0[i]["set"] == n]) for n, _, _ in REPORT_SETS]:
        print(show(f"{label} current", table([rows0[i] for i in sub], ranks[base_name])))
        print(show(f"{label} CV", table([rows0[i] for i in sub], cv)))
    return 0


# --- a pairwise model ----------------------------------------------------------------

# What a linear model may weigh, per ranked file: the current combination's two parts
# (``file`` = file_scores over the best file's, ``best`` = its best item), the signals apart,
# the priors as flags, and what no constant reads today (the file's item count, log;
# whether it is a package's __init__.py; its folder depth).
FEATURES = ("file", "best", "whole", "symbols", "names", "frames", "title", "test", "aux", "items", "init", "depth")


def features(row: dict) -> tuple[list[str], np.ndarray]:
    import numpy as np

    k = current_constants()
    files = {p: f for p, f in row["files"].items() if f["c"] is not None}
    raw = {}
    for p, f in files.items():
        c = f["c"]
        raw[p] = ((c["whole"] + k["FILE_SYMBOL_WEIGHT"] * c["symbols"] + k["FILE_ENTITY_WEIGHT"] * c["names"]
                   + 0.25 * c["vectors"] + k["FILE_FRAME_WEIGHT"] * c["frames"] + k["FILE_TITLE_WEIGHT"] * c["title"])
                  * c["prior"] * (k["TEST_PRIOR"] if c["test"] else 1.0))
    top = max(raw.values(), default=0.0) or 1.0
    paths = list(files)
    x = [[raw[p] / top, files[p]["best"], files[p]["c"]["whole"], files[p]["c"]["symbols"], files[p]["c"]["names"],
          files[p]["c"]["frames"], files[p]["c"]["title"], files[p]["c"]["test"], float(files[p]["c"]["prior"] < 1.0),
          math.log1p(files[p].get("items", 0)), float(p.endswith("__init__.py")), float(p.count("/"))] for p in paths]
    return paths, np.array(x, dtype=float).reshape(len(paths), len(FEATURES))


def train_pairwise(rows: list[dict], cache: dict, cols: list[int], depth: int = 30, l2: float = 1e-3):
    """Logistic loss on (gold file, other file) pairs, the others the best ``depth`` files of
    the current ranking, each report weighing 1; plain gradient descent (numpy only)."""
    import numpy as np

    diffs, weights = [], []
    for r in rows:
        paths, x = cache[key(r)]
        at = {p: i for i, p in enumerate(paths)}
        others = [at[p] for p in r["ranked"][:depth] if p in at and p not in r["gold"]]
        golds = [at[g] for g in r["gold"] if g in at]
        for g in golds:
            for o in others:
                diffs.append(x[g, cols] - x[o, cols])
                weights.append(1.0 / (len(golds) * len(others)))
    d, w = np.array(diffs), np.array(weights)
    theta = np.zeros(len(cols))
    for _ in range(3000):
        z = d @ theta
        grad = -(d * (w / (1.0 + np.exp(z)))[:, None]).sum(0) / w.sum() + l2 * theta
        theta -= 0.5 * grad
    return theta


def rank_pairwise(row: dict, cache: dict, cols: list[int], theta) -> list[str]:
    paths, x = cache[key(row)]
    s = x[:, cols] @ theta
    files = row["files"]
    first = [paths[i] for i in sorted(range(len(paths)), key=lambda i: (-s[i], files[paths[i]]["pos"]))]
    rest = [p for p, f in files.items() if f["c"] is None]
    return first + sorted(rest, key=lambda p: (-(files[p]["best"] + 0.1 * min(files[p]["extra"], 2.0)), files[p]["pos"]))


def run_pairwise(path: Path, names: list[str]) -> int:
    rows = json.loads(path.read_text(encoding="utf-8"))
    reports = [r for r in rows if not r.get("question")]
    cache = {key(r): features(r) for r in rows}
    cols = [FEATURES.index(n) for n in names]
    base = current_constants()
    now = {key(r): rerank(r, base) for r in rows}
    cv = {}
    for repo in sorted({r["repo"] for r in reports}):
        theta = train_pairwise([r for r in reports if r["repo"] != repo], cache, cols)
        for r in rows:
            if r["repo"] == repo:
                cv[key(r)] = rank_pairwise(r, cache, cols, theta)
    theta = train_pairwise(reports, cache, cols)
    print("weights fitted on all reports (over the first's): "
          + ", ".join(f"{n} {v / abs(theta[0]) if theta[0] else v:.3f}" for n, v in zip(names, theta)))
    for label, sub in [("all reports", reports)] + [(n, [r for r in reports if r["set"] == n]) for n, _, _ in REPORT_SETS]:
        print(show(f"{label} current", table(sub, now)))
        print(show(f"{label} pairwise CV", table(sub, cv)))
    for name, _, _ in QUESTION_SETS:
        sub = [r for r in rows if r["set"] == name]
        if sub:
            for label, ranks in (("current", now), ("pairwise CV", cv)):
                print(f"{name} {label:13s} n={len(sub)} any@1 "
                      f"{sum(measures(r, ranks[key(r)])['any@1'] for r in sub) / len(sub):.2f} any@5 "
                      f"{sum(measures(r, ranks[key(r)])['any@5'] for r in sub) / len(sub):.2f}")
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("collect", help="ask every set once and keep each ranked file's signals")
    c.add_argument("--out", type=Path, required=True)
    c.add_argument("--sets", default="", help="comma-separated subset of: dev,dev2,dev2pool,questions,questions2")
    c.add_argument("--set", dest="constants", default="",
                   help="NAME=VALUE,... constants to answer with (bench/ablate.py's names; cfg.NAME for fusion weights)")
    f = sub.add_parser("fit", help="fit the constants, leave one repository out, print the tables")
    f.add_argument("features", type=Path)
    f.add_argument("--out", type=Path, default=None, help="write the fitted constants (all data, per fold) as JSON")
    f.add_argument("--questions-in-fit", action="store_true", help="fit on the question sets too")
    sel = sub.add_parser("select", help="choose among collect runs with other item-level constants, per fold")
    sel.add_argument("runs", type=Path, nargs="+", help="collect outputs; the one named base.json is the current constants")
    pw = sub.add_parser("pairwise", help="a linear model over the signals, fitted on gold-vs-other pairs, left one repository out")
    pw.add_argument("features", type=Path)
    pw.add_argument("--use", default="file,best", help=f"comma-separated, of: {','.join(FEATURES)}")
    args = p.parse_args(argv)
    if args.cmd == "pairwise":
        return run_pairwise(args.features, args.use.split(","))
    if args.cmd == "select":
        return run_select(args.runs)
    if args.cmd == "collect":
        collect(args.out, set(filter(None, args.sets.split(","))) or None,
                ablate.parse_variant("x:" + args.constants)[1] if args.constants else None)
        return 0
    return run_fit(args.features, args.out, args.questions_in_fit)


if __name__ == "__main__":
    sys.exit(main())
