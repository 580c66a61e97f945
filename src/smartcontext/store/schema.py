"""The tables of a SQLite index, as named migration sets (see ``migrations.py``).

``EMBEDDINGS`` (the embedding cache) is applied before ``CORE`` so that the step which
retires an index of the first format can keep that index's vectors.
"""

from __future__ import annotations

import sqlite3

from ..errors import IndexCorrupt
from .migrations import Migrations, run_script

# ``PRAGMA user_version`` of the first format (one list of migrations numbered by
# user_version). The current format writes FORMAT instead, so a Smart Context that only
# knows the first format refuses this one cleanly ("written by a newer Smart Context").
LEGACY_VERSION = 1
FORMAT = 2

EMBEDDINGS = Migrations("embeddings")
CORE = Migrations("core")
SETS = (EMBEDDINGS, CORE)


@EMBEDDINGS()
def m001_embedding_cache(db: sqlite3.Connection) -> None:
    # IF NOT EXISTS: an index of the first format already has this very table.
    db.execute(
        """
        CREATE TABLE IF NOT EXISTS embedding_cache (
            model TEXT NOT NULL,
            hash TEXT NOT NULL,          -- sha256 of the embedded text
            dim INTEGER NOT NULL,
            vec BLOB NOT NULL,           -- float32, dim values
            PRIMARY KEY (model, hash)
        )
        """
    )


@CORE()
def m001_retire_first_format(db: sqlite3.Connection) -> None:
    """Drop the tables of the first format; their files are parsed again on the next
    index run (derived data), but vectors move into the embedding cache first."""
    version = db.execute("PRAGMA user_version").fetchone()[0]
    if version != LEGACY_VERSION:
        return
    names = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if {"vectors", "items"} <= names:
        db.execute(
            "INSERT OR IGNORE INTO embedding_cache(model, hash, dim, vec) "
            "SELECT v.model, i.content_hash, length(v.vec) / 4, v.vec "
            "FROM vectors v JOIN items i ON i.rowid = v.item_rowid"
        )
    for table in ("items_fts_vocab", "items_fts", "vectors", "edges", "items", "files", "meta"):
        db.execute(f"DROP TABLE IF EXISTS {table}")
    db.execute("PRAGMA user_version = 0")


@CORE()
def m002_tables(db: sqlite3.Connection) -> None:
    run_script(
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
            source TEXT NOT NULL,
            module TEXT NOT NULL DEFAULT '',
            warnings TEXT NOT NULL DEFAULT '[]',
            -- The file's items' text and details (signature, docstring, meta), stored
            -- once and zlib-compressed together (see store/text.py).
            data BLOB NOT NULL DEFAULT x''
        );

        -- Columns that can be derived are NULL when they are: path and language from
        -- the file's row, fqname by fq_mode (1 module.qualname, 2 module#qualname,
        -- 3 module, 4 qualname).
        CREATE TABLE items (
            rowid INTEGER PRIMARY KEY,
            id_key INTEGER NOT NULL UNIQUE,  -- 64-bit hash of the id: lookups, uniqueness
            id_mode INTEGER NOT NULL,      -- 1 path, 2 path#qualname, 3 path::qualname
            id TEXT,                       -- the id, when id_mode is 0
            file_id INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
            details_at INTEGER NOT NULL,   -- the item's [signature, docstring, meta]
            details_len INTEGER NOT NULL,  --   as JSON, in the file's data
            path TEXT,
            kind TEXT NOT NULL,
            name TEXT NOT NULL,
            qualname TEXT NOT NULL,
            fqname TEXT,
            fq_mode INTEGER NOT NULL,
            start_line INTEGER NOT NULL,
            end_line INTEGER NOT NULL,
            parent INTEGER,                -- the parent's rowid, when in the same file
            parent_id TEXT,                -- the parent's id, when not
            language TEXT,
            tokens INTEGER NOT NULL,
            sig_tokens INTEGER NOT NULL,
            content_hash TEXT NOT NULL,    -- sha256 of the text that gets embedded
            tags TEXT,                     -- JSON of meta["tags"], when the item has one
            text_at INTEGER NOT NULL,      -- the item's text: characters [text_at,
            text_len INTEGER NOT NULL,     --   text_at + text_len) of its file's text
            -- How to rebuild the indexed full-text values (a contentless FTS5 row can
            -- only be deleted by giving them again): fts_mode 0 = body is the text,
            -- 1 = text + newline + fts_extra, 2 = fts_extra (zlib) is the body,
            -- fts_name NULL = the qualified name.
            fts_mode INTEGER NOT NULL,
            fts_extra BLOB,
            fts_name TEXT
        );
        CREATE INDEX items_file ON items(file_id);

        -- src and dst are item row ids; an edge whose end is not an item of the same
        -- file keeps that end's id in src_id / dst_id instead.
        CREATE TABLE edges (
            file_id INTEGER NOT NULL,
            src INTEGER,
            src_id TEXT,
            kind TEXT NOT NULL,
            dst INTEGER,
            dst_id TEXT,
            dst_name TEXT
        );
        CREATE INDEX edges_src ON edges(src) WHERE src IS NOT NULL;
        CREATE INDEX edges_src_id ON edges(src_id) WHERE src_id IS NOT NULL;
        CREATE INDEX edges_foreign_src ON edges(file_id) WHERE src IS NULL;
        CREATE INDEX edges_dst ON edges(dst) WHERE dst IS NOT NULL;
        CREATE INDEX edges_dst_id ON edges(dst_id) WHERE dst_id IS NOT NULL;
        CREATE INDEX edges_dst_name ON edges(dst_name) WHERE dst_name IS NOT NULL;

        -- Contentless: the text lives once, in files.text; the store deletes a row by
        -- giving the values it indexed again (rebuilt from the item's fts_* columns).
        CREATE VIRTUAL TABLE items_fts USING fts5(
            name, path, body, kind,
            content = '',
            tokenize = 'unicode61 remove_diacritics 2'
        );
        CREATE VIRTUAL TABLE items_fts_vocab USING fts5vocab(items_fts, 'row');
        """,
    )
    db.execute(f"PRAGMA user_version = {FORMAT}")


@CORE()
def m003_change_log(db: sqlite3.Connection) -> None:
    """Which files each generation changed, so a reader's in-memory catalogue can patch
    those files' rows instead of reading the whole index again (``Store.changed_paths``).
    The log starts complete at today's generation (``changes_from``); older generations
    are pruned. ``index_id`` tells this index from one rebuilt at the same path, whose
    generations start again at 1 (a catalogue saved beside the index is keyed by both)."""
    import secrets

    run_script(
        db,
        """
        CREATE TABLE changes (generation INTEGER NOT NULL, path TEXT NOT NULL);
        CREATE INDEX changes_generation ON changes(generation);
        -- Reading the items at some paths looks up the rare item whose path is not its
        -- file's too; without this that lookup walked every item.
        CREATE INDEX items_path ON items(path) WHERE path IS NOT NULL;
        """,
    )
    db.execute(
        "INSERT OR REPLACE INTO meta(key, value) SELECT 'changes_from', "
        "COALESCE((SELECT value FROM meta WHERE key = 'generation'), '0')"
    )
    db.execute(
        "INSERT OR IGNORE INTO meta(key, value) VALUES ('index_id', ?)", (secrets.token_hex(8),)
    )


# The last part of a path or a link target, case-folded (ASCII, as SQLite's lower()),
# without ``.md`` (``notes.link_index.link_key``): find_backlinks asks for one name.
_BASE = "substr({c}, length(rtrim({c}, replace({c}, '/', ''))) + 1)"
LINK_NAME_KEY = "lower(" + _BASE.format(c="dst_name") + ")"
FILE_NAME_KEY = ("lower(CASE WHEN lower(substr({b}, -3)) = '.md' THEN substr({b}, 1, length({b}) - 3) "
                 "ELSE {b} END)").format(b=_BASE.format(c="path"))


@CORE()
def m004_link_names(db: sqlite3.Connection) -> None:
    """Indexes on the last part of file paths and link targets, so backlinks are looked
    up rather than found by reading every link (70 ms on a vault of 38,000 links)."""
    db.execute(f"CREATE INDEX files_name_key ON files({FILE_NAME_KEY})")
    db.execute(f"CREATE INDEX edges_link_name_key ON edges({LINK_NAME_KEY}) "
               "WHERE kind = 'links_to' AND dst_name IS NOT NULL")


def migrate(db: sqlite3.Connection) -> list[str]:
    """Apply every pending migration (embedding cache first); returns what ran."""
    version = db.execute("PRAGMA user_version").fetchone()[0]
    if version > FORMAT:
        raise IndexCorrupt(
            f"the index was written by a newer Smart Context (format {version}, this one knows "
            f"{FORMAT}); upgrade smartcontext or rebuild with `smartcontext index --rebuild`"
        )
    ran: list[str] = []
    for migrations in SETS:
        ran.extend(f"{migrations.name}/{step}" for step in migrations.apply(db))
    return ran
