"""Code in a language the repository barely uses weighs less (scoring.path_prior): a Rust
port beside the Python package repeats its words, yet a question is about the main code."""

from __future__ import annotations

from pathlib import Path

from smartcontext import Workspace
from smartcontext.retrieval import scoring

LEXER_PY = '''
def lex(sql):
    """Cut the SQL text into tokens; unmatched characters become unlexable."""
    return [piece for piece in sql.split()]
'''
LEXER_RS = '''
/// Cut the SQL text into tokens; characters no pattern matches end up as unlexable tokens.
pub fn lex(sql: &str) -> Vec<String> {
    sql.split_whitespace().map(|t| t.to_string()).collect()
}
'''
QUESTION = "Where is the SQL text cut into tokens, and where do characters no pattern matches end up?"


def _repo(root: Path, python_files: int, rust_files: int) -> None:
    (root / "pkg").mkdir(parents=True)
    (root / "pkg/lexer.py").write_text(LEXER_PY)
    for n in range(python_files - 1):
        (root / f"pkg/util_{n}.py").write_text(f"def helper_{n}(value):\n    return value\n")
    (root / "port").mkdir()
    (root / "port/lexer.rs").write_text(LEXER_RS)
    for n in range(rust_files - 1):
        (root / f"port/util_{n}.rs").write_text(f"pub fn helper_{n}(v: i32) -> i32 {{ v }}\n")


def _files(root: Path) -> list[str]:
    with Workspace.open(root) as ws:
        ws.index(embeddings=False)
        return list(ws.context(QUESTION, max_tokens=2000).files)


def test_the_main_language_ranks_above_a_port_in_a_minority_language(tmp_path, monkeypatch):
    _repo(tmp_path, python_files=8, rust_files=2)
    with Workspace.open(tmp_path) as ws:
        ws.index(embeddings=False)
        assert ws.catalogue().language_shares() == {"python": 0.8, "rust": 0.2}
    files = _files(tmp_path)
    assert files.index("pkg/lexer.py") < files.index("port/lexer.rs")
    # The port still comes (weighed down, not left out), and without the prior it leads:
    # its comment holds one more of the question's words.
    monkeypatch.setattr(scoring, "MINORITY_LANGUAGE_PRIOR", 1.0)
    assert _files(tmp_path)[0] == "port/lexer.rs"


def test_two_languages_of_equal_weight_are_both_main(tmp_path):
    _repo(tmp_path, python_files=4, rust_files=4)
    assert _files(tmp_path)[0] == "port/lexer.rs"


def test_the_shares_follow_the_files(tmp_path):
    _repo(tmp_path, python_files=8, rust_files=2)
    with Workspace.open(tmp_path) as ws:
        ws.index(embeddings=False)
        assert ws.catalogue().language_shares()["rust"] == 0.2
        for n in range(6):
            (tmp_path / f"port/more_{n}.rs").write_text(f"pub fn more_{n}() {{}}\n")
        ws.index(embeddings=False)
        assert ws.catalogue().language_shares() == {"python": 0.5, "rust": 0.5}
