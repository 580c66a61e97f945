"""Plain data passed between the stages: sources -> store -> retrieval -> budget -> export.

Every stage takes and returns these small dataclasses, so each stage can be tested
and replaced on its own.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any


class ItemKind(StrEnum):
    """What an item is. A ``StrEnum``: members compare equal to (and store as) their
    value, so the index and JSON keep plain strings."""

    MODULE = "module"      # a whole code file
    CLASS = "class"
    FUNCTION = "function"
    METHOD = "method"
    SECTION = "section"    # a heading block of a note
    MESSAGE = "message"    # one message of a chat
    TEXT = "text"          # a file (or line window) indexed without structure


CODE_KINDS = (ItemKind.MODULE, ItemKind.CLASS, ItemKind.FUNCTION, ItemKind.METHOD)
ITEM_KINDS = tuple(ItemKind)

# Edge kinds.
EDGE_KINDS = ("contains", "imports", "calls", "inherits", "links_to")


@dataclass
class Item:
    """One unit of retrieval: a code symbol, a note section or a chat message.

    id:         stable and unique within a workspace, e.g. ``pkg/mod.py::Cls.meth``
                or ``notes/a.md#Heading/Sub``.
    path:       file path relative to the workspace root, with ``/`` separators.
    kind:       one of ITEM_KINDS.
    name:       the short name (``meth``, ``Heading``).
    qualname:   the name inside its file (``Cls.meth``); for a module, its dotted
                module name (``pkg.mod``).
    start_line, end_line: 1-based, inclusive line span in the file.
    signature:  the declaration line(s) without the body (``def meth(self, x) -> int:``).
    docstring:  the doc string or doc comment, if any.
    text:       the full source text of the item (for a module: the whole file).
    parent_id:  the id of the enclosing item (a method's class, a class's module).
    language:   ``python``, ``javascript``, ..., ``markdown``.
    meta:       anything else (decorators, tags, frontmatter, heading path, ...).
    tokens:     estimated token count of ``text`` (about 4 bytes a token), used to plan
                a budget; the rendered context itself is always counted exactly.
    """

    id: str
    path: str
    kind: str
    name: str
    qualname: str
    start_line: int
    end_line: int
    signature: str = ""
    docstring: str = ""
    text: str = ""
    parent_id: str | None = None
    language: str = ""
    meta: dict[str, Any] = field(default_factory=dict)
    tokens: int = 0

    @property
    def doc_summary(self) -> str:
        """The first line of the docstring (what signatures are shown with)."""
        lines = self.docstring.strip().splitlines()
        return lines[0] if lines else ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Edge:
    """A directed link from one item to another.

    ``dst`` is an item id when the source already knows it (``contains``); otherwise
    ``dst_name`` holds a name to resolve across files after indexing: a dotted module
    (``requests.utils``), a qualified name (``requests.utils.get_netrc_auth``) or a bare
    name (``get_netrc_auth``). The store resolves names to ids.
    """

    src: str
    kind: str
    dst: str | None = None
    dst_name: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class ParsedFile:
    """What a source makes of one file."""

    path: str
    language: str
    items: list[Item] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
