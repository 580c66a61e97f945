"""An in-memory catalogue of item names and places, rebuilt when the index changes.

Name lookups happen many times per question; a dict beats a SQL query each time.
"""

from __future__ import annotations

import os
import re
from collections import defaultdict

from ..model import kind_traits
from ..notes.tags import normalise_tag, tag_matches
from ..store.base import CatalogueRow, Store

_TEST_FILE = re.compile(
    r"(^|/)(test_[^/]*|[^/]*_test\.[^/]+|[^/]*\.(test|spec)\.[^/]+|conftest\.py|tests?\.py)$"
)
_TEST_DIRS = {"test", "tests", "testing", "__tests__", "spec", "specs", "test_utils"}


def is_test_path(path: str) -> bool:
    """True for test files and files under test folders."""
    parts = path.lower().split("/")
    if any(p in _TEST_DIRS for p in parts[:-1]):
        return True
    return bool(_TEST_FILE.search(path.lower()))


class Catalogue:
    def __init__(self, store: Store):
        self.generation = store.generation()
        self.entries: dict[int, CatalogueRow] = {}
        self.by_id: dict[str, int] = {}
        self.by_name: dict[str, list[int]] = defaultdict(list)  # lower-cased short name
        self.by_fqname: dict[str, list[int]] = defaultdict(list)  # lower-cased
        self.by_path: dict[str, list[int]] = defaultdict(list)
        self.module_of_path: dict[str, int] = {}
        self.by_stem: dict[str, list[str]] = defaultdict(list)  # file stem -> paths
        self.children: dict[str, list[int]] = defaultdict(list)
        self.test_paths: set[str] = set()
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
        for path in self.by_path:
            stem = os.path.splitext(os.path.basename(path))[0].lower()
            self.by_stem[stem].append(path)
            if is_test_path(path):
                self.test_paths.add(path)
        self.paths = sorted(self.by_path)
        self._link_resolver = None
        self._store = store
        self._tags: list[tuple[int, str]] | None = None
        self.has_code = any(kind_traits(e.kind).code_symbol for e in self.entries.values())

    def tagged(self, want: set[str]) -> set[int]:
        """Items whose note carries one of ``want`` or a tag nested below it (``a`` matches
        ``a/b``); the tag list is read once per index generation."""
        if self._tags is None:
            self._tags = [(r, normalise_tag(t)) for r, t in self._store.tag_rows()]
        return {r for r, tag in self._tags if tag_matches((tag,), want)}

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

    def is_known(self, name: str) -> bool:
        low = name.lower()
        return low in self.by_name or low in self.by_fqname or low in self.by_stem

    def paths_matching(self, fragment: str) -> list[str]:
        """Files whose path equals ``fragment`` or ends with ``/fragment``."""
        frag = fragment.strip("/").lower()
        if not frag:
            return []
        out = [p for p in self.paths if p.lower() == frag or p.lower().endswith("/" + frag)]
        if not out and "/" in frag:
            # A traceback's absolute path (.../site-packages/pkg/mod.py) names our pkg/mod.py:
            # keep the longest indexed path it ends with.
            cands = [p for p in self.paths if frag.endswith("/" + p.lower())]
            if cands:
                longest = max(len(p) for p in cands)
                out = [p for p in cands if len(p) == longest]
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
