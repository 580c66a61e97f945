"""Run one method on one instance, in a process of its own, and write what it returned.

    python bench/_worker.py JOB.json OUT.json

JOB holds: method ("bm25" or "smartcontext"), tree, question, warm_questions,
max_tokens, embeddings. OUT gets the ranked files, the context text, the files in the
context, the cold index time, the query times and the process's peak RSS. Metrics are
computed by the caller from this raw output, the same way for every method.
"""

from __future__ import annotations

import json
import resource
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def run_bm25(job: dict) -> dict:
    from _bm25 import BM25Index
    from _swebench import count_tokens

    count_tokens("warm the encoder")  # loading the rank file is not indexing work
    root = Path(job["tree"])
    t0 = time.perf_counter()
    index = BM25Index(root)
    index_s = time.perf_counter() - t0

    def query(q: str) -> tuple[list[str], str, list[str]]:
        ranked = [p for p, _ in index.rank(q, limit=50)]
        text, shown = index.context(ranked, job["max_tokens"])
        return ranked, text, shown

    t0 = time.perf_counter()
    ranked, text, shown = query(job["question"])
    first_s = time.perf_counter() - t0
    warm = []
    for q in job["warm_questions"]:
        t0 = time.perf_counter()
        query(q)
        warm.append(time.perf_counter() - t0)
    return {
        "ranked": ranked, "context_text": text, "context_files": shown,
        "reported_tokens": None, "index_s": index_s, "first_query_s": first_s, "warm_s": warm,
        "info": {"files_indexed": index.n_docs, "terms": len(index.postings)},
    }


def run_smartcontext(job: dict) -> dict:
    from smartcontext import Workspace

    root = Path(job["tree"])
    if not job.get("reuse_index"):  # cold: no index yet
        shutil.rmtree(root / ".smartcontext", ignore_errors=True)
    t0 = time.perf_counter()
    ws = Workspace.open(root)
    stats = ws.index(embeddings=job["embeddings"])
    index_s = time.perf_counter() - t0

    def query(q: str):
        return ws.context(q, max_tokens=job["max_tokens"], exclude_tests=job.get("exclude_tests", True),
                          format="markdown")

    t0 = time.perf_counter()
    res = query(job["question"])
    first_s = time.perf_counter() - t0
    warm = []
    for q in job["warm_questions"]:
        t0 = time.perf_counter()
        query(q)
        warm.append(time.perf_counter() - t0)
    in_context = list(dict.fromkeys(si.item.path for si in res.items))
    out = {
        "ranked": list(res.files), "context_text": res.text, "context_files": in_context,
        "reported_tokens": res.token_count, "index_s": index_s, "first_query_s": first_s,
        "warm_s": warm,
        "info": {"index_stats": stats.to_dict() if hasattr(stats, "to_dict") else str(stats),
                 "warnings": list(getattr(res, "warnings", []))},
    }
    ws.close()
    return out


def main() -> None:
    job = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    runner = {"bm25": run_bm25, "smartcontext": run_smartcontext}[job["method"]]
    out = runner(job)
    out["maxrss_kb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    tmp = Path(sys.argv[2] + ".tmp")
    tmp.write_text(json.dumps(out), encoding="utf-8")
    tmp.replace(sys.argv[2])


if __name__ == "__main__":
    main()
