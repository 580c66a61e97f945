"""A function nested in a function brings its enclosing function (pipeline.OUTER_RATIO)."""

from __future__ import annotations

from pathlib import Path

from conftest import write_tree

from smartcontext import Workspace
from smartcontext.context import pipeline
from smartcontext.tokens import count_tokens

# The report describes what the nested comparison does; the fault is in the factory's own
# lines (which operands it swaps), which share no word with the report.
_REPORT = (
    "Comparing a unicode column with bytes gives the wrong answer\n\n"
    "The elementwise comparison of a column of unicode strings against a bytes value encodes "
    "the other operand and compares, but equality with bytes returns False for equal text.\n"
)

_FACTORY = '''

def _make_compare(oper):
    """Make a comparison method for the operator ``oper``."""
    swapped = {"__lt__": "__gt__", "__gt__": "__lt__", "__le__": "__ge__", "__ge__": "__le__"}
    reflected = swapped.get(oper, oper)  # FAULT: eq and ne are not reflected for bytes

    def _compare(self, other):
        """Elementwise comparison of a unicode column against another operand: bytes
        are encoded first, then compared."""
        if isinstance(other, bytes):
            other = other.decode("utf-8")  # encode the other operand
        if self.dtype.char == "U" and isinstance(other, str):
            result = getattr(self.data, reflected)(other)  # unicode comparison
        else:
            result = getattr(self.data, oper)(other)  # plain comparison
        return result

    return _compare
'''


def _tree(root: Path) -> None:
    # The rest of the module: too large, with the factory, to be shown whole at 8,000 tokens.
    rest = "".join(
        f"\n\ndef format_cell_{i}(value, width):\n    \"\"\"Pad cell {i} of a printed table.\"\"\"\n"
        + "".join(f"    value = str(value).rjust(width - {j})  # pad step {j}\n" for j in range(14))
        + "    return value\n"
        for i in range(40)
    )
    files = {"pkg/__init__.py": "", "pkg/column.py": '"""Columns of a table."""\n' + _FACTORY + rest,
             "pkg/table.py": "def show(table):\n    \"\"\"Print a table.\"\"\"\n    return table\n"}
    write_tree(root, files)


def test_a_shown_closure_brings_its_factory_whole(tmp_path, monkeypatch):
    _tree(tmp_path)
    source = (tmp_path / "pkg" / "column.py").read_text(encoding="utf-8")
    assert count_tokens(source) > 0.4 * 8000  # not the small best file shown whole

    def context() -> tuple[dict[str, str], str]:
        with Workspace.open(tmp_path) as ws:
            ws.index(embeddings=False)
            res = ws.context(_REPORT, max_tokens=8000, format="markdown")
        return {s.item.qualname: s.mode for s in res.items}, res.text

    modes, text = context()
    assert modes.get("_make_compare") == "full"
    assert "reflected = swapped.get(oper, oper)" in text
    assert "def _compare(self, other):" in text  # shown inside its factory, once
    assert text.count("def _compare(self, other):") == 1

    monkeypatch.setattr(pipeline, "OUTER_RATIO", 0.0)
    modes, text = context()
    assert modes.get("_make_compare._compare") == "full"
    assert "reflected = swapped.get(oper, oper)" not in text
