"""Rust: structs, enums, unions, traits, functions, ``impl`` blocks (methods attach to
their type; ``impl Trait for Type`` makes Type inherit Trait), inline ``mod``, ``use``."""

from __future__ import annotations

from typing import ClassVar

from tree_sitter import Node

from ...model import ItemKind
from .base import DefParts, ImportContext, LangSpec, ScopeInfo, clean_comments, strip_generics, text_of

_NOISE_MEMBERS = frozenset({
    "unwrap", "expect", "clone", "to_string", "to_owned", "into", "iter", "iter_mut",
    "into_iter", "collect", "map", "map_err", "and_then", "ok", "ok_or", "unwrap_or",
    "unwrap_or_else", "unwrap_or_default", "as_ref", "as_mut", "as_str", "push", "len",
    "is_empty", "is_some", "is_none", "borrow", "borrow_mut", "lock", "get", "insert",
})
_NOISE_NAMES = frozenset({"Some", "Ok", "Err", "drop"})
_FILE_MODULES = ("mod", "lib", "main")


class RustSpec(LangSpec):
    grammar = "rust"
    label = "rust"
    comment_types = frozenset({"line_comment", "block_comment"})
    attribute_types = frozenset({"attribute_item"})
    self_names = frozenset({b"self", b"Self"})
    noise_calls = _NOISE_NAMES
    noise_attr_calls = _NOISE_MEMBERS
    type_kinds: ClassVar[dict[str, str]] = {
        "struct_item": "struct",
        "enum_item": "enum",
        "union_item": "union",
        "trait_item": "trait",
    }
    query_source = """
    (struct_item) @class
    (enum_item) @class
    (union_item) @class
    (trait_item) @class
    (function_item) @function
    (impl_item) @scope
    (mod_item body: (_)) @scope
    (use_declaration) @import
    (call_expression function: (identifier) @call.name)
    (call_expression function: (field_expression field: (field_identifier) @call.attr))
    (call_expression function: (scoped_identifier name: (identifier) @call.attr))
    (call_expression function: (field_expression value: (self) field: (field_identifier) @call.self))
    (call_expression function: (scoped_identifier path: (identifier) @_p name: (identifier) @call.self)
      (#eq? @_p "Self"))
    """

    def scope(self, node: Node) -> ScopeInfo | None:
        if node.type == "impl_item":
            target = node.child_by_field_name("type")
            if target is None:
                return None
            trait = node.child_by_field_name("trait")
            return ScopeInfo(
                strip_generics(target), type_scope=True,
                trait=strip_generics(trait).replace("::", ".") if trait is not None else None,
            )
        return super().scope(node)

    def docstring(self, src: bytes, node: Node, parts: DefParts) -> str:
        # Only ``///`` and ``/** */`` document an item; plain ``//`` comments above are notes.
        docs = [c for c in parts.comments if _is_doc(c)]
        return clean_comments(src, docs)

    def module_doc(self, src: bytes, root: Node) -> str:
        inner = []
        for child in root.children:
            if child.type in self.comment_types:
                if child.text.startswith((b"//!", b"/*!")):  # type: ignore[union-attr]
                    inner.append(child)
                    continue
                if not inner:
                    continue
            break
        return clean_comments(src, inner) if inner else super().module_doc(src, root)

    def meta(self, src: bytes, node: Node, parts: DefParts, kind: str) -> dict:
        meta: dict = {}
        for child in node.children:
            if child.type == "visibility_modifier":
                meta["visibility"] = text_of(child)
                break
        else:
            meta["visibility"] = "private"
        if kind in (ItemKind.FUNCTION, ItemKind.METHOD):
            mods = next((c for c in node.children if c.type == "function_modifiers"), None)
            meta["async"] = mods is not None and b"async" in (mods.text or b"")
        attrs = []
        prev = parts.outer.prev_sibling
        while prev is not None and prev.type in self.attribute_types | self.comment_types:
            if prev.type in self.attribute_types:
                attrs.append(text_of(prev))
            prev = prev.prev_sibling
        if attrs:
            meta["attributes"] = attrs[::-1]
        return meta

    def bases(self, node: Node) -> list[str]:
        if node.type != "trait_item":
            return []
        bounds = node.child_by_field_name("bounds")  # ``trait A: B + C``
        if bounds is None:
            return []
        return [strip_generics(b).replace("::", ".") for b in bounds.named_children if b.type != "lifetime"]

    def imports(self, node: Node, ctx: ImportContext) -> list[str]:
        arg = node.child_by_field_name("argument")
        if arg is None:
            return []
        base = _use_base(node, ctx)
        out: list[str] = []
        _expand_use(arg, [], out)
        return [_resolve(path, base) for path in out if path]


def _is_doc(comment: Node) -> bool:
    text = comment.text or b""
    return text.startswith((b"///", b"/**")) and not text.startswith((b"////", b"/***"))


def _expand_use(node: Node, prefix: list[str], out: list[str]) -> None:
    """Flatten a use tree: ``a::{b, c::D}`` -> ``a::b``, ``a::c::D``."""
    kind = node.type
    if kind == "scoped_use_list":
        path = node.child_by_field_name("path")
        here = prefix + (_segments(path) if path is not None else [])
        lst = node.child_by_field_name("list")
        if lst is not None:
            for child in lst.named_children:
                _expand_use(child, here, out)
    elif kind == "use_list":
        for child in node.named_children:
            _expand_use(child, prefix, out)
    elif kind == "use_as_clause":
        path = node.child_by_field_name("path")
        if path is not None:
            _expand_use(path, prefix, out)
    elif kind == "use_wildcard":
        inner = node.named_children[0] if node.named_child_count else None
        out.append("::".join(prefix + (_segments(inner) if inner is not None else [])))
    elif kind == "self":
        out.append("::".join(prefix))
    elif kind in ("identifier", "scoped_identifier", "crate", "super"):
        out.append("::".join(prefix + _segments(node)))


def _segments(node: Node) -> list[str]:
    return [s for s in text_of(node).replace(" ", "").split("::") if s]


def _use_base(node: Node, ctx: ImportContext) -> list[str]:
    """The module a ``use`` sits in: the file's module plus any inline ``mod`` around it."""
    file_mod = ctx.module.split(".") if ctx.module else []
    if file_mod and file_mod[-1] in _FILE_MODULES:
        file_mod = file_mod[:-1]
    inline: list[str] = []
    parent = node.parent
    while parent is not None:
        if parent.type == "mod_item":
            name = parent.child_by_field_name("name")
            if name is not None:
                inline.append(text_of(name))
        parent = parent.parent
    return file_mod + inline[::-1]


def _resolve(path: str, base: list[str]) -> str:
    """``crate::``, ``self::`` and ``super::`` become dotted names of this workspace's files;
    the crate root is the folder holding ``src`` (or the file's top folder)."""
    segs = path.split("::")
    head = segs[0]
    if head == "crate":
        root = base[: base.index("src") + 1] if "src" in base else base[:1]
        segs = root + segs[1:]
    elif head in ("self", "super"):
        here = list(base)
        while segs and segs[0] in ("self", "super"):
            if segs[0] == "super" and here:
                here.pop()
            segs = segs[1:]
        segs = here + segs
    return ".".join(s for s in segs if s)
