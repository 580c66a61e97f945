"""Where a workspace's index lives. Code outside this package uses the types of
``store.base`` and gets a concrete store from :func:`open_store`: a SQLite file by default,
or a PostgreSQL database (with pgvector) for an index shared by a team."""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import InvalidArgument
from .base import (
    CatalogueRow,
    EdgeRow,
    FileState,
    ItemRow,
    ItemStore,
    KeywordIndex,
    KeywordTerm,
    Store,
    StoredItem,
    VectorIndex,
)

__all__ = [
    "CatalogueRow", "EdgeRow", "FileState", "ItemRow", "ItemStore", "KeywordIndex", "KeywordTerm",
    "Store", "StoredItem", "VectorIndex", "is_url", "open_store",
]


def is_url(location: str | os.PathLike[str]) -> bool:
    return "://" in os.fspath(location)


def open_store(
    location: str | os.PathLike[str], workspace: str | None = None,
    default_workspace: str | None = None, lean: bool = False,
) -> Store:
    """Open (creating or upgrading as needed) the index at ``location``: a file path, a
    ``sqlite:///path`` URL, or a ``postgresql://user:password@host:port/database`` URL.

    workspace: which workspace of a PostgreSQL database (each has its own schema); else
               ``?workspace=NAME`` in the URL, else ``default_workspace``. Ignored for
               SQLite files.
    lean:      for a process that asks one question (a CLI ``context``): a PostgreSQL
               store opens connections as needed rather than starting a pool.
    """
    text = os.fspath(location)
    if "://" in text:
        scheme, _, rest = text.partition("://")
        if scheme.lower() in ("postgresql", "postgres"):
            from .postgres import PostgresStore

            return PostgresStore(text, workspace, default_workspace=default_workspace, lean=lean)
        if scheme != "sqlite":
            raise InvalidArgument(
                f"no store for {scheme!r} URLs ({text}); use a file path, sqlite:///path or "
                f"postgresql://user@host/database"
            )
        text = rest
    from .sqlite import SQLiteStore

    return SQLiteStore(Path(text))
