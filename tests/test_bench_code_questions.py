"""The plain-English benchmark's scoring: a gold symbol counts as shown when its definition
line is in the context from its own file, whole when its body is there consecutively; a file
counts at rank k."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import code_questions as cq  # noqa: E402

SOURCE = '''\
import os


def helper(x):
    """Unrelated."""
    return x


class Loader:
    def load(self, path):
        data = open(path).read()
        return data.strip()
'''


def _question():
    return {"gold": [{"path": "pkg/loader.py", "symbols": [{"name": "Loader.load", "line": 10}]},
                     {"path": "pkg/other.py", "symbols": []}]}


def test_a_symbol_is_shown_when_its_definition_is_in_the_context(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "loader.py").write_text(SOURCE)
    head, body = cq.symbol_lines(tmp_path, "pkg/loader.py", 10)
    assert head == ["def load(self, path):"]
    assert body == ["def load(self, path):", "data = open(path).read()", "return data.strip()"]
    gold = {("pkg/loader.py", 10): (head, body)}
    shown = "### pkg/loader.py\n```python\n    def load(self, path):\n        data = open(path).read()\n" \
            "        return data.strip()\n```\n"
    ranked = ["pkg/a.py", "pkg/loader.py"]
    r = cq.score(_question(), {"ranked": ranked, "context_text": shown, "context_files": ["pkg/loader.py"]}, gold)
    assert r["symbols"] == 1.0 and r["whole"] == 1.0
    assert (r["any@1"], r["any@5"], r["first@1"], r["first@5"]) == (False, True, False, True)


def test_a_signature_is_shown_but_not_whole_and_another_file_does_not_count(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "loader.py").write_text(SOURCE)
    gold = {("pkg/loader.py", 10): cq.symbol_lines(tmp_path, "pkg/loader.py", 10)}
    signature = "    def load(self, path):\n        ...\n"
    r = cq.score(_question(), {"ranked": ["pkg/loader.py"], "context_text": signature,
                               "context_files": ["pkg/loader.py"]}, gold)
    assert (r["symbols"], r["whole"], r["first@1"]) == (1.0, 0.0, True)
    shuffled = "return data.strip()\ndef load(self, path):\ndata = open(path).read()\n"
    r = cq.score(_question(), {"ranked": ["pkg/a.py"], "context_text": shuffled,
                               "context_files": ["pkg/a.py"]}, gold)
    assert (r["symbols"], r["whole"]) == (0.0, 0.0)


def test_a_signature_listed_on_one_line_counts_and_a_longer_name_does_not(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "loader.py").write_text(SOURCE)
    gold = {("pkg/loader.py", 10): cq.symbol_lines(tmp_path, "pkg/loader.py", 10)}
    listed = "### pkg/loader.py\n\n- `def load(self,  path):` lines 10-12: Read a file.\n"
    r = cq.score(_question(), {"ranked": ["pkg/loader.py"], "context_text": listed,
                               "context_files": ["pkg/loader.py"]}, gold)
    assert (r["symbols"], r["whole"]) == (1.0, 0.0)
    other = "### pkg/loader.py\n\n- `def load_all(self, path):` lines 20-22\n"
    r = cq.score(_question(), {"ranked": ["pkg/loader.py"], "context_text": other,
                               "context_files": ["pkg/loader.py"]}, gold)
    assert r["symbols"] == 0.0
