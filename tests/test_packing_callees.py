"""A question's context lists, by signature, the helpers its best functions call and does
not show (pipeline.py: CALLEE_SIGNATURES); a report's does not."""

from __future__ import annotations

from pathlib import Path

from conftest import write_tree

from smartcontext import Workspace
from smartcontext.context import pipeline
from smartcontext.retrieval import scoring

_QUESTION = "How does a schema collect the fields declared on its class?"
_REPORT = ("collect_fields drops the fields a schema declares on its class\n\n"
           "Calling `collect_fields(MySchema)` returns an empty list although the class "
           "declares two fields.\n")


def _filler(i: int) -> str:
    # Functions the question says nothing about: they keep the file from being shown whole.
    return (f"\n\ndef render_table_{i}(rows, width):\n"
            f"    \"\"\"Lay out rows {i} in columns of the given width.\"\"\"\n"
            + "".join(f"    cell_{j} = str(rows[{j}]).ljust(width)  # column {j} of table {i}\n" for j in range(12))
            + "    return rows\n")


def _tree(root: Path) -> None:
    helper = ("\n\ndef _gather(attrs):\n"
              "    \"\"\"Name and value pairs worth keeping, in the order written.\"\"\"\n"
              "    pairs = [(k, v) for k, v in attrs.items() if hasattr(v, 'serialize')]\n"
              # Long enough that a plan spends its tokens on the question's matches instead.
              + "".join(f"    pairs = sorted(pairs, key=lambda p: p[1].order + {j})  # step {j}\n"
                        for j in range(60))
              + "    return pairs\n")
    caller = ("\n\ndef collect_fields(cls):\n"
              "    \"\"\"Collect the fields a schema class declares, its own after its bases'.\"\"\"\n"
              "    declared = _gather(vars(cls))\n"
              "    inherited = [pair for base in cls.__mro__[1:] for pair in _gather(vars(base))]\n"
              "    shown = describe(declared)\n"
              "    return inherited + declared\n")
    body = "".join(_filler(i) for i in range(4)) + helper + "".join(_filler(i) for i in range(4, 8))
    body += caller + "".join(_filler(i) for i in range(8, 12))
    # ``describe`` is defined in two other modules: a call by that name is not followed.
    describe = "def describe(pairs):\n    \"\"\"One line per pair.\"\"\"\n    return '\\n'.join(map(str, pairs))\n"
    write_tree(root, {"pkg/__init__.py": "", "pkg/schema.py": "import os\n" + body,
                      "pkg/text.py": describe, "pkg/report.py": describe})


def _context(root: Path, question: str = _QUESTION) -> str:
    # Without the graph (depth 0) nothing else brings the helper, as in a repository where
    # its graph score ranks it below what the budget holds (marshmallow's ``_get_fields``).
    with Workspace.open(root) as ws:
        ws.index(embeddings=False)
        return ws.context(question, max_tokens=2000, format="markdown", depth=0).text


def test_a_question_lists_the_helper_its_best_function_calls(tmp_path, monkeypatch):
    _tree(tmp_path)
    text = _context(tmp_path)
    assert "declared = _gather(vars(cls))" in text  # the caller is shown whole
    assert "- `def _gather(attrs):` lines" in text  # the helper by its signature
    assert "pairs = [(k, v) for k, v in attrs.items()" not in text  # not its body
    assert "def describe(pairs)" not in text  # two modules define it: not followed
    monkeypatch.setattr(pipeline, "CALLEE_SIGNATURES", 0)
    assert "_gather(attrs)" not in _context(tmp_path)


def test_a_report_gets_no_callee_list(tmp_path):
    _tree(tmp_path)
    text = _context(tmp_path, _REPORT)
    assert "declared = _gather(vars(cls))" in text
    assert "- `def _gather(attrs):` lines" not in text


def test_a_listed_helper_ranks_below_every_strong_match(tmp_path):
    """Like any graph neighbour: trimming to make room for it never takes a strong match."""
    _tree(tmp_path)
    # A second match, strong but well below the best (about half its score).
    write_tree(tmp_path, {"pkg/names.py": 'def declared_names(schema):\n'
                          '    """The names of the fields a schema declares."""\n'
                          '    return sorted(schema.fields)\n'})
    with Workspace.open(tmp_path) as ws:
        ws.index(embeddings=False)
        items = ws.context(_QUESTION, max_tokens=2000, format="markdown", depth=0).items
    helper = next(s for s in items if s.item.name == "_gather")
    assert helper.mode == "signature"
    matches = [s.score for s in items if not s.context_only and s is not helper]
    strong = [m for m in matches if m >= scoring.STRONG_SHARE * max(matches)]
    assert len(strong) >= 2 and helper.score < min(strong)
