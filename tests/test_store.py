import sqlite3

import numpy as np
import pytest

from smartcontext.errors import IndexCorrupt
from smartcontext.model import Edge, Item
from smartcontext.store import KeywordTerm, open_store
from smartcontext.store.schema import FORMAT
from smartcontext.store.sqlite import SQLiteStore as Store
from smartcontext.words import fts_text, split_identifier


def _item(path, qual, kind="function", text="def f(): pass", parent=None):
    return Item(id=f"{path}::{qual}", path=path, kind=kind, name=qual.split(".")[-1],
                qualname=qual, start_line=1, end_line=1, signature=text.splitlines()[0],
                text=text, parent_id=parent, language="python", tokens=5)


def _put(store, path, items, edges=(), hash="h1"):
    store.replace_file(path=path, mtime_ns=1, size=10, hash=hash, language="python",
                       source="code", module=path[:-3], warnings=[],
                       items=[(it, f"{path[:-3]}.{it.qualname}", 3, "c" + it.id) for it in items],
                       edges=list(edges))


def test_split_identifier_and_fts_text():
    assert split_identifier("HTTPAdapter") == ["http", "adapter"]
    assert split_identifier("get_netrc_auth") == ["get", "netrc", "auth"]
    assert split_identifier("parseXMLDoc2") == ["parse", "xml", "doc", "2"]
    extra = fts_text("class HTTPAdapter: pass").split("\n")[-1].split()
    assert {"http", "adapter"} <= set(extra)
    assert fts_text("plain words only") == "plain words only"


def test_schema_version_recorded(tmp_path):
    s = Store(tmp_path / "i.db")
    assert s.db.execute("PRAGMA user_version").fetchone()[0] == FORMAT
    assert s.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_replace_file_swaps_items_edges_and_fts(tmp_path):
    s = Store(tmp_path / "i.db")
    _put(s, "a.py", [_item("a.py", "load_config", text="def load_config(): read toml")],
         [Edge("a.py::load_config", "calls", dst_name="read")])
    assert s.counts() == {"files": 1, "items": 1, "edges": 1, "vectors": 0}
    assert s.keyword_search([KeywordTerm("toml")], 10)
    _put(s, "a.py", [_item("a.py", "save_config", text="def save_config(): write yaml")], hash="h2")
    assert s.counts()["items"] == 1 and s.counts()["edges"] == 0
    assert s.keyword_search([KeywordTerm("toml")], 10) == []
    rowid = s.keyword_search([KeywordTerm("yaml")], 10)[0][0]
    assert s.items_by_rowids([rowid])[rowid].item.name == "save_config"


def test_camel_case_is_searchable_by_parts(tmp_path):
    s = Store(tmp_path / "i.db")
    _put(s, "a.py", [_item("a.py", "HTTPAdapter", kind="class", text="class HTTPAdapter: pass")])
    assert s.keyword_search([KeywordTerm("adapter")], 10)


def test_failed_replace_leaves_old_version(tmp_path):
    s = Store(tmp_path / "i.db")
    _put(s, "a.py", [_item("a.py", "f")])
    dup = _item("a.py", "g")
    with pytest.raises(sqlite3.IntegrityError):
        # Two items with the same id violate UNIQUE half-way through the transaction.
        _put(s, "a.py", [dup, dup], hash="h2")
    assert [si.item.name for si in s.items_in_paths(["a.py"])] == ["f"]
    assert s.file_states()["a.py"].hash == "h1"


def test_delete_files_cascades(tmp_path):
    s = Store(tmp_path / "i.db")
    _put(s, "a.py", [_item("a.py", "f")], [Edge("a.py::f", "calls", dst_name="g")])
    rowid = s.item_light_rows()[0][0]
    s.put_vectors("m", [rowid], np.ones((1, 4), dtype=np.float32))
    s.delete_files(["a.py"])
    assert s.counts() == {"files": 0, "items": 0, "edges": 0, "vectors": 0}
    assert s.keyword_search([KeywordTerm("pass")], 10) == []


def test_vectors_roundtrip_and_missing(tmp_path):
    s = Store(tmp_path / "i.db")
    _put(s, "a.py", [_item("a.py", "f"), _item("a.py", "g")])
    rows = [r[0] for r in s.item_light_rows()]
    assert len(s.items_missing_vectors("m")) == 2
    m = np.arange(8, dtype=np.float32).reshape(2, 4)
    s.put_vectors("m", rows, m)
    ids, mat = s.load_vectors("m")
    assert list(ids) == sorted(rows) and np.allclose(mat, m)
    assert s.items_missing_vectors("m") == [] and len(s.items_missing_vectors("other")) == 2
    assert s.vector_models() == {"m": 2}


def test_generation_changes_on_write(tmp_path):
    s = Store(tmp_path / "i.db")
    g0 = s.generation()
    _put(s, "a.py", [_item("a.py", "f")])
    assert s.generation() > g0


def test_corrupt_file_raises_index_corrupt(tmp_path):
    p = tmp_path / "i.db"
    p.write_bytes(b"this is not a database" * 100)
    with pytest.raises(IndexCorrupt, match="--rebuild"):
        Store(p)


def test_newer_schema_is_refused(tmp_path):
    p = tmp_path / "i.db"
    db = sqlite3.connect(p)
    db.execute(f"PRAGMA user_version = {FORMAT + 5}")
    db.close()
    with pytest.raises(IndexCorrupt, match="newer"):
        Store(p)
