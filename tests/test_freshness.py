"""The refresh before a question (issue 12, start-up): cheap when nothing changed, and
never blind to a change."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from smartcontext.store import sqlite as sqlite_store

ENV = {**os.environ, "SMARTCONTEXT_EMBEDDING_MODEL": "none"}


def run(*args, cwd=None, check=True):
    proc = subprocess.run([sys.executable, "-m", "smartcontext", *args], capture_output=True, text=True,
                          cwd=cwd, env=ENV, timeout=180)
    if check and proc.returncode != 0:
        raise AssertionError(f"exit {proc.returncode}\nstdout: {proc.stdout}\nstderr: {proc.stderr}")
    return proc


def _index_state(root: Path) -> tuple:
    db = root / ".smartcontext" / "index.db"
    wal = db.with_name("index.db-wal")
    return db.stat().st_mtime_ns, db.stat().st_size, wal.stat().st_size if wal.exists() else 0


def test_a_question_on_an_unchanged_folder_writes_nothing(sample_repo):
    """Nothing written means the index file keeps the stamp of its last clean integrity
    check, so the next process skips reading the whole file again."""
    run("index", str(sample_repo))
    time.sleep(2.1)  # past the racy window of the files just indexed
    run("context", "How does AuthService handle login?", str(sample_repo))  # re-stamps racy files once
    before = _index_state(sample_repo)
    for _ in range(2):
        run("context", "How does AuthService handle login?", str(sample_repo))
        run("search", "login", str(sample_repo))
    assert _index_state(sample_repo) == before
    db = sample_repo / ".smartcontext" / "index.db"
    assert (db.with_name("index.db.checked")).read_text() == sqlite_store._file_stamp(db)
    # ... and a change is still seen by the next question.
    with (sample_repo / "shop" / "pricing.py").open("a") as fh:
        fh.write("\n\ndef quokka_ledger_total(rows):\n    return sum(rows)\n")
    out = run("context", "quokka_ledger_total", str(sample_repo), "-t", "1000")
    assert "quokka_ledger_total(rows)" in out.stdout
    assert _index_state(sample_repo) != before
