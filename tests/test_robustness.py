"""Reliability under faults, hostile input and concurrency (issue 13).

Everything that could hang runs in a child process with a hard time limit, so a
regression fails the test instead of hanging CI. Longer fault injection (many random
SIGKILLs) lives in ``bench/robustness.py``.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

SRC = str(Path(__file__).resolve().parents[1] / "src")


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = SRC + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("COLUMNS", None)
    return env


def run_python(code: str, timeout: float, *args: str) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter; a hang past ``timeout`` fails the test."""
    try:
        return subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args], capture_output=True,
                              text=True, timeout=timeout, env=child_env())
    except subprocess.TimeoutExpired:
        pytest.fail(f"did not finish within {timeout} s")


def run_cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    try:
        return subprocess.run([sys.executable, "-c", "from smartcontext.cli import main; main()", *args],
                              capture_output=True, text=True, timeout=timeout, env=child_env())
    except subprocess.TimeoutExpired:
        pytest.fail(f"smartcontext {' '.join(args)} did not finish within {timeout} s")


BOMB = textwrap.dedent("""\
    ---
    a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
    b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
    c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
    d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
    e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
    f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
    g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
    h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
    i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
    ---
    # Bomb

    Body text.
    """)


# -- 1. YAML anchor bomb ----------------------------------------------------------------


def test_update_frontmatter_on_anchor_bomb_answers_quickly(tmp_path):
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "bomb.md").write_text(BOMB)
    (vault / "ok.md").write_text("---\ntitle: fine\n---\nhello\n")
    out = run_python("""
        import json, sys
        from smartcontext.tools import ToolRegistry
        reg = ToolRegistry.open(sys.argv[1], refresh_interval=-1)
        answers = [
            reg.call("update_frontmatter", {"path": "bomb.md", "updates": {"status": "done"}}),
            reg.call("update_frontmatter", {"path": "bomb.md", "append": {"tags": ["x"]}}),
            reg.call("update_frontmatter", {"path": "ok.md", "updates": {"status": "done"}}),
            reg.call("read_file", {"path": "bomb.md"}),
            reg.call("get_current_date", {}),
        ]
        print(json.dumps(answers))
    """, 30, str(vault))
    assert out.returncode == 0, out.stderr
    bomb_set, bomb_append, fine, read, date = json.loads(out.stdout)
    for answer in (bomb_set, bomb_append):
        assert answer["success"] is False
        assert "expands to more than" in answer["error"]
    assert fine["success"] is True
    assert read["success"] is True and "Body text." in read["content"]
    assert date["success"] is True
    assert (vault / "bomb.md").read_text() == BOMB  # refused, not rewritten


def test_frontmatter_readers_and_writers_refuse_bombs_and_deep_nesting():
    from smartcontext.notes.frontmatter import load_frontmatter_yaml, read_frontmatter
    from smartcontext.errors import InvalidArgument
    from smartcontext.vault.frontmatter import edit_frontmatter

    raw = BOMB.split("---\n")[1]
    data, error = load_frontmatter_yaml(raw)
    assert data is None and "expands" in error
    assert read_frontmatter(BOMB)[0] == {}
    with pytest.raises(InvalidArgument):
        edit_frontmatter(BOMB, {"x": 1})
    deep = "---\nk: " + "[" * 5000 + "]" * 5000 + "\n---\n"
    data, error = load_frontmatter_yaml(deep.split("---\n")[1])
    assert data is None and error


# -- 2. lost writes across processes ----------------------------------------------------

APPENDER = """
    import sys
    from smartcontext.vault import VaultTools
    tools = VaultTools(sys.argv[1])
    who, n = sys.argv[2], int(sys.argv[3])
    bad = 0
    for i in range(n):
        import json
        if not json.loads(tools.append_to_file("log.md", f"{who}-{i}"))["success"]:
            bad += 1
        if not json.loads(tools.update_frontmatter("fm.md", append={"seen": [f"{who}-{i}"]}))["success"]:
            bad += 1
        if not json.loads(tools.save_preference(f"pref {who} {i}"))["success"]:
            bad += 1
    print(bad)
"""


def test_concurrent_writers_in_two_processes_lose_nothing(tmp_path):
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "log.md").write_text("# Log\n")
    (vault / "fm.md").write_text("---\nseen: []\n---\nbody\n")
    n = 40
    procs = [subprocess.Popen([sys.executable, "-c", textwrap.dedent(APPENDER), str(vault), who, str(n)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=child_env())
             for who in ("a", "b", "c")]
    for p in procs:
        try:
            out, err = p.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            p.kill()
            pytest.fail("writers did not finish within 60 s")
        assert p.returncode == 0, err
        assert out.strip() == "0"
    lines = (vault / "log.md").read_text().splitlines()
    expected = {f"{w}-{i}" for w in "abc" for i in range(n)}
    assert set(lines[1:]) == expected and len(lines) == 1 + 3 * n
    from smartcontext.notes import read_frontmatter

    fm, _, _ = read_frontmatter((vault / "fm.md").read_text())
    assert set(fm["seen"]) == expected
    prefs = (vault / ".smartcontext" / "preferences.md").read_text()
    assert sum(line.startswith("- pref ") for line in prefs.splitlines()) == 3 * n
