"""C#, Ruby, PHP, Kotlin, Swift and Scala: definitions, bases, imports and calls from
the same engine, with less detail than the main languages (no per-language meta)."""

from __future__ import annotations

from typing import ClassVar

from tree_sitter import Node

from .base import (
    DefParts,
    ImportContext,
    LangSpec,
    ScopeInfo,
    collapse,
    string_value,
    strip_generics,
    text_of,
)
from .paths import module_name_for_path, resolve_relative_path


class CSharpSpec(LangSpec):
    grammar = "csharp"
    receiver_self = True
    label = "csharp"
    package_types = frozenset({"file_scoped_namespace_declaration"})
    type_kinds: ClassVar[dict[str, str]] = {
        "interface_declaration": "interface",
        "struct_declaration": "struct",
        "enum_declaration": "enum",
        "record_declaration": "record",
    }
    noise_attr_calls = frozenset({"ToString", "Equals", "GetHashCode", "WriteLine", "Add", "Select", "Where"})
    query_source = """
    (class_declaration) @class
    (interface_declaration) @class
    (struct_declaration) @class
    (enum_declaration) @class
    (record_declaration) @class
    (method_declaration body: (_)) @function
    (constructor_declaration body: (_)) @function
    (local_function_statement body: (_)) @function
    (namespace_declaration body: (_)) @scope
    (using_directive) @import
    (invocation_expression function: (identifier) @call.name)
    (invocation_expression function: (member_access_expression name: (identifier) @call.attr))
    (object_creation_expression type: (identifier) @call.name)
    """

    def scope(self, node: Node) -> ScopeInfo | None:
        name = node.child_by_field_name("name")
        return ScopeInfo(text_of(name)) if name is not None else None

    def bases(self, node: Node) -> list[str]:
        for child in node.named_children:
            if child.type == "base_list":
                return [strip_generics(b) for b in child.named_children if b.type != "argument_list"]
        return []

    def imports(self, node: Node, ctx: ImportContext) -> list[str]:
        for child in node.named_children:
            if child.type in ("qualified_name", "identifier"):
                return [text_of(child)]
        return []

    def is_self(self, name: Node, self_names: frozenset[bytes]) -> bool:
        access = name.parent
        obj = access.child_by_field_name("expression") if access is not None else None
        return obj is not None and obj.text == b"this"


class RubySpec(LangSpec):
    grammar = "ruby"
    label = "ruby"
    self_names = frozenset({b"self"})
    type_kinds: ClassVar[dict[str, str]] = {"module": "module"}
    noise_calls = frozenset({
        "require", "require_relative", "puts", "print", "p", "raise", "attr_accessor",
        "attr_reader", "attr_writer", "include", "extend", "private", "protected", "public",
        "lambda", "proc", "loop",
    })
    noise_attr_calls = frozenset({"each", "map", "new", "to_s", "to_i", "to_sym", "join", "push", "select"})
    query_source = """
    (class) @class
    (module) @class
    (method) @function
    (singleton_method) @function
    (call method: (identifier) @_m arguments: (argument_list . (string)) (#any-of? @_m "require" "require_relative")) @import
    (call !receiver method: (identifier) @call.name)
    (call receiver: (_) method: (identifier) @call.attr)
    (call receiver: (self) method: (identifier) @call.self)
    """

    def def_name(self, node: Node) -> str | None:
        name = node.child_by_field_name("name")
        return text_of(name).replace("::", ".") if name is not None else None

    def leading(self, outer: Node) -> tuple[list[Node], Node | None]:
        comments, attr = super().leading(outer)
        parent = outer.parent
        # The first method's comment sits before the class body node, not inside it.
        if not comments and outer.prev_sibling is None and parent is not None and parent.type == "body_statement":
            return super().leading(parent)
        return comments, attr

    def signature(self, src: bytes, node: Node, parts: DefParts) -> str:
        # Ruby bodies have no opening brace: the header ends at the last part of it.
        end = node.start_byte
        for field_name in ("name", "superclass", "parameters"):
            part = node.child_by_field_name(field_name)
            if part is not None:
                end = max(end, part.end_byte)
        return collapse(src[parts.sig_start : end])

    def bases(self, node: Node) -> list[str]:
        sup = node.child_by_field_name("superclass")
        if sup is None:
            return []
        return [text_of(c).replace("::", ".") for c in sup.named_children]

    def imports(self, node: Node, ctx: ImportContext) -> list[str]:
        method = node.child_by_field_name("method")
        args = node.child_by_field_name("arguments")
        if method is None or args is None or not args.named_child_count:
            return []
        target = string_value(args.named_children[0])
        if method.text == b"require_relative":
            joined = resolve_relative_path(ctx.path, target)
            if joined:
                return [module_name_for_path(joined + ".rb")]
        return [target.replace("/", ".")]


class PhpSpec(LangSpec):
    grammar = "php"
    label = "php"
    self_names = frozenset({b"$this", b"self", b"static"})
    package_types = frozenset({"namespace_definition"})
    type_kinds: ClassVar[dict[str, str]] = {"interface_declaration": "interface", "trait_declaration": "trait", "enum_declaration": "enum"}
    noise_calls = frozenset({"count", "isset", "empty", "array_map", "array_filter", "array_keys", "in_array", "sprintf", "strlen", "is_array", "implode", "explode"})
    query_source = """
    (class_declaration) @class
    (interface_declaration) @class
    (trait_declaration) @class
    (enum_declaration) @class
    (function_definition) @function
    (method_declaration body: (_)) @function
    (namespace_definition body: (_)) @scope
    (namespace_use_declaration) @import
    (function_call_expression function: (name) @call.name)
    (member_call_expression name: (name) @call.attr)
    (scoped_call_expression name: (name) @call.attr)
    (member_call_expression object: (variable_name) @_o name: (name) @call.self (#eq? @_o "$this"))
    (scoped_call_expression scope: (relative_scope) name: (name) @call.self)
    (object_creation_expression (name) @call.name)
    """

    def bases(self, node: Node) -> list[str]:
        bases: list[str] = []
        for child in node.named_children:
            if child.type in ("base_clause", "class_interface_clause"):
                bases.extend(text_of(c).lstrip("\\").replace("\\", ".") for c in child.named_children)
        return bases

    def imports(self, node: Node, ctx: ImportContext) -> list[str]:
        names: list[str] = []
        prefix = ""
        for child in node.named_children:
            if child.type == "namespace_name":
                prefix = text_of(child)
            elif child.type == "namespace_use_clause":
                names.append(_php_use(child, ""))
            elif child.type == "namespace_use_group":
                names.extend(_php_use(c, prefix) for c in child.named_children if c.type == "namespace_use_clause")
        return [n for n in names if n]

    def skippable_preamble(self, node: Node) -> bool:
        return node.type in ("php_tag", "text")


def _php_use(clause: Node, prefix: str) -> str:
    for child in clause.named_children:
        if child.type in ("qualified_name", "name", "namespace_name"):
            full = f"{prefix}\\{text_of(child)}" if prefix else text_of(child)
            return full.lstrip("\\").replace("\\", ".")
    return ""


class KotlinSpec(LangSpec):
    grammar = "kotlin"
    receiver_self = True
    label = "kotlin"
    comment_types = frozenset({"line_comment", "multiline_comment"})
    package_types = frozenset({"package_header"})
    body_types = frozenset({"class_body", "function_body", "enum_class_body"})
    type_kinds: ClassVar[dict[str, str]] = {"object_declaration": "object"}
    noise_calls = frozenset({"println", "print", "listOf", "mapOf", "setOf", "mutableListOf", "mutableMapOf", "require", "check", "error"})
    noise_attr_calls = frozenset({"let", "apply", "also", "run", "map", "filter", "forEach", "toString", "add", "get"})
    query_source = """
    (class_declaration) @class
    (object_declaration) @class
    (function_declaration (function_body)) @function
    (import_header) @import
    (call_expression (simple_identifier) @call.name)
    (call_expression (navigation_expression (navigation_suffix (simple_identifier) @call.attr)))
    """

    def def_name(self, node: Node) -> str | None:
        for child in node.named_children:
            if child.type in ("type_identifier", "simple_identifier"):
                return text_of(child) or None
        return None

    def type_kind(self, node: Node) -> str:
        if any(c.type == "interface" for c in node.children):
            return "interface"
        return super().type_kind(node)

    def bases(self, node: Node) -> list[str]:
        bases = []
        for child in node.named_children:
            if child.type == "delegation_specifier":
                for part in child.named_children:
                    target = part
                    if part.type == "constructor_invocation" and part.named_child_count:
                        target = part.named_children[0]
                    bases.append(strip_generics(target))
        return bases

    def imports(self, node: Node, ctx: ImportContext) -> list[str]:
        for child in node.named_children:
            if child.type == "identifier":
                return [text_of(child)]
        return []

    def is_self(self, name: Node, self_names: frozenset[bytes]) -> bool:
        suffix = name.parent
        obj = suffix.prev_named_sibling if suffix is not None else None
        return obj is not None and obj.type == "this_expression"


class SwiftSpec(LangSpec):
    grammar = "swift"
    receiver_self = True
    label = "swift"
    comment_types = frozenset({"comment", "multiline_comment"})
    self_names = frozenset({b"self"})
    noise_calls = frozenset({"print", "fatalError", "precondition", "assert"})
    noise_attr_calls = frozenset({"map", "filter", "forEach", "append", "reduce"})
    query_source = """
    (class_declaration) @class
    (protocol_declaration) @class
    (function_declaration body: (_)) @function
    (init_declaration body: (_)) @function
    (import_declaration) @import
    (call_expression (simple_identifier) @call.name)
    (call_expression (navigation_expression suffix: (navigation_suffix suffix: (simple_identifier) @call.attr)))
    """
    _KEYWORDS = ("class", "struct", "enum", "extension", "actor", "protocol")

    def def_name(self, node: Node) -> str | None:
        if node.type == "init_declaration":
            return "init"
        name = node.child_by_field_name("name")
        return strip_generics(name) if name is not None else None

    def type_kind(self, node: Node) -> str:
        for child in node.children:
            if child.type in self._KEYWORDS:
                return child.type
        return "class"

    def bases(self, node: Node) -> list[str]:
        bases = []
        for child in node.named_children:
            if child.type == "inheritance_specifier":
                target = child.child_by_field_name("inherits_from")
                if target is not None:
                    bases.append(strip_generics(target))
        return bases

    def imports(self, node: Node, ctx: ImportContext) -> list[str]:
        for child in node.named_children:
            if child.type == "identifier":
                return [text_of(child)]
        return []

    def is_self(self, name: Node, self_names: frozenset[bytes]) -> bool:
        suffix = name.parent
        nav = suffix.parent if suffix is not None else None
        target = nav.child_by_field_name("target") if nav is not None else None
        return target is not None and target.type == "self_expression"


class ScalaSpec(LangSpec):
    grammar = "scala"
    label = "scala"
    comment_types = frozenset({"comment", "block_comment"})
    package_types = frozenset({"package_clause"})
    type_kinds: ClassVar[dict[str, str]] = {"trait_definition": "trait", "object_definition": "object", "enum_definition": "enum"}
    noise_calls = frozenset({"println", "print", "require", "assert", "Some", "List", "Seq", "Map", "Set"})
    noise_attr_calls = frozenset({"map", "flatMap", "filter", "foreach", "toString", "mkString", "get", "getOrElse"})
    query_source = """
    (class_definition) @class
    (object_definition) @class
    (trait_definition) @class
    (enum_definition) @class
    (function_definition) @function
    (import_declaration) @import
    (call_expression function: (identifier) @call.name)
    (call_expression function: (field_expression field: (identifier) @call.attr))
    (call_expression function: (field_expression value: (identifier) @_v field: (identifier) @call.self)
      (#eq? @_v "this"))
    """

    def bases(self, node: Node) -> list[str]:
        ext = node.child_by_field_name("extend")
        if ext is None:
            return []
        return [strip_generics(t) for t in ext.children_by_field_name("type") if t.is_named]

    def imports(self, node: Node, ctx: ImportContext) -> list[str]:
        path = [text_of(p) for p in node.children_by_field_name("path") if p.is_named]
        base = ".".join(path)
        names = [base] if base else []
        for child in node.named_children:
            if child.type == "namespace_selectors":
                names.extend(f"{base}.{text_of(s)}" for s in child.named_children if s.type == "identifier")
        return names
