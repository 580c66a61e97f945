"""A process killed while saving a file of the index folder leaves a temporary file;
the next process to open the folder removes it, and never one still being written."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from conftest import write_tree

from smartcontext.workspace import Workspace
from web_support import server_env

# Stops in the middle of write_sealed: after the temporary file is written, before the
# rename that would replace the real file with it.
WRITER = """
import os, sys, time
from pathlib import Path
import smartcontext.sealed as sealed
os.replace = lambda *args: time.sleep(600)
sealed.save_sealed(Path(sys.argv[1]), b"test 1\\n", list(range(1000)))
"""


def writer(target: Path) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(target)], env=server_env())
    deadline = time.monotonic() + 60
    while not list(target.parent.glob(f"{target.name}.*.tmp")):
        assert proc.poll() is None and time.monotonic() < deadline, "the writer did not start"
        time.sleep(0.05)
    return proc


def test_temporary_files_of_killed_processes_are_removed_on_open(tmp_path):
    folder = write_tree(tmp_path / "ws", {"notes/a.md": "# A\n\nApples.\n"})
    index_dir = folder / ".smartcontext"
    index_dir.mkdir()
    killed = writer(index_dir / "walk.bin")
    os.kill(killed.pid, signal.SIGKILL)
    killed.wait()
    busy = writer(index_dir / "catalogue.bin")  # still writing: its file stays
    try:
        with Workspace.open(folder) as ws:
            ws.index(embeddings=False)
        left = sorted(p.name for p in index_dir.glob("*.tmp"))
        assert len(left) == 1 and left[0].startswith(f"catalogue.bin.{busy.pid}~"), left
    finally:
        busy.kill()
        busy.wait()
    with Workspace.open(folder) as ws:
        ws.status()
    assert not list(index_dir.glob("*.tmp"))
