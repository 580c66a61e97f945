"""The links that may point at one note, from the index, ready to resolve.

A link can only resolve to a file whose name is the link target's last part (Obsidian
resolves by path, relative path or file name, never otherwise), and which of those files
it resolves to depends only on the files of that name. So the index is asked for the
paths and links containing the name, those ending in it are kept, and a resolver over
just those paths answers as one over the whole vault would.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable

from .links import normalise_target
from .resolver import LinkResolver


def link_key(target: str) -> str:
    """The last part of a link target or a file path, as links and files are matched:
    case-folded, without ``.md``."""
    return posixpath.basename(normalise_target(target).rstrip("/")).lower()


class NameLinks:
    """The links that may resolve to ``name``, out of ``paths`` (indexed files) and
    ``links`` ((linking file, target) pairs), both possibly a superset."""

    def __init__(self, name: str, paths: Iterable[str], links: Iterable[tuple[str, str]]):
        key = link_key(name)
        self.resolver = LinkResolver(p for p in paths if link_key(p) == key)
        self.links = [(source, target) for source, target in links if target and link_key(target) == key]
