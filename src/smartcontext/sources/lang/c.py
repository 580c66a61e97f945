"""C and C++: functions, structs/unions/enums (typedef names included), C++ classes with
base clauses, namespaces, methods defined in or out of their class, ``#include``."""

from __future__ import annotations

import posixpath
from typing import ClassVar

from tree_sitter import Node

from ...model import ItemKind
from .base import DefParts, ImportContext, LangSpec, ScopeInfo, strip_generics, text_of
from .paths import module_name_for_path, resolve_relative_path

_NOISE_NAMES = frozenset({
    "printf", "fprintf", "sprintf", "snprintf", "malloc", "calloc", "realloc", "free",
    "memcpy", "memset", "memmove", "memcmp", "strlen", "strcmp", "strncmp", "strcpy",
    "strncpy", "assert", "sizeof", "static_cast", "dynamic_cast", "reinterpret_cast",
    "const_cast", "move", "forward",
})
_NOISE_MEMBERS = frozenset({
    "size", "begin", "end", "push_back", "emplace_back", "c_str", "empty", "data", "get",
    "reset", "clear", "insert", "find", "at",
})
_DECLARATOR_WRAPPERS = (
    "pointer_declarator", "reference_declarator", "parenthesized_declarator",
    "attributed_declarator",
)
_C_DEFS = """
(function_definition body: (_)) @function
(struct_specifier body: (_)) @class
(union_specifier body: (_)) @class
(enum_specifier body: (_)) @class
(preproc_include) @import
(call_expression function: (identifier) @call.name)
(call_expression function: (field_expression field: (field_identifier) @call.attr))
"""
_CPP_EXTRA = """
(class_specifier body: (_)) @class
(namespace_definition body: (_)) @scope
(call_expression function: (qualified_identifier name: (identifier) @call.attr))
(call_expression function: (field_expression argument: (this) field: (field_identifier) @call.self))
(call_expression function: (template_function name: (identifier) @call.name))
(new_expression type: (type_identifier) @call.name)
"""

# Headers declare what other files define: their prototypes are the API worth finding.
_C_HEADER_EXTRA = "".join(
    f"""
({parent} (declaration declarator: [
  (function_declarator)
  (pointer_declarator declarator: (function_declarator))]) @function)"""
    for parent in ("translation_unit", "preproc_ifdef", "preproc_if", "preproc_else", "preproc_elif")
)
_CPP_HEADER_EXTRA = """
(declaration_list (declaration declarator: [
  (function_declarator)
  (pointer_declarator declarator: (function_declarator))
  (reference_declarator (function_declarator))]) @function)
(field_declaration_list (field_declaration declarator: [
  (function_declarator)
  (pointer_declarator declarator: (function_declarator))
  (reference_declarator (function_declarator))]) @function)
(field_declaration_list (declaration declarator: (function_declarator)) @function)
"""


class CSpec(LangSpec):
    grammar = "c"
    label = "c"
    noise_calls = _NOISE_NAMES
    noise_attr_calls = _NOISE_MEMBERS
    query_source = _C_DEFS
    type_kinds: ClassVar[dict[str, str]] = {
        "struct_specifier": "struct",
        "union_specifier": "union",
        "enum_specifier": "enum",
        "class_specifier": "class",
    }

    def def_name(self, node: Node) -> str | None:
        if node.type in ("function_definition", "declaration", "field_declaration"):
            name = _function_name_node(node)
            if name is None:
                return None
            while name is not None and name.type == "qualified_identifier":
                name = name.child_by_field_name("name")
            return text_of(name) if name is not None else None
        name = node.child_by_field_name("name")
        if name is not None:
            return strip_generics(name)
        # ``typedef struct { ... } name_t;`` names the anonymous struct.
        parent = node.parent
        if parent is not None and parent.type == "type_definition":
            decl = parent.child_by_field_name("declarator")
            if decl is not None and decl.type == "type_identifier":
                return text_of(decl)
        return None

    def outer(self, node: Node) -> Node:
        parent = node.parent
        if parent is not None:
            if parent.type == "type_definition" and node.type != "function_definition":
                return parent
            if parent.type == "template_declaration":
                return parent
        return node

    def owner(self, node: Node) -> str | None:
        """``Cls::meth`` defined outside the class (``ns::Cls::meth`` -> ``ns.Cls``)."""
        if node.type not in ("function_definition", "declaration"):
            return None
        name = _function_name_node(node)
        if name is None or name.type != "qualified_identifier":
            return None
        scopes: list[str] = []
        while name is not None and name.type == "qualified_identifier":
            scope = name.child_by_field_name("scope")
            if scope is not None:
                scopes.append(strip_generics(scope))
            name = name.child_by_field_name("name")
        return ".".join(s for s in scopes if s) or None

    def scope(self, node: Node) -> ScopeInfo | None:
        name = node.child_by_field_name("name")
        if name is None:
            return None  # anonymous namespace: its contents belong to the file
        return ScopeInfo(text_of(name).replace("::", "."))

    def bases(self, node: Node) -> list[str]:
        for child in node.named_children:
            if child.type == "base_class_clause":
                return [
                    strip_generics(b).replace("::", ".")
                    for b in child.named_children
                    if b.type not in ("access_specifier", "virtual", "comment")
                ]
        return []

    def imports(self, node: Node, ctx: ImportContext) -> list[str]:
        path = node.child_by_field_name("path")
        if path is None:
            return []
        raw = text_of(path)
        if path.type == "system_lib_string":
            return [module_name_for_path(raw.strip("<>"))]
        target = raw.strip('"')
        joined = resolve_relative_path(ctx.path, target)
        return [module_name_for_path(joined if joined else posixpath.normpath(target))]

    def meta(self, src: bytes, node: Node, parts: DefParts, kind: str) -> dict:
        if kind == ItemKind.CLASS:
            return _typedef_meta(node)
        if kind != ItemKind.FUNCTION:
            return {}
        static = any(c.type == "storage_class_specifier" and c.text == b"static" for c in node.children)
        meta: dict = {"visibility": "private" if static else "public"}
        if node.type == "declaration":
            meta["declaration"] = True
        return meta


class CppSpec(CSpec):
    grammar = "cpp"
    label = "cpp"
    query_source = _C_DEFS + _CPP_EXTRA

    def meta(self, src: bytes, node: Node, parts: DefParts, kind: str) -> dict:
        if kind == ItemKind.CLASS:
            return _typedef_meta(node)
        if node.type in ("declaration", "field_declaration"):
            return {"declaration": True}
        return {}


class CHeaderSpec(CSpec):
    query_source = _C_DEFS + _C_HEADER_EXTRA


class CppHeaderSpec(CppSpec):
    query_source = _C_DEFS + _CPP_EXTRA + _C_HEADER_EXTRA + _CPP_HEADER_EXTRA


def _typedef_meta(node: Node) -> dict:
    """``typedef struct buf {...} buf_t;``: code names the type ``buf_t``."""
    parent = node.parent
    if parent is not None and parent.type == "type_definition":
        decl = parent.child_by_field_name("declarator")
        if decl is not None and decl.type == "type_identifier":
            return {"typedef": text_of(decl)}
    return {}


def _function_name_node(node: Node) -> Node | None:
    """The name inside a function definition's declarator chain."""
    decl = node.child_by_field_name("declarator")
    for _ in range(8):  # declarators nest a handful of levels at most
        if decl is None:
            return None
        if decl.type == "function_declarator":
            return decl.child_by_field_name("declarator")
        if decl.type in _DECLARATOR_WRAPPERS:
            decl = decl.child_by_field_name("declarator") or (
                decl.named_children[-1] if decl.named_child_count else None
            )
            continue
        return None
    return None
