"""Obsidian's link resolution: which vault file a link target names.

Used by the vault tools (backlinks, outlinks, opening a note by name) and by the
retrieval catalogue (graph edges), so both follow a link to the same note.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable

_MEMO_MAX = 500_000


class LinkResolver:
    """Obsidian's link resolution over a fixed list of vault paths; build once, resolve many.

    Order: an exact path from the vault root (``folder/Note``), then a path relative to
    the linking note's folder, then a match on the file name (``Note`` -> any
    ``.../Note.md``; ``sub/Note`` -> any ``.../sub/Note.md``). Ambiguous names prefer the
    linking note's own folder, then the shortest path. Matching is case-insensitive
    (an exact-case hit wins). A target without a known file extension means ``.md``.
    """

    def __init__(self, paths: Iterable[str]):
        self.paths = sorted({p.replace("\\", "/").lstrip("/") for p in paths})
        self._exact = set(self.paths)
        lower: dict[str, str] = {}
        by_name: dict[str, list[str]] = {}
        # Built for every question that follows links on a vault (6,500 notes): plain
        # string methods, not posixpath's (a third of the build).
        for p in self.paths:
            low = p.lower()
            if low not in lower:
                lower[low] = p
            name = p.rpartition("/")[2].lower()
            same = by_name.get(name)
            if same is None:
                by_name[name] = [p]
            else:
                same.append(p)
        self._lower, self._by_name = lower, by_name
        # Only the linking note's folder matters, and vaults repeat the same links a lot.
        self._memo: dict[tuple[str, str], str | None] = {}

    def updated(self, added: Iterable[str] = (), removed: Iterable[str] = ()) -> "LinkResolver":
        """A resolver over these paths with ``added`` and without ``removed``, equal to one
        built from the new list, made at the cost of the paths that changed (a note created
        by an agent must not rebuild the maps of 6,500 notes for the next link followed).
        This one is left as it was: readers may hold it."""
        norm = lambda ps: {p.replace("\\", "/").lstrip("/") for p in ps}  # noqa: E731
        result = (self._exact - norm(removed)) | norm(added)
        gone, new = self._exact - result, result - self._exact
        out = LinkResolver.__new__(LinkResolver)
        out.paths = sorted(result) if gone or new else self.paths
        out._exact = result
        out._lower = dict(self._lower)
        out._by_name = dict(self._by_name)
        out._memo = {}
        for p in gone | new:
            name = posixpath.basename(p).lower()
            # Lists stay in path order, as a build from the sorted paths makes them.
            same = [q for q in out._by_name.get(name, ()) if q not in gone]
            same = sorted(same + [p]) if p in new else same
            if same:
                out._by_name[name] = same
            else:
                out._by_name.pop(name, None)
            low = p.lower()
            first = min((q for q in same if q.lower() == low), default=None)
            if first is None:
                out._lower.pop(low, None)
            else:
                out._lower[low] = first
        return out

    def resolve(self, target: str, from_path: str = "") -> str | None:
        key = (target, posixpath.dirname(from_path.replace("\\", "/")))
        try:
            return self._memo[key]
        except KeyError:
            if len(self._memo) >= _MEMO_MAX:
                self._memo.clear()
            hit = self._memo[key] = self._resolve(target, key[1])
            return hit

    def _resolve(self, target: str, folder: str) -> str | None:
        target = target.strip().replace("\\", "/")
        target = target.split("|", 1)[0].split("#", 1)[0].strip()
        if not target:
            return None
        explicit_relative = target.startswith(("./", "../"))
        target = target.lstrip("/") if target.startswith("/") else target
        forms = [target] if target.lower().endswith(".md") else [target, target + ".md"]
        # Try the name as written first ("v1.2 notes" may be a note, "img.png" a file).
        if not explicit_relative:
            for form in forms:
                hit = self._lookup(posixpath.normpath(form))
                if hit:
                    return hit
        for form in forms:
            hit = self._lookup(posixpath.normpath(posixpath.join(folder, form)))
            if hit:
                return hit
        if explicit_relative:
            return None
        for form in forms:
            candidates = self._by_suffix(form)
            if candidates:
                return self._pick(candidates, folder)
        return None

    def _lookup(self, path: str) -> str | None:
        if path == ".." or path.startswith("../"):
            return None
        if path in self._exact:
            return path
        return self._lower.get(path.lower())

    def _by_suffix(self, form: str) -> list[str]:
        name = posixpath.basename(form).lower()
        candidates = self._by_name.get(name, [])
        if "/" in form:
            suffix = "/" + form.lower()
            candidates = [p for p in candidates if ("/" + p.lower()).endswith(suffix)]
        return candidates

    @staticmethod
    def _pick(candidates: list[str], folder: str) -> str:
        same = [p for p in candidates if posixpath.dirname(p) == folder]
        if same:
            return same[0]
        return min(candidates, key=lambda p: (p.count("/"), len(p), p))


def resolve_link(target: str, from_path: str, all_paths: list[str]) -> str | None:
    """The vault path a link target points to, or None (see :class:`LinkResolver`;
    use that class directly to resolve many links against the same paths)."""
    return LinkResolver(all_paths).resolve(target, from_path)
