"""Processes die with their parent: the stdio MCP server follows the process that started
it (even when its stdin stays open elsewhere) and its client's stdin, also while it
embeds in the background; ``index`` leaves no worker behind (see also test_robustness).

Each test has a time limit (pytest-timeout) on top of its own waits, so a regression
fails instead of hanging the run.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from test_robustness import alive, child_env, make_big_repo, start_index, wait_for_workers, wait_gone

pytestmark = [
    pytest.mark.timeout(180),
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="follows processes through /proc"),
]

SERVE = [sys.executable, "-c", "from smartcontext.cli import main; main()", "serve", "mcp"]


def make_vault(folder: Path, notes: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(notes):
        (folder / f"note{i:04d}.md").write_text(
            f"# Harbour log {i}\n\nThe lighthouse keeper noted ship {i} passing the breakwater at dawn, "
            f"with {i % 7} crates of tulip bulbs for the market.\n"
        )
    return folder


def wait_for(check, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.05)
    pytest.fail(f"timed out waiting for {what}")


def kill_all(pids) -> None:
    for p in pids:
        try:
            os.kill(p, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def stored_vectors(folder: Path) -> int:
    db = folder / ".smartcontext" / "index.db"
    if not db.exists():
        return 0
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
    try:
        return con.execute("SELECT COUNT(*) FROM embedding_cache").fetchone()[0]
    except sqlite3.OperationalError:  # the tables are not there yet
        return 0
    finally:
        con.close()


def test_stdio_server_exits_when_its_parent_dies_though_stdin_stays_open(tmp_path):
    vault = make_vault(tmp_path / "vault", 20)
    # The test holds the write end of the server's stdin, so only the parent's death can
    # tell the server to go: a killed client whose pipe was inherited by someone else.
    read_end, write_end = os.pipe()
    middle = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent("""
            import subprocess, sys, time
            server = subprocess.Popen(sys.argv[3:] + [sys.argv[1]], stdin=int(sys.argv[2]),
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            print(server.pid, flush=True)
            time.sleep(600)
        """), str(vault), str(read_end), *SERVE],
        pass_fds=(read_end,), stdout=subprocess.PIPE, env={**child_env(), "SMARTCONTEXT_EMBEDDING_MODEL": "none"},
        start_new_session=True,
    )
    os.close(read_end)
    server = int(middle.stdout.readline())
    try:
        # The index exists once the server is past its start (the parent watch runs by then).
        wait_for(lambda: (vault / ".smartcontext" / "index.db").exists(), 60, "the server's index")
        assert alive(server)
        os.kill(middle.pid, signal.SIGKILL)
        middle.wait(10)
        left = wait_gone([server], timeout=20)
        assert not left, "the stdio server outlived the process that started it"
    finally:
        os.close(write_end)
        kill_all([server, middle.pid])


def test_stdio_server_embedding_in_the_background_exits_when_its_client_closes_stdin(tmp_path):
    # Enough notes that embedding them takes a while even with a faster MiniLM.
    notes = 1500
    vault = make_vault(tmp_path / "vault", notes)
    (vault / "smartcontext.toml").write_text('[embeddings]\nmodel = "local:minilm"\nbatch_size = 16\n')
    env = {k: v for k, v in child_env().items() if k != "SMARTCONTEXT_EMBEDDING_MODEL"}
    proc = subprocess.Popen([*SERVE, str(vault)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env, start_new_session=True)
    try:
        wait_for(lambda: stored_vectors(vault) > 0 or proc.poll() is not None, 120, "background embedding")
        assert proc.poll() is None, proc.stderr.read().decode()
        proc.stdin.close()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            pytest.fail("the stdio server kept running (embedding) after its client closed stdin")
        assert stored_vectors(vault) < notes  # it was stopped mid-way, not run to the end
    finally:
        kill_all([proc.pid])
    # What it stored is kept: a new run continues from there (checked by counting).
    con = sqlite3.connect(vault / ".smartcontext" / "index.db")
    try:
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        con.close()


def test_no_worker_outlives_a_sigkilled_index_mid_parse(tmp_path):
    make_big_repo(tmp_path / "repo")
    proc = start_index(tmp_path / "repo")
    workers = wait_for_workers(proc)
    try:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        left = wait_gone(workers, timeout=5)
        assert not left, f"workers outlived index: {left}"
    finally:
        kill_all([proc.pid, *workers])
