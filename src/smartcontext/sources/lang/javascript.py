"""JavaScript and TypeScript (and TSX): classes, functions, arrow functions bound to
names, ``export``/``export default``, ES imports, ``require`` and dynamic ``import()``."""

from __future__ import annotations

from typing import ClassVar

from tree_sitter import Node

from ...model import ItemKind
from .base import DefParts, ImportContext, LangSpec, ScopeInfo, string_value, strip_generics, text_of
from .paths import module_name_for_path, resolve_relative_path

# Vue and Svelte components are imported by their file name too (sources/components.py).
_SCRIPT_EXTENSIONS = (".js", ".mjs", ".cjs", ".jsx", ".ts", ".mts", ".cts", ".tsx", ".vue", ".svelte")
_NOISE_MEMBERS = frozenset({
    "log", "warn", "error", "info", "debug", "push", "pop", "shift", "unshift", "map", "forEach",
    "filter", "reduce", "some", "every", "find", "includes", "indexOf", "slice", "splice", "concat",
    "join", "split", "then", "catch", "finally", "toString", "stringify", "parse", "keys",
    "values", "entries", "hasOwnProperty", "trim", "replace", "startsWith", "endsWith",
    "toLowerCase", "toUpperCase", "call", "apply", "bind", "resolve", "reject", "assign",
})
_NOISE_NAMES = frozenset({
    "require", "parseInt", "parseFloat", "setTimeout", "setInterval", "clearTimeout",
    "clearInterval", "String", "Number", "Boolean", "Array", "Object", "Promise", "Error",
    "Symbol", "isNaN", "encodeURIComponent", "decodeURIComponent",
})
_FUNCTION_VALUES = ("arrow_function", "function_expression", "function", "generator_function")

_JS_DEFS = """
(class_declaration) @class
(function_declaration) @function
(generator_function_declaration) @function
(method_definition body: (_)) @function
(variable_declarator name: (identifier) value: [(arrow_function) (function_expression) (generator_function)]) @function
(field_definition property: (_) value: [(arrow_function) (function_expression)]) @function
(export_statement value: [(arrow_function) (function_expression)] @function)
(export_statement value: (class) @class)
"""
_TS_DEFS = """
(class_declaration) @class
(abstract_class_declaration) @class
(interface_declaration) @class
(enum_declaration) @class
(type_alias_declaration) @class
(function_declaration) @function
(generator_function_declaration) @function
(method_definition body: (_)) @function
(variable_declarator name: (identifier) value: [(arrow_function) (function_expression) (generator_function)]) @function
(public_field_definition name: (_) value: [(arrow_function) (function_expression)]) @function
(export_statement value: [(arrow_function) (function_expression)] @function)
(export_statement value: (class) @class)
(internal_module body: (_)) @scope
"""
# CommonJS and pre-class code: ``exports.f = function``, ``Foo.prototype.m = function``.
_ASSIGNED = """
(expression_statement (assignment_expression
  left: (member_expression property: (property_identifier))
  right: [(function_expression) (arrow_function)]) @function)
"""
_COMMON = _ASSIGNED + """
(import_statement) @import
(export_statement source: (_)) @import
(call_expression function: (identifier) @_req arguments: (arguments . (string)) (#eq? @_req "require")) @import
(call_expression function: (import) arguments: (arguments . (string))) @import
(call_expression function: (identifier) @call.name)
(call_expression function: (member_expression property: (property_identifier) @call.attr))
(call_expression function: (member_expression object: (this) property: (property_identifier) @call.self))
(new_expression constructor: (identifier) @call.name)
"""


class JavaScriptSpec(LangSpec):
    grammar = "javascript"
    label = "javascript"
    query_source = _JS_DEFS + _COMMON
    wrapper_types = frozenset({"export_statement"})
    noise_calls = _NOISE_NAMES
    noise_attr_calls = _NOISE_MEMBERS
    type_kinds: ClassVar[dict[str, str]] = {
        "interface_declaration": "interface",
        "enum_declaration": "enum",
        "type_alias_declaration": "type",
    }

    def def_name(self, node: Node) -> str | None:
        parent = node.parent
        if node.type == "assignment_expression":
            left = node.child_by_field_name("left")
            prop = left.child_by_field_name("property") if left is not None else None
            return text_of(prop) if prop is not None else None
        if node.type == "variable_declarator":
            return text_of(node.child_by_field_name("name"))
        if node.type in ("field_definition", "public_field_definition"):
            name = node.child_by_field_name("property") or node.child_by_field_name("name")
            return text_of(name)
        name = node.child_by_field_name("name")
        if name is not None:
            return text_of(name)
        if parent is not None and parent.type == "export_statement":
            return "default"  # ``export default function () {}``
        return None

    def outer(self, node: Node) -> Node:
        if node.type == "variable_declarator":
            decl = node.parent
            # ``const a = () => 1, b = 2`` keeps only the declarator; one binding takes
            # the whole ``const`` statement (and its ``export``).
            if (
                decl is not None
                and decl.type in ("lexical_declaration", "variable_declaration")
                and decl.named_child_count == 1
            ):
                node = decl
        elif node.type == "assignment_expression" and node.parent is not None:
            node = node.parent  # the expression statement, so comments above attach
        return super().outer(node)

    def owner(self, node: Node) -> str | None:
        """``Foo.prototype.bar = function`` defines a method of ``Foo``."""
        if node.type != "assignment_expression":
            return None
        left = node.child_by_field_name("left")
        obj = left.child_by_field_name("object") if left is not None else None
        if obj is not None and obj.type == "member_expression":
            prop = obj.child_by_field_name("property")
            if prop is not None and prop.text == b"prototype":
                return text_of(obj.child_by_field_name("object")) or None
        return None

    def body(self, node: Node) -> Node | None:
        if node.type in ("variable_declarator", "field_definition", "public_field_definition", "assignment_expression"):
            value = node.child_by_field_name("value") or node.child_by_field_name("right")
            return value.child_by_field_name("body") if value is not None else None
        return super().body(node)

    def bases(self, node: Node) -> list[str]:
        bases: list[str] = []
        for child in node.children:
            if child.type == "class_heritage":
                for clause in child.named_children:
                    if clause.type in ("extends_clause", "implements_clause"):
                        for part in clause.named_children:
                            if part.type != "type_arguments":
                                bases.append(strip_generics(part))
                    elif clause.type not in ("comment",):
                        bases.append(strip_generics(clause))  # JS: ``extends Expr``
            elif child.type in ("extends_type_clause", "extends_clause"):
                bases.extend(strip_generics(t) for t in child.named_children if t.type != "type_arguments")
        return bases

    def meta(self, src: bytes, node: Node, parts: DefParts, kind: str) -> dict:
        meta: dict = {}
        outer = parts.outer
        meta["exported"] = outer.type == "export_statement" or (
            node.type == "assignment_expression" and (node.text or b"").startswith((b"exports.", b"module.exports"))
        )
        if meta["exported"] and any(c.type == "default" for c in outer.children):
            meta["default_export"] = True
        value = node.child_by_field_name("value") or node.child_by_field_name("right")
        fn = value if value is not None and value.type in _FUNCTION_VALUES else node
        if kind in (ItemKind.FUNCTION, ItemKind.METHOD):
            meta["async"] = any(c.type == "async" for c in fn.children)
            meta["static"] = any(c.type == "static" for c in node.children)
            getter = [c.type for c in node.children if c.type in ("get", "set")]
            meta["property"] = bool(getter)
        decorators = [text_of(c)[1:].strip() for c in node.children if c.type == "decorator"]
        if decorators:
            meta["decorators"] = decorators
        for child in node.children:
            if child.type == "accessibility_modifier":
                meta["visibility"] = text_of(child)
        return meta

    def imports(self, node: Node, ctx: ImportContext) -> list[str]:
        if node.type == "call_expression":
            args = node.child_by_field_name("arguments")
            first = args.named_children[0] if args is not None and args.named_child_count else None
            return [resolve_specifier(string_value(first), ctx)] if first is not None else []
        source = node.child_by_field_name("source")
        if source is None:
            return []
        spec = string_value(source)
        module = resolve_specifier(spec, ctx)
        names = [module]
        if spec.startswith("."):
            # Named imports from project files also name the symbols, like Python's.
            for clause in node.named_children:
                if clause.type in ("import_clause", "export_clause"):
                    for named in _named_bindings(clause):
                        names.append(f"{module}.{named}")
        return names

    def module_meta(self, src: bytes, root: Node) -> dict:
        exports: list[str] = []
        for child in root.named_children:
            if child.type != "export_statement":
                continue
            decl = child.child_by_field_name("declaration")
            if decl is not None:
                if decl.type in ("lexical_declaration", "variable_declaration"):
                    exports.extend(
                        text_of(d.child_by_field_name("name"))
                        for d in decl.named_children
                        if d.type == "variable_declarator"
                    )
                else:
                    name = decl.child_by_field_name("name")
                    exports.append(text_of(name) if name is not None else "default")
            elif any(c.type == "default" for c in child.children):
                exports.append("default")
            for clause in child.named_children:
                if clause.type == "export_clause":
                    exports.extend(_named_bindings(clause, exported=True))
        return {"exports": exports} if exports else {}

    def skippable_preamble(self, node: Node) -> bool:
        return node.type == "hash_bang_line"


def _named_bindings(clause: Node, exported: bool = False) -> list[str]:
    names = []
    stack = [clause]
    while stack:
        node = stack.pop()
        for child in node.named_children:
            if child.type in ("import_specifier", "export_specifier"):
                field = "alias" if exported and child.child_by_field_name("alias") else "name"
                names.append(text_of(child.child_by_field_name(field)))
            elif child.type == "named_imports":
                stack.append(child)
    return sorted(names)


def resolve_specifier(spec: str, ctx: ImportContext) -> str:
    """``./x/y.js`` from ``web/app/main.ts`` -> ``web.app.x.y``; packages stay as written."""
    if not (spec.startswith(("./", "../")) or spec in (".", "..")):
        return spec
    target = resolve_relative_path(ctx.path, spec)
    if target is None:
        return spec
    lower = target.lower()
    for ext in _SCRIPT_EXTENSIONS:
        if lower.endswith(ext):
            target = target[: -len(ext)]
            break
    return module_name_for_path(target + ".js") if target else ""


class TypeScriptSpec(JavaScriptSpec):
    grammar = "typescript"
    label = "typescript"
    query_source = _TS_DEFS + _COMMON

    def scope(self, node: Node) -> ScopeInfo | None:
        name = node.child_by_field_name("name")
        return ScopeInfo(text_of(name).strip("\"'")) if name is not None else None


class TsxSpec(TypeScriptSpec):
    grammar = "tsx"
