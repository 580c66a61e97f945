"""Run the peer contextsmith on one instance; executed by contextsmith's own venv Python.

    VENV/bin/python bench/_contextsmith_driver.py JOB.json OUT.json

Uses its documented library API (``Engine(path).index()``, ``.rank(task)``,
``.context(task, budget=...)``), which is what its MCP server and CLI call. Standard
library only besides contextsmith, so it never imports this project.
"""

from __future__ import annotations

import json
import resource
import sys
import time
from pathlib import Path


def main() -> None:
    job = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    from contextsmith import semantic
    from contextsmith.engine import Engine
    from contextsmith.text import _encoder

    # Without its rank file tiktoken falls back to len/4 silently; such numbers mean nothing.
    if _encoder() is None:
        sys.exit("contextsmith could not load cl100k_base: TIKTOKEN_CACHE_DIR is not seeded")
    root = Path(job["tree"])
    db = Path(job["db_path"])
    if not job.get("reuse_index"):  # cold: no index yet
        for suffix in ("", "-wal", "-shm"):
            Path(str(db) + suffix).unlink(missing_ok=True)
    db.parent.mkdir(parents=True, exist_ok=True)

    t0 = time.perf_counter()
    eng = Engine(root, db_path=db)
    report = eng.index()
    index_s = time.perf_counter() - t0
    if Path(eng.root).resolve() != root.resolve():
        sys.exit(f"contextsmith indexed {eng.root}, not {root}: git found an enclosing repository")
    # tree-sitter-language-pack 1.x fetches grammars at run time and, offline, yields no symbols.
    if report.files_seen and not report.symbols:
        sys.exit(f"contextsmith found {report.files_seen} files but no symbols: check tree-sitter-language-pack")

    budget = job["max_tokens"]
    t0 = time.perf_counter()
    pack = eng.context(job["question"], budget=budget)
    first_s = time.perf_counter() - t0
    ranking = eng.rank(job["question"])
    warm = []
    for q in job["warm_questions"]:
        t0 = time.perf_counter()
        eng.context(q, budget=budget)
        warm.append(time.perf_counter() - t0)
    out = {
        "ranked": [f.path for f in ranking.files],
        "context_text": pack.text,
        "context_files": list(pack.files),
        "reported_tokens": pack.tokens,
        "index_s": index_s,
        "first_query_s": first_s,
        "warm_s": warm,
        "info": {
            "report": report.as_dict(),
            "semantic": semantic.available(),
            "snippets": pack.units,
            "reasons_top": [f.reasons for f in ranking.files[:3]],
        },
        "maxrss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
    }
    eng.close()
    tmp = Path(sys.argv[2] + ".tmp")
    tmp.write_text(json.dumps(out), encoding="utf-8")
    tmp.replace(sys.argv[2])


if __name__ == "__main__":
    main()
