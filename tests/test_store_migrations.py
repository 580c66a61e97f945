"""Opening indexes: new, already current, of the first format, of a newer format, and
by two processes at once."""

import sqlite3
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from smartcontext import Workspace
from smartcontext.errors import IndexCorrupt
from smartcontext.store import open_store
from smartcontext.store.schema import CORE, EMBEDDINGS, FORMAT, migrate

# The schema of the first format (user_version 1), as it shipped.
_FIRST_FORMAT = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE files (id INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE, mtime_ns INTEGER NOT NULL,
    size INTEGER NOT NULL, hash TEXT NOT NULL, language TEXT NOT NULL, source TEXT NOT NULL,
    module TEXT NOT NULL DEFAULT '', warnings TEXT NOT NULL DEFAULT '[]');
CREATE TABLE items (rowid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE,
    file_id INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE, path TEXT NOT NULL,
    kind TEXT NOT NULL, name TEXT NOT NULL, qualname TEXT NOT NULL, fqname TEXT NOT NULL,
    start_line INTEGER NOT NULL, end_line INTEGER NOT NULL, signature TEXT NOT NULL,
    docstring TEXT NOT NULL, text TEXT NOT NULL, parent_id TEXT, language TEXT NOT NULL,
    meta TEXT NOT NULL, tokens INTEGER NOT NULL, sig_tokens INTEGER NOT NULL,
    content_hash TEXT NOT NULL);
CREATE TABLE edges (src TEXT NOT NULL, kind TEXT NOT NULL, dst TEXT, dst_name TEXT,
    file_id INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE);
CREATE VIRTUAL TABLE items_fts USING fts5(name, path, body, kind,
    tokenize = 'unicode61 remove_diacritics 2');
CREATE VIRTUAL TABLE items_fts_vocab USING fts5vocab(items_fts, 'row');
CREATE TABLE vectors (item_rowid INTEGER PRIMARY KEY REFERENCES items(rowid) ON DELETE CASCADE,
    model TEXT NOT NULL, vec BLOB NOT NULL);
CREATE TABLE embedding_cache (model TEXT NOT NULL, hash TEXT NOT NULL, dim INTEGER NOT NULL,
    vec BLOB NOT NULL, PRIMARY KEY (model, hash));
"""


def _write_first_format(path):
    db = sqlite3.connect(path)
    db.executescript(_FIRST_FORMAT)
    db.execute("INSERT INTO meta VALUES ('generation', '7')")
    db.execute("INSERT INTO files VALUES (1, 'shop/cart.py', 1, 10, 'h', 'python', 'code', 'shop.cart', '[]')")
    db.execute(
        "INSERT INTO items VALUES (1, 'shop/cart.py::Cart', 1, 'shop/cart.py', 'class', 'Cart', 'Cart', "
        "'shop.cart.Cart', 1, 3, 'class Cart:', '', 'class Cart:\n    pass', NULL, 'python', '{}', 5, 2, 'hash-of-cart')"
    )
    db.execute("INSERT INTO items_fts(rowid, name, path, body, kind) VALUES (1, 'Cart', 'shop/cart.py', 'class Cart', 'class')")
    db.execute("INSERT INTO edges VALUES ('shop/cart.py::Cart', 'calls', NULL, 'apply_discount', 1)")
    db.execute("INSERT INTO vectors VALUES (1, 'm', ?)", (np.arange(4, dtype=np.float32).tobytes(),))
    db.execute("PRAGMA user_version = 1")
    db.commit()
    db.close()


def test_a_new_index_applies_every_migration_once(tmp_path):
    p = tmp_path / "i.db"
    s = open_store(p)
    db = s.db
    assert db.execute("PRAGMA user_version").fetchone()[0] == FORMAT
    assert CORE.pending(db) == [] and EMBEDDINGS.pending(db) == []
    assert CORE.applied(db) == [name for name, _ in CORE.steps]
    s.close()
    again = open_store(p)
    assert migrate(again.db) == []  # a second open applies nothing
    assert again.db.execute("SELECT COUNT(*) FROM _migrations").fetchone()[0] == len(CORE.steps) + len(EMBEDDINGS.steps)
    assert again.notices == []


def test_an_index_of_the_first_format_is_reset_and_keeps_its_vectors(tmp_path):
    p = tmp_path / "i.db"
    _write_first_format(p)
    s = open_store(p)
    assert s.notices and "older format" in s.notices[0] and "rebuilt" in s.notices[0]
    assert s.counts()["files"] == 0 and s.file_states() == {}
    # the vector of the old item is in the embedding cache under its content hash
    cached = s.cached_vectors("m", ["hash-of-cart"])
    assert np.array_equal(cached["hash-of-cart"], np.arange(4, dtype=np.float32))
    s.close()
    reopened = open_store(p)
    assert reopened.notices == []


def test_a_workspace_with_a_first_format_index_rebuilds_it(sample_repo):
    (sample_repo / ".smartcontext").mkdir()
    _write_first_format(sample_repo / ".smartcontext" / "index.db")
    ws = Workspace.open(sample_repo)
    ws.config.embeddings.model = "none"
    result = ws.context("How is the cart total computed?", max_tokens=2000)
    assert "Cart" in result.text
    assert ws.status().files > 0 and "built_index" in result.stats
    warnings = result.stats["built_index"]["warnings"]
    assert any("older format" in w for w in warnings)
    ws.close()


def test_a_newer_format_is_refused(tmp_path):
    p = tmp_path / "i.db"
    db = sqlite3.connect(p)
    db.execute(f"PRAGMA user_version = {FORMAT + 1}")
    db.close()
    with pytest.raises(IndexCorrupt, match="newer"):
        open_store(p)


def test_an_unknown_migration_is_refused(tmp_path):
    p = tmp_path / "i.db"
    open_store(p).close()
    db = sqlite3.connect(p)
    db.execute("INSERT INTO _migrations VALUES ('core', 'm999_from_the_future', 0)")
    db.commit()
    db.close()
    with pytest.raises(IndexCorrupt, match="m999_from_the_future"):
        open_store(p)


_OPEN = textwrap.dedent(
    """
    import sys, time
    from smartcontext.store import open_store
    while time.time() < float(sys.argv[2]):
        pass
    s = open_store(sys.argv[1])
    print(s.counts()["files"], s.db.execute("SELECT COUNT(*) FROM _migrations").fetchone()[0])
    """
)


def test_two_processes_opening_a_new_index_at_once_both_succeed(tmp_path):
    import time

    p = tmp_path / "i.db"
    start = str(time.time() + 1.0)
    procs = [
        subprocess.Popen([sys.executable, "-c", _OPEN, str(p), start], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    outs = [proc.communicate(timeout=60) for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0], [err for _, err in outs]
    n = len(CORE.steps) + len(EMBEDDINGS.steps)
    assert [out.split() for out, _ in outs] == [["0", str(n)], ["0", str(n)]]


def test_open_store_accepts_a_sqlite_url_and_refuses_others(tmp_path):
    from smartcontext.errors import InvalidArgument

    s = open_store(f"sqlite://{tmp_path / 'u.db'}")
    assert (tmp_path / "u.db").exists() and s.location == str(tmp_path / "u.db")
    with pytest.raises(InvalidArgument, match="postgresql"):
        open_store("mysql://localhost/db")


def test_run_script_splits_where_sqlite_says_a_statement_ends():
    from smartcontext.store.migrations import run_script

    db = sqlite3.connect(":memory:")
    run_script(db, textwrap.dedent("""\
        CREATE TABLE notes (body TEXT);
        CREATE TABLE log (n INTEGER);
        CREATE TRIGGER count_notes AFTER INSERT ON notes BEGIN
            INSERT INTO log VALUES (1);
            INSERT INTO log VALUES (2);
        END;
        -- a comment; with a semicolon
        INSERT INTO notes VALUES ('one;
        two'); INSERT INTO notes VALUES ('three')"""))
    assert [r[0] for r in db.execute("SELECT body FROM notes")] == ["one;\ntwo", "three"]
    assert db.execute("SELECT count(*) FROM log").fetchone()[0] == 4
