"""Questions in plain English find the code they are about (issue 12).

Two parts: the helpers (common words, word forms) on their own, and regression questions
with known answers on real trees: this repository (its source alone, and the whole clone
the README's quick start asks about) and a pytest checkout (from the benchmark's git
mirror, ``$SWEBENCH_MIRRORS`` or /work/.mirror; skipped, saying so, when it is absent).
Where an answer is one function, it must be shown with its body, not only its signature.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from smartcontext import Workspace
from smartcontext.retrieval import english
from smartcontext.retrieval.english import COMMON_WORDS, stem
from smartcontext.retrieval.entities import EntityExtractor
from smartcontext.context import budgeter
from smartcontext.retrieval import keyword
from smartcontext.retrieval.keyword import KeywordSearcher, code_spellings

REPO = Path(__file__).resolve().parents[1]
PYTEST_MIRROR = Path(os.environ.get("SWEBENCH_MIRRORS", "/work/.mirror")) / "pytest-dev+pytest" / "repo"
PYTEST_COMMIT = "e6e300e729dd33956e5448d8be9a0b1540b4e53a"  # pytest-dev__pytest-7432's base


@pytest.mark.parametrize(
    ("words", "same"),
    [
        (["rewriting", "rewrite", "rewriter", "rewrites", "rewritten"], True),
        (["assertion", "assertions", "assert", "asserts"], True),
        (["parametrize", "parametrized", "parametrization"], True),
        (["fixture", "fixtures"], True),
        (["running", "run"], True),
        (["discovery", "discover"], True),
        (["directory", "directories"], True),
        (["query", "queries"], True),
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


def _unrelated_module(root: Path) -> None:
    # Eight small functions no question is about: an index's ordinary background.
    (root / "other.py").write_text("".join(f"def helper_{i}(x):\n    return x + {i}\n\n" for i in range(8)))


def test_code_spellings_are_the_usual_abbreviations():
    assert code_spellings("How are temporary directories cleaned?") == ["tmp", "temp", "dirs", "dir"]
    assert code_spellings("Where is the session cookie signed?") == []


def _abbreviated_tree(root: Path) -> None:
    (root / "paths.py").write_text(
        "def make_tmp_dir(root):\n    return root.joinpath('tmp', 'run')\n\n"
        "def remove_tmp_dir(path):\n    path.rmdir()\n"
    )
    (root / "listing.py").write_text(
        'def list_directory(path):\n    """Every entry of a directory, sorted."""\n'
        "    return sorted(path.iterdir())\n"
    )
    _unrelated_module(root)


def test_a_question_in_words_reaches_code_that_abbreviates_them(tmp_path, monkeypatch):
    """"temporary directory" in the question, ``tmp`` and ``dir`` in the code: the function
    that makes it comes first, ahead of one that only shares the word "directory"."""
    _abbreviated_tree(tmp_path)
    question = "How is the temporary directory for a run created?"
    with Workspace.open(tmp_path) as ws:
        ws.index(embeddings=False)
        res = ws.context(question, max_tokens=2000, format="json")
        assert res.files[0] == "paths.py"
        assert "def make_tmp_dir(root):" in res.text
        # The rule is what finds it: without it, only the word "directory" matches.
        monkeypatch.setattr(keyword, "CODE_SPELLINGS", False)
        before = ws.context(question, max_tokens=2000, format="json")
        assert before.files[0] == "listing.py"
        # Note and chat search ask without ``report``: their queries are as they were.
        monkeypatch.setattr(keyword, "CODE_SPELLINGS", True)
        clauses, _ = KeywordSearcher(ws.store).build_match(question)
        assert not {"tmp", "dir"} & {c.text for c in clauses}


def test_a_verb_in_the_question_meets_its_noun_in_the_code(tmp_path, monkeypatch):
    """"discover" in the question, "discovery" in the only docstring that says it (issue 20:
    pytest's "Python test discovery" for "How does pytest discover test files?")."""
    (tmp_path / "loader.py").write_text(
        'def scan_entry_points(group):\n    """Entry point discovery for the application."""\n'
        "    return sorted(group)\n"
    )
    (tmp_path / "registry.py").write_text(
        'def register(plugin, table):\n    """Add one plugin to the table of plugins."""\n'
        "    table[plugin.name] = plugin\n"
    )
    _unrelated_module(tmp_path)
    question = "How does the tool discover its plugins?"
    with Workspace.open(tmp_path) as ws:
        ws.index(embeddings=False)
        assert "loader.py" in ws.context(question, max_tokens=2000, format="json").files
        monkeypatch.setattr(english, "NOUN_Y_MIN", 0)
        assert "loader.py" not in ws.context(question, max_tokens=2000, format="json").files


def test_settings_in_a_question_reach_config_in_the_code(tmp_path, monkeypatch):
    """A user's "settings file" is the code's config file: the function that finds it is
    in the answer, and only through that rule (issue 20: pylint's
    ``find_default_config_files`` for "where does it look for a settings file")."""
    (tmp_path / "finder.py").write_text(
        'def find_config_file(start):\n    """Walk up from start to the first rc file."""\n'
        "    return start / '.toolrc'\n"
    )
    (tmp_path / "lint.py").write_text(
        'def run_linter(paths):\n    """Lint every path and print what the linter found."""\n'
        "    return [p for p in paths]\n"
    )
    _unrelated_module(tmp_path)
    question = "Where does the linter get its settings?"
    with Workspace.open(tmp_path) as ws:
        ws.index(embeddings=False)
        assert "finder.py" in ws.context(question, max_tokens=2000, format="json").files
        # Note and chat search ask without ``report``: their queries are as they were.
        clauses, _ = KeywordSearcher(ws.store).build_match(question)
        assert "config" not in {c.text for c in clauses}
        monkeypatch.setattr(english, "SETTINGS_ARE_CONFIG", False)
        assert "finder.py" not in ws.context(question, max_tokens=2000, format="json").files


@pytest.mark.parametrize("british, american", [
    ("colour", "color"), ("colours", "colors"), ("behaviour", "behavior"), ("flavour", "flavor"),
    ("recognises", "recognizes"), ("normalisation", "normalization"), ("analyse", "analyze"),
    ("centre", "center"), ("catalogue", "catalog"), ("labelled", "labeled"),
    ("cancelling", "canceling"), ("licence", "license"), ("grey", "gray"),
])
def test_british_spellings_have_their_american_form(british, american):
    assert english.american(british) == american


@pytest.mark.parametrize("word", ["color", "called", "four", "hour", "source", "raise", "filling", "parse"])
def test_words_that_are_not_british_spellings_have_none(word):
    assert english.american(word) is None


def test_a_british_spelling_reaches_code_spelt_the_american_way(tmp_path, monkeypatch):
    """"colour" in the question, ``color`` in the code (issue 20: rich's ``Color.downgrade``
    for "a colour by hex code"); the word as written is asked too."""
    assert code_spellings("How is the colour of a cell chosen?") == ["color"]
    (tmp_path / "style.py").write_text(
        'def cell_color(cell, theme):\n    """The theme entry for a cell."""\n'
        "    return theme.get(cell.kind)\n"
    )
    (tmp_path / "layout.py").write_text(
        'def cell_width(cell):\n    """The width of a cell, in columns: each cell of the cell grid."""\n'
        "    return len(cell.text)\n"
    )
    _unrelated_module(tmp_path)
    question = "How is the colour of a cell chosen?"
    with Workspace.open(tmp_path) as ws:
        ws.index(embeddings=False)
        assert ws.context(question, max_tokens=2000, format="json").files[0] == "style.py"
        monkeypatch.setattr(english, "AMERICAN_SPELLINGS", False)
        assert ws.context(question, max_tokens=2000, format="json").files[0] == "layout.py"


def test_a_phrasal_verb_reaches_the_verb_code_uses(tmp_path, monkeypatch):
    """"switches off" in the question, ``disable`` in the code (issue 20: pylint's pragma
    handling for "a comment that switches off a warning"); "set up" asks for nothing."""
    assert english.phrasal_spellings("a comment that switches off a warning") == ["disable"]
    assert english.phrasal_spellings("where does it look for one, and are they lined up?") == [
        "find", "search", "align"]
    assert english.phrasal_spellings("a fixture only set up once") == []
    (tmp_path / "pragmas.py").write_text(
        'def disable(msgid, scope):\n    """Silence msgid from here to the end of scope."""\n'
        "    scope.silenced.add(msgid)\n"
    )
    (tmp_path / "report.py").write_text(
        'def print_warning(msg):\n    """Print one warning with its line."""\n'
        "    print(msg)\n"
    )
    _unrelated_module(tmp_path)
    question = "How does a comment switch off a warning?"
    with Workspace.open(tmp_path) as ws:
        ws.index(embeddings=False)
        assert "pragmas.py" in ws.context(question, max_tokens=2000, format="json").files
        monkeypatch.setattr(english, "PHRASAL_VERBS_ON", False)
        assert "pragmas.py" not in ws.context(question, max_tokens=2000, format="json").files


def _recipe_tree(root: Path) -> None:
    body = "".join(f"    total = total + weight_{k} * amount\n" for k in range(40))
    (root / "recipe.py").write_text("".join(
        f'def parse_step_{i}(line, amount):\n    """Parse step {i} of a recipe line."""\n'
        f"    total = 0\n{body}    return total\n\n"
        for i in range(80)
    ))
    _unrelated_module(root)


def _shown(res) -> tuple[int, int]:
    """(definitions shown, of them whole) among the matches of an answer."""
    matches = [s for s in res.items if not s.context_only and s.item.kind == "function"]
    return len(matches), sum(s.mode == "full" for s in matches)


def test_a_short_question_gets_more_definitions_and_a_report_whole_bodies(tmp_path, monkeypatch):
    """A short question in words spends at most SHORT_QUESTION_FULL_SHARE of the budget on
    whole bodies, so more of the definitions involved are listed; a report (long, or a
    title that asks nothing) keeps the profile's share."""
    _recipe_tree(tmp_path)
    short = "How are the steps of a recipe parsed?"
    report = (short + " I parse a recipe with thirty steps, each line holds an amount and a "
              "weight, and the total of the last step comes out wrong when the amount is "
              "negative or the weight is missing from the line, which the docs never mention. "
              "Traceback: ValueError in parse_step_29 while reading kitchen.txt on Windows.")
    assert budgeter.full_share_for(short, 0.8) == budgeter.SHORT_QUESTION_FULL_SHARE < 0.8
    assert budgeter.full_share_for(report, 0.8) == 0.8
    # A short report's title is no question: it asks for the code to fix, whole.
    assert budgeter.full_share_for("Raise error when blueprint name contains a dot", 0.8) == 0.8
    with Workspace.open(tmp_path) as ws:
        ws.index(embeddings=False)
        shown, whole = _shown(ws.context(short, max_tokens=3000, format="json"))
        long_shown = _shown(ws.context(report, max_tokens=3000, format="json"))
        monkeypatch.setattr(budgeter, "SHORT_QUESTION_FULL_SHARE", 0.0)
        shown_before, whole_before = _shown(ws.context(short, max_tokens=3000, format="json"))
        assert _shown(ws.context(report, max_tokens=3000, format="json")) == long_shown
    assert shown > shown_before and whole <= whole_before


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
    ("where are word forms of a question word found in the index?", "src/smartcontext/retrieval/keyword.py",
     "KeywordSearcher._word_forms"),
    ("how are tokens counted exactly?", "src/smartcontext/tokens.py", "count_tokens"),
    ("how are graph neighbours kept from pushing out direct matches?", "src/smartcontext/retrieval/scoring.py",
     "add_graph"),
    ("how are a file's rows replaced in one transaction?", "src/smartcontext/store/sqlite.py",
     "SQLiteStore.replace_file"),
    ("how are common English words kept from being taken as code names?",
     "src/smartcontext/retrieval/entities.py", "EntityExtractor.extract"),
]


@pytest.mark.parametrize(("question", "path", "name"), OWN_QUESTIONS)
def test_questions_about_this_repository(own_source, question, path, name):
    files, names = _answer(own_source, question)
    assert path in files[:5], files[:8]
    assert name in names


@pytest.fixture(scope="module")
def own_clone(tmp_path_factory):
    """The repository as a clone holds it (tests, benchmarks and docs too), indexed the way
    the README's first command indexes it."""
    root = tmp_path_factory.mktemp("clone") / "smartcontext"
    skip = shutil.ignore_patterns("__pycache__", ".work", ".smartcontext", "*.egg-info", ".pytest_cache")
    for name in ("src", "tests", "bench", "docs"):
        shutil.copytree(REPO / name, root / name, ignore=skip)
    for name in ("README.md", "pyproject.toml"):
        shutil.copy2(REPO / name, root / name)
    ws = Workspace.open(root)
    ws.index(embeddings=False)
    yield ws
    ws.close()


def _modes(res) -> dict[str, str]:
    return {s.item.qualname: s.mode for s in res.items if not s.context_only}


def test_the_readme_question_shows_the_answer_whole(own_clone):
    """The quick start's question at its budget: the function that does the fitting comes
    with its body, not just its signature, ahead of items that only share a word with the
    question (``VectorMatrix.fit``)."""
    question = "How does the budgeter fit items into max_tokens?"
    res = own_clone.context(question, max_tokens=3000)
    assert res.files[0] == "src/smartcontext/context/budgeter.py", res.files[:5]
    modes = _modes(res)
    assert modes.get("plan_budget") == "full", modes
    assert res.token_count <= 3000
    # The same without tests (fewer rivals, so a weaker reason to pass).
    res = own_clone.context(question, max_tokens=3000, exclude_tests=True)
    assert _modes(res).get("plan_budget") == "full", _modes(res)


@pytest.fixture(scope="module")
def pytest_tree(tmp_path_factory):
    if not (PYTEST_MIRROR / "HEAD").exists() or shutil.which("git") is None:
        pytest.skip(f"no pytest git mirror at {PYTEST_MIRROR} (set SWEBENCH_MIRRORS; see bench/README.md)")
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
    ("how are fixtures with scope session torn down?", "src/_pytest/fixtures.py", {"FixtureDef.finish"}),
    ("how does pytest capture output written to stdout?", "src/_pytest/capture.py", {"CaptureManager"}),
    ("where is the junit xml report written?", "src/_pytest/junitxml.py", {"LogXML"}),
    ("how are temporary directories created for tests?", "src/_pytest/tmpdir.py", {"TempPathFactory"}),
    ("how does the debugger start on failure with --pdb?", "src/_pytest/debugging.py", {"PdbInvoke"}),
    ("where are doctests in text files collected?", "src/_pytest/doctest.py", {"DoctestTextfile"}),
    ("how are the command line options parsed?", "src/_pytest/config/argparsing.py", {"Parser"}),
]

# Questions whose answer is one function: it must come with its body, not only its signature.
PYTEST_WHOLE = [
    ("where is the assertion rewriting done?", "rewrite_asserts"),
    ("how does monkeypatch set an environment variable?", "MonkeyPatch.setenv"),
    ("where does pytest decide that a test is expected to fail with xfail?", "evaluate_xfail_marks"),
    ("how are warnings captured during a test?", "catch_warnings_for_item"),
    ("where does pytest compare approximate floating point numbers?", "approx"),
    ("where are parametrize arguments turned into test ids?", "idmaker"),
]


@pytest.mark.parametrize(("question", "path", "names"), PYTEST_QUESTIONS)
def test_questions_about_pytest(pytest_tree, question, path, names):
    files, found = _answer(pytest_tree, question)
    assert path in files[:3], files[:5]
    assert names <= found, names - found


@pytest.mark.parametrize(("question", "name"), PYTEST_WHOLE)
def test_pytest_answers_come_with_their_bodies(pytest_tree, question, name):
    res = pytest_tree.context(question, max_tokens=8000, exclude_tests=True)
    modes = _modes(res)
    assert modes.get(name) == "full", {k: v for k, v in modes.items() if name.split(".")[0] in k}
