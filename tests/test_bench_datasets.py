"""Benchmark scripts fail loudly when a dataset is missing: a non-zero exit naming the
path, never a "skipped" that exits 0 and reads as a pass (issue 12)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"


@pytest.mark.parametrize(
    ("script", "args"),
    [
        ("code_context.py", ["--dataset", "{missing}/dev.json"]),
        ("code_questions.py", ["--dataset", "{missing}/dev.json"]),
        ("incremental.py", ["--dataset", "{missing}/dev.json"]),
        ("smart_connections.py", ["--dataset", "{missing}/vault.tar.gz"]),
        ("vault.py", ["--datasets", "{missing}", "--parts", "locomo"]),
        ("agent.py", ["--datasets", "{missing}"]),
        ("web.py", ["--dataset", "{missing}/dev.json"]),
        ("embeddings.py", ["--datasets", "{missing}"]),
        ("dev2_pool.py", ["{missing}/pool.json", "--dataset", "{missing}/dev2.json"]),
    ],
)
def test_a_missing_dataset_is_an_error(tmp_path, script, args):
    missing = tmp_path / "no-datasets"
    proc = subprocess.run(
        [sys.executable, str(BENCH / script), *(a.format(missing=missing) for a in args)],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )
    assert proc.returncode != 0, proc.stdout + proc.stderr
    assert str(missing) in proc.stderr and "not found" in proc.stderr


def test_the_dev2_pool_is_every_one_file_report_outside_the_design_commits():
    sys.path.insert(0, str(BENCH))
    import dev2_pool

    def report(i, repo, commit, files=("a.py",)):
        return {"instance_id": i, "repo": repo, "base_commit": commit, "gold_files": list(files)}

    instances = [report("r-3", "o/r", "c2"), report("r-1", "o/r", "c1"), report("r-2", "o/r", "c1"),
                 report("r-4", "o/r", "c3", ("a.py", "b.py")), report("s-1", "o/s", "c1")]
    # r-1 is designed on; r-2 shares its tree; r-4 edits two files: the pool is the rest.
    assert [i["instance_id"] for i in dev2_pool.pool(instances, {"r-1"})] == ["r-3", "s-1"]
