"""Does search (and context) say "nothing found" for nonsense, and never for a real question?

With vectors, nearest neighbours exist for any text; ``retrieval/noise.py`` counts a
semantic hit without a keyword match only above the index's noise floor. This measures
that rule with embeddings on (the default model, ``local:static``) on notes and on code:

  corpora    the LoCoMo conversations written as a vault (as bench/vault.py writes them),
             and flask, requests and pytest at the commits of code-questions/dev.json
  real       every LoCoMo question (searched within its conversation, as bench/vault.py
             does) on the vault; the 36 code questions on their repositories
  nonsense   120 strings made here with another generator than the engine's probes
             (letter runs, keyboard rows, syllable words, letters mixed with digits)
  unrelated  questions of the other kind: LoCoMo questions on code, code questions on the vault

For each query: does hybrid ``search`` answer nothing (the CLI's exit 1)? On the code
repositories ``context`` is asked the nonsense and the real questions too. The false
"nothing found" rate on real questions must be 0; the rejection rate of nonsense is the
point. Unrelated questions are reported, not judged: a keyword match is a match.
Also reported: the noise floor per corpus, the best cosines of each group, and how many
real questions would clear the floor with no keyword match at all (the cost of the rule
for a question that shares no word with its answer).

    python bench/no_match.py            # everything
    python bench/no_match.py --quick    # 200 LoCoMo questions, 40 nonsense, no context runs

Results: bench/results/no_match.md and .json (no_match.quick.* with --quick).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import shutil
import string
import subprocess
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _vault_locomo as locomo
from _swebench import DEFAULT_MIRRORS, _extract_mirror, find_mirror
from _vault_common import DATASETS, PROJECT, RESULTS_DIR, WORK_DIR, clean_env, load_average, machine


# context takes about a second a question here: the first this many nonsense queries.
CONTEXT_NONSENSE = 40


def nonsense(n: int, seed: int = 101) -> list[str]:
    """Nonsense of four shapes, none from the engine's probe generator."""
    rnd = random.Random(seed)
    rows = ["qwertyuiop", "asdfghjkl", "zxcvbnm"]
    out = ["qqzzxxkkjj"]
    while len(out) < n:
        shape = len(out) % 4
        if shape == 0:
            out.append("".join(rnd.choice("qxzjkvwy") + rnd.choice(string.ascii_lowercase)
                               for _ in range(rnd.randint(3, 6))))
        elif shape == 1:
            row = rnd.choice(rows)
            i = rnd.randint(0, len(row) - 4)
            out.append(row[i : i + rnd.randint(4, len(row) - i)] * rnd.randint(1, 2))
        elif shape == 2:
            out.append(" ".join("".join(rnd.choice("dgmnrst") + rnd.choice("aeou") + rnd.choice("lnrk")
                                        for _ in range(rnd.randint(1, 3))) for _ in range(rnd.randint(1, 3))))
        else:
            out.append("".join(rnd.choice(string.ascii_lowercase + string.digits) for _ in range(rnd.randint(6, 12))))
    return out


def code_trees(work: Path, repos: dict[str, str]) -> dict[str, Path]:
    out = {}
    for repo, commit in repos.items():
        dest = work / repo.replace("/", "+")
        if not dest.exists():
            git_dir = find_mirror(DEFAULT_MIRRORS, repo)
            if git_dir is None:
                raise SystemExit(f"error: no git mirror of {repo} under {DEFAULT_MIRRORS}")
            _extract_mirror(git_dir, commit, dest)
        out[repo] = dest
    return out


def judge(ws, queries: list[tuple[str, dict]], context_for: int = 0) -> dict[str, Any]:
    """Per query: search answered nothing? best cosine; keyword hits; and for the first
    ``context_for`` queries, did context select nothing?"""
    from smartcontext.retrieval.keyword import KeywordSearcher

    index, embedder = ws.vectors()
    rows = []
    for i, (q, options) in enumerate(queries):
        hits, info = ws.search_with_info(q, limit=10, **options)
        allowed = None
        if options.get("paths"):
            cat = ws.catalogue()
            allowed = {r for p in options["paths"] for path in cat.paths if path.startswith(p + "/")
                       for r in cat.by_path[path]}
        sem = index.search(embedder.embed_query(q), 1, allowed=allowed)
        row = {"q": q, "empty": not hits, "best_cosine": sem[0][1] if sem else None,
               "keyword_hits": len(KeywordSearcher(ws.store).search(q, 10, within=allowed))}
        if i < context_for:
            row["context_empty"] = not ws.context(q, max_tokens=4000).items
        rows.append(row)
    return {"rows": rows}


def summary(rows: list[dict], key: str = "empty") -> dict[str, Any]:
    n = len(rows)
    return {"n": n, "empty": sum(r[key] for r in rows if key in r), "share": sum(r[key] for r in rows if key in r) / n if n else 0.0}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--datasets", type=Path, default=DATASETS)
    p.add_argument("--work", type=Path, default=WORK_DIR.parent / "no_match")
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)

    from smartcontext import Workspace
    from smartcontext.retrieval.noise import noise_floor

    clean_env()
    args.work.mkdir(parents=True, exist_ok=True)
    data = json.loads((args.datasets / "locomo" / "dev.json").read_text(encoding="utf-8"))
    cq = json.loads((args.datasets / "code-questions" / "dev.json").read_text(encoding="utf-8"))
    junk = nonsense(40 if args.quick else 120)
    loco_qs = [(q["question"], conv["sample_id"]) for conv in data for q in conv["qa"] if q.get("question")]
    if args.quick:
        loco_qs = random.Random(5).sample(loco_qs, 200)
    unrelated_code = random.Random(6).sample([q for q, _ in loco_qs], 60)

    corpora: dict[str, Any] = {}
    vault = args.work / "locomo"
    locomo.build_vault(data, vault)
    trees = code_trees(args.work, cq["repos"])
    plan = [("locomo vault", vault, None)] + [(repo, path, repo) for repo, path in trees.items()]
    for name, root, repo in plan:
        shutil.rmtree(root / ".smartcontext", ignore_errors=True)
        ws = Workspace.open(root)
        ws.index(embeddings=True)
        index, embedder = ws.vectors()
        if repo is None:
            real = [(q, {"paths": [conv]}) for q, conv in loco_qs]
            unrelated = [(q["question"], {}) for q in cq["questions"]]
        else:
            real = [(q["question"], {}) for q in cq["questions"] if q["repo"] == repo]
            unrelated = [(q, {}) for q in unrelated_code]
        ctx = 0 if repo is None or args.quick else CONTEXT_NONSENSE
        res = {
            "items": len(index), "model": embedder.name, "noise_floor": noise_floor(index, embedder),
            "real": judge(ws, real, len(real) if ctx else 0), "nonsense": judge(ws, [(q, {}) for q in junk], ctx),
            "unrelated": judge(ws, unrelated),
        }
        corpora[name] = res
        ws.close()
        print(f"[no_match] {name}: done", file=sys.stderr)

    commit = subprocess.run(["git", "-C", str(PROJECT), "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    out = {"date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), "commit": commit,
           "load": load_average(), "machine": machine(),
           "command": "python bench/no_match.py " + " ".join(argv if argv is not None else sys.argv[1:]),
           "corpora": corpora}
    dest = args.out or RESULTS_DIR / ("no_match.quick" if args.quick else "no_match")
    dest.with_suffix(".json").write_text(json.dumps(out, indent=1, default=float))
    text = report(out)
    dest.with_suffix(".md").write_text(text + "\n")
    print(text)
    return 0


def _range(rows: list[dict]) -> str:
    xs = sorted(r["best_cosine"] for r in rows if r["best_cosine"] is not None)
    return f"{xs[0]:.2f}-{xs[-1]:.2f}" if xs else "–"


def _pct(a: int, n: int) -> str:
    return f"{a}/{n} ({100 * a / n:.1f}%)" if n else "–"


def report(out: dict[str, Any]) -> str:
    lines = [
        "# \"Nothing found\": nonsense against real questions, embeddings on",
        "",
        f"{out['date']}, engine {out['commit']}, load {out['load']}; `{out['command']}`.",
        "",
        "| corpus | items | noise floor | real: nothing found | nonsense: nothing found | unrelated: nothing found | "
        "real best cosine | nonsense best cosine | real clearing the floor without keywords |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, c in out["corpora"].items():
        real, junk, unrel = c["real"]["rows"], c["nonsense"]["rows"], c["unrelated"]["rows"]
        clear = sum(1 for r in real if r["best_cosine"] is not None and r["best_cosine"] >= c["noise_floor"])
        lines.append(
            f"| {name} | {c['items']:,} | {c['noise_floor']:.3f} | {_pct(sum(r['empty'] for r in real), len(real))} | "
            f"{_pct(sum(r['empty'] for r in junk), len(junk))} | {_pct(sum(r['empty'] for r in unrel), len(unrel))} | "
            f"{_range(real)} | {_range(junk)} | {_pct(clear, len(real))} |"
        )
    ctx = [(n, c) for n, c in out["corpora"].items() if "context_empty" in c["real"]["rows"][0]]
    if ctx:
        lines += ["", "`context` (4,000 tokens):", "", "| corpus | real: nothing selected | nonsense: nothing selected |",
                  "|---|---|---|"]
        for name, c in ctx:
            real, junk = c["real"]["rows"], c["nonsense"]["rows"]
            junk = [r for r in junk if "context_empty" in r]
            lines.append(f"| {name} | {_pct(sum(r['context_empty'] for r in real), len(real))} | "
                         f"{_pct(sum(r['context_empty'] for r in junk), len(junk))} |")
    missed = [(n, r["q"]) for n, c in out["corpora"].items() for r in c["nonsense"]["rows"] if not r["empty"]]
    if missed:
        lines += ["", "Nonsense that found something: " + ", ".join(f"`{q}` ({n})" for n, q in missed[:12])]
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
