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
