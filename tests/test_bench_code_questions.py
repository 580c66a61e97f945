"""The plain-English benchmark's scoring: a gold symbol counts as shown only when its
definition's first lines are in the context, consecutively; a file counts at rank k."""

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
    assert head == ["def load(self, path):", "data = open(path).read()", "return data.strip()"]
    assert body == head
    gold = {("pkg/loader.py", 10): (head, body)}
    shown = "### pkg/loader.py\n```python\n    def load(self, path):\n        data = open(path).read()\n" \
            "        return data.strip()\n```\n"
    ranked = ["pkg/a.py", "pkg/loader.py"]
    r = cq.score(_question(), {"ranked": ranked, "context_text": shown}, gold)
    assert r["symbols"] == 1.0 and r["whole"] == 1.0
    assert (r["any@1"], r["any@5"], r["first@1"], r["first@5"]) == (False, True, False, True)


def test_a_signature_alone_or_lines_out_of_order_do_not_count(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "loader.py").write_text(SOURCE)
    gold = {("pkg/loader.py", 10): cq.symbol_lines(tmp_path, "pkg/loader.py", 10)}
    for text in ("    def load(self, path):\n        ...\n",
                 "return data.strip()\ndef load(self, path):\ndata = open(path).read()\n"):
        r = cq.score(_question(), {"ranked": ["pkg/loader.py"], "context_text": text}, gold)
        assert r["symbols"] == 0.0 and r["first@1"] is True
