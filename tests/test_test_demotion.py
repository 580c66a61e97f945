"""Source before tests: with test files kept (the default), the source a question is about
ranks above the tests that exercise it, unless a question (not a long bug report) names a
test. Demoted, not removed: the tests stay in the ranking and can still reach the context."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from smartcontext import Workspace
from smartcontext.retrieval import scoring

SOURCE = '''
"""Reading header lines of a config file."""


def parse_header(line):
    """Split a header line into its name and value at the first colon."""
    name, _, value = line.partition(":")
    return name.strip(), value.strip()
'''

# The tests repeat the question's words far more often than the source does: ranked by
# words alone they come first.
TESTS = '''
from pkg.headers import parse_header


def test_header_with_trailing_colon():
    """A header line with a trailing colon parses to an empty value."""
    assert parse_header("name:") == ("name", "")


def test_header_colon_in_value():
    """A header value may hold a colon: only the first colon splits the header line."""
    assert parse_header("a: b:c") == ("a", "b:c")


def test_header_without_colon():
    """A header line without a colon: the whole header line is the name."""
    assert parse_header("name") == ("name", "")
'''

QUESTION = "What does a header line with a trailing colon parse to, and what if the value holds a colon?"


# Other modules, so that the question's words are rare enough to count (a word in half
# the items or more is dropped from a keyword query).
OTHERS = {
    f"src/pkg/{name}.py": f'''
def {name}_open(path):
    """Open the {name} store at path and return a handle."""
    return open(path)


def {name}_close(handle):
    """Flush and close a {name} handle."""
    handle.close()
'''
    for name in ("cache", "queue", "ledger", "socket", "pool", "archive", "mailbox", "index")
}


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    for rel, body in {"src/pkg/__init__.py": "", "src/pkg/headers.py": SOURCE,
                      "tests/test_headers.py": TESTS, **OTHERS}.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(body).lstrip(), encoding="utf-8")
    with Workspace.open(tmp_path) as ws:
        ws.index(embeddings=False)
    return tmp_path


def _context(root: Path, question: str, **options):
    with Workspace.open(root) as ws:
        return ws.context(question, max_tokens=2000, **options)


def test_the_source_ranks_above_its_tests_by_default(repo, monkeypatch):
    res = _context(repo, QUESTION)
    assert res.files[0] == "src/pkg/headers.py"
    assert "tests/test_headers.py" in res.files  # demoted, not removed
    assert res.stats["tests_demoted"] > 0
    # Without the demotion the tests' words win: the check above is not vacuous.
    monkeypatch.setattr(scoring, "TEST_PRIOR", 1.0)
    assert _context(repo, QUESTION).files[0] == "tests/test_headers.py"


def test_a_question_that_names_a_test_keeps_it_first(repo):
    res = _context(repo, "Why does test_header_colon_in_value fail after the parser change?")
    assert res.files[0] == "tests/test_headers.py"
    assert res.stats["report_named_tests"] == []
    assert "def test_header_colon_in_value" in res.text


# A bug report of a reader who ran the test suite: the traceback goes through the test, the
# report links to it; the fix is in the source the test calls.
REPORT = """test_header_colon_in_value fails on the new release

Running the test suite after upgrading, one header test fails. The failing test is
tests/test_headers.py (test_header_colon_in_value), which checks that a header value may
hold a colon and that only the first colon splits the header line:

```
______________ tests/test_headers.py:test_header_colon_in_value _______________
  File "tests/test_headers.py", line 12, in test_header_colon_in_value
    assert parse_header("a: b:c") == ("a", "b:c")
AssertionError
```

I was able to reproduce this locally on a laptop running the latest operating system with
a fresh virtual environment, nothing else installed, and the same failure appears on our
build machines. Expected the value to keep everything after the first colon, as the
documentation promises for header lines of a config file. It worked in the previous
release, so something in how header lines are read must have changed between them.
"""


def test_a_bug_report_that_names_a_test_ranks_the_source_first(repo, monkeypatch):
    res = _context(repo, REPORT)
    assert res.files[0] == "src/pkg/headers.py"
    assert "tests/test_headers.py" in res.files[:3]  # demoted, not removed: it reproduces the fault
    assert "def test_header_colon_in_value" in res.text
    assert res.stats["report_named_tests"] == ["tests/test_headers.py"]  # what --verbose lists
    # Kept as a named test, it comes first: the check above is not vacuous.
    monkeypatch.setattr(scoring, "DEMOTE_TESTS_A_REPORT_NAMES", False)
    assert _context(repo, REPORT).files[0] == "tests/test_headers.py"


def test_exclude_tests_still_leaves_them_out(repo):
    res = _context(repo, QUESTION, exclude_tests=True)
    assert "tests/test_headers.py" not in res.files
    assert res.stats["tests_demoted"] == 0


def test_verbose_names_the_tests_a_report_names(repo):
    import os
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-m", "smartcontext", "context", REPORT, str(repo), "--verbose"],
        capture_output=True, text=True, timeout=180, env={**os.environ, "SMARTCONTEXT_EMBEDDING_MODEL": "none"},
    )
    assert proc.returncode == 0, proc.stderr
    assert "tests the report names" in proc.stderr and "tests/test_headers.py" in proc.stderr
