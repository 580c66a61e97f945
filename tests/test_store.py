import sqlite3

import numpy as np
import pytest

from smartcontext.errors import IndexCorrupt
from smartcontext.model import Edge, Item
from smartcontext.store import KeywordTerm, open_store
from smartcontext.store.schema import FORMAT
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


def _unique_violation():
    from psycopg.errors import UniqueViolation

    return UniqueViolation


def test_split_identifier_and_fts_text():
    assert split_identifier("HTTPAdapter") == ["http", "adapter"]
    assert split_identifier("get_netrc_auth") == ["get", "netrc", "auth"]
    assert split_identifier("parseXMLDoc2") == ["parse", "xml", "doc", "2"]
    extra = fts_text("class HTTPAdapter: pass").split("\n")[-1].split()
    assert {"http", "adapter"} <= set(extra)
    assert fts_text("plain words only") == "plain words only"


def test_schema_version_recorded(tmp_path):
    s = open_store(tmp_path / "i.db")
    assert s.db.execute("PRAGMA user_version").fetchone()[0] == FORMAT
    assert s.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_replace_file_swaps_items_edges_and_fts(make_store):
    s = make_store()
    _put(s, "a.py", [_item("a.py", "load_config", text="def load_config(): read toml")],
         [Edge("a.py::load_config", "calls", dst_name="read")])
    assert s.counts() == {"files": 1, "items": 1, "edges": 1, "vectors": 0}
    assert s.keyword_search([KeywordTerm("toml")], 10)
    _put(s, "a.py", [_item("a.py", "save_config", text="def save_config(): write yaml")], hash="h2")
    assert s.counts()["items"] == 1 and s.counts()["edges"] == 0
    assert s.keyword_search([KeywordTerm("toml")], 10) == []
    rowid = s.keyword_search([KeywordTerm("yaml")], 10)[0][0]
    assert s.items_by_rowids([rowid])[rowid].item.name == "save_config"


def test_camel_case_is_searchable_by_parts(make_store):
    s = make_store()
    _put(s, "a.py", [_item("a.py", "HTTPAdapter", kind="class", text="class HTTPAdapter: pass")])
    assert s.keyword_search([KeywordTerm("adapter")], 10)


def test_failed_replace_leaves_old_version(make_store):
    s = make_store()
    _put(s, "a.py", [_item("a.py", "f")])
    dup = _item("a.py", "g")
    with pytest.raises((sqlite3.IntegrityError, _unique_violation())):
        # Two items with the same id violate UNIQUE half-way through the transaction.
        _put(s, "a.py", [dup, dup], hash="h2")
    assert [si.item.name for si in s.items_in_paths(["a.py"])] == ["f"]
    assert s.file_states()["a.py"].hash == "h1"


def test_delete_files_cascades(make_store):
    s = make_store()
    _put(s, "a.py", [_item("a.py", "f")], [Edge("a.py::f", "calls", dst_name="g")])
    rowid = s.item_light_rows()[0][0]
    s.put_vectors("m", [rowid], np.ones((1, 4), dtype=np.float32))
    s.delete_files(["a.py"])
    assert s.counts() == {"files": 0, "items": 0, "edges": 0, "vectors": 0}
    assert s.keyword_search([KeywordTerm("pass")], 10) == []


def test_vectors_roundtrip_and_missing(make_store):
    s = make_store()
    _put(s, "a.py", [_item("a.py", "f"), _item("a.py", "g")])
    rows = [r[0] for r in s.item_light_rows()]
    assert len(s.items_missing_vectors("m")) == 2
    m = np.arange(8, dtype=np.float32).reshape(2, 4)
    s.put_vectors("m", rows, m)
    ids, mat = s.load_vectors("m")
    assert list(ids) == sorted(rows) and np.allclose(mat, m)
    assert s.items_missing_vectors("m") == [] and len(s.items_missing_vectors("other")) == 2
    assert s.vector_models() == {"m": 2}


def test_generation_changes_on_write(make_store):
    s = make_store()
    g0 = s.generation()
    _put(s, "a.py", [_item("a.py", "f")])
    assert s.generation() > g0


def test_corrupt_file_raises_index_corrupt(tmp_path):
    p = tmp_path / "i.db"
    p.write_bytes(b"this is not a database" * 100)
    with pytest.raises(IndexCorrupt, match="--rebuild"):
        open_store(p)


def test_newer_schema_is_refused(tmp_path):
    p = tmp_path / "i.db"
    db = sqlite3.connect(p)
    db.execute(f"PRAGMA user_version = {FORMAT + 5}")
    db.close()
    with pytest.raises(IndexCorrupt, match="newer"):
        open_store(p)


# -- every store method, against a real SQLite file -------------------------------------

def _md(path, qual, start, end, text, parent=None, tags=("notes",)):
    return Item(id=f"{path}#{qual}" if qual else path, path=path, kind="section",
                name=qual.split("/")[-1] or path, qualname=qual, start_line=start, end_line=end,
                signature=f"# {qual}", docstring="summary", text=text, parent_id=parent,
                language="markdown", meta={"title": "T", "tags": list(tags), "level": 1}, tokens=3)


def _code_file(s, path="pkg/mod.py", hash="h1", extra=""):
    text = (
        "import os\n\nclass HTTPAdapter:\n    \"\"\"Sends requests.\"\"\"\n\n"
        "    def send(self, request):\n        return os.fspath(request)\n" + extra
    )
    lines = text.split("\n")
    mod = Item(id=path, path=path, kind="module", name="mod", qualname="pkg.mod", start_line=1,
               end_line=len(lines), text=text, language="python", tokens=20)
    cls_text = "\n".join(lines[2:7])
    cls = Item(id=f"{path}::HTTPAdapter", path=path, kind="class", name="HTTPAdapter",
               qualname="HTTPAdapter", start_line=3, end_line=7, signature="class HTTPAdapter:",
               docstring="Sends requests.", text=cls_text, parent_id=path, language="python",
               meta={"decorators": []}, tokens=10)
    meth = Item(id=f"{path}::HTTPAdapter.send", path=path, kind="method", name="send",
                qualname="HTTPAdapter.send", start_line=6, end_line=7,
                signature="def send(self, request):", text="\n".join(lines[5:7]).lstrip(),
                parent_id=cls.id, language="python", tokens=6)
    rows = [(mod, "pkg.mod", 1, "c-mod" + hash), (cls, "pkg.mod.HTTPAdapter", 4, "c-cls" + hash),
            (meth, "pkg.mod.HTTPAdapter.send", 5, "c-meth" + hash)]
    edges = [Edge(path, "contains", dst=cls.id), Edge(cls.id, "contains", dst=meth.id),
             Edge(meth.id, "calls", dst_name="os.fspath"), Edge(path, "imports", dst_name="os")]
    s.replace_file(path=path, mtime_ns=5, size=len(text), hash=hash, language="python", source="code",
                   module="pkg.mod", warnings=["w1"] if extra else [], items=rows, edges=edges)
    return mod, cls, meth


def test_items_read_back_exactly_as_written(make_store):
    s = make_store()
    written = _code_file(s)
    notes = [_md("n/a.md", "", 1, 2, "intro line\nmore 🙂"),
             _md("n/a.md", "Héading", 3, 4, "# Héading\nbody text", parent="n/a.md"),
             _md("n/a.md", "Héading", 5, 6, "part two", parent="n/a.md#Héading")]
    notes[2].id = "n/a.md#Héading@5"  # an id that does not follow from path and name
    s.replace_file(path="n/a.md", mtime_ns=1, size=9, hash="m", language="markdown", source="markdown",
                   module="n/a", warnings=[], items=[(it, f"n/a#{it.qualname}", 2, "c" + it.id) for it in notes],
                   edges=[Edge("n/a.md", "contains", dst="n/a.md#Héading"),
                          Edge("n/a.md#Héading", "links_to", dst_name="b")])
    by_id = s.items_by_ids([it.id for it in (*written, *notes)])
    for it in (*written, *notes):
        assert by_id[it.id].item == it
    assert by_id["pkg/mod.py::HTTPAdapter.send"].fqname == "pkg.mod.HTTPAdapter.send"
    assert by_id["n/a.md#Héading"].fqname == "n/a#Héading" and by_id["n/a.md"].fqname == "n/a#"
    rows = s.item_light_rows()
    assert [r.id for r in rows] == [it.id for it in (*written, *notes)]
    assert rows[2].parent_id == "pkg/mod.py::HTTPAdapter" and rows[2].fqname == "pkg.mod.HTTPAdapter.send"
    by_row = s.items_by_rowids([r.rowid for r in rows])
    assert {si.item.id for si in by_row.values()} == {r.id for r in rows}
    assert [si.item.id for si in s.items_in_paths(["n/a.md", "missing.md"])] == [
        "n/a.md", "n/a.md#Héading", "n/a.md#Héading@5"]
    assert rows[-1].parent_id == "n/a.md#Héading"
    assert s.item_count() == 6
    assert s.kind_counts() == {"module": 1, "class": 1, "method": 1, "section": 3}
    assert sorted(t for _, t in s.tag_rows()) == ["notes", "notes", "notes"]
    assert s.counts() == {"files": 2, "items": 6, "edges": 6, "vectors": 0}


def test_file_states_touch_and_warnings(make_store):
    s = make_store()
    _code_file(s, extra="\n# tail\n")
    state = s.file_states()["pkg/mod.py"]
    assert (state.mtime_ns, state.hash, state.language, state.source) == (5, "h1", "python", "code")
    s.touch_file("pkg/mod.py", 99, 123)
    assert (s.file_states()["pkg/mod.py"].mtime_ns, s.file_states()["pkg/mod.py"].size) == (99, 123)
    assert s.file_warnings() == {"pkg/mod.py": ["w1"]}
    s.set_meta("last_indexed", "now")
    assert s.get_meta("last_indexed") == "now" and s.get_meta("nope", "d") == "d"


def test_edges_by_source_target_and_name(make_store):
    s = make_store()
    mod, cls, meth = _code_file(s)
    assert s.edges_from([meth.id]) == [(meth.id, "calls", None, "os.fspath")]
    assert sorted(s.edges_from([mod.id])) == [(mod.id, "contains", cls.id, None), (mod.id, "imports", None, "os")]
    assert s.edges_from([mod.id], kinds=["imports"]) == [(mod.id, "imports", None, "os")]
    assert sorted(s.edges_from([mod.id, meth.id], kinds=["calls", "contains"])) == [
        (mod.id, "contains", cls.id, None), (meth.id, "calls", None, "os.fspath")]
    assert s.edges_to([cls.id], ["os"]) == [(mod.id, "contains", cls.id, None), (mod.id, "imports", None, "os")]
    assert len(s.all_edges()) == 4
    # an edge between files keeps the ids it names
    other = _item("b.py", "g")
    s.replace_file(path="b.py", mtime_ns=1, size=1, hash="b", language="python", source="code",
                   module="b", warnings=[], items=[(other, "b.g", 1, "cb")],
                   edges=[Edge(other.id, "calls", dst=meth.id), Edge("elsewhere::x", "calls", dst=other.id)])
    assert (other.id, "calls", meth.id, None) in s.edges_to([meth.id], [])
    assert s.edges_from(["elsewhere::x"]) == [("elsewhere::x", "calls", other.id, None)]
    s.delete_files(["b.py"])
    assert s.edges_from(["elsewhere::x"]) == [] and len(s.all_edges()) == 4


def test_keyword_search_weights_phrases_and_files_only(make_store):
    s = make_store()
    _code_file(s)
    hits = s.keyword_search([KeywordTerm("adapter"), KeywordTerm("http adapter")], 10)
    ids = s.items_by_rowids([r for r, _ in hits])
    assert {ids[r].item.id for r, _ in hits} >= {"pkg/mod.py::HTTPAdapter"}
    assert all(score > 0 for _, score in hits)
    files = s.keyword_search([KeywordTerm("adapter")], 10, files_only=True)
    assert [s.items_by_rowids([r])[r].item.kind for r, _ in files] == ["module"]
    once = dict(s.keyword_search([KeywordTerm("request"), KeywordTerm("sends")], 10))
    twice = dict(s.keyword_search([KeywordTerm("request", 3), KeywordTerm("sends")], 10))
    meth = next(r for r in s.item_light_rows() if r.kind == "method").rowid
    assert twice[meth] > once[meth]  # a repeated term counts more
    assert s.keyword_search([], 10) == [] and s.keyword_search([KeywordTerm('"quoted')], 10) == []
    assert s.doc_freqs(["adapter", "send", "absent"]) == {"adapter": 3, "send": 3}


def test_keyword_search_with_files_is_both_searches_at_once(make_store):
    from smartcontext.model import kind_traits

    s = make_store()
    _code_file(s)
    _code_file(s, path="pkg/other.py", hash="h2")
    rows = {r.rowid: r for r in s.item_light_rows()}

    def is_file_row(rowid):
        return rows[rowid].start_line == 1 and kind_traits(rows[rowid].kind).file_row

    terms = [KeywordTerm("request", 3), KeywordTerm("adapter"), KeywordTerm("http adapter", 2)]
    for limit in (1, 2, 3, 10):
        items, files = s.keyword_search_with_files(terms, limit, is_file_row)
        assert items == s.keyword_search(terms, limit)
        assert files == s.keyword_search(terms, limit, files_only=True)
    assert len(items) == 6 and len(files) == 2 and all(is_file_row(r) for r, _ in files)
    assert s.keyword_search_with_files([], 10, is_file_row) == ([], [])


def test_a_term_weighted_n_times_ranks_as_the_term_repeated_n_times(tmp_path):
    """BM25 scores each OR-ed phrase on its own, so one query per weight, summed, is the
    query with each term repeated (which FTS5 reads once per repeat)."""
    import sqlite3

    s = open_store(tmp_path / "i.db")
    for n in range(6):
        body = "request " * n + "adapter " * (5 - n) + "sends " * (n % 3)
        _put(s, f"m{n}.py", [_item(f"m{n}.py", f"f{n}", text=f"def f{n}():\n    # {body}\n")], hash=f"h{n}")
    terms = [KeywordTerm("request", 3), KeywordTerm("adapter"), KeywordTerm("sends", 2)]
    repeated = '{name path body} : ("request" OR "request" OR "request" OR "adapter" OR "sends" OR "sends")'
    db = sqlite3.connect(tmp_path / "i.db")
    expected = db.execute(
        "SELECT rowid, -bm25(items_fts, 4.0, 2.0, 1.0, 0.0) AS s FROM items_fts WHERE items_fts MATCH ? "
        "ORDER BY s DESC, rowid", (repeated,)).fetchall()
    db.close()
    got = s.keyword_search(terms, 100)
    assert len(got) == 6 and [r for r, _ in got] == [r for r, _ in expected]
    assert all(abs(a - b) < 1e-9 for (_, a), (_, b) in zip(got, expected))
    assert len({round(x, 9) for _, x in got}) == 6  # distinct scores: the order is checked


def test_deleting_a_contentless_row_removes_exactly_its_tokens(tmp_path):
    churned, fresh = open_store(tmp_path / "a.db"), open_store(tmp_path / "b.db")
    for h in ("h1", "h2", "h3"):
        _code_file(churned, hash=h, extra=f"\n# version {h} camelCaseWord\n")
    _code_file(churned, path="gone.py")
    churned.delete_files(["gone.py"])
    _code_file(fresh, hash="h3", extra="\n# version h3 camelCaseWord\n")
    vocab = "SELECT term, doc, cnt FROM items_fts_vocab ORDER BY term"
    assert churned.db.execute(vocab).fetchall() == fresh.db.execute(vocab).fetchall()
    churned.db.execute("INSERT INTO items_fts(items_fts) VALUES('integrity-check')")
    churned.delete_files(["pkg/mod.py"])
    assert churned.db.execute(vocab).fetchall() == []


def test_vectors_are_the_cache_rows_of_content_hashes(tmp_path):
    s = open_store(tmp_path / "i.db")
    _put(s, "a.py", [_item("a.py", "f"), _item("a.py", "g")])
    rows = [r.rowid for r in s.item_light_rows()]
    s.cache_vectors("m", [("ca.py::f", np.ones(4, dtype=np.float32))])
    assert s.items_missing_vectors("m") == [(rows[1], "ca.py::g")]
    assert s.vector_models() == {"m": 1} and s.counts()["vectors"] == 1
    ids, mat = s.load_vectors("m")
    assert list(ids) == [rows[0]] and np.array_equal(mat, np.ones((1, 4), dtype=np.float32))
    # an item with the same content elsewhere shares the vector
    _put(s, "b.py", [_item("b.py", "f")], hash="h9")
    s.db.execute("UPDATE items SET content_hash = 'ca.py::f' WHERE content_hash = 'cb.py::f'")
    assert s.vector_models() == {"m": 2}
    assert set(s.cached_vectors("m", ["ca.py::f", "nope"])) == {"ca.py::f"}
    g = s.generation()
    assert s.clear_cached_vectors("m") == 1 and s.vector_models() == {} and s.generation() > g


def test_batch_commits_once_and_rolls_back_whole(make_store):
    s = make_store()
    with pytest.raises(RuntimeError):
        with s.batch():
            _put(s, "a.py", [_item("a.py", "f")])
            _put(s, "b.py", [_item("b.py", "f")])
            raise RuntimeError("stop")
    assert s.counts()["files"] == 0
    with s.batch():
        _put(s, "a.py", [_item("a.py", "f")])
        with s.transaction():
            s.set_meta("k", "v")
    assert s.counts()["files"] == 1 and s.get_meta("k") == "v"


def test_store_satisfies_the_protocol(make_store):
    from smartcontext.store import Store as StoreProtocol

    assert isinstance(make_store(), StoreProtocol)


def test_compact_reclaims_freed_pages_only_when_worth_it(tmp_path):
    s = open_store(tmp_path / "i.db")
    assert s.compact() is False  # nothing freed
    for i in range(40):
        _code_file(s, path=f"m{i}.py", extra="\n# padding line\n" * 200)
    s.delete_files([f"m{i}.py" for i in range(35)])
    free_before = s.db.execute("PRAGMA freelist_count").fetchone()[0]
    assert free_before > 0 and s.compact() is True
    assert s.db.execute("PRAGMA freelist_count").fetchone()[0] == 0
    assert s.counts()["files"] == 5 and len(s.items_in_paths(["m39.py"])) == 3


def test_compact_gives_up_while_a_statement_is_open(tmp_path):
    s = open_store(tmp_path / "i.db")
    for n in range(60):
        _put(s, f"m{n}.py", [_item(f"m{n}.py", "f", text="def f(): " + "x " * 2000)], hash=f"h{n}")
    s.delete_files([f"m{n}.py" for n in range(1, 60)])
    reader = s.db.execute("WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n LIMIT 5) SELECT x FROM n")
    reader.fetchone()  # a statement left open on the shared connection
    assert s.compact() is False  # VACUUM would raise OperationalError; compaction just waits
    reader.close()
    assert s.compact() is True


def test_storing_vectors_moves_the_vector_generation_and_leaves_the_catalogues(make_store):
    # A background embedder stores batch after batch: readers' catalogues (keyed by the
    # generation) stay valid, while vector counts and matrices (keyed by both) refresh.
    s = make_store()
    _put(s, "a.py", [_item("a.py", "f"), _item("a.py", "g")])
    generation, vectors = s.generation(), s.vector_generation()
    assert s.vector_models() == {}
    s.cache_vectors("m", [("ca.py::f", np.ones(4, dtype=np.float32))])
    assert s.generation() == generation and s.vector_generation() == vectors + 1
    assert s.vector_models() == {"m": 1}
    rows = [r.rowid for r in s.item_light_rows()]
    s.put_vectors("m", [rows[1]], np.ones((1, 4), dtype=np.float32))
    assert s.generation() == generation and s.vector_generation() == vectors + 2
    assert s.vector_models() == {"m": 2}
    _put(s, "b.py", [_item("b.py", "h")], hash="h2")
    assert s.generation() > generation


def test_keyword_answers_follow_writes_from_any_connection(make_store):
    """Full-text answers are remembered per index generation: asked again they are the
    same, and a write (by this store or by another opened on the same index, as another
    process would) is seen by the next question."""
    s, other = make_store("shared"), make_store("shared")
    _put(s, "a.py", [_item("a.py", "parse_toml", text="def parse_toml(): pass")])
    first = s.keyword_search([KeywordTerm("toml")], 10)
    assert first and s.keyword_search([KeywordTerm("toml")], 10) == first
    _put(other, "b.py", [_item("b.py", "load_toml", text="def load_toml(): pass")], hash="h2")
    again = s.keyword_search([KeywordTerm("toml")], 10)
    assert len(again) == 2 and {r for r, _ in first} < {r for r, _ in again}
    other.delete_files(["a.py", "b.py"])
    assert s.keyword_search([KeywordTerm("toml")], 10) == []


def test_keyword_answers_seen_inside_a_rolled_back_write_are_not_kept(make_store):
    s = make_store()
    _put(s, "a.py", [_item("a.py", "f", text="def f(): pass")])
    before = s.keyword_search([KeywordTerm("yaml")], 10)
    with pytest.raises(RuntimeError):
        with s.batch():
            _put(s, "b.py", [_item("b.py", "read_yaml", text="def read_yaml(): pass")], hash="h2")
            assert s.keyword_search([KeywordTerm("yaml")], 10)  # the writer sees its own rows
            raise RuntimeError("stop")
    # The next write brings back the generation number the rolled-back one had.
    _put(s, "c.py", [_item("c.py", "g", text="def g(): pass")], hash="h3")
    assert before == [] and s.keyword_search([KeywordTerm("yaml")], 10) == []


def test_remembered_keyword_answers_stay_within_their_budget(tmp_path, monkeypatch):
    """A filtered search asks for every match: answers are kept up to a total number of
    pairs, the oldest dropped first, and one over a quarter of the budget is not kept."""
    from smartcontext.store import sqlite as sqlite_store

    monkeypatch.setattr(sqlite_store, "_SEARCH_PAIRS_KEPT", 40)
    s = open_store(tmp_path / "i.db")
    _put(s, "a.py", [_item("a.py", f"alpha_{i}", text=f"def alpha_{i}(): pass") for i in range(30)])
    everything = s.keyword_search([KeywordTerm("alpha")], 1 << 30)
    assert len(everything) == 30 and s._search_pairs == 0  # over a quarter of 40: not kept
    for limit in range(1, 11):  # 55 pairs asked for in all
        assert s.keyword_search([KeywordTerm("alpha")], limit) == everything[:limit]
        assert s._search_pairs == sum(len(v[1][0]) for v in s._searches.values()) <= 40
    kept = sorted(key[-1] for key in s._searches)
    assert 0 < len(kept) < 10 and kept == list(range(11 - len(kept), 11))  # the oldest went first
    for limit in range(1, 11):  # asked again, kept or not, the answers are the same
        assert s.keyword_search([KeywordTerm("alpha")], limit) == everything[:limit]
    s.close()
