"""Pick a held-out SWE-bench Lite set: instances outside dev.json, for checking ranking changes.

dev.json holds all 63 Lite instances of its 8 repositories, so a change tuned on it can only
be checked on the other four (django, sympy, matplotlib, scikit-learn). This takes a copy of
the whole Lite test split (300 instances, the JSON list SWE-bench publishes) and keeps an
evenly spaced sample per repository, in instance-id order, so the same input always gives
the same set:

    python bench/heldout.py LITE.json /tmp/heldout.json
    python bench/code_context.py --no-embeddings --dataset /tmp/heldout.json --work /tmp/hw

sympy runs from a git mirror when one is at hand (--mirrors); the others come from the PyPI
release of the same version, a close stand-in. scikit-learn's old releases build their
metadata from source (numpy, Cython), which may fail offline; the bench reports them as
errors.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEV = HERE.parent.parent / "shared" / "datasets" / "swe-bench-lite" / "dev.json"
PER_REPO = {"sympy/sympy": 20, "django/django": 20, "matplotlib/matplotlib": 8,
            "scikit-learn/scikit-learn": 8}
FIELDS = ("instance_id", "repo", "base_commit", "problem_statement", "version", "created_at", "patch")


def gold_files(patch: str) -> list[str]:
    return sorted(set(re.findall(r"^diff --git a/(\S+) b/", patch, re.M)))


def pick(lite: list[dict], dev_ids: set[str], per_repo: dict[str, int]) -> list[dict]:
    chosen: list[dict] = []
    for repo, n in per_repo.items():
        pool = sorted((x for x in lite if x["repo"] == repo and x["instance_id"] not in dev_ids),
                      key=lambda x: x["instance_id"])
        if not pool:
            continue
        step = len(pool) / min(n, len(pool))
        for i in range(min(n, len(pool))):
            inst = pool[int(i * step)]
            chosen.append({k: inst[k] for k in FIELDS} | {"gold_files": gold_files(inst["patch"])})
    return chosen


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("lite", type=Path, help="the whole SWE-bench Lite test split as a JSON list")
    ap.add_argument("out", type=Path)
    ap.add_argument("--dev", type=Path, default=DEV, help="instances to leave out (default: dev.json)")
    args = ap.parse_args()
    for path in (args.lite, args.dev):
        if not path.is_file():
            print(f"error: not found: {path}", file=sys.stderr)
            return 2
    lite = json.loads(args.lite.read_text(encoding="utf-8"))
    dev_ids = {x["instance_id"] for x in json.loads(args.dev.read_text(encoding="utf-8"))}
    chosen = pick(lite, dev_ids, PER_REPO)
    args.out.write_text(json.dumps(chosen, indent=1), encoding="utf-8")
    print(f"wrote {len(chosen)} instances to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
