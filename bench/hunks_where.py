"""Where the hunks missing from a context are, by category: over indexes already built.

    python bench/hunks_where.py dev2 --work /tmp/dev2c [--each] [pipeline.NAME=VALUE ...]

For each SWE-bench instance answered by ``bench/ablate.py`` (one-file ones for dev2), every
hunk not shown is placed: its gold file out of the context (by the file's rank), or, in the
context, by the innermost definition around the original lines it needs (module level: the
file head, between or after definitions; class body; a method, by the size of its class; a
function), and how that definition was shown. Constants are set as in ``bench/ablate.py``.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _swebench as sw
import ablate


def _definitions(src: str) -> tuple[list[tuple[int, int, str, str]], list[tuple[int, int]]]:
    """(first line, last line, name, node type) of every definition, and the top-level spans."""
    try:
        tree = ast.parse(src)
    except SyntaxError:
        return [], []

    def span(n) -> tuple[int, int]:
        return (n.decorator_list[0].lineno if n.decorator_list else n.lineno), n.end_lineno

    kinds = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    defs = [(*span(n), n.name, type(n).__name__) for n in ast.walk(tree) if isinstance(n, kinds)]
    return defs, [span(n) for n in tree.body if isinstance(n, kinds)]


def category(hunk: sw.Hunk, missing: set[str], src: str, shown: list[tuple[int, int, str]]) -> str:
    """The category of a hunk whose lines ``missing`` are not in the context."""
    m = re.match(r"@@ -(\d+),?(\d*)", hunk.header)
    first, count = int(m.group(1)), int(m.group(2) or 1)
    lines = src.splitlines()
    anchors = [n for n in range(max(1, first - 1), min(len(lines), first + count) + 1)
               if lines[n - 1].strip() in missing]
    uncovered = [n for n in anchors if not any(a <= n <= b and mode in ("full", "head") for a, b, mode in shown)]
    probe = (uncovered or anchors or [first])[len(uncovered or anchors or [first]) // 2]
    defs, top = _definitions(src)
    around = sorted((d for d in defs if d[0] <= probe <= d[1]), key=lambda d: d[1] - d[0])
    if not around:
        if not top or probe < top[0][0]:
            return "module level: the file head"
        return "module level: between or after definitions"
    inner = around[0]
    how = next((mode for a, b, mode in shown if a == inner[0] or (a <= inner[0] and inner[1] <= b and mode == "full")),
               "not shown")
    if inner[3] == "ClassDef":
        return f"class body, class {how}"
    if len(around) > 1 and around[1][3] == "ClassDef":
        cls = around[1]
        size = sw.count_tokens("\n".join(lines[cls[0] - 1:cls[1]]))
        band = "over 4,000" if size > 4000 else "1,600-4,000" if size > 1600 else "under 1,600"
        return f"method of a class of {band} tokens, {how}"
    return f"function{' (nested)' if len(around) > 1 else ''}, {how}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("set", choices=("dev", "dev2"))
    p.add_argument("constants", nargs="*", help="NAME=VALUE[,NAME=VALUE] as in bench/ablate.py")
    p.add_argument("--work", type=Path, default=sw.WORK_DIR)
    p.add_argument("--each", action="store_true", help="print every missing hunk")
    args = p.parse_intermixed_args(argv)
    opts = dict(kv.split("=", 1) for arg in args.constants for kv in arg.split(",") if kv)
    from smartcontext import Workspace
    from smartcontext.retrieval import scoring

    counts: Counter[str] = Counter()
    total = shown_count = 0
    for tree, members in ablate.indexed_trees(sw.load_instances(ablate.SETS[args.set]), args.work):
        with Workspace.open(tree) as ws:
            for inst in members:
                hunks = sw.parse_hunks(inst["patch"])
                if args.set == "dev2" and len({h.path for h in hunks}) > 1:
                    continue
                answer = {}
                context = ws.context

                def keep(*a, **k):
                    answer["result"] = context(*a, **k)
                    return answer["result"]

                ws.context = keep
                try:
                    asked = ablate.ask(ws, scoring, inst["problem_statement"], opts, 8000)
                finally:
                    ws.context = context
                lines = set(sw.context_lines(asked["context_text"]))
                ranked = asked["ranked"]
                for h in hunks:
                    total += 1
                    missing = {ln for ln in h.lines if ln not in lines}
                    if not missing:
                        shown_count += 1
                        continue
                    rank = ranked.index(h.path) + 1 if h.path in ranked else None
                    if h.path not in asked["context_files"]:
                        where = ("2-5" if rank and rank <= 5 else "6-10" if rank and rank <= 10 else "past 10 or none")
                        cat = f"gold file not in the context, ranked {where}"
                    else:
                        shown = [(si.item.start_line, si.item.end_line, si.mode)
                                 for si in answer["result"].items if si.item.path == h.path]
                        src = (tree / h.path).read_text(encoding="utf-8", errors="replace")
                        cat = category(h, missing, src, shown)
                        counts["  (in the context, gold file ranked "
                               + ("1st" if rank == 1 else "2-5" if rank and rank <= 5 else "6th+") + ")"] += 1
                    counts[cat] += 1
                    if args.each:
                        print(inst["instance_id"], h.path, h.header[:40], "->", cat, f"(rank {rank})")
    print(f"{args.set} {args.work}: hunks shown {shown_count} of {total} ({100 * shown_count / max(1, total):.1f}%)")
    for name, n in sorted(counts.items()):
        print(f"{n:4d}  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
