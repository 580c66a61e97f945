"""The fast path of `context` and `search` (issue 12, start-up): the same bytes and exit
codes as the typer application, end to end, and plain printing equal to rich's."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from smartcontext.cli import fast, plain

ENV = {**os.environ, "SMARTCONTEXT_EMBEDDING_MODEL": "none"}
# The typer application alone: the same main() with the fast path switched off.
TYPER_ONLY = ("import sys\nfrom smartcontext.cli import fast, main\n"
              "fast.parse = lambda argv, environ=None: None\nmain()")
FAST_ONLY = "from smartcontext.cli import main\nmain()"


def _run(code: str, args, cwd, stdin=None):
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=cwd,
                          env=ENV, timeout=180, input=stdin)


def _steady(text: str) -> str:
    """Output without what changes between two runs: timings."""
    try:
        return json.dumps(_timeless(json.loads(text)), sort_keys=True)
    except ValueError:
        # The stats table's column widths follow the timings' digits.
        return re.sub(r" +", " ", re.sub(r"time: (\w+)\s+[0-9.]+ ms", r"time: \1 0 ms", text))


def _timeless(data):
    if isinstance(data, dict):
        return {k: _timeless(v) for k, v in data.items() if k != "seconds"}
    if isinstance(data, list):
        return [_timeless(v) for v in data]
    return data


@pytest.fixture()
def indexed(sample_repo: Path) -> Path:
    # Text rich would change if it printed it as plain text: markup, an emoji code, a tab.
    (sample_repo / "shop" / "odd.py").write_text(
        'def odd_markup_helper():\n    """Prints [bold]x[/bold] and :smile: with\ttabs."""\n    return 1\n'
    )
    (sample_repo / "shop" / "unicode.py").write_text(
        'def grüße_helper():\n    """Größe – 大きさ ✓ e\u0301 \u200d ok."""\n    return 2\n'
    )
    done = _run(FAST_ONLY, ["index", str(sample_repo)], sample_repo)
    assert done.returncode == 0, done.stderr
    return sample_repo


COMMANDS = [
    (["context", "How does AuthService handle login?"], None),
    (["context", "How does AuthService handle login?", "-t", "1500", "--format", "json"], None),
    (["context", "apply_discount", ".", "--format=markdown", "--no-imports", "--depth", "0",
      "--include-tests", "--scores", "--encoding", "o200k_base"], None),
    (["context", "AuthService login", "--json", "--exclude-tests", "-f", "mu"], None),
    (["context", "How does AuthService handle login?", "-t", "40"], None),  # budget warnings
    (["context", "How does AuthService handle login?", "--budget", "1500"], None),  # -t's other name
    (["context", "zzqqy wobblefrotz"], None),  # nothing found: a warning and nearest names
    (["context", "-", "-t", "800"], "How are prices discounted?"),
    (["context", "odd_markup_helper grüße_helper", "-v"], None),
    (["context", ""], None),  # an empty question: one error line, exit 1
    (["context", "login", "--format", "bogus"], None),
    (["context", "login", "--encoding", "nope"], None),
    (["context", "login", "no/such/folder"], None),
    (["context", "login", "-t", "-5"], None),  # typer's reading of a negative value
    (["context", "login", "-t", "1_000"], None),
    (["context", "login", "-vt", "500"], None),
    (["context", "login", "--help"], None),
    (["context"], None),
    (["context", "a", "b", "c"], None),
    (["context", "login", "--json=yes"], None),
    (["search", "login"], None),
    (["search", "odd_markup_helper"], None),  # markup and :smile: in the snippet
    (["search", "grüße_helper"], None),
    (["search", "login", "--json"], None),
    (["search", "zzqqy"], None),  # exits 1
    (["search", "zzqqy", "--json"], None),
    (["search", "login", "--kind", "function", "--kind", "method", "-n", "2", "--path", "shop"], None),
    (["search", "login", "--mode", "keyword", "--min-score", "0.5", "--limit=3"], None),
    (["search", "login", "--kind", "fucntion"], None),
    (["search", "login", "--min-score", "1e-3"], None),
    (["search", "login", "--tag", "x"], None),
    (["--version"], None),
    (["--store", "", "search", "login"], None),
    (["--store=", "context", "login", "-t", "500"], None),
    (["--store", "nosuch://x", "search", "login"], None),  # the same error line
]


def test_the_fast_path_prints_what_typer_prints(indexed):
    for args, stdin in COMMANDS:
        quick = _run(FAST_ONLY, args, indexed, stdin)
        full = _run(TYPER_ONLY, args, indexed, stdin)
        assert quick.returncode == full.returncode, (args, quick.stderr, full.stderr)
        assert _steady(quick.stdout) == _steady(full.stdout), args
        assert _steady(quick.stderr) == _steady(full.stderr), args
    # The cases the fast path takes did answer (not only fail alike).
    assert "AuthService" in _run(FAST_ONLY, COMMANDS[0][0], indexed).stdout
    # --budget is --max-tokens by another name: the same context, not the default budget's.
    question = "How does AuthService handle login?"
    budget = _run(FAST_ONLY, ["context", question, "--budget", "40"], indexed)
    assert budget.stdout == _run(FAST_ONLY, ["context", question, "-t", "40"], indexed).stdout
    assert budget.stdout != _run(FAST_ONLY, ["context", question], indexed).stdout


def test_which_forms_the_fast_path_takes():
    assert fast.parse(["context", "q"]) is not None
    assert fast.parse(["context", "q", "some/path", "-t", "500", "--format=json", "--scores"]) is not None
    assert fast.parse(["search", "q", "--kind", "function", "--kind", "class", "-n", "3"]) is not None
    assert fast.parse(["context", "-"]) is not None  # the question from stdin
    assert fast.parse(["--version"]) is not None
    # The root --store (a shared index): typer spent 0.3-0.5 s of a PostgreSQL question.
    assert fast.parse(["--store", "postgresql://u@h/db", "context", "q"]) is not None
    assert fast.parse(["--store=postgresql://u@h/db", "search", "q", "-n", "3"]) is not None
    for typer_reads in (
        [], ["index"], ["status"], ["context", "q", "--help"], ["context"], ["context", "a", "b", "c"],
        ["context", "q", "-t"], ["context", "q", "-t", "1_000"], ["context", "q", "-t", "+5"],
        ["context", "q", "-vt", "5"], ["context", "q", "--json=1"], ["context", "q", "--", "x"],
        ["--store", "x", "index"], ["--store", "--help"], ["--store"], ["--store", "x"], ["search", "q", "--min-score", "1e-3"], ["context", "q", ""],
        ["context", "bad \udcff bytes"],
    ):
        assert fast.parse(typer_reads) is None, typer_reads
    assert fast.parse(["context", "q"], {"_SMARTCONTEXT_COMPLETE": "bash_complete"}) is None


SAMPLES = [
    "plain words", "sympy/core/expr.py:3813 method Expr.trigsimp (keyword)", "Größe – 大きさ ✓",
    "e\u0301 combining, \u200d joiner, \u202e right-to-left", "emoji code :smile: here", "[bold]markup[/]",
    "back\\slash", "tab\there", "bell\x07", "carriage\rreturn", "two\nlines", "trailing space   ",
    "", "a:b:c", ":not-an-emoji-x:", "🙂 already an emoji", "\x1b[31mansi\x1b[0m",
]


@pytest.mark.parametrize("text", SAMPLES)
def test_plain_printing_equals_rich_on_a_pipe(text, monkeypatch):
    from rich.console import Console
    from rich.text import Text

    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.delenv("TTY_COMPATIBLE", raising=False)
    for stderr in (False, True):
        plain._consoles.clear()  # consoles bound to this test's streams
        out, err = io.StringIO(), io.StringIO()
        monkeypatch.setattr(sys, "stdout", out)
        monkeypatch.setattr(sys, "stderr", err)
        plain.line(text, stderr=stderr, rich=lambda c: c.print(text, highlight=False, markup=False))
        plain.warn(text)
        expected = io.StringIO()
        reference = Console(file=expected, soft_wrap=True)
        reference.print(text, highlight=False, markup=False)
        got = (err if stderr else out).getvalue()
        assert got.startswith(expected.getvalue()), (text, got, expected.getvalue())
        warned = io.StringIO()
        Console(file=warned, soft_wrap=True).print(Text.assemble(("warning:", "yellow"), " ", text), soft_wrap=True)
        assert err.getvalue().endswith(warned.getvalue())
    plain._consoles.clear()


def test_a_terminal_or_forced_colour_goes_through_rich(monkeypatch):
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.delenv("TTY_COMPATIBLE", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    assert plain._rich_terminal(Tty()) and not plain._rich_terminal(io.StringIO())
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert plain._rich_terminal(io.StringIO())
    monkeypatch.setenv("TTY_COMPATIBLE", "0")
    assert not plain._rich_terminal(Tty())


def test_a_fast_question_loads_neither_typer_nor_rich(indexed):
    probe = (
        "import contextlib, io, json, sys\nfrom smartcontext.cli import main\n"
        "sys.argv = ['smartcontext', 'context', 'How does AuthService handle login?', '-t', '2000']\n"
        "buf = io.StringIO()\n"
        "try:\n    with contextlib.redirect_stdout(buf):\n        main()\n"
        "except SystemExit as exc:\n    assert not exc.code, exc.code\n"
        "print(json.dumps({m: m in sys.modules for m in ('typer', 'click', 'rich', 'pydantic')}))\n"
        "print(len(buf.getvalue()))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=indexed, env=ENV)
    assert done.returncode == 0, done.stderr
    *_, loaded, size = done.stdout.strip().splitlines()
    assert json.loads(loaded) == {"typer": False, "click": False, "rich": False, "pydantic": False}
    assert int(size) > 0
