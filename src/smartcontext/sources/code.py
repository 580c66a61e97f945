"""Code source: one source file -> items (module, classes, functions, methods) and edges.

Each language is a spec in ``sources/lang/``: a tree-sitter query that finds
definitions, imports and calls in one pass in C, plus small hooks for names,
signatures and docs. This module turns those captures into items and edges the
same way for every language:

- definitions are sorted by position and nested with a stack of byte ranges, which
  gives qualnames (``Cls.meth``, ``outer.inner``) and parents;
- methods declared outside their type (Go receivers, Rust ``impl``, C++ ``Cls::m``)
  attach to the type's item once the whole file is known;
- calls are assigned to the innermost enclosing definition in one sorted sweep.

``parse_code`` never raises: a file no grammar reads, or one that makes a grammar
fail, becomes a single ``text`` item with a warning.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tree_sitter import Node, QueryCursor

from ..model import Edge, Item, ItemKind, ParsedFile
from .lang import language_for_path, spec_for
from .lang.base import DefParts, ImportContext, LangSpec, ScopeInfo, last_row
from .lang.paths import is_python_package_init, module_name_for_path

__all__ = ["language_for_path", "module_name_for_path", "parse_code"]

_MAX_SIGNATURE = 600


def parse_code(path: str, source: bytes, language: str | None = None) -> ParsedFile:
    """Items and edges of one source file. Never raises.

    path:     workspace-relative, ``/``-separated; it prefixes every item id.
    source:   the file's bytes (invalid UTF-8 is replaced in texts; lines stay exact).
    language: a label from ``language_for_path``; guessed from ``path`` when omitted.
    """
    if isinstance(source, str):
        source = source.encode("utf-8", "surrogatepass")
    label = language or language_for_path(path)
    try:
        spec = spec_for(label, path, source) if label else None
    except Exception as exc:  # noqa: BLE001 - a grammar that cannot load must not stop indexing
        return _text_file(path, source, label, f"{path}: grammar for {label} unavailable ({exc}); indexed as text")
    if spec is None:
        what = f"no grammar for {label}" if label else "unknown language"
        return _text_file(path, source, label, f"{path}: {what}; indexed as text")
    try:
        return _Extractor(path, source, spec).run()
    except Exception as exc:  # noqa: BLE001 - one odd file must not stop a run over thousands
        return _text_file(
            path, source, label, f"{path}: could not parse as {label} ({type(exc).__name__}: {exc}); indexed as text"
        )


def _line_count(source: bytes) -> int:
    if not source:
        return 1
    return source.count(b"\n") + (0 if source.endswith(b"\n") else 1)


def _module_names(path: str) -> tuple[str, str]:
    module = module_name_for_path(path)
    return module, (module.rsplit(".", 1)[-1] if module else path.rsplit("/", 1)[-1])


def _text_file(path: str, source: bytes, label: str | None, warning: str) -> ParsedFile:
    module, name = _module_names(path)
    item = Item(
        id=path, path=path, kind=ItemKind.TEXT, name=name, qualname=module, start_line=1,
        end_line=_line_count(source), text=source.decode("utf-8", "replace"), language=label or "text",
    )
    return ParsedFile(path=path, language=label or "text", items=[item], warnings=[warning])


@dataclass
class _Def:
    node: Node
    role: str  # "class" | "function" | "scope"
    start: int
    end: int
    parts: DefParts | None = None
    scope: ScopeInfo | None = None


@dataclass
class _Frame:
    """A definition open at some byte position, as seen by what is nested in it."""

    end: int
    item: Item  # the item that contains what is nested here (a scope passes its parent's)
    prefix: str  # qualname prefix for nested definitions
    role: str  # "module" | "class" | "function" | "scope" | "impl"
    self_qual: str | None = None  # qualname that ``self.x()`` resolves against
    self_names: frozenset[bytes] = frozenset()


@dataclass
class _Pending:
    """A method whose type is named outside its body; linked once all types are known."""

    item: Item
    owner_qual: str
    owner_name: str


@dataclass
class _State:
    items: list[Item] = field(default_factory=list)
    ids: set[str] = field(default_factory=set)
    classes: dict[str, Item] = field(default_factory=dict)  # qualname -> first class item
    functions: dict[str, Item] = field(default_factory=dict)  # qualname -> first function item
    pending: list[_Pending] = field(default_factory=list)
    impl_traits: list[tuple[str, str, str]] = field(default_factory=list)  # (type qual, type, trait)
    edges: list[Edge] = field(default_factory=list)


def _join(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix else name


class _Extractor:
    def __init__(self, path: str, source: bytes, spec: LangSpec):
        self.path = path
        self.src = source
        self.spec = spec
        self.state = _State()

    def run(self) -> ParsedFile:
        spec, src, path = self.spec, self.src, self.path
        tree = spec.parser().parse(src)
        root = tree.root_node
        captures = QueryCursor(spec.query()).captures(root)
        module, name = _module_names(path)
        mod_item = Item(
            id=path, path=path, kind=ItemKind.MODULE, name=name, qualname=module, start_line=1,
            end_line=_line_count(src), signature="", docstring=spec.module_doc(src, root),
            text=src.decode("utf-8", "replace"), language=spec.label, meta=spec.module_meta(src, root),
        )
        self.state.items.append(mod_item)
        self.state.ids.add(path)

        defs = self._collect_defs(captures)
        frames = self._build_items(defs, mod_item)
        self._link_pending()
        self._add_imports(captures.get("import", []), mod_item, module)
        self._add_calls(captures, defs, frames, mod_item)

        edges = [
            Edge(src=item.parent_id, kind="contains", dst=item.id)
            for item in self.state.items[1:]
            if item.parent_id
        ]
        edges.extend(self.state.edges)
        parsed = ParsedFile(path=path, language=spec.label, items=self.state.items, edges=edges)
        if root.has_error:
            parsed.warnings.append(
                f"{path}: syntax errors; kept the {len(self.state.items) - 1} definitions tree-sitter recovered"
            )
        return parsed

    # -- definitions -----------------------------------------------------------------

    def _collect_defs(self, captures: dict[str, list[Node]]) -> list[_Def]:
        spec = self.spec
        seen: set[int] = set()
        defs: list[_Def] = []
        for role in ("class", "function", "scope"):
            for node in captures.get(role, ()):
                if node.id in seen:
                    continue
                seen.add(node.id)
                if role == "scope":
                    info = spec.scope(node)
                    if info is None or not info.name:
                        continue
                    defs.append(_Def(node, role, node.start_byte, node.end_byte, scope=info))
                    continue
                name = spec.def_name(node)
                if not name:
                    continue
                parts = spec.parts(node, name)
                defs.append(_Def(node, role, parts.text_start, parts.outer.end_byte, parts=parts))
        defs.sort(key=lambda d: (d.start, -d.end))
        return defs

    def _build_items(self, defs: list[_Def], mod_item: Item) -> list[_Frame]:
        """Items for all definitions, in source order; returns each definition's frame."""
        module_frame = _Frame(end=len(self.src) + 1, item=mod_item, prefix="", role="module")
        stack = [module_frame]
        frames: list[_Frame] = []
        for d in defs:
            while len(stack) > 1 and stack[-1].end <= d.start:
                stack.pop()
            parent = stack[-1]
            if d.role == "scope":
                frame = self._scope_frame(d, parent)
            elif d.role == "class":
                frame = self._class_frame(d, parent)
            else:
                frame = self._function_frame(d, parent)
            frames.append(frame)
            stack.append(frame)
        return frames

    def _scope_frame(self, d: _Def, parent: _Frame) -> _Frame:
        info = d.scope
        assert info is not None
        qual = _join(parent.prefix, info.name)
        if info.type_scope:
            if info.trait:
                self.state.impl_traits.append((qual, info.name, info.trait))
            return _Frame(d.end, parent.item, qual, "impl", qual, self.spec.self_names)
        return _Frame(d.end, parent.item, qual, "scope", parent.self_qual, parent.self_names)

    def _class_frame(self, d: _Def, parent: _Frame) -> _Frame:
        parts = d.parts
        assert parts is not None
        qual = _join(parent.prefix, parts.name)
        item = self._make_item(d, ItemKind.CLASS, qual, parent.item)
        item.meta["type_kind"] = self.spec.type_kind(d.node)
        bases = self.spec.bases(d.node)
        item.meta["bases"] = bases
        for base in bases:
            self.state.edges.append(Edge(src=item.id, kind="inherits", dst_name=base))
        self.state.classes.setdefault(qual, item)
        return _Frame(d.end, item, qual, "class", qual, self.spec.self_names)

    def _function_frame(self, d: _Def, parent: _Frame) -> _Frame:
        parts = d.parts
        assert parts is not None
        spec = self.spec
        owner = spec.owner(d.node)
        if owner:
            owner_qual = _join(parent.prefix, owner)
            item = self._make_item(d, ItemKind.METHOD, f"{owner_qual}.{parts.name}", parent.item)
            self.state.pending.append(_Pending(item, owner_qual, owner))
            self_qual: str | None = owner_qual
            self_names = spec.self_names_for(d.node)
        elif parent.role == "class":
            item = self._make_item(d, ItemKind.METHOD, _join(parent.prefix, parts.name), parent.item)
            self_qual, self_names = parent.prefix, spec.self_names_for(d.node)
        elif parent.role == "impl":
            item = self._make_item(d, ItemKind.METHOD, _join(parent.prefix, parts.name), parent.item)
            owner_name = parent.prefix.rsplit(".", 1)[-1]
            self.state.pending.append(_Pending(item, parent.prefix, owner_name))
            self_qual, self_names = parent.prefix, spec.self_names_for(d.node)
        else:
            item = self._make_item(d, ItemKind.FUNCTION, _join(parent.prefix, parts.name), parent.item)
            self_qual, self_names = parent.self_qual, parent.self_names
            self.state.functions.setdefault(item.qualname, item)
        return _Frame(d.end, item, item.qualname, "function", self_qual, self_names)

    def _make_item(self, d: _Def, kind: str, qual: str, parent: Item) -> Item:
        parts = d.parts
        assert parts is not None
        spec, src = self.spec, self.src
        start = parts.text_start
        # Start at the line's beginning when only indentation precedes the definition,
        # so a method's text is a clean block of lines.
        line_start = src.rfind(b"\n", 0, start) + 1
        if not src[line_start:start].strip():
            start = line_start
        start_line = parts.start_row + 1
        item_id = f"{self.path}::{qual}"
        if item_id in self.state.ids:
            item_id = f"{item_id}@{start_line}"
            n = 2
            while item_id in self.state.ids:
                item_id = f"{self.path}::{qual}@{start_line}.{n}"
                n += 1
        self.state.ids.add(item_id)
        signature = spec.signature(src, d.node, parts)
        if len(signature) > _MAX_SIGNATURE:
            signature = signature[:_MAX_SIGNATURE] + " …"  # minified code, giant default values
        item = Item(
            id=item_id, path=self.path, kind=kind, name=parts.name, qualname=qual,
            start_line=start_line, end_line=last_row(parts.outer) + 1,
            signature=signature,
            docstring=spec.docstring(src, d.node, parts),
            text=src[start : parts.outer.end_byte].decode("utf-8", "replace"),
            parent_id=parent.id, language=spec.label,
            meta=spec.meta(src, d.node, parts, kind),
        )
        self.state.items.append(item)
        return item

    def _link_pending(self) -> None:
        classes = self.state.classes
        by_name: dict[str, list[Item]] = {}
        for item in classes.values():
            by_name.setdefault(item.name, []).append(item)

        def find(qual: str, name: str) -> Item | None:
            found = classes.get(qual) or classes.get(name)
            if found is None and len(by_name.get(name, ())) == 1:
                found = by_name[name][0]
            # JavaScript constructor functions own their ``prototype`` methods.
            return found or self.state.functions.get(qual)

        for p in self.state.pending:
            owner = find(p.owner_qual, p.owner_name)
            if owner is not None:
                p.item.parent_id = owner.id
        for qual, name, trait in self.state.impl_traits:
            owner = find(qual, name)
            if owner is not None and trait not in owner.meta.setdefault("bases", []):
                owner.meta["bases"].append(trait)
                self.state.edges.append(Edge(src=owner.id, kind="inherits", dst_name=trait))

    # -- imports and calls -----------------------------------------------------------

    def _add_imports(self, nodes: list[Node], mod_item: Item, module: str) -> None:
        ctx = ImportContext(self.path, module, is_python_package_init(self.path))
        seen: set[str] = set()
        for node in sorted(nodes, key=lambda n: n.start_byte):
            for name in self.spec.imports(node, ctx):
                if name and name not in seen:
                    seen.add(name)
                    self.state.edges.append(Edge(src=mod_item.id, kind="imports", dst_name=name))

    def _add_calls(
        self, captures: dict[str, list[Node]], defs: list[_Def], frames: list[_Frame], mod_item: Item
    ) -> None:
        calls = [(n.start_byte, n, False) for n in captures.get("call.name", ())]
        calls.extend((n.start_byte, n, True) for n in captures.get("call.attr", ()))
        if not calls:
            return
        calls.sort(key=lambda c: c[0])
        noise, noise_attr = self.spec.noise_calls, self.spec.noise_attr_calls
        self_calls = {n.start_byte for n in captures.get("call.self", ())}
        is_self = self.spec.is_self if self.spec.receiver_self else None
        seen: set[tuple[str, str]] = set()
        edges = self.state.edges
        stack: list[_Frame] = []
        i, n_defs = 0, len(defs)
        for pos, node, is_attr in calls:
            while i < n_defs and defs[i].start <= pos:
                stack.append(frames[i])
                i += 1
            while stack and stack[-1].end <= pos:
                stack.pop()
            frame = stack[-1] if stack else None
            name = (node.text or b"").decode("utf-8", "replace")
            if is_attr:
                if frame is not None and frame.self_qual and (
                    pos in self_calls or (is_self is not None and is_self(node, frame.self_names))
                ):
                    name = f"{frame.self_qual}.{name}"
                elif name in noise_attr:
                    continue
            elif frame is not None and frame.self_qual and node.text in frame.self_names:
                name = frame.self_qual  # ``cls(...)`` in a classmethod builds the class
            elif name in noise:
                continue
            src_id = frame.item.id if frame is not None else mod_item.id
            key = (src_id, name)
            if key not in seen:
                seen.add(key)
                edges.append(Edge(src=src_id, kind="calls", dst_name=name))
