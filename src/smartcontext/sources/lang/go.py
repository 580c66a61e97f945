"""Go: types (struct, interface, named types), functions, methods with receivers,
struct embedding as inheritance, import paths."""

from __future__ import annotations

from tree_sitter import Node

from .base import DefParts, ImportContext, LangSpec, collapse, string_value, strip_generics, text_of

_BUILTINS = frozenset({
    "append", "cap", "clear", "close", "complex", "copy", "delete", "imag", "len", "make",
    "max", "min", "new", "panic", "print", "println", "real", "recover",
    "string", "int", "int64", "int32", "uint", "uint64", "uint32", "byte", "rune", "float64",
    "float32", "bool", "error", "any",
})
_NOISE_MEMBERS = frozenset({
    "Println", "Printf", "Sprintf", "Sprint", "Sprintln", "Errorf", "Fprintf", "Fprintln",
    "Lock", "Unlock", "RLock", "RUnlock", "Fatal", "Fatalf", "Helper",
})


class GoSpec(LangSpec):
    grammar = "go"
    label = "go"
    receiver_self = True
    noise_calls = _BUILTINS
    noise_attr_calls = _NOISE_MEMBERS
    package_types = frozenset({"package_clause"})
    query_source = """
    (type_spec) @class
    (function_declaration) @function
    (method_declaration) @function
    (import_spec) @import
    (call_expression function: (identifier) @call.name)
    (call_expression function: (selector_expression field: (field_identifier) @call.attr))
    """

    def outer(self, node: Node) -> Node:
        # ``type X struct{}`` spans its declaration; a grouped ``type (...)`` keeps the spec.
        parent = node.parent
        if (
            node.type == "type_spec"
            and parent is not None
            and parent.type == "type_declaration"
            and sum(1 for c in parent.named_children if c.type == "type_spec") == 1
        ):
            return parent
        return node

    def type_kind(self, node: Node) -> str:
        kind = node.child_by_field_name("type")
        if kind is not None and kind.type == "struct_type":
            return "struct"
        if kind is not None and kind.type == "interface_type":
            return "interface"
        return "type"

    def signature(self, src: bytes, node: Node, parts: DefParts) -> str:
        if node.type == "type_spec":
            kind = node.child_by_field_name("type")
            end = node.end_byte
            if kind is not None and kind.type in ("struct_type", "interface_type"):
                brace = src.find(b"{", kind.start_byte, kind.end_byte)
                if brace > 0:
                    end = brace
            text = collapse(src[node.start_byte : end])
            return f"type {text}" if not text.startswith("type ") else text
        return super().signature(src, node, parts)

    def owner(self, node: Node) -> str | None:
        if node.type != "method_declaration":
            return None
        receiver = node.child_by_field_name("receiver")
        if receiver is None:
            return None
        for param in receiver.named_children:
            if param.type == "parameter_declaration":
                kind = param.child_by_field_name("type")
                while kind is not None and kind.type in ("pointer_type", "parenthesized_type"):
                    kind = kind.named_children[0] if kind.named_child_count else None
                if kind is not None:
                    return strip_generics(kind)
        return None

    def self_names_for(self, node: Node) -> frozenset[bytes]:
        receiver = node.child_by_field_name("receiver")
        if receiver is not None:
            for param in receiver.named_children:
                name = param.child_by_field_name("name")
                if name is not None:
                    return frozenset({name.text})  # type: ignore[arg-type]
        return frozenset()

    def bases(self, node: Node) -> list[str]:
        """Embedded fields of a struct and embedded interfaces: Go's inheritance."""
        kind = node.child_by_field_name("type")
        if kind is None:
            return []
        bases: list[str] = []
        if kind.type == "struct_type":
            for fields in kind.named_children:
                if fields.type != "field_declaration_list":
                    continue
                for f in fields.named_children:
                    if f.type == "field_declaration" and f.child_by_field_name("name") is None:
                        t = f.child_by_field_name("type")
                        while t is not None and t.type == "pointer_type" and t.named_child_count:
                            t = t.named_children[0]
                        if t is not None:
                            bases.append(strip_generics(t))
        elif kind.type == "interface_type":
            for elem in kind.named_children:
                if elem.type in ("type_elem", "constraint_elem"):
                    bases.extend(strip_generics(t) for t in elem.named_children)
                elif elem.type in ("type_identifier", "qualified_type"):
                    bases.append(text_of(elem))
        return bases

    def meta(self, src: bytes, node: Node, parts: DefParts, kind: str) -> dict:
        name = parts.name
        return {"visibility": "public" if name[:1].isupper() else "private"}

    def imports(self, node: Node, ctx: ImportContext) -> list[str]:
        path = node.child_by_field_name("path")
        return [string_value(path)] if path is not None else []
