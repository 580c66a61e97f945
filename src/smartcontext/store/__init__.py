"""Where a workspace's index lives. Code outside this package uses the types of
``store.base`` and gets a concrete store from :func:`open_store`, so another backend
(PostgreSQL) is added here without touching retrieval."""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import InvalidArgument
from .base import (
    CatalogueRow,
    EdgeRow,
    FileState,
    ItemRow,
    KeywordTerm,
    Store,
    StoredItem,
)

__all__ = [
    "CatalogueRow", "EdgeRow", "FileState", "ItemRow", "KeywordTerm", "Store", "StoredItem",
    "open_store",
]


def open_store(location: str | os.PathLike[str]) -> Store:
    """Open (creating or upgrading as needed) the index at ``location``: a file path or a
    ``sqlite:///path`` URL."""
    text = os.fspath(location)
    if "://" in text:
        scheme, _, rest = text.partition("://")
        if scheme != "sqlite":
            raise InvalidArgument(
                f"no store for {scheme!r} URLs ({text}); use a file path or sqlite:///path"
            )
        text = rest
    from .sqlite import SQLiteStore

    return SQLiteStore(Path(text))
