"""Plain data passed between the stages: sources -> store -> retrieval -> budget -> export.

Every stage takes and returns these small dataclasses, so each stage can be tested
and replaced on its own.
"""

from __future__ import annotations

import re
from collections.abc import Callable
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


    @property
    def traits(self) -> "KindTraits":
        return KIND_TRAITS[self]


@dataclass(frozen=True)
class KindTraits:
    """How the budgeter, the exporters and the ranking treat one kind of item.

    The later stages ask these questions instead of comparing kinds, so a new source
    with a new kind says once how its items behave.

    sigil:                the MU line marker (``!`` module, ``$`` class, ``#`` callable, ...).
    whole_file:           the item is a code file as a whole: its text is the file, its
                          children are the file's definitions, it has imports and a
                          preamble, and it is referenced by its path rather than a name.
    file_row:             the item (when it starts at line 1) can stand for its file in
                          the catalogue: a module, or the first window of a text file.
    code_symbol:          a named definition in code; its full name is dotted
                          (``pkg.mod.Cls.meth``) and its presence makes an index a code index.
    callable:             its signature is shown as ``name(params)``.
    body_from_file:       shown in full, its lines are taken (dedented) from the file,
                          rather than from its stored text.
    prose:                a block of text (note section, message, text window): shown
                          under its title, never cut down to a signature.
    shows_nested:         showing it in full shows every item inside its line span (a
                          note section's span covers sub-sections it does not repeat).
    max_full_tokens:      largest size shown in full when it contains other items; beyond
                          it, its header plus its best members say more per token.
    brings_parent_header: chosen, it brings its parent's header (a method its class).
    embed_text:           the text its items are embedded from, when a source needs its
                          own (None: path, kind and name, then the content). Chat
                          messages use the chat layer's text, so a message is embedded
                          once for the index and the chat's own vector cache.
    """

    sigil: str
    whole_file: bool = False
    file_row: bool = False
    code_symbol: bool = False
    callable: bool = False
    body_from_file: bool = False
    prose: bool = False
    shows_nested: bool = True
    max_full_tokens: int | None = None
    brings_parent_header: bool = False
    embed_text: Callable[["Item"], str] | None = None


def _message_embed_text(item: "Item") -> str:
    from .sources.chat import message_embed_text  # the chat source owns its items' text

    return message_embed_text(item.name, item.text)


KIND_TRAITS: dict[str, KindTraits] = {
    ItemKind.MODULE: KindTraits("!", whole_file=True, file_row=True, max_full_tokens=1200),
    ItemKind.CLASS: KindTraits("$", code_symbol=True, body_from_file=True, max_full_tokens=1500),
    ItemKind.FUNCTION: KindTraits("#", code_symbol=True, callable=True, body_from_file=True),
    ItemKind.METHOD: KindTraits(
        "#", code_symbol=True, callable=True, body_from_file=True, brings_parent_header=True
    ),
    ItemKind.SECTION: KindTraits("§", prose=True, shows_nested=False),
    ItemKind.MESSAGE: KindTraits(">", prose=True, embed_text=_message_embed_text),
    ItemKind.TEXT: KindTraits("~", file_row=True, prose=True, max_full_tokens=3000),
}
# A kind no source has described (an index written by a newer plugin): a plain leaf.
DEFAULT_TRAITS = KindTraits("#")


def kind_traits(kind: str) -> KindTraits:
    """The traits of ``kind`` (an ``ItemKind`` or the plain string the index stores)."""
    return KIND_TRAITS.get(kind, DEFAULT_TRAITS)


def register_kind(kind: str, traits: KindTraits) -> None:
    """Describe a kind a plugin source introduces (or redescribe a built-in one)."""
    KIND_TRAITS[kind] = traits


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
    kind:       an ``ItemKind`` (stored as its string value).
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
    def traits(self) -> KindTraits:
        """How later stages treat this item (see ``KindTraits``)."""
        return kind_traits(self.kind)

    @property
    def doc_summary(self) -> str:
        """The docstring's summary (what signatures are shown with): see ``summary_of``."""
        return summary_of(self.docstring)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


_SENTENCE_END = re.compile(r"(?<=[\w)\]`'\"][.!?])\s+(?=\S)")
# A period that ends these ends no sentence ("e.g. a list", "see Fig. 2").
_NOT_AN_END = frozenset("e.g i.e etc vs cf al fig eq no approx resp".split())


# A first line whose sentence goes on in the next line ends in " …" in the summary, so a
# reader sees it is cut ("... the ``code`` packer of the …"). Measured with bench/ablate.py
# (model.SUMMARY_MARKS_WRAP=0): the question sets, dev2 and the Lite held-out 40 unchanged,
# SWE-bench dev one hunk either way (the token moves a plan's edge); reading on to the
# sentence's end instead cost the questions (dev whole bodies 0.682 -> 0.663, the second
# set's definitions 0.675 -> 0.664).
SUMMARY_MARKS_WRAP = True


def summary_of(docstring: str) -> str:
    """A docstring's first line, cut after its first sentence when another begins on it
    ("Metaclass for the Schema class. Binds the declared fields to" ends mid-sentence: the
    summary is "Metaclass for the Schema class."), marked " …" when its sentence goes on
    in the next line. Never longer than the first line and that mark: a signature's
    summary is paid for in every context that shows it."""
    lines = docstring.strip().splitlines()
    first = lines[0].strip() if lines else ""
    for end in _SENTENCE_END.finditer(first):
        word = first[: end.start()].rsplit(None, 1)[-1].lstrip("(`'\"").rstrip(".!?").lower()
        if len(word) > 1 and word not in _NOT_AN_END:
            return first[: end.start()]
    if (SUMMARY_MARKS_WRAP and len(lines) > 1 and lines[1].strip()
            and not first.endswith((".", "!", "?", ":", ";"))):
        return first + " …"
    return first


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
    # What the source keeps beside the index (a long chat's parse, so its first history
    # does not parse it again): handed to ``source.keep_aside`` by the indexer where the
    # file was read, then dropped; never stored in the index nor sent between processes.
    aside: Any = field(default=None, repr=False, compare=False)
