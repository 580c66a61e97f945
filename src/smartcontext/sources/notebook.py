"""Jupyter notebooks (``.ipynb``): read as the document a person reads in the notebook.

A notebook is JSON; its words are in the cells' sources. It becomes a markdown text, each
markdown cell as written and each code cell as a fenced block in the kernel's language, and
that text is parsed as a note (``sources.markdown``): a section per heading, long sections in
parts, so a question finds the part of a tutorial that explains and shows it. Outputs are
left out: a plot is an image, and a printed table or a traceback is what the code made, often
thousands of lines, not what the author wrote. Line numbers of the items are those of this
text (what the context shows), not of the JSON file.

A file that is not a notebook (invalid JSON, no cells) is indexed as plain text with a
warning, as any file a source cannot read.
"""

from __future__ import annotations

import json
from typing import Any

from ..model import ParsedFile
from .base import decode
from .builtin import MarkdownSource
from .text import MINIFIED_LINE_CHARS, text_windows

DEFAULT_LANGUAGE = "python"


def notebook_markdown(notebook: dict[str, Any]) -> str:
    """The notebook's cells as one markdown text, in order, separated by blank lines."""
    language = _kernel_language(notebook)
    parts: list[str] = []
    for cell in _cells(notebook):
        kind = cell.get("cell_type")
        source = _source(cell.get("source", cell.get("input", ""))).strip("\n")
        if not source.strip():
            continue
        if kind == "code":
            fence = _fence_for(source)
            parts.append(f"{fence}{language}\n{source}\n{fence}")
        elif kind in ("markdown", "raw", "heading"):
            if kind == "heading":  # nbformat 3 kept headings as cells of their own
                source = "#" * int(cell.get("level", 1) or 1) + " " + source
            parts.append(source)
    return "\n\n".join(parts) + ("\n" if parts else "")


def _cells(notebook: dict[str, Any]) -> list[dict[str, Any]]:
    """nbformat 4 keeps ``cells`` at the top; nbformat 3 inside ``worksheets``."""
    cells = notebook.get("cells")
    if cells is None:
        cells = [c for ws in notebook.get("worksheets") or [] if isinstance(ws, dict)
                 for c in ws.get("cells") or []]
    if not isinstance(cells, list):
        raise ValueError("its cells are not a list")
    return [c for c in cells if isinstance(c, dict)]


def _source(value: Any) -> str:
    """A cell's source: one string, or a list of lines (each with its own newline)."""
    if isinstance(value, list):
        return "".join(str(v) for v in value)
    return value if isinstance(value, str) else ""


def _kernel_language(notebook: dict[str, Any]) -> str:
    meta = notebook.get("metadata") or {}
    for holder, key in (("kernelspec", "language"), ("language_info", "name")):
        value = (meta.get(holder) or {}).get(key) if isinstance(meta.get(holder), dict) else None
        if isinstance(value, str) and value.strip().isidentifier():
            return value.strip().lower()
    return DEFAULT_LANGUAGE


def _fence_for(source: str) -> str:
    """A fence longer than any run of backticks starting a line of the code, so a cell
    that holds a fenced block itself (a docstring with markdown) does not end early."""
    longest = max((len(line) - len(line.lstrip("`")) for line in source.splitlines()), default=0)
    return "`" * max(3, longest + 1)


def is_notebook(value: Any) -> bool:
    return isinstance(value, dict) and ("cells" in value or "worksheets" in value)


class NotebookSource(MarkdownSource):
    """Jupyter notebooks: their markdown and code cells as one note (see the module's text),
    named like a note by their title."""

    name = "notebook"
    extensions = frozenset({".ipynb"})
    language = "notebook"
    # Outputs (base64 images) make long JSON lines and most of a notebook's bytes: the
    # cells' own lines are checked below, and a notebook may be ten times the size limit.
    long_lines = True
    size_factor = 10

    def parse(self, path: str, data: bytes, language: str) -> ParsedFile:
        from .markdown import parse_markdown

        text = decode(data)
        try:
            notebook = json.loads(text)
            if not is_notebook(notebook):
                raise ValueError("no cells")
            markdown = notebook_markdown(notebook)
        except (ValueError, TypeError) as exc:
            windows = text_windows(path, text)
            windows.warnings.append(f"{path}: not a readable notebook ({exc}); indexed as plain text")
            return windows
        if any(len(line) > MINIFIED_LINE_CHARS for line in markdown.splitlines()):
            windows = text_windows(path, markdown)
            windows.warnings.append(
                f"{path}: cells with lines over {MINIFIED_LINE_CHARS:,} characters; indexed as text windows")
            return windows
        parsed = parse_markdown(path, markdown)
        parsed.language = self.language
        return parsed
