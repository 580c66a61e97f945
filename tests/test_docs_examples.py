"""The docs' examples run as written, so a doc cannot drift from the program (issue 25).

A fenced block in ``docs/*.md`` preceded by an HTML comment ``<!-- runnable: LANG ... -->``
runs offline, in a folder holding the sample repository and vault at the paths the docs
use (``path/to/repo``, ``path/to/vault``), with ``smartcontext`` on the PATH running this
checkout:

- ``sh``: each line in bash (``set -e``); ``pip install`` lines are checked, not run (no
  network): the package must already be importable;
- ``python``: the block as a script; one whose comment says it needs the MCP HTTP server
  gets one started on ``path/to/vault`` (on a free port, put in place of 8765);
- ``toml``: the block is a ``smartcontext.toml`` (or ``.vault.toml`` when the comment says
  so) that the configuration loader accepts.
Paths under ``/srv/`` are put under the test's folder.
"""

from __future__ import annotations

import importlib.util
import os
import re
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from conftest import SAMPLE_REPO, write_tree

from web_support import server_env

DOCS = Path(__file__).resolve().parents[1] / "docs"
MARKED = re.compile(r"<!-- runnable: (\w+)([^>]*)-->\n```(\w*)\n(.*?)\n```", re.S)
NOTES = {"notes/Ferries.md": "# Ferries\n\nBlue Star sails to [[Naxos]] daily; retries are configured in the app.\n",
         "notes/Naxos.md": "# Naxos\n\nThe crossing takes five hours.\n"}


def blocks() -> list[tuple[str, str, str, str]]:
    found = []
    for doc in sorted(DOCS.glob("*.md")):
        text = doc.read_text(encoding="utf-8")
        marks = text.count("<!-- runnable:")
        matched = MARKED.findall(text)
        assert len(matched) == marks, f"{doc.name}: a runnable mark not directly before a code fence"
        for n, (lang, note, fence, body) in enumerate(matched, 1):
            found.append((f"{doc.name}#{n}", lang, note.strip(" ,"), body))
    return found


BLOCKS = blocks()


def test_the_docs_mark_their_runnable_examples():
    names = {name.split("#")[0] for name, *_ in BLOCKS}
    assert {"mcp.md", "scale-out.md", "configuration.md", "architecture.md"} <= names


@pytest.fixture
def place(tmp_path, monkeypatch):
    """The folder the examples run in, and the environment they see."""
    work = tmp_path / "work"
    write_tree(work / "path" / "to" / "repo", SAMPLE_REPO)
    write_tree(work / "path" / "to" / "vault", {**SAMPLE_REPO, **NOTES})
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "smartcontext"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m smartcontext "$@"\n')
    shim.chmod(shim.stat().st_mode | stat.S_IEXEC)
    env = server_env({"SMARTCONTEXT_EMBEDDING_MODEL": "none"})
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    env.pop("SMARTCONTEXT_STORE_URL", None)
    return work, env, tmp_path


def localise(body: str, root: Path) -> str:
    return body.replace("/srv/", f"{root}/srv/")


def run_sh(body: str, work: Path, env: dict, root: Path) -> subprocess.CompletedProcess:
    lines = []
    for line in localise(body, root).splitlines():
        if line.strip().startswith("pip install"):
            for requirement in line.split()[2:]:
                module = requirement.strip("'\"").split("[")[0].replace("-", "_")
                assert importlib.util.find_spec(module), f"{requirement} is not installed"
            continue
        lines.append(line)
    return subprocess.run(["bash", "-e", "-c", "\n".join(lines)], cwd=work, env=env, capture_output=True,
                          text=True, timeout=300)


def stop_postgres_left(srv: Path) -> None:
    """Stop a PostgreSQL that an example started and did not stop (it failed midway)."""
    for pid_file in srv.glob("*/postmaster.pid"):
        pid = int(pid_file.read_text().split()[0])
        try:
            os.kill(pid, 15)  # SIGTERM: PostgreSQL's smart shutdown
        except ProcessLookupError:
            pass


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def mcp_server(work: Path, env: dict) -> tuple[subprocess.Popen, int]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "smartcontext", "serve", "mcp", "path/to/vault", "--transport",
                             "http", "--port", str(port)], cwd=work, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while True:
        assert proc.poll() is None, proc.stderr.read().decode(errors="replace")
        try:
            httpx.get(f"http://127.0.0.1:{port}/mcp", timeout=1)
            return proc, port
        except httpx.TransportError:
            assert time.monotonic() < deadline, "the MCP server did not start"
            time.sleep(0.1)


@pytest.mark.parametrize("name, lang, note, body", BLOCKS, ids=[b[0] for b in BLOCKS])
def test_a_runnable_example_runs_as_written(place, name, lang, note, body):
    work, env, root = place
    if lang == "toml":
        from smartcontext.config import Config

        target = work / "path" / "to" / "vault" / (".vault.toml" if ".vault.toml" in note else "smartcontext.toml")
        target.write_text(body, encoding="utf-8")
        Config.load(target.parent)  # raises on an unknown section or key
        return
    if lang == "sh":
        (root / "srv").mkdir(exist_ok=True)
        try:
            done = run_sh(body, work, env, root)
        finally:
            stop_postgres_left(root / "srv")
        assert done.returncode == 0, f"{name} failed:\n{done.stdout}\n{done.stderr}"
        return
    assert lang == "python", f"{name}: unknown runnable language {lang!r}"
    server = None
    if "MCP HTTP server" in note:
        server, port = mcp_server(work, env)
        body = body.replace("127.0.0.1:8765", f"127.0.0.1:{port}")
    try:
        done = subprocess.run([sys.executable, "-c", localise(body, root)], cwd=work, env=env,
                              capture_output=True, text=True, timeout=300)
    finally:
        if server is not None:
            server.terminate()
            try:
                server.wait(timeout=15)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
            server.stderr.close()
    assert done.returncode == 0, f"{name} failed:\n{done.stdout}\n{done.stderr}"
