"""What every language spec provides to the extractor, with defaults for C-like grammars.

A spec is a tree-sitter query plus small hooks. The query does the walking in C and
hands back only the nodes that matter, under these capture names:

    @class      a class-like definition (class, struct, interface, trait, enum, ...)
    @function   a function or method definition with a body
    @scope      a named container that is not an item (namespace, Rust impl / mod)
    @import     an import statement (the spec turns it into dotted names)
    @call.name  the name node of a bare call: ``foo()``
    @call.attr  the name node of a member call: ``obj.foo()``
    @call.self  the name node of a member call on the object itself: ``self.foo()``
                (also captured as @call.attr)

Captures starting with ``_`` only serve predicates. Hooks run once per captured
definition, never per syntax node, so the cost stays proportional to what is extracted.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import ClassVar, cast

from tree_sitter import Node, Parser, Query
from tree_sitter_language_pack import SupportedLanguage, get_language, get_parser


@dataclass
class ImportContext:
    """Where an import statement sits, for resolving relative imports."""

    path: str  # workspace-relative path of the importing file
    module: str  # its dotted module name
    is_package: bool = False  # Python ``__init__.py``: the file is its package


@dataclass
class ScopeInfo:
    """A container that prefixes qualnames without being an item itself.

    type_scope: the scope is a type's body given elsewhere (Rust ``impl``): functions
    inside are methods of ``name`` and attach to that type's item when the file has it.
    trait:      for ``impl Trait for Type``, the trait ``Type`` inherits.
    """

    name: str
    type_scope: bool = False
    trait: str | None = None


@dataclass
class DefParts:
    """A definition's name and where its text, signature and doc come from."""

    name: str
    outer: Node  # the node spanning the definition (with decorators, ``export`` ...)
    text_start: int  # first byte of the item's text (leading doc comments included)
    start_row: int  # 0-based line of text_start
    sig_start: int  # first byte of the signature (doc comments excluded)
    comments: list[Node] = field(default_factory=list)  # doc comments, top to bottom


_local = threading.local()
_QUERIES: dict[type, Query] = {}


class LangSpec:
    """Defaults fit C-like grammars: ``name`` fields, ``body`` fields, comments above."""

    grammar: str = ""  # tree-sitter-language-pack name
    label: str = ""  # language reported on items
    # File extensions (lower case, no dot) a plugin's spec claims; the built-ins' are in
    # ``paths.EXTENSION_LANGUAGES``.
    extensions: tuple[str, ...] = ()
    query_source: str = ""
    comment_types: frozenset[str] = frozenset({"comment"})
    # Siblings above a definition that belong to it (Rust ``#[derive]``, C# attributes).
    attribute_types: frozenset[str] = frozenset()
    # Parents that wrap a definition and belong to its text (``export``, decorators).
    wrapper_types: frozenset[str] = frozenset()
    # Receivers that mean "this object" in a member call. Specs whose query cannot say it
    # (Go receivers have any name) set receiver_self and answer through ``is_self``.
    self_names: frozenset[bytes] = frozenset({b"this"})
    receiver_self: bool = False
    # Called names too common to be worth an edge: bare calls (builtins) and member
    # calls (container methods). A ``self.x()`` call is never noise: it is qualified.
    noise_calls: frozenset[str] = frozenset()
    noise_attr_calls: frozenset[str] = frozenset()
    # Node type of a class-like definition -> the kind of type it is (meta ``type_kind``).
    type_kinds: ClassVar[dict[str, str]] = {}
    # Child node types that hold a definition's body when the grammar has no ``body`` field.
    body_types: frozenset[str] = frozenset()
    # Where a package / namespace declaration names the module's package (meta ``package``).
    package_types: frozenset[str] = frozenset()

    # -- grammar objects -------------------------------------------------------------

    def parser(self) -> Parser:
        """A parser for this thread: parsers keep state between calls and are not shared."""
        cache = getattr(_local, "parsers", None)
        if cache is None:
            cache = _local.parsers = {}
        parser = cache.get(self.grammar)
        if parser is None:
            parser = cache[self.grammar] = get_parser(cast(SupportedLanguage, self.grammar))
        return parser

    def query(self) -> Query:
        """The compiled query, built once per spec class (specs may share a grammar)."""
        query = _QUERIES.get(type(self))
        if query is None:
            query = _QUERIES[type(self)] = Query(get_language(cast(SupportedLanguage, self.grammar)), self.query_source)
        return query

    # -- definitions -----------------------------------------------------------------

    def def_name(self, node: Node) -> str | None:
        name = node.child_by_field_name("name")
        return text_of(name) if name is not None else None

    def outer(self, node: Node) -> Node:
        parent = node.parent
        while parent is not None and parent.type in self.wrapper_types:
            node, parent = parent, parent.parent
        return node

    def parts(self, node: Node, name: str) -> DefParts:
        """Name, outer node and the leading comments/attributes that belong to ``node``."""
        outer = self.outer(node)
        comments, first_attr = self.leading(outer)
        head = first_attr if first_attr is not None else outer
        top = comments[0] if comments else head
        return DefParts(name, outer, top.start_byte, top.start_point[0], head.start_byte, comments)

    def leading(self, outer: Node) -> tuple[list[Node], Node | None]:
        """Doc comments directly above ``outer`` (no blank line between) and the first of
        the attributes between them and the definition."""
        comments: list[Node] = []
        first_attr: Node | None = None
        row = outer.start_point[0]
        prev = outer.prev_sibling
        while prev is not None:
            kind = prev.type
            if kind not in self.comment_types and kind not in self.attribute_types:
                break
            if last_row(prev) < row - 1:
                break
            before = prev.prev_sibling
            if before is not None and last_row(before) == prev.start_point[0]:
                break  # a trailing comment of the previous statement
            if kind in self.attribute_types:
                if comments:
                    break  # attributes above the doc comment belong to something else
                first_attr = prev
            else:
                comments.append(prev)
            row = prev.start_point[0]
            prev = before
        comments.reverse()
        return comments, first_attr

    def owner(self, node: Node) -> str | None:
        """The type a function is a method of when the grammar says so outside a class
        body (Go receivers, C++ ``Cls::meth``)."""
        return None

    def self_names_for(self, node: Node) -> frozenset[bytes]:
        """What names the object itself inside a method (Go: the receiver's name)."""
        return self.self_names

    def scope(self, node: Node) -> ScopeInfo | None:
        name = node.child_by_field_name("name")
        return ScopeInfo(text_of(name)) if name is not None else None

    def body(self, node: Node) -> Node | None:
        body = node.child_by_field_name("body")
        if body is None and self.body_types:
            for child in node.children:
                if child.type in self.body_types:
                    return child
        return body

    def signature(self, src: bytes, node: Node, parts: DefParts) -> str:
        body = self.body(node)
        if body is not None and body.start_byte > parts.sig_start:
            return collapse(src[parts.sig_start : body.start_byte])
        return short_header(src[parts.sig_start : parts.outer.end_byte])

    def docstring(self, src: bytes, node: Node, parts: DefParts) -> str:
        return clean_comments(src, parts.comments)

    def bases(self, node: Node) -> list[str]:
        return []

    def type_kind(self, node: Node) -> str:
        return self.type_kinds.get(node.type, "class")

    def meta(self, src: bytes, node: Node, parts: DefParts, kind: str) -> dict:
        return {}

    # -- imports and module ----------------------------------------------------------

    def imports(self, node: Node, ctx: ImportContext) -> list[str]:
        return []

    def module_doc(self, src: bytes, root: Node) -> str:
        """The comment block that opens the file."""
        comments: list[Node] = []
        for child in root.children:
            if child.type in self.comment_types:
                if comments and child.start_point[0] > last_row(comments[-1]) + 1:
                    break
                comments.append(child)
            elif comments or not self.skippable_preamble(child):
                break
        return clean_comments(src, comments)

    def skippable_preamble(self, node: Node) -> bool:
        """Nodes that may precede the file's opening comment (``<?php``, a shebang)."""
        return False

    def module_meta(self, src: bytes, root: Node) -> dict:
        if not self.package_types:
            return {}
        for child in root.children:
            if child.type in self.package_types:
                name = self.package_name(child)
                if name:
                    return {"package": name}
        return {}

    def package_name(self, node: Node) -> str:
        for child in node.named_children:
            if child.type not in self.comment_types:
                return text_of(child).replace("::", ".").replace("\\", ".")
        return ""

    def is_self(self, name: Node, self_names: frozenset[bytes]) -> bool:
        """Whether the member call whose name node is ``name`` is made on the object itself
        (``self.x()``, ``this.x()``); by default the object is the node before the name."""
        obj = name.prev_named_sibling
        return obj is not None and obj.text in self_names


# -- small helpers shared by specs ----------------------------------------------------


def text_of(node: Node | None) -> str:
    if node is None:
        return ""
    return node.text.decode("utf-8", "replace")  # type: ignore[union-attr]


def last_row(node: Node) -> int:
    """The last line a node covers; line comments that swallow their newline end at
    column 0 of the next line."""
    row, col = node.end_point
    if col == 0 and row > node.start_point[0]:
        return row - 1
    return row


def collapse(raw: bytes) -> str:
    return " ".join(raw.decode("utf-8", "replace").split())


def short_header(raw: bytes, limit: int = 240) -> str:
    """A bodiless definition's signature: all of it when short, else its first line."""
    if len(raw) > limit:
        raw = raw.split(b"\n", 1)[0][:limit]
    return collapse(raw)


def clean_comments(src: bytes, comments: list[Node]) -> str:
    if not comments:
        return ""
    lines: list[str] = []
    for comment in comments:
        lines.extend(_comment_lines(src[comment.start_byte : comment.end_byte].decode("utf-8", "replace")))
    while lines and not lines[0]:
        lines.pop(0)
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines)


def _comment_lines(text: str) -> list[str]:
    text = text.strip()
    if text.startswith("/*"):
        text = text[2:]
        text = text.removesuffix("*/")
        text = text.lstrip("*!")
        out = []
        for line in text.split("\n"):
            line = line.strip()
            if line.startswith("*"):
                line = line[1:]
                line = line.removeprefix(" ")
            out.append(line.rstrip())
        return out
    out = []
    for line in text.split("\n"):
        line = line.strip()
        if line.startswith("//"):
            line = line[2:]
            if line[:1] in ("/", "!"):
                line = line[1:]
        elif line.startswith("#"):
            line = line.lstrip("#")
        elif line.startswith("--"):
            line = line[2:]
        line = line.removeprefix(" ")
        out.append(line.rstrip())
    return out


def strip_generics(node: Node) -> str:
    """``Base<T>`` / ``List[int]`` -> ``Base`` / ``List``; other names as written."""
    for field_name in ("name", "value", "type"):
        if node.type in ("generic_type", "template_type", "subscript", "generic_name"):
            inner = node.child_by_field_name(field_name)
            if inner is not None:
                return strip_generics(inner)
    if node.type in ("generic_type", "template_type", "generic_name") and node.named_child_count:
        return strip_generics(node.named_children[0])
    text = text_of(node)
    cut = min((i for i in (text.find("<"), text.find("[")) if i > 0), default=-1)
    return (text[:cut] if cut > 0 else text).strip()


def string_value(node: Node) -> str:
    """The content of a string literal node, quotes and prefixes removed."""
    text = text_of(node)
    start = 0
    while start < len(text) and text[start] not in "\"'`":
        start += 1
    text = text[start:]
    for quote in ('"""', "'''", '"', "'", "`"):
        if text.startswith(quote) and text.endswith(quote) and len(text) >= 2 * len(quote):
            return text[len(quote) : -len(quote)]
    return text.strip("\"'`")
