"""The source interface: what turns one kind of file into items and edges.

A source says which files it claims, parses one file at a time into a ``ParsedFile``,
and names what it made (the module a file stands for, each item's full name, the text
full-text search indexes). The indexer asks the registry (``sources.registry``) for
the source of a path and calls these methods; it never names a source itself. A new
source is one module with a class like ``BaseSource`` plus one registration through
the ``register_sources`` hook (see ``smartcontext.plugins``); a source whose items are
of a new kind describes that kind once with ``model.register_kind`` (its MU sigil,
whether it is prose, a container, ...), and ranking, budgeting and export follow.
"""

from __future__ import annotations

import os
from typing import Protocol

from ..model import Item, ParsedFile
from ..words import fts_text


class Source(Protocol):
    """One kind of file the workspace can index.

    name:           stable, stored in the index's ``files.source`` column.
    skip_generated: files whose first lines say they are generated are skipped.
    """

    name: str
    skip_generated: bool

    def language_for(self, path: str) -> str | None:
        """The language label of a workspace-relative path this source reads, else None."""

    def parse(self, path: str, data: bytes, language: str) -> ParsedFile:
        """Items and edges of one file. Never raises: a file it cannot read becomes text
        items with a warning."""

    def module_name(self, path: str) -> str:
        """The name the file stands for (a dotted module, or the path without extension)."""

    def fqname(self, item: Item, module: str) -> str:
        """The item's full name inside the workspace, looked up by entity matching."""

    def fts_bodies(self, items: list[Item], text: str) -> list[str]:
        """For each item, the text full-text search indexes (``text`` is the whole file)."""

    def warm_up(self, path: str, language: str) -> None:
        """Load what parsing ``language`` needs, before worker processes fork."""


class BaseSource:
    """Defaults for a source: claims files by extension, names items by their path.

    Subclasses set ``name``, ``extensions`` (lower case, with the dot) and ``language``,
    and implement ``parse``.
    """

    name: str = ""
    skip_generated: bool = False
    # Raised when the same file would now be read into other items: an index parsed by an
    # older version reads every file of this source again on its next run.
    version: int = 0
    # True for a source the ``[index] text_files`` setting turns off (plain text files).
    optional: bool = False
    extensions: frozenset[str] = frozenset()
    language: str = "text"

    def language_for(self, path: str) -> str | None:
        return self.language if os.path.splitext(path)[1].lower() in self.extensions else None

    def parse(self, path: str, data: bytes, language: str) -> ParsedFile:
        raise NotImplementedError(f"source {self.name!r} does not implement parse()")

    def module_name(self, path: str) -> str:
        return os.path.splitext(path)[0]

    def fqname(self, item: Item, module: str) -> str:
        """A whole file by its module name, a code symbol dotted below its module, any
        other item as ``module#qualname``."""
        traits = item.traits
        if traits.whole_file:
            return item.qualname or module
        if traits.code_symbol:
            return f"{module}.{item.qualname}" if module else item.qualname
        return f"{module}#{item.qualname}" if item.qualname else module

    def fts_bodies(self, items: list[Item], text: str) -> list[str]:
        return [fts_text(it.text) for it in items]

    def fts_names(self, items: list[Item]) -> list[str]:
        """What each item's name column of the full-text index holds (the name column
        weighs most in BM25): its qualified name."""
        return [fts_text(it.qualname) for it in items]

    def warm_up(self, path: str, language: str) -> None:
        return None


def decode(data: bytes) -> str:
    """A file's text; invalid UTF-8 is replaced so one bad byte never loses a file."""
    return data.decode("utf-8", errors="replace")
