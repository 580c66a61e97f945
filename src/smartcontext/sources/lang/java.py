"""Java: classes, interfaces, enums, records, methods, constructors, javadoc, imports."""

from __future__ import annotations

from typing import ClassVar

from tree_sitter import Node

from .base import DefParts, ImportContext, LangSpec, strip_generics, text_of

_NOISE_MEMBERS = frozenset({
    "println", "print", "printf", "format", "equals", "hashCode", "toString", "get", "put",
    "add", "size", "isEmpty", "contains", "append", "stream", "map", "filter", "collect",
    "forEach", "valueOf", "getClass", "length", "charAt", "substring", "trim",
})
_VISIBILITY = ("public", "protected", "private")


class JavaSpec(LangSpec):
    grammar = "java"
    label = "java"
    comment_types = frozenset({"line_comment", "block_comment"})
    noise_attr_calls = _NOISE_MEMBERS
    package_types = frozenset({"package_declaration"})
    type_kinds: ClassVar[dict[str, str]] = {
        "interface_declaration": "interface",
        "enum_declaration": "enum",
        "record_declaration": "record",
        "annotation_type_declaration": "annotation",
    }
    query_source = """
    (class_declaration) @class
    (interface_declaration) @class
    (enum_declaration) @class
    (record_declaration) @class
    (annotation_type_declaration) @class
    (method_declaration body: (_)) @function
    (constructor_declaration) @function
    (compact_constructor_declaration) @function
    (import_declaration) @import
    (method_invocation object: (_) name: (identifier) @call.attr)
    (method_invocation object: (this) name: (identifier) @call.self)
    (method_invocation !object name: (identifier) @call.name)
    (object_creation_expression type: (type_identifier) @call.name)
    """

    def bases(self, node: Node) -> list[str]:
        bases: list[str] = []
        for child in node.named_children:
            if child.type == "superclass":
                bases.extend(strip_generics(t) for t in child.named_children)
            elif child.type in ("super_interfaces", "extends_interfaces"):
                for lst in child.named_children:
                    items = lst.named_children if lst.type == "type_list" else [lst]
                    bases.extend(strip_generics(t) for t in items)
        return bases

    def meta(self, src: bytes, node: Node, parts: DefParts, kind: str) -> dict:
        meta: dict = {"visibility": "package"}
        mods = next((c for c in node.children if c.type == "modifiers"), None)
        if mods is not None:
            annotations = []
            for c in mods.children:
                if c.type in _VISIBILITY:
                    meta["visibility"] = c.type
                elif c.type == "static":
                    meta["static"] = True
                elif c.type in ("marker_annotation", "annotation"):
                    annotations.append(text_of(c)[1:])
            if annotations:
                meta["annotations"] = annotations
        return meta

    def imports(self, node: Node, ctx: ImportContext) -> list[str]:
        for child in node.named_children:
            if child.type in ("scoped_identifier", "identifier"):
                return [text_of(child)]
        return []
