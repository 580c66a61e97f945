"""The SQLite schema as an ordered list of migrations, applied on open.

Each migration runs once, in order, inside one transaction; ``PRAGMA user_version``
records how many have run. Add new migrations at the end; never edit an old one.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

Migration = Callable[[sqlite3.Connection], None]


def _run_script(db: sqlite3.Connection, script: str) -> None:
    # executescript() would COMMIT first and break the migration's transaction.
    for statement in script.split(";\n"):
        if statement.strip():
            db.execute(statement)


def _m001_initial(db: sqlite3.Connection) -> None:
    _run_script(
        db,
        """
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);

        CREATE TABLE files (
            id INTEGER PRIMARY KEY,
            path TEXT NOT NULL UNIQUE,
            mtime_ns INTEGER NOT NULL,
            size INTEGER NOT NULL,
            hash TEXT NOT NULL,
            language TEXT NOT NULL,
            source TEXT NOT NULL,          -- code | markdown | text
            module TEXT NOT NULL DEFAULT '',
            warnings TEXT NOT NULL DEFAULT '[]'
        );

        CREATE TABLE items (
            rowid INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            file_id INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
            path TEXT NOT NULL,
            kind TEXT NOT NULL,
            name TEXT NOT NULL,
            qualname TEXT NOT NULL,
            fqname TEXT NOT NULL,          -- module-qualified name used to resolve edges
            start_line INTEGER NOT NULL,
            end_line INTEGER NOT NULL,
            signature TEXT NOT NULL,
            docstring TEXT NOT NULL,
            text TEXT NOT NULL,
            parent_id TEXT,
            language TEXT NOT NULL,
            meta TEXT NOT NULL,            -- JSON
            tokens INTEGER NOT NULL,
            sig_tokens INTEGER NOT NULL,
            content_hash TEXT NOT NULL     -- sha256 of the text that gets embedded
        );
        CREATE INDEX items_file ON items(file_id);
        CREATE INDEX items_name ON items(name COLLATE NOCASE);
        CREATE INDEX items_fqname ON items(fqname);
        CREATE INDEX items_path ON items(path);
        CREATE INDEX items_parent ON items(parent_id);

        CREATE TABLE edges (
            src TEXT NOT NULL,
            kind TEXT NOT NULL,
            dst TEXT,
            dst_name TEXT,
            file_id INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE
        );
        CREATE INDEX edges_src ON edges(src);
        CREATE INDEX edges_dst ON edges(dst);
        CREATE INDEX edges_dst_name ON edges(dst_name);
        CREATE INDEX edges_file ON edges(file_id);

        -- External-content FTS5 table kept in sync by the store (not by triggers, so a
        -- file's rows change in the same transaction as its items).
        CREATE VIRTUAL TABLE items_fts USING fts5(
            name, path, body, kind,
            tokenize = 'unicode61 remove_diacritics 2'
        );

        CREATE VIRTUAL TABLE items_fts_vocab USING fts5vocab(items_fts, 'row');

        CREATE TABLE vectors (
            item_rowid INTEGER PRIMARY KEY REFERENCES items(rowid) ON DELETE CASCADE,
            model TEXT NOT NULL,
            vec BLOB NOT NULL
        );
        CREATE INDEX vectors_model ON vectors(model);

        CREATE TABLE embedding_cache (
            model TEXT NOT NULL,
            hash TEXT NOT NULL,
            dim INTEGER NOT NULL,
            vec BLOB NOT NULL,
            PRIMARY KEY (model, hash)
        );
        """
    )


MIGRATIONS: list[Migration] = [_m001_initial]

SCHEMA_VERSION = len(MIGRATIONS)


def migrate(db: sqlite3.Connection) -> int:
    """Bring ``db`` up to the newest schema; returns the version it ended at."""
    current = db.execute("PRAGMA user_version").fetchone()[0]
    if current > SCHEMA_VERSION:
        from ..errors import IndexCorrupt

        raise IndexCorrupt(
            f"the index was written by a newer Smart Context (schema {current}, this one knows "
            f"{SCHEMA_VERSION}); upgrade smartcontext or rebuild with `smartcontext index --rebuild`"
        )
    for version in range(current, SCHEMA_VERSION):
        db.execute("BEGIN IMMEDIATE")
        try:
            MIGRATIONS[version](db)
            db.execute(f"PRAGMA user_version = {version + 1}")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")
    return SCHEMA_VERSION
