"""An in-memory catalogue of item names and places, kept in step with the index.

Name lookups happen many times per question; a dict beats a SQL query each time. When
the index changes, :meth:`Catalogue.updated` re-reads only the files that changed (the
store's change log) into a new catalogue, so a write to one note costs that note, not the
vault; a reader still holding the old catalogue is never disturbed.
"""

from __future__ import annotations

import copy
import os
import re
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from ..memory import collector_paused
from ..model import kind_traits
from ..notes.tags import normalise_tag, tag_matches
from ..store.base import CatalogueRow, Store
from . import catalogue_file

if TYPE_CHECKING:
    from ..notes.resolver import LinkResolver
    from .titles import NoteNames

# Past this share of the vault's files, reading everything again is as cheap as patching.
_PATCH_SHARE = 4
_PATCH_MIN = 64
# A saved catalogue's first line (catalogue_file.py): bump it when the saved shape
# changes; an unknown or damaged file is rebuilt.
_SAVED_MAGIC = catalogue_file.MAGIC
_TEST_FILE = re.compile(
    r"(^|/)(test_[^/]*|[^/]*_(test|spec)\.[^/]+|[^/]*\.(test|spec)\.[^/]+|conftest\.py|tests?\.py)$"
)
_TEST_DIRS = {"test", "tests", "testing", "__tests__", "spec", "specs", "test_utils"}
# The camel-case conventions of Java, Kotlin, C#, Swift and PHP, matched with their case:
# a class file `ParserTest.java`, `JsonConvertTests.cs`; a test project or target folder
# `Newtonsoft.Json.Tests/`, `AlamofireTests/`, `androidTest/`. A lower-case letter, digit or
# dot before the capital, so `Contest.java` and `Tests/` (matched above) are not read twice.
_CAMEL_TEST_FILE = re.compile(r"[a-z0-9]Tests?\.[A-Za-z]+$")
_CAMEL_TEST_DIR = re.compile(r"[a-z0-9.]Tests?$")


def is_test_path(path: str) -> bool:
    """True for test files and files under test folders."""
    parts = path.lower().split("/")
    if any(p in _TEST_DIRS for p in parts[:-1]):
        return True
    if _TEST_FILE.search(path.lower()):
        return True
    folders, _, name = path.rpartition("/")
    return bool(_CAMEL_TEST_FILE.search(name)) or any(_CAMEL_TEST_DIR.search(d) for d in folders.split("/") if d)


class Catalogue:
    def __init__(self, store: Store):
        self.generation = store.generation()
        self._store = store
        self.entries: dict[int, CatalogueRow] = {}
        self.by_id: dict[str, int] = {}
        self.by_name: dict[str, list[int]] = defaultdict(list)  # lower-cased short name
        self.by_fqname: dict[str, list[int]] = defaultdict(list)  # lower-cased
        self.by_path: dict[str, list[int]] = defaultdict(list)
        self.module_of_path: dict[str, int] = {}
        self.by_stem: dict[str, list[str]] = defaultdict(list)  # file stem -> paths
        self.children: dict[str, list[int]] = defaultdict(list)
        self.test_paths: set[str] = set()
        self._code_rows = 0
        with collector_paused():
            self._read_all(store)
        self.paths = sorted(self.by_path)
        self._link_resolver: LinkResolver | None = None
        self._by_basename: dict[str, list[str]] | None = None
        self._tags: list[tuple[int, str]] | None = None
        self._note_names: NoteNames | None = None
        self._package_imports: dict[str, list[str]] = {}
        self._translated: set[str] | None = None

    def _read_all(self, store: Store) -> None:
        for e in store.item_light_rows():
            self.entries[e.rowid] = e
            self.by_id[e.id] = e.rowid
            self.by_name[e.name.lower()].append(e.rowid)
            self.by_fqname[e.fqname.lower()].append(e.rowid)
            self.by_path[e.path].append(e.rowid)
            if e.parent_id:
                self.children[e.parent_id].append(e.rowid)
            traits = kind_traits(e.kind)
            if traits.file_row and e.start_line == 1:
                self.module_of_path.setdefault(e.path, e.rowid)
            self._code_rows += traits.code_symbol
        for path in self.by_path:
            self.by_stem[_stem(path)].append(path)
            if is_test_path(path):
                self.test_paths.add(path)

    @property
    def has_code(self) -> bool:
        return self._code_rows > 0

    @classmethod
    def open(cls, store: Store, saved: Path | None = None, index_id: str = "", lazy: bool = False) -> "Catalogue":
        """The catalogue of ``store``, starting from the one saved at ``saved`` when it is
        of this index (``index_id``): brought up to date through the change log, or read
        whole when the log does not reach back. A saved file that is missing, damaged or of
        another index is ignored; one that was stale is written again (atomically), so the
        next process opens it without reading the index.

        lazy: read the saved maps a key at a time as they are asked for (a process that
        answers one question); otherwise decode them whole at once (a server: plain dicts
        answer its many questions fastest)."""
        if saved is None or not index_id:
            return cls(store)
        loaded = cls._load(saved, store, index_id)
        if loaded is not None and not lazy:
            loaded._materialize()
        cat = loaded.updated(store) if loaded is not None else cls(store)
        if cat is not loaded:
            try:
                cat.save(saved, index_id)
            except OSError:  # a read-only index folder: answer anyway, just slower next time
                pass
        return cat

    def save(self, path: Path, index_id: str) -> None:
        """Write this catalogue to ``path`` (a temporary file renamed over it)."""
        head = {
            "index_id": index_id, "generation": self.generation, "code_rows": self._code_rows,
            "test_paths": sorted(self.test_paths), "paths": self.paths,
            "module_of_path": dict(self.module_of_path), "by_stem": dict(self.by_stem),
        }
        with collector_paused():
            catalogue_file.write(path, head, {name: getattr(self, name) for name in catalogue_file.LAZY_MAPS})

    @classmethod
    def _load(cls, path: Path, store: Store, index_id: str) -> "Catalogue | None":
        saved = catalogue_file.open_saved(path)
        if saved is None or saved.head.get("index_id") != index_id:
            return None  # missing, torn, damaged or of another index: never trusted
        head = saved.head
        try:
            cat = cls.__new__(cls)
            cat._store, cat.generation = store, int(head["generation"])
            for name in catalogue_file.LAZY_MAPS:
                setattr(cat, name, catalogue_file.LazyMap(saved, name))
            cat.module_of_path = dict(head["module_of_path"])
            cat.by_stem = defaultdict(list, head["by_stem"])
            cat.test_paths, cat.paths = set(head["test_paths"]), list(head["paths"])
            cat._code_rows = int(head["code_rows"])
        except (ValueError, TypeError, KeyError):
            return None
        cat._link_resolver, cat._tags, cat._by_basename = None, None, None
        cat._note_names = None
        cat._package_imports = {}
        cat._translated = None

        def read_whole() -> None:
            # A damaged bucket: every map is taken from the index instead, and a good
            # file written in place of the damaged one.
            with collector_paused():
                full = Catalogue(store)
            for name in catalogue_file.LAZY_MAPS:
                getattr(cat, name).adopt(getattr(full, name))
            cat.module_of_path, cat.by_stem, cat.test_paths = full.module_of_path, full.by_stem, full.test_paths
            cat.paths, cat._code_rows, cat.generation = full.paths, full._code_rows, full.generation
            try:
                cat.save(path, index_id)
            except OSError:
                try:
                    path.unlink()
                except OSError:
                    pass

        saved.on_damage = read_whole
        return cat

    def _materialize(self) -> None:
        """Decode every saved map whole, as plain dicts (the server's case)."""
        maps = [getattr(self, name) for name in catalogue_file.LAZY_MAPS]
        with collector_paused():
            for value in maps:  # all first: damage found on the way refills them all
                value.load_all()
            for name, value in zip(catalogue_file.LAZY_MAPS, maps):
                setattr(self, name, value.plain())

    def updated(self, store: Store | None = None) -> "Catalogue":
        """This catalogue at the store's current generation: itself when nothing changed,
        else a new catalogue with the changed files' rows read again (or, when the store's
        change log does not reach back far enough or most files changed, read whole).
        Equal to ``Catalogue(store)`` either way; this one is left as it was."""
        store = store or self._store
        generation = store.generation()  # first: a change after it is re-read next time
        if generation == self.generation:
            return self
        changed = store.changed_paths(self.generation)
        if changed is None or len(changed) > max(_PATCH_MIN, len(self.by_path) // _PATCH_SHARE):
            return Catalogue(store)
        new = copy.copy(self)
        new._store, new.generation = store, generation
        if changed:
            new._patch(changed)
        return new

    def _patch(self, changed: set[str]) -> None:
        """Read the rows at ``changed`` paths again. Every container that changes is
        copied first and lists are replaced, never edited: the old catalogue may be in use
        on another thread."""
        store = self._store
        self._package_imports = {}  # a new dict: the old catalogue may be reading its own
        gone = {r for p in changed for r in self.by_path.get(p, ())}
        rows = store.item_light_rows(sorted(changed))
        for name in ("entries", "by_id", "by_name", "by_fqname", "by_path", "module_of_path",
                     "by_stem", "children", "test_paths"):
            setattr(self, name, getattr(self, name).copy())
        old = [self.entries.pop(r) for r in sorted(gone)]
        for e in old:
            if self.by_id.get(e.id) == e.rowid:
                del self.by_id[e.id]
        for e in rows:
            self.entries[e.rowid] = e
            self.by_id[e.id] = e.rowid
        self._code_rows += sum(kind_traits(e.kind).code_symbol for e in rows) - sum(
            kind_traits(e.kind).code_symbol for e in old
        )
        for mapping, key in (
            (self.by_name, lambda e: e.name.lower()),
            (self.by_fqname, lambda e: e.fqname.lower()),
            (self.by_path, lambda e: e.path),
            (self.children, lambda e: e.parent_id or None),
        ):
            _rekey(mapping, gone, [(key(e), e.rowid) for e in old], [(key(e), e.rowid) for e in rows])
        before = set(self.paths)
        for path in changed:
            self.module_of_path.pop(path, None)
            for r in self.by_path.get(path, ()):
                e = self.entries[r]
                if kind_traits(e.kind).file_row and e.start_line == 1:
                    self.module_of_path[path] = r
                    break
            self.test_paths.discard(path)
            if path in self.by_path and is_test_path(path):
                self.test_paths.add(path)
        for stem in {_stem(p) for p in changed}:
            # A full read lists a stem's paths in the order their first rows come.
            kept = [p for p in self.by_stem.get(stem, ()) if p not in changed]
            kept += [p for p in changed if p in self.by_path and _stem(p) == stem]
            if kept:
                self.by_stem[stem] = sorted(kept, key=lambda p: self.by_path[p][0])
            else:
                self.by_stem.pop(stem, None)
        if self._note_names is not None:
            from .titles import patched_note_names

            self._note_names = patched_note_names(self._note_names, self, changed, gone)
        after = set(self.by_path)
        if after != before:
            self.paths = sorted(self.by_path)
            if self._link_resolver is not None:
                self._link_resolver = self._link_resolver.updated(after - before, before - after)
            self._by_basename = None
            self._translated = None
        if self._tags is not None:
            self._tags = [(r, t) for r, t in self._tags if r not in gone] + [
                (r, normalise_tag(t)) for r, t in store.tag_rows(sorted(changed))
            ]

    def tagged(self, want: set[str]) -> set[int]:
        """Items whose note carries one of ``want`` or a tag nested below it (``a`` matches
        ``a/b``); the tag list is read once per index generation."""
        if self._tags is None:
            self._tags = [(r, normalise_tag(t)) for r, t in self._store.tag_rows()]
        return {r for r, tag in self._tags if tag_matches((tag,), want)}

    def note_names(self) -> "NoteNames":
        """The notes' titles and file names, normalised, and their note items
        (``titles.note_names``), built once per catalogue."""
        if self._note_names is None:
            from .titles import note_names

            self._note_names = note_names(self)
        return self._note_names

    def note_item(self, path: str) -> int | None:
        """The item standing for a whole note (its intro section, whose id is the path)."""
        r = self.by_id.get(path)
        if r is not None:
            return r
        r = self.module_of_path.get(path)
        if r is not None:
            return r
        # A note without intro text starts with its first heading: that section stands for it.
        top = [x for x in self.by_path.get(path, []) if not self.entries[x].parent_id]
        return min(top, key=lambda x: self.entries[x].start_line) if top else None

    def resolve_link(self, target: str, from_path: str) -> list[int]:
        """A wikilink or markdown link target -> the linked note's item, as Obsidian resolves it."""
        if self._link_resolver is None:
            from ..notes.resolver import LinkResolver

            self._link_resolver = LinkResolver(self.paths)
        hit = self._link_resolver.resolve(target, from_path)
        if hit is None:
            return []
        r = self.note_item(hit)
        return [r] if r is not None else []

    def link_names(self, entry: CatalogueRow) -> list[str]:
        """Names other notes may use to link to this note: stem and path without extension."""
        if not entry.path.lower().endswith((".md", ".markdown")) or self.note_item(entry.path) != entry.rowid:
            return []
        stem_path = os.path.splitext(entry.path)[0]
        return [stem_path, os.path.basename(stem_path)]

    def is_file_row(self, rowid: int) -> bool:
        """True for an item that stands for its whole file (the rows a file-level
        search ranks)."""
        e = self.entries.get(rowid)
        return e is not None and e.start_line == 1 and kind_traits(e.kind).file_row

    def package_imports(self, package: str) -> list[str]:
        """The full names a package's ``__init__`` imports (``xarray`` ->
        xarray.core.computation.where, ...): what ``package.name`` means to its users.
        Read from the store's import edges once per catalogue."""
        low = package.lower()
        if low not in self._package_imports:
            inits = [r for r in self.by_fqname.get(low, ())
                     if self.entries[r].path.endswith("__init__.py") and kind_traits(self.entries[r].kind).whole_file]
            edges = self._store.edges_from([self.entries[r].id for r in inits], kinds=("imports",)) if inits else []
            self._package_imports[low] = [e[3] for e in edges if e[3]]
        return self._package_imports[low]

    def translated_copies(self) -> set[str]:
        """The indexed pages that translate one whose English copy is indexed at the same
        place (retrieval/translations.py), computed once per set of paths."""
        if self._translated is None:
            from .translations import translated_copies

            self._translated = translated_copies(self.paths)
        return self._translated

    def is_known(self, name: str) -> bool:
        low = name.lower()
        return low in self.by_name or low in self.by_fqname or low in self.by_stem

    def paths_matching(self, fragment: str) -> list[str]:
        """Files whose path equals ``fragment`` or ends with ``/fragment``."""
        frag = fragment.strip("/").lower()
        if not frag:
            return []
        # Every answer has frag's file name: look among those only (a bug report asks for
        # dozens of paths, and scanning every path each time was a tenth of a question).
        if self._by_basename is None:
            index: dict[str, list[str]] = defaultdict(list)
            for p in self.paths:
                index[p.lower().rsplit("/", 1)[-1]].append(p)
            self._by_basename = index
        same_name = self._by_basename.get(frag.rsplit("/", 1)[-1], [])
        out = [p for p in same_name if p.lower() == frag or p.lower().endswith("/" + frag)]
        if not out and "/" in frag:
            # A traceback's absolute path (.../site-packages/pkg/mod.py) names our pkg/mod.py:
            # keep the longest indexed path it ends with.
            cands = [p for p in same_name if frag.endswith("/" + p.lower())]
            if cands:
                longest = max(len(p) for p in cands)
                out = [p for p in cands if len(p) == longest]
            else:
                out = self._installed_layout_match(frag)
        return out

    def _installed_layout_match(self, frag: str) -> list[str]:
        """An installed package's path (.../site-packages/_pytest/_io/saferepr.py) names a
        file kept under src/ or lib/ in the tree (src/_pytest/_io/saferepr.py): the files
        of the same name sharing the most trailing folders with it, at least one folder."""
        parts = frag.split("/")
        best, out = 1, []
        for p in self.by_stem.get(_stem(frag), []):
            mine = p.lower().split("/")
            shared = 0
            while shared < min(len(mine), len(parts)) and mine[-1 - shared] == parts[-1 - shared]:
                shared += 1
            if shared > best:
                best, out = shared, [p]
            elif shared == best and out:
                out.append(p)
        return out

    def parent(self, rowid: int) -> CatalogueRow | None:
        e = self.entries.get(rowid)
        if e is None or not e.parent_id:
            return None
        pr = self.by_id.get(e.parent_id)
        return self.entries.get(pr) if pr is not None else None

    def ancestors(self, rowid: int) -> list[int]:
        out = []
        seen = {rowid}
        e = self.entries.get(rowid)
        while e is not None and e.parent_id:
            pr = self.by_id.get(e.parent_id)
            if pr is None or pr in seen:
                break
            seen.add(pr)
            out.append(pr)
            e = self.entries.get(pr)
        return out

    def resolve_name(self, name: str, from_path: str | None = None, limit: int = 3) -> list[int]:
        """Items a dotted or bare name refers to: exact fully-qualified name first, then a
        qualified suffix (``Cls.meth``), then the bare name, preferring the same file."""
        low = name.lower()
        hits = self.by_fqname.get(low)
        if hits:
            return hits[:limit]
        last = low.rsplit(".", 1)[-1]
        cands = self.by_name.get(last, [])
        if not cands:
            return []
        if "." in low:
            suffix = "." + low
            exact = [r for r in cands if self.entries[r].fqname.lower().endswith(suffix)]
            if exact:
                cands = exact
        if from_path is not None:
            cands = sorted(cands, key=lambda r: self.entries[r].path != from_path)
        # A name defined in many places is too ambiguous to follow.
        if len(cands) > 8:
            same = [r for r in cands if self.entries[r].path == from_path]
            return same[:limit]
        return cands[:limit]


def _stem(path: str) -> str:
    return os.path.splitext(os.path.basename(path))[0].lower()


def _rekey(
    mapping: dict, gone: set[int], removed: Iterable[tuple[object, int]], added: Iterable[tuple[object, int]]
) -> None:
    """Give each key that lost or gained rows a new list of its row ids in row id order
    (as a full read builds it); a key left with no rows is dropped, a None key skipped."""
    keys: dict[object, list[int]] = {}
    for key, _ in removed:
        if key is not None:
            keys.setdefault(key, [])
    for key, rowid in added:
        if key is not None:
            keys.setdefault(key, []).append(rowid)
    for key, new in keys.items():
        rows = sorted([r for r in mapping.get(key, ()) if r not in gone] + new)
        if rows:
            mapping[key] = rows
        else:
            mapping.pop(key, None)
