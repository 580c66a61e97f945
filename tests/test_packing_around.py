"""The tokens a plan leaves free show the code around what is shown whole (pipeline.py:
NAMED_STATEMENT_TOKENS, GAP_MAX_TOKENS, NEIGHBOUR_MAX_TOKENS)."""

from __future__ import annotations

from pathlib import Path

from conftest import write_tree

from smartcontext import Workspace
from smartcontext.context import pipeline

_REPORT = (
    "parse_option rejects an option written with a plus sign\n\n"
    "Calling `parse_option('+x')` raises ValueError, though the documentation says a "
    "leading plus sign is allowed.\n"
)


def _filler(i: int) -> str:
    # Functions the report says nothing about: they make the file too large to show whole.
    return (f"\n\ndef render_table_{i}(rows, width):\n"
            f"    \"\"\"Lay out rows {i} in columns of the given width.\"\"\"\n"
            + "".join(f"    cell_{j} = str(rows[{j}]).ljust(width)  # column {j} of table {i}\n" for j in range(12))
            + "    return rows\n")


def _tree(root: Path, registry_line: str = "") -> None:
    head = "import re\n\n"
    body = "".join(_filler(i) for i in range(3))
    # The fault is in a module-level pattern between two definitions, away from the function
    # that uses it: no item holds it.
    body += "\n\nOPTION_RE = re.compile(r'((?:/|--|-)?[^\\s=]+)(=?\\s*.*)')  # FAULT: no '+'\n"
    body += "".join(_filler(i) for i in range(3, 6))
    body += ("\n\ndef parse_option(text):\n"
             "    \"\"\"Split an option into its name and its argument.\"\"\"\n"
             "    match = OPTION_RE.match(text)\n"
             "    if not match:\n"
             "        raise ValueError(text)\n"
             "    return match.groups()\n")
    body += registry_line
    body += "".join(_filler(i) for i in range(6, 12))
    write_tree(root, {"pkg/__init__.py": "", "pkg/options.py": head + body,
                      "pkg/server.py": "def serve(port):\n    \"\"\"Serve on port.\"\"\"\n    return port\n"})


def _context(root: Path, tokens: int = 2000) -> str:
    with Workspace.open(root) as ws:
        ws.index(embeddings=False)
        return ws.context(_REPORT, max_tokens=tokens, format="markdown").text


def test_a_module_level_pattern_the_shown_function_uses_is_shown(tmp_path, monkeypatch):
    _tree(tmp_path)
    text = _context(tmp_path)
    assert "match = OPTION_RE.match(text)" in text  # the function is shown whole
    assert "# FAULT: no '+'" in text
    assert "`module level` lines" in text
    monkeypatch.setattr(pipeline, "NAMED_STATEMENT_TOKENS", 0)
    assert "# FAULT: no '+'" not in _context(tmp_path)


def test_a_registration_after_the_shown_function_comes_with_it(tmp_path, monkeypatch):
    _tree(tmp_path, registry_line="\n\nregister_parser('option', parse_option, plus_sign=False)  # FAULT\n")
    assert "register_parser('option', parse_option, plus_sign=False)" in _context(tmp_path)
    monkeypatch.setattr(pipeline, "GAP_MAX_TOKENS", 0)
    assert "register_parser('option', parse_option, plus_sign=False)" not in _context(tmp_path)


def _class_tree(root: Path) -> None:
    methods = "".join(
        f"\n    def render_table_{i}(self, rows, width):\n"
        f"        \"\"\"Lay out rows {i} in columns of the given width.\"\"\"\n"
        + "".join(f"        cell_{j} = str(rows[{j}]).ljust(width)  # column {j} of table {i}\n" for j in range(12))
        + "        return rows\n"
        for i in range(8))
    cls = ("class OptionParser:\n"
           "    \"\"\"Reads the options of a command line.\"\"\"\n"
           + methods +
           # Nothing calls it: only its place beside parse_option brings it.
           "\n    def prefixes(self):\n"
           "        return ('-', '--', '/')  # FAULT: '+' is left out\n"
           "\n    def parse_option(self, text):\n"
           "        \"\"\"Split an option into its name and its argument.\"\"\"\n"
           "        if not text.startswith(('-', '--', '/')):\n"
           "            raise ValueError(text)\n"
           "        return text.partition('=')\n"
           + methods.replace("render_table_", "render_list_"))
    write_tree(root, {"pkg/__init__.py": "", "pkg/options.py": cls,
                      "pkg/server.py": "def serve(port):\n    \"\"\"Serve on port.\"\"\"\n    return port\n"})


def test_the_definition_beside_a_method_shown_whole_comes_with_it(tmp_path, monkeypatch):
    _class_tree(tmp_path)
    text = _context(tmp_path)
    assert "if not text.startswith(('-', '--', '/')):" in text
    assert "# FAULT: '+' is left out" in text
    monkeypatch.setattr(pipeline, "NEIGHBOUR_MAX_TOKENS", 0)
    assert "# FAULT: '+' is left out" not in _context(tmp_path)
