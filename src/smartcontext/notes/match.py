"""Folder filters as every front end spells them (tag matching lives in :mod:`.tags`)."""

from __future__ import annotations

from collections.abc import Iterable


def normalise_folder(prefix: str) -> str:
    """``"./Notes/AI/"`` -> ``"Notes/AI"``; ``""``, ``"."`` and ``"/"`` mean the whole vault."""
    p = prefix.replace("\\", "/").strip()
    while p.startswith("./"):
        p = p[2:]
    p = p.strip("/")
    return "" if p == "." else p


def path_matches(path: str, prefixes: Iterable[str]) -> bool:
    """True when ``path`` is one of ``prefixes`` or inside one of those folders
    (``Projects`` holds ``Projects/a.md`` but not ``Projects2/b.md``)."""
    for prefix in prefixes:
        if not prefix or path == prefix or path.startswith(prefix + "/"):
            return True
    return False


_GLOB_CHARS = frozenset("*?[")


class PathFilter:
    """``paths`` and ``exclude`` as every front end spells them: each entry is a folder
    or file (``src/auth`` holds ``src/auth/x.py``) or, with ``*``, ``?`` or ``[``, a
    gitignore-style glob (``*.md``, ``src/**/test_*.py``). A path passes when it matches
    one of ``paths`` (or there are none) and none of ``exclude``.
    Answers are remembered per path: a question tests the same few files many times."""

    def __init__(self, paths: Iterable[str] | None = None, exclude: Iterable[str] | None = None):
        self.paths = _Patterns(paths) if paths else None
        self.exclude = _Patterns(exclude) if exclude else None
        self._seen: dict[str, str | None] = {}

    def __bool__(self) -> bool:
        return self.paths is not None or self.exclude is not None

    def reason(self, path: str) -> str | None:
        """None when ``path`` passes; else "paths" (outside them) or "exclude"."""
        try:
            return self._seen[path]
        except KeyError:
            pass
        why = None
        if self.paths is not None and not self.paths.match(path):
            why = "paths"
        elif self.exclude is not None and self.exclude.match(path):
            why = "exclude"
        self._seen[path] = why
        return why

    def allows(self, path: str) -> bool:
        return self.reason(path) is None

    @property
    def folders(self) -> list[str]:
        """The plain folder/file entries of ``paths`` (globs are not checked for existence)."""
        return list(self.paths.prefixes) if self.paths is not None else []


class _Patterns:
    def __init__(self, entries: Iterable[str]):
        self.prefixes: list[str] = []
        globs: list[str] = []
        for raw in entries:
            if any(c in _GLOB_CHARS for c in raw):
                globs.append(raw.replace("\\", "/").strip())
            else:
                self.prefixes.append(normalise_folder(raw))
        self.spec = None
        if globs:
            import pathspec

            self.spec = pathspec.PathSpec.from_lines("gitignore", globs)

    def match(self, path: str) -> bool:
        if self.prefixes and path_matches(path, self.prefixes):
            return True
        return self.spec is not None and self.spec.match_file(path)
