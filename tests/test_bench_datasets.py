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
