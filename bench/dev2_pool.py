"""The held-out pool of dev2 bug reports: every one-file report of ``dev2.json`` outside the
design sample and the base commits that sample's trees serve.

``bench/ablate.py dev2 --work bench/.work/dev2`` answers the design sample (the 50 instances
of ``bench/results/code_context.dev2-sample.json`` and the reports that share their base
commits); rules are designed on it. This pool is what they are checked on:

    python bench/dev2_pool.py /tmp/dev2-pool.json
    python bench/code_context.py --dataset /tmp/dev2-pool.json --work /tmp/dev2-pool --methods smartcontext --no-embeddings
    python bench/ablate.py dev2 --work /tmp/dev2-pool default:

The same input always gives the same pool (instance-id order).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEV2 = HERE.parent.parent / "shared" / "datasets" / "swe-bench-lite" / "dev2.json"
DESIGN = HERE / "results" / "code_context.dev2-sample.json"


def pool(instances: list[dict], design_ids: set[str]) -> list[dict]:
    served = {(i["repo"], i["base_commit"]) for i in instances if i["instance_id"] in design_ids}
    return sorted((i for i in instances
                   if i["instance_id"] not in design_ids and len(i["gold_files"]) == 1
                   and (i["repo"], i["base_commit"]) not in served),
                  key=lambda i: i["instance_id"])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out", type=Path)
    p.add_argument("--dataset", type=Path, default=DEV2)
    p.add_argument("--design", type=Path, default=DESIGN, help="a code_context.py result whose instances are the design sample")
    args = p.parse_args(argv)
    for path in (args.dataset, args.design):
        if not path.is_file():
            print(f"error: not found: {path}", file=sys.stderr)
            return 2
    design = {i["instance_id"] for i in json.loads(args.design.read_text(encoding="utf-8"))["instances"]}
    chosen = pool(json.loads(args.dataset.read_text(encoding="utf-8")), design)
    args.out.write_text(json.dumps(chosen, indent=1), encoding="utf-8")
    print(f"wrote {len(chosen)} one-file reports to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
