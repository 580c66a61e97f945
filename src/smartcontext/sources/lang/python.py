"""Python: docstrings, decorators, ``async``, properties, ``__all__``, relative imports."""

from __future__ import annotations

import builtins

from tree_sitter import Node

from ...model import ItemKind
from .base import DefParts, ImportContext, LangSpec, string_value, strip_generics, text_of

# Calls to these say nothing about a project's structure.
# ``_`` is gettext's translation call, everywhere in Django-style code.
_BUILTIN_NAMES = frozenset(name for name in dir(builtins) if not name.startswith("_")) | {"_"}
# Methods of str/list/dict/set that would otherwise link to every same-named function.
_CONTAINER_METHODS = frozenset({
    "append", "extend", "insert", "remove", "sort", "items", "keys", "values", "setdefault",
    "join", "split", "rsplit", "splitlines", "strip", "lstrip", "rstrip", "startswith",
    "endswith", "replace", "lower", "upper", "encode", "decode", "format", "isdigit",
    "__init__",
})
_PROPERTY_DECORATORS = frozenset({
    "property", "cached_property", "functools.cached_property", "abc.abstractproperty",
    "abstractproperty",
})
_PROPERTY_SUFFIXES = (".setter", ".getter", ".deleter")


class PythonSpec(LangSpec):
    grammar = "python"
    label = "python"
    wrapper_types = frozenset({"decorated_definition"})
    self_names = frozenset({b"self", b"cls"})
    noise_calls = _BUILTIN_NAMES
    noise_attr_calls = _CONTAINER_METHODS
    query_source = """
    (class_definition) @class
    (function_definition) @function
    (import_statement) @import
    (import_from_statement) @import
    (call function: (identifier) @call.name)
    (call function: (attribute attribute: (identifier) @call.attr))
    (call function: (attribute object: (identifier) @_obj attribute: (identifier) @call.self)
      (#any-of? @_obj "self" "cls"))
    """

    def leading(self, outer: Node) -> tuple[list[Node], Node | None]:
        # Python documents with docstrings; comments above a def are not its doc.
        return [], None

    def signature(self, src: bytes, node: Node, parts: DefParts) -> str:
        body = node.child_by_field_name("body")
        end = node.end_byte
        if body is not None:
            end = body.start_byte
            # The header ends at the ':' before the body; a comment may sit between them.
            for child in node.children:
                if child.type == ":" and child.end_byte <= body.start_byte:
                    end = child.end_byte
        return dedent_header(src[parts.sig_start : end], parts.outer.start_point[1])

    def docstring(self, src: bytes, node: Node, parts: DefParts) -> str:
        return block_docstring(node.child_by_field_name("body"))

    def bases(self, node: Node) -> list[str]:
        supers = node.child_by_field_name("superclasses")
        if supers is None:
            return []
        return [
            strip_generics(arg)
            for arg in supers.named_children
            if arg.type in ("identifier", "attribute", "subscript")
        ]

    def meta(self, src: bytes, node: Node, parts: DefParts, kind: str) -> dict:
        meta: dict = {}
        decorators = []
        if parts.outer.type == "decorated_definition":
            for child in parts.outer.children:
                if child.type == "decorator":
                    decorators.append(text_of(child)[1:].strip())
        meta["decorators"] = decorators
        if kind in (ItemKind.FUNCTION, ItemKind.METHOD):
            first = node.children[0] if node.child_count else None
            meta["async"] = first is not None and first.type == "async"
            meta["property"] = any(
                d in _PROPERTY_DECORATORS or d.endswith(_PROPERTY_SUFFIXES) for d in decorators
            )
        name = parts.name
        private = name.startswith("_") and not (name.startswith("__") and name.endswith("__"))
        meta["visibility"] = "private" if private else "public"
        return meta

    def imports(self, node: Node, ctx: ImportContext) -> list[str]:
        if node.type == "import_statement":
            names = []
            for child in node.named_children:
                target = child.child_by_field_name("name") if child.type == "aliased_import" else child
                if target is not None and target.type == "dotted_name":
                    names.append(text_of(target))
            return names
        module_node = node.child_by_field_name("module_name")
        if module_node is None:
            return []
        if module_node.type == "relative_import":
            base = self._relative_base(module_node, ctx)
        else:
            base = text_of(module_node)
        if base == "__future__":
            return []
        names = [base] if base else []
        for child in node.children_by_field_name("name"):
            target = child.child_by_field_name("name") if child.type == "aliased_import" else child
            if target is not None:
                imported = text_of(target)
                names.append(f"{base}.{imported}" if base else imported)
        return names

    @staticmethod
    def _relative_base(module_node: Node, ctx: ImportContext) -> str:
        dots = 0
        rest = ""
        for child in module_node.children:
            if child.type == "import_prefix":
                dots = len(text_of(child).strip())
            elif child.type == "dotted_name":
                rest = text_of(child)
        package = ctx.module.split(".") if ctx.module else []
        if not ctx.is_package and package:
            package = package[:-1]
        climb = dots - 1
        if climb > 0:
            package = package[: max(0, len(package) - climb)]
        parts = package + ([rest] if rest else [])
        return ".".join(parts)

    def module_doc(self, src: bytes, root: Node) -> str:
        return block_docstring(root)

    def module_meta(self, src: bytes, root: Node) -> dict:
        exports: list[str] = []
        found = False
        for child in root.named_children:
            stmt = child
            if stmt.type == "expression_statement" and stmt.named_child_count:
                stmt = stmt.named_children[0]
            if stmt.type not in ("assignment", "augmented_assignment"):
                continue
            left = stmt.child_by_field_name("left")
            if left is None or left.type != "identifier" or left.text != b"__all__":
                continue
            right = stmt.child_by_field_name("right")
            if right is None or right.type not in ("list", "tuple"):
                continue
            if stmt.type == "assignment":
                exports = []
            found = True
            exports.extend(string_value(s) for s in right.named_children if s.type == "string")
        return {"exports": exports} if found else {}


def block_docstring(block: Node | None) -> str:
    """The docstring opening a module or a def's body block."""
    if block is None or not block.named_child_count:
        return ""
    child: Node | None = block.named_child(0)
    while child is not None and child.type == "comment":
        child = child.next_named_sibling
    if child is not None:
        if child.type == "expression_statement" and child.named_child_count:
            child = child.named_child(0)
        if child.type == "string":
            return clean_docstring(string_value(child))
        if child.type == "concatenated_string":
            return clean_docstring("".join(string_value(s) for s in child.named_children))
    return ""


def clean_docstring(text: str) -> str:
    """PEP 257 trimming: drop the common indentation of all lines after the first."""
    lines = text.expandtabs().split("\n")
    indent = min(
        (len(line) - len(line.lstrip()) for line in lines[1:] if line.strip()), default=0
    )
    out = [lines[0].strip()] + [line[indent:].rstrip() for line in lines[1:]]
    while out and not out[-1]:
        out.pop()
    while out and not out[0]:
        out.pop(0)
    return "\n".join(out)


def dedent_header(raw: bytes, column: int) -> str:
    """A multi-line header sliced from its first token: later lines lose that indent."""
    text = raw.decode("utf-8", "replace").rstrip()
    if "\n" not in text or column == 0:
        return text
    lines = text.split("\n")
    pad = " " * column
    return "\n".join([lines[0]] + [line[column:] if line.startswith(pad) else line.lstrip() for line in lines[1:]])
