"""Questions in plain English find the code they are about (issue 12).

Two parts: the helpers (common words, word forms) on their own, and regression questions
with known answers on real trees: this repository's own source and a pytest checkout
(from the benchmark's git mirror, skipped when it is absent).
"""

from __future__ import annotations

import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from smartcontext import Workspace
from smartcontext.retrieval.english import COMMON_WORDS, stem
from smartcontext.retrieval.entities import EntityExtractor
from smartcontext.retrieval.keyword import KeywordSearcher

REPO = Path(__file__).resolve().parents[1]
PYTEST_MIRROR = Path("/work/.mirror/pytest-dev+pytest/repo")
PYTEST_COMMIT = "e6e300e729dd33956e5448d8be9a0b1540b4e53a"  # pytest-dev__pytest-7432's base


@pytest.mark.parametrize(
    ("words", "same"),
    [
        (["rewriting", "rewrite", "rewriter", "rewrites", "rewritten"], True),
        (["assertion", "assertions", "assert", "asserts"], True),
        (["parametrize", "parametrized", "parametrization"], True),
        (["fixture", "fixtures"], True),
        (["running", "run"], True),
        (["class", "clash"], False),
        (["status", "stat"], False),
    ],
)
def test_word_forms_share_a_stem(words, same):
    assert (len({stem(w) for w in words}) == 1) is same


def test_common_english_words_are_not_code_names():
    known = {"done", "assertion", "make", "session"}
    found = EntityExtractor(known_names=known).extract("where is the assertion rewriting done? make a session")
    names = {e.text for e in found}
    assert "done" in COMMON_WORDS and "done" not in names and "make" not in names
    assert {"assertion", "session"} <= names
    # Shaped like code, a common word is still a name.
    assert "done_callback" in {e.text for e in EntityExtractor().extract("why is done_callback slow")}


def test_a_question_word_meets_other_forms_in_the_index(tmp_path):
    (tmp_path / "m.py").write_text(
        "def rewrite_module(tree):\n    '''Rewrite the tree.'''\n    return tree\n\n"
        + "".join(f"def unrelated_{i}(x):\n    return x + {i}\n\n" for i in range(6))
    )
    with Workspace.open(tmp_path) as ws:
        ws.index(embeddings=False)
        clauses, _ = KeywordSearcher(ws.store).build_match("where does the rewriting happen")
        assert "rewrite" in {c.text for c in clauses}
        hits = ws.search("rewriting", mode="keyword")
    assert hits and hits[0].name == "rewrite_module"


# -- regression questions on real trees ------------------------------------------------------


def _answer(ws: Workspace, question: str, tokens: int = 8000):
    res = ws.context(question, max_tokens=tokens, exclude_tests=True, format="json")
    names = {s.item.qualname for s in res.items}
    return res.files, names


@pytest.fixture(scope="module")
def own_source(tmp_path_factory):
    root = tmp_path_factory.mktemp("own") / "smartcontext"
    shutil.copytree(REPO / "src" / "smartcontext", root / "src" / "smartcontext",
                    ignore=shutil.ignore_patterns("__pycache__"))
    ws = Workspace.open(root)
    ws.index(embeddings=False)
    yield ws
    ws.close()


OWN_QUESTIONS = [
    ("How does the budgeter fit items into max_tokens?", "src/smartcontext/context/budgeter.py", "plan_budget"),
    ("where is the workspace root found when a command starts in a subfolder?",
     "src/smartcontext/workspace.py", "find_root"),
    ("how are overlapping parts of a split section shown?", "src/smartcontext/context/export.py", "shown_ranges"),
]


@pytest.mark.parametrize(("question", "path", "name"), OWN_QUESTIONS)
def test_questions_about_this_repository(own_source, question, path, name):
    files, names = _answer(own_source, question)
    assert path in files[:5], files[:8]
    assert name in names


@pytest.fixture(scope="module")
def pytest_tree(tmp_path_factory):
    if not (PYTEST_MIRROR / "HEAD").exists() or shutil.which("git") is None:
        pytest.skip(f"no pytest mirror at {PYTEST_MIRROR}")
    root = tmp_path_factory.mktemp("pytest")
    archive = root / "src.tar"
    with archive.open("wb") as fh:
        subprocess.run(["git", f"--git-dir={PYTEST_MIRROR}", "archive", PYTEST_COMMIT, "src"],
                       stdout=fh, check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(root / "tree", filter="data")
    ws = Workspace.open(root / "tree")
    ws.index(embeddings=False)
    yield ws
    ws.close()


PYTEST_QUESTIONS = [
    ("where is the assertion rewriting done?", "src/_pytest/assertion/rewrite.py",
     {"rewrite_asserts", "AssertionRewriter"}),
    ("How does pytest rewrite assert statements?", "src/_pytest/assertion/rewrite.py",
     {"rewrite_asserts", "AssertionRewriter"}),
    ("how are fixtures requested by a test function looked up?", "src/_pytest/fixtures.py",
     {"FixtureRequest"}),
    ("where are tests skipped when a skipif condition is true?", "src/_pytest/skipping.py",
     {"evaluate_skip_marks"}),
]


@pytest.mark.parametrize(("question", "path", "names"), PYTEST_QUESTIONS)
def test_questions_about_pytest(pytest_tree, question, path, names):
    files, found = _answer(pytest_tree, question)
    assert path in files[:3], files[:5]
    assert names <= found, names - found
