"""What only the PostgreSQL store has: workspaces sharing a database, the shared embedding
cache, typed connection errors, several writers and readers at once, HNSW nearest
neighbours, copying a SQLite index into it, and choosing it from the CLI. On a real
server (see conftest.pg_url)."""

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from smartcontext import Workspace
from smartcontext.config import Config
from smartcontext.errors import InvalidArgument, StoreUnavailable
from smartcontext.model import Edge, Item
from smartcontext.store import KeywordTerm, Store, open_store
from smartcontext.store.copy import copy_index, copy_store
from smartcontext.store.postgres import drop_workspace, schema_name, split_url


def _item(path, qual, text="def f(): pass"):
    return Item(id=f"{path}::{qual}", path=path, kind="function", name=qual, qualname=qual,
                start_line=2, end_line=3, signature=text.splitlines()[0], text=text,
                language="python", tokens=5)


def _put(store, path, quals, hash="h", text="def f(): pass"):
    items = [_item(path, q, text) for q in quals]
    store.replace_file(path=path, mtime_ns=1, size=1, hash=hash, language="python", source="code",
                       module=path[:-3], warnings=[],
                       items=[(it, f"{path[:-3]}.{it.qualname}", 2, f"c-{it.id}-{text}") for it in items],
                       edges=[Edge(items[0].id, "calls", dst_name="g")])


@pytest.fixture
def pg(pg_url, pg_workspace):
    opened = []

    def make(suffix="a"):
        s = open_store(pg_url, workspace=f"{pg_workspace}_{suffix}")
        opened.append(s)
        return s

    yield make
    for s in opened:
        s.close()
        drop_workspace(pg_url, s.workspace, clear_cache=True)



def statements_sent(monkeypatch) -> list[str]:
    """The text of every statement the store sends from now on, in order (each still runs)."""
    import psycopg

    sent: list[str] = []
    execute = psycopg.Cursor.execute

    def counted(self, query, params=None, **kw):
        sent.append(query if isinstance(query, str) else query.as_string(self.connection))
        return execute(self, query, params, **kw)

    monkeypatch.setattr(psycopg.Cursor, "execute", counted)
    return sent


def test_schema_names_never_collide_and_url_carries_the_workspace():
    assert schema_name("shop") == "sc_shop"
    assert schema_name("Shop") != schema_name("shop") and schema_name("a-b") != schema_name("a_b")
    assert len(schema_name("x" * 200)) <= 63
    assert split_url("postgresql://u@h/db?workspace=w&sslmode=require") == (
        "postgresql://u@h/db?sslmode=require", "w")


def test_workspaces_share_a_database_but_not_rows(pg):
    a, b = pg("a"), pg("b")
    assert isinstance(a, Store)
    _put(a, "m.py", ["f", "g"])
    _put(b, "m.py", ["f"], text="def f(): other")
    assert a.counts()["items"] == 2 and b.counts()["items"] == 1
    assert a.items_by_ids(["m.py::g"]) and not b.items_by_ids(["m.py::g"])
    b.delete_files(["m.py"])
    assert a.counts()["files"] == 1 and b.counts()["files"] == 0


def test_the_embedding_cache_is_shared_by_workspaces(pg):
    a, b = pg("a"), pg("b")
    _put(a, "m.py", ["f"])
    _put(b, "n.py", ["f"])
    # the same text in another workspace: b's item has the content hash a embedded
    b.replace_file(path="n.py", mtime_ns=1, size=1, hash="h", language="python", source="code",
                   module="n", warnings=[], items=[(_item("n.py", "f"), "n.f", 2, "c-m.py::f-def f(): pass")],
                   edges=[])
    a.put_vectors("m", [a.item_light_rows()[0].rowid], np.ones((1, 3), dtype=np.float32))
    assert b.items_missing_vectors("m") == []
    ids, mat = b.load_vectors("m")
    assert len(ids) == 1 and np.allclose(mat, 1.0)


def test_connection_errors_are_typed_and_say_what_to_do(tmp_path):
    with pytest.raises(StoreUnavailable, match="cannot connect.*server is running"):
        open_store("postgresql://nobody:secret@127.0.0.1:1/nowhere")
    try:
        open_store("postgresql://nobody:secret@127.0.0.1:1/nowhere")
    except StoreUnavailable as exc:
        assert "secret" not in str(exc)  # passwords never reach messages
    with pytest.raises(InvalidArgument, match="postgresql://"):
        open_store("mysql://localhost/db")


def test_reopening_applies_nothing_and_keeps_rows(pg_url, pg):
    a = pg("a")
    _put(a, "m.py", ["f"])
    again = open_store(pg_url, workspace=a.workspace)
    try:
        assert again.counts()["items"] == 1 and again.generation() == a.generation()
    finally:
        again.close()


def test_concurrent_opens_of_a_new_workspace(pg_url, pg_workspace):
    name = f"{pg_workspace}_race"
    errors, stores = [], []

    def open_one():
        try:
            stores.append(open_store(pg_url, workspace=name))
        except Exception as exc:  # pragma: no cover - the failure is the assertion
            errors.append(exc)

    threads = [threading.Thread(target=open_one) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for s in stores:
        s.close()
    drop_workspace(pg_url, name)
    assert not errors and len(stores) == 4


def test_two_indexers_and_readers_lose_and_double_nothing(pg_url, pg):
    """Two writers (separate stores: separate connections) rewrite the same 20 files in
    batches while two readers search and read; every write is whole or absent."""
    writers = [pg("w"), open_store(pg_url, workspace=pg("w").workspace)]
    reader = open_store(pg_url, workspace=writers[0].workspace)
    paths = [f"pkg/m{i}.py" for i in range(20)]
    failures: list[BaseException] = []
    stop = threading.Event()

    def write(store, seed):
        try:
            for rnd in range(6):
                order = paths if (rnd + seed) % 2 else list(reversed(paths))
                for start in range(0, len(order), 5):
                    with store.batch():
                        for p in order[start:start + 5]:
                            _put(store, p, ["f", "g", "h"], hash=f"{seed}-{rnd}")
        except BaseException as exc:
            failures.append(exc)

    def read():
        try:
            while not stop.is_set():
                n = reader.counts()
                # a file always has its 3 items and its edge, never half of them
                assert n["items"] == 3 * n["files"] and n["edges"] == n["files"]
                hits = reader.keyword_search([KeywordTerm("pass")], 100)
                assert len(hits) == len({r for r, _ in hits})
                reader.items_by_rowids([r for r, _ in hits])
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=write, args=(w, i)) for i, w in enumerate(writers)]
    readers = [threading.Thread(target=read) for _ in range(2)]
    for t in readers + threads:
        t.start()
    for t in threads:
        t.join()
    stop.set()
    for t in readers:
        t.join()
    try:
        assert not failures, failures
        assert reader.counts() == {"files": 20, "items": 60, "edges": 20, "vectors": 0}
        ids = [r.id for r in reader.item_light_rows()]
        assert len(ids) == len(set(ids)) == 60
    finally:
        writers[1].close()
        reader.close()


def test_two_workspace_indexers_at_once_build_one_index(sample_repo, pg_url, pg_workspace):
    def config():
        c = Config.load(sample_repo)
        c.store.url, c.store.workspace, c.embeddings.model = pg_url, f"{pg_workspace}_ix", "none"
        return c

    alone = Workspace.open(sample_repo, config())
    alone.index()
    expected = alone.store.counts()
    alone.remove_index()
    assert alone.store.counts()["files"] == 0
    spaces = [Workspace.open(sample_repo, config()) for _ in range(2)]
    failures = []

    def run(ws):
        try:
            ws.index()
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=run, args=(w,)) for w in spaces]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        assert not failures, failures
        assert spaces[0].store.counts() == expected
        assert len({r.id for r in spaces[0].store.item_light_rows()}) == expected["items"]
    finally:
        for w in (alone, *spaces):
            w.close()
        drop_workspace(pg_url, f"{pg_workspace}_ix")


_LOAD_INDEXES = ["edges_dst", "edges_dst_name", "edges_file_id_fkey", "edges_link_name_key", "edges_src",
                 "fts_postings_item", "fts_postings_pkey", "items_file_id_fkey"]


def _open_pg(root: Path, url: str, name: str) -> Workspace:
    """``root`` indexed into the PostgreSQL workspace ``name``, without embeddings."""
    c = Config.load(root)
    c.store.url, c.store.workspace, c.embeddings.model = url, name, "none"
    return Workspace.open(root, c)


_TERM_COUNTS_OFF = (  # terms whose document counts are not those of their postings
    "SELECT count(*) FROM fts_terms t LEFT JOIN (SELECT term_id, count(*) AS d, "
    "count(*) FILTER (WHERE wtf > 0) AS td FROM fts_postings GROUP BY term_id) p ON p.term_id = t.id "
    "WHERE t.docs <> coalesce(p.d, 0) OR t.text_docs <> coalesce(p.td, 0)"
)
_QUESTIONS = ("apply a discount", "session token", "hash the password", "user accounts")


def _keyword_answers(ws: Workspace) -> list[list[tuple[str, float]]]:
    return [[(h.id, h.score) for h in ws.search(q, mode="keyword")] for q in _QUESTIONS]


def _assert_like(ws: Workspace, reference: Workspace) -> None:
    """``ws`` has term counts those of its postings, and the counts and keyword answers
    of ``reference``."""
    with ws.store._conn() as conn:
        assert conn.execute(_TERM_COUNTS_OFF).fetchone()[0] == 0
    assert ws.store.counts() == reference.store.counts()
    assert _keyword_answers(ws) == _keyword_answers(reference)


def _load_indexes(conn) -> list[str]:
    """The indexes and foreign keys of this workspace a first load builds at its end,
    those there now."""
    return [r for (r,) in conn.execute(
        "WITH s AS (SELECT oid FROM pg_namespace WHERE nspname = current_schema()) "
        "SELECT relname::text FROM pg_class WHERE relnamespace = (SELECT oid FROM s) AND relname = ANY(%s) "
        "AND relkind = 'i' UNION SELECT conname::text FROM pg_constraint WHERE connamespace = (SELECT oid FROM s) "
        "AND conname = ANY(%s) ORDER BY 1", (_LOAD_INDEXES, _LOAD_INDEXES))]


def test_a_first_load_builds_the_posting_indexes_once_at_its_end(sample_repo, pg_url, pg_workspace, monkeypatch):
    """An index run into an empty workspace writes the postings without their B-trees and
    builds them at its end, with the answers of an index that grew them row by row; a
    run that died with them missing leaves them to the next run, which builds them."""
    import smartcontext.store.postgres as pgstore

    full = _LOAD_INDEXES
    grown = _open_pg(sample_repo, pg_url, f"{pg_workspace}_grown")
    seen = []
    store_files = pgstore.PostgresStore._store_files

    def spy(self, conn, records):
        seen.append(_load_indexes(conn))
        return store_files(self, conn, records)

    loaded = _open_pg(sample_repo, pg_url, pg_workspace)
    try:
        monkeypatch.setattr(pgstore, "FIRST_LOAD_FILES", 10_000)  # the B-trees grown row by row
        grown.index()
        monkeypatch.setattr(pgstore, "FIRST_LOAD_FILES", 1)
        monkeypatch.setattr(pgstore.PostgresStore, "_store_files", spy)
        loaded.index()
        assert seen and all(s == [] for s in seen), seen
        with loaded.store._conn() as conn:
            assert _load_indexes(conn) == full
        assert _keyword_answers(loaded) == _keyword_answers(grown)
        # A run killed while they were dropped: the next one builds them before writing.
        with loaded.store._conn() as conn:
            conn.execute("DROP INDEX fts_postings_item")
        loaded.index()
        with loaded.store._conn() as conn:
            assert _load_indexes(conn) == full
    finally:
        grown.close()
        loaded.close()
        drop_workspace(pg_url, f"{pg_workspace}_grown")


def test_a_first_load_upserts_each_term_once_and_counts_the_rest_by_id(sample_repo, pg_url, pg_workspace,
                                                                      monkeypatch):
    """A first load written in many transactions (a file each, every posting through
    COPY) upserts a term only the first time it meets it; later files add to the counts
    of the terms it has seen committed. The counts are those of the postings, and the
    answers those of an index written file by file with every term upserted."""
    import smartcontext.indexer as indexer
    import smartcontext.store.postgres as pgstore

    monkeypatch.setattr(indexer, "_BATCH_FILES", 1)
    monkeypatch.setattr(pgstore, "_INLINE_POSTINGS", 0)
    upserted: list[str] = []
    execute = pgstore._Connection.execute

    def spy(self, query, params=None, **kw):
        if query is pgstore._ADD_TERMS:
            upserted.extend(params[0].split("\n"))
        return execute(self, query, params, **kw)

    grown = _open_pg(sample_repo, pg_url, f"{pg_workspace}_grown")
    loaded = _open_pg(sample_repo, pg_url, pg_workspace)
    try:
        monkeypatch.setattr(pgstore, "FIRST_LOAD_FILES", 10_000)
        grown.index()
        monkeypatch.setattr(pgstore, "FIRST_LOAD_FILES", 1)
        monkeypatch.setattr(pgstore._Connection, "execute", spy)
        loaded.index()
        with loaded.store._conn() as conn:
            terms = conn.execute("SELECT count(*) FROM fts_terms").fetchone()[0]
            fillfactor = conn.execute("SELECT reloptions FROM pg_class WHERE oid = 'fts_terms'::regclass").fetchone()[0]
        assert sorted(upserted) == sorted(set(upserted)) and len(upserted) == terms > 100
        assert fillfactor == [f"fillfactor={pgstore._TERMS_FILLFACTOR}"]
        _assert_like(loaded, grown)
    finally:
        grown.close()
        loaded.close()
        drop_workspace(pg_url, f"{pg_workspace}_grown")


def test_a_first_load_forgets_its_term_ids_when_the_workspace_is_made_anew(sample_repo, pg_url, pg_workspace,
                                                                          monkeypatch):
    """The term ids a first load keeps are those of the workspace's terms table as it
    was: when another process drops and makes the workspace anew between two of its
    writes (an ``index --rebuild``), the load's next writes count their terms in the new
    table, and the next index run gives the counts and answers of a workspace loaded
    alone."""
    import smartcontext.indexer as indexer
    import smartcontext.store.postgres as pgstore

    monkeypatch.setattr(indexer, "_BATCH_FILES", 1)
    monkeypatch.setattr(pgstore, "_INLINE_POSTINGS", 0)
    monkeypatch.setattr(pgstore, "FIRST_LOAD_FILES", 1)
    alone = _open_pg(sample_repo, pg_url, f"{pg_workspace}_alone")
    loaded = _open_pg(sample_repo, pg_url, pg_workspace)
    batch = pgstore.PostgresStore.batch
    batches: list[int] = []

    def remade(self):
        batches.append(1)
        if len(batches) == 3:  # two files committed, no transaction of the load open
            drop_workspace(pg_url, pg_workspace)
            open_store(pg_url, workspace=pg_workspace).close()
        return batch(self)

    try:
        alone.index()
        monkeypatch.setattr(pgstore.PostgresStore, "batch", remade)
        loaded.index()
        monkeypatch.setattr(pgstore.PostgresStore, "batch", batch)
        with loaded.store._conn() as conn:
            assert conn.execute("SELECT count(*) FROM fts_terms").fetchone()[0] > 0
            assert conn.execute(_TERM_COUNTS_OFF).fetchone()[0] == 0
        loaded.index()  # the two files the drop took
        _assert_like(loaded, alone)
    finally:
        alone.close()
        loaded.close()
        drop_workspace(pg_url, f"{pg_workspace}_alone")


_KILLED_LOAD = """
import os, signal, sys
from pathlib import Path
import smartcontext.indexer as indexer
import smartcontext.store.postgres as pgstore
from smartcontext import Workspace
from smartcontext.config import Config

pgstore.FIRST_LOAD_FILES = 1
indexer._BATCH_FILES = 1
store_files = pgstore.PostgresStore._store_files
done = []

def dies(self, conn, records):
    if len(done) == 3:  # three files committed, the fourth's write under way
        os.kill(os.getpid(), signal.SIGKILL)
    done.append(1)
    return store_files(self, conn, records)

pgstore.PostgresStore._store_files = dies
root = Path(sys.argv[1])
c = Config.load(root)
c.store.url, c.store.workspace, c.embeddings.model = sys.argv[2], sys.argv[3], "none"
Workspace.open(root, c).index(workers=1)
"""


def test_a_killed_first_load_is_finished_by_the_next_index_run(sample_repo, pg_url, pg_workspace):
    """A first load killed (SIGKILL) in the middle of a write leaves the files it committed,
    without the indexes it builds at its end and without a half-written file; the next
    index run builds those indexes and writes the rest: the same counts, term statistics
    and answers as a workspace loaded in one run."""
    killed = subprocess.run([sys.executable, "-c", _KILLED_LOAD, str(sample_repo), pg_url, pg_workspace],
                            capture_output=True, text=True, timeout=120)
    assert killed.returncode == -9, killed.stderr
    alone, again = _open_pg(sample_repo, pg_url, f"{pg_workspace}_alone"), _open_pg(sample_repo, pg_url, pg_workspace)
    try:
        with again.store._conn() as conn:
            assert _load_indexes(conn) == []
            assert conn.execute("SELECT count(*) FROM files").fetchone()[0] == 3
            assert conn.execute(  # every committed file whole: items with postings, and the counts
                "SELECT (SELECT rows FROM fts_stats) = count(*) AND (SELECT tokens FROM fts_stats) = sum(fts_len) "
                "AND count(*) = (SELECT count(DISTINCT item) FROM fts_postings) FROM items"
            ).fetchone()[0]
        alone.index()
        again.index()
        with again.store._conn() as conn:
            assert _load_indexes(conn) == _LOAD_INDEXES
            assert conn.execute(_TERM_COUNTS_OFF).fetchone()[0] == 0
        assert again.store.counts() == alone.store.counts()
        assert _keyword_answers(again) == _keyword_answers(alone)
    finally:
        alone.close()
        again.close()
        drop_workspace(pg_url, f"{pg_workspace}_alone")


def test_a_second_writer_beside_a_first_load_leaves_a_whole_index(sample_repo, pg_url, pg_workspace, monkeypatch):
    """A first load writes without some indexes and keys (no primary key on the postings,
    no foreign key cascading a file's deletion to its items and edges). A second writer
    of the same workspace meanwhile takes turns with it transaction by transaction (each
    file its own here): a tool's delete of a file the first load wrote, then an index
    run of the same files, which builds what is missing before its writes and rewrites
    the files. At the end the indexes and keys are all there (the primary key and the
    foreign keys could be built: no posting doubled, no item or edge left without its
    file), the term and row counts are those of the postings and items, and the answers
    are those of a workspace loaded alone."""
    import smartcontext.indexer as indexer
    import smartcontext.store.postgres as pgstore

    monkeypatch.setattr(pgstore, "FIRST_LOAD_FILES", 1)
    monkeypatch.setattr(indexer, "_BATCH_FILES", 1)  # a transaction a file: the writers interleave
    alone = _open_pg(sample_repo, pg_url, f"{pg_workspace}_alone")
    first, second = _open_pg(sample_repo, pg_url, pg_workspace), _open_pg(sample_repo, pg_url, pg_workspace)
    store_files = pgstore.PostgresStore._store_files
    failed: list[BaseException] = []
    runner: list[threading.Thread] = []
    seen: list[list[str]] = []

    def run_second(path):
        try:
            # A tool's delete of the file the first load is writing (after that write
            # commits), without the foreign keys that cascade it; then a whole index run.
            second.store.delete_files([path])
            runner.append(second.index())
        except BaseException as exc:  # noqa: BLE001 - re-raised by the test below
            failed.append(exc)

    def spy(self, conn, records):
        if self is first.store and not runner:  # the first load's first write, its indexes dropped
            seen.append(_load_indexes(conn))
            runner.append(threading.Thread(target=run_second, args=(records[0][0].path,)))
            runner[0].start()  # waits for this write's lock, then takes turns with the next ones
        return store_files(self, conn, records)

    try:
        alone.index()
        monkeypatch.setattr(pgstore.PostgresStore, "_store_files", spy)
        first.index()
        runner[0].join(60)
        assert not runner[0].is_alive() and not failed, failed
        assert seen == [[]] and runner[1].files_indexed > 0  # it wrote, beside the first load
        with first.store._conn() as conn:
            assert _load_indexes(conn) == _LOAD_INDEXES
            assert conn.execute(_TERM_COUNTS_OFF).fetchone()[0] == 0
            assert conn.execute(
                "SELECT (SELECT rows FROM fts_stats) = count(*), (SELECT tokens FROM fts_stats) = sum(fts_len) FROM items"
            ).fetchone() == (True, True)
        assert first.store.counts() == alone.store.counts()
        assert _keyword_answers(first) == _keyword_answers(alone)
    finally:
        for w in (alone, first, second):
            w.close()
        drop_workspace(pg_url, f"{pg_workspace}_alone")


def test_nearest_uses_the_hnsw_index_and_matches_exact_search(pg, tmp_path):
    s = pg("v")
    sq = open_store(tmp_path / "i.db")
    rng = np.random.default_rng(1)
    quals = [f"f{i}" for i in range(300)]
    for store in (s, sq):
        _put(store, "v.py", quals)
    rowids = [r.rowid for r in s.item_light_rows()]
    vecs = rng.standard_normal((300, 16)).astype(np.float32)
    s.put_vectors("m", rowids, vecs)
    sq.put_vectors("m", [r.rowid for r in sq.item_light_rows()], vecs)
    q = vecs[7] + 0.01
    hits = s.nearest("m", q, 10)
    exact = sq.nearest("m", q, 10)
    assert hits[0][0] == rowids[7] and abs(hits[0][1] - exact[0][1]) < 1e-4
    pg_ids = {s.items_by_rowids([r])[r].item.id for r, _ in hits}
    sq_ids = {sq.items_by_rowids([r])[r].item.id for r, _ in exact}
    assert len(pg_ids & sq_ids) >= 9  # recall@10 of the approximate index


def test_a_question_unlike_every_vector_is_searched_exactly(pg, tmp_path, monkeypatch):
    """The graph loses most true neighbours of a question no closer to the stored vectors
    than a random direction: such a question reads every vector (the same answer as the
    exact search of SQLite), a question near the clusters stays on the graph."""
    s = pg("far")
    sq = open_store(tmp_path / "i.db")
    rng = np.random.default_rng(3)
    quals = [f"f{i}" for i in range(400)]
    for store in (s, sq):
        _put(store, "v.py", quals)
    centres = rng.standard_normal((8, 32)).astype(np.float32)
    vecs = centres[rng.integers(0, 8, 400)] + 0.3 * rng.standard_normal((400, 32)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    for store in (s, sq):
        store.put_vectors("m", [r.rowid for r in store.item_light_rows()], vecs)
    sent = statements_sent(monkeypatch)
    s.nearest("m", centres[0], 10)  # the line is measured once, with the first question
    names = {r.rowid: r.id for r in s.item_light_rows()}
    lite_names = {r.rowid: r.id for r in sq.item_light_rows()}
    near, far = centres[1] + 0.1 * rng.standard_normal(32).astype(np.float32), -centres.sum(axis=0)
    far = far - (centres @ far / (centres ** 2).sum(axis=1)) @ centres  # orthogonal to every centre
    for q, exact in ((near, False), (far, True)):
        sent.clear()
        got = s.nearest("m", q.astype(np.float32), 10)
        assert any(") + 0" in x for x in sent) == exact, sent
        want = sq.nearest("m", q.astype(np.float32), 10)
        if exact:
            assert [names[r] for r, _ in got] == [lite_names[r] for r, _ in want]
            assert np.allclose([x for _, x in got], [x for _, x in want], atol=1e-5)


def test_a_write_commits_without_waiting_for_the_disk_as_sqlite_does(pg_url, pg_workspace):
    """Index writes have the SQLite store's durability (WAL, synchronous=NORMAL): their
    commit does not wait for the WAL flush; other statements keep the session's setting.
    A lean store, so every statement here runs on its one connection."""
    from smartcontext.store.postgres import PostgresStore

    s = PostgresStore(pg_url, workspace=f"{pg_workspace}_durability", lean=True)
    try:
        with s._conn() as conn:
            conn.execute("SET synchronous_commit = on")  # the test server's default is off
        with s.transaction():
            _put(s, "a.py", ["f"])
            with s._conn() as conn:
                assert conn.execute("SHOW synchronous_commit").fetchone() == ("off",)
        with s._conn() as conn:
            assert conn.execute("SHOW synchronous_commit").fetchone() == ("on",)
        assert [r.id for r in s.item_light_rows()] == ["a.py::f"]
    finally:
        s.close()
        drop_workspace(pg_url, f"{pg_workspace}_durability")


def test_copy_sqlite_index_into_postgres_without_reparsing(sample_repo, pg_url, pg_workspace):
    ws = Workspace.open(sample_repo)
    ws.config.embeddings.model = "none"
    ws.index()
    src = ws.store
    rows = src.item_light_rows()
    vecs = np.random.default_rng(0).standard_normal((len(rows), 8)).astype(np.float32)
    src.put_vectors("m", [r.rowid for r in rows], vecs)
    dst = open_store(pg_url, workspace=f"{pg_workspace}_copy")
    try:
        stats = copy_index(src, dst)
        assert stats.files == src.counts()["files"] and stats.vectors == {"m": len(rows)}
        assert dst.counts() == src.counts()
        want = {si.item.id: si for si in src.items_by_rowids([r.rowid for r in rows]).values()}
        got = dst.items_by_ids(list(want))
        assert {k: (v.item, v.fqname, v.sig_tokens, v.content_hash) for k, v in got.items()} == {
            k: (v.item, v.fqname, v.sig_tokens, v.content_hash) for k, v in want.items()}
        assert sorted(dst.all_edges()) == sorted(src.all_edges())
        assert dst.file_states().keys() == src.file_states().keys()
        # vectors arrive under the same items, so nothing is embedded again
        assert dst.items_missing_vectors("m") == []
        s_ids, s_mat = src.load_vectors("m")
        d_ids, d_mat = dst.load_vectors("m")
        s_by = {src.items_by_rowids([int(r)])[int(r)].item.id: s_mat[i] for i, r in enumerate(s_ids)}
        d_by = {dst.items_by_rowids([int(r)])[int(r)].item.id: d_mat[i] for i, r in enumerate(d_ids)}
        assert s_by.keys() == d_by.keys() and all(np.array_equal(s_by[k], d_by[k]) for k in s_by)
        top = lambda st: st.items_by_rowids([st.keyword_search([KeywordTerm("discount")], 1)[0][0]])  # noqa: E731
        assert [v.item.id for v in top(src).values()] == [v.item.id for v in top(dst).values()]
        # copying again replaces, never doubles
        copy_index(src, dst)
        assert dst.counts() == src.counts()
    finally:
        ws.close()
        dst.close()
        drop_workspace(pg_url, f"{pg_workspace}_copy", clear_cache=True)


def test_store_copy_cli_then_the_workspace_answers_from_postgres(sample_repo, pg_url, pg_workspace):
    env = {**os.environ, "SMARTCONTEXT_EMBEDDING_MODEL": "none"}
    env.pop("SMARTCONTEXT_STORE_URL", None)

    def run(*args):
        proc = subprocess.run([sys.executable, "-m", "smartcontext", *args], capture_output=True,
                              text=True, env=env, timeout=180)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    name = f"{pg_workspace}_cli"
    run("index", str(sample_repo))
    # The CLI's defaults (tests kept, demoted): both stores rank with the same BM25.
    local = run("context", "How does AuthService handle login?", str(sample_repo))
    out = json.loads(run("store", "copy", str(sample_repo), pg_url, "--workspace", name, "--json"))
    assert out["files"] == 9 and out["items"] > 20
    url = f"{pg_url}&workspace={name}" if "?" in pg_url else f"{pg_url}?workspace={name}"
    # The readers that parsed the files came with them: indexing again reads nothing (the
    # README too, which a markdown reader of another version would read again).
    assert "0 file(s) parsed" in run("--store", url, "index", str(sample_repo))
    shared = run("--store", url, "context", "How does AuthService handle login?", str(sample_repo))
    assert "AuthService.login" in local or "login(" in local
    assert shared == local  # the same context from the copied index
    status = json.loads(run("--store", url, "status", str(sample_repo), "--json"))
    assert status["files"] == 9 and "sc_" in status["index_path"]
    drop_workspace(pg_url, name)


def test_copy_refuses_a_source_without_an_index(tmp_path):
    with pytest.raises(InvalidArgument, match="no index"):
        copy_store(str(tmp_path), str(tmp_path / "out.db"))


def test_deferred_vector_index_is_built_once_at_the_end(pg, tmp_path):
    # A bulk load into a size with no HNSW index yet: no index while loading, one after,
    # and search answers the same before (exact scan) and after (through the index).
    import psycopg

    from smartcontext.store.pg_schema import SHARED_SCHEMA

    s = pg("bulk")
    with psycopg.connect(s.url, autocommit=True) as conn:  # a server a previous run used
        conn.execute(f"DROP INDEX IF EXISTS {SHARED_SCHEMA}.embedding_cache_hnsw_23")
    quals = [f"f{i}" for i in range(200)]
    _put(s, "b.py", quals)
    rowids = [r.rowid for r in s.item_light_rows()]
    vecs = np.random.default_rng(3).standard_normal((200, 23)).astype(np.float32)  # a size no other test uses

    def indexed() -> bool:
        with psycopg.connect(s.url, autocommit=True) as conn:
            return conn.execute("SELECT 1 FROM pg_indexes WHERE indexname = 'embedding_cache_hnsw_23'").fetchone() is not None

    with s.deferred_vector_index(maintenance_work_mem="64MB"):
        s.put_vectors("m", rowids, vecs)
        assert not indexed()
        during = s.nearest("m", vecs[5], 5)
    assert indexed()
    after = s.nearest("m", vecs[5], 5)
    assert during[0][0] == after[0][0] == rowids[5]


def test_item_sizes_reads_one_kind_at_some_paths_alike_on_both_stores(pg, tmp_path):
    # The narrow read of a chat's messages (chat.rows): the same answer from both backends.
    answers = []
    for store in (pg("sizes"), open_store(tmp_path / "i.db")):
        _put(store, "m.py", ["f", "g"])
        _put(store, "n.py", ["h"])
        store.replace_file(path="o.py", mtime_ns=1, size=1, hash="h", language="python", source="code",
                           module="o", warnings=[],
                           items=[(Item(id="o.py", path="o.py", kind="module", name="o", qualname="o",
                                        start_line=1, end_line=1, text="x", language="python", tokens=7),
                                   "o", 1, "c-o")], edges=[])
        rows = store.item_sizes(["m.py", "o.py"], "function")
        assert [r[0] for r in rows] == sorted(r[0] for r in rows)
        answers.append([(path, qual, tokens) for _, path, qual, tokens in rows])
        assert store.item_sizes(["o.py"], "module")[0][1:] == ("o.py", "o", 7)
        assert store.item_sizes(["nowhere.py"], "function") == []
        # The same rows as columns by path (the first history of a long chat reads these).
        cols = store.item_size_columns(["m.py", "o.py", "nowhere.py"], "function")
        assert list(cols) == ["m.py"] and cols["m.py"] == ([r[0] for r in rows], ["f", "g"], [5, 5])
        if not hasattr(store, "workspace"):
            store.close()
    assert answers[0] == answers[1] == [("m.py", "f", 5), ("m.py", "g", 5)]


def test_a_snapshot_sees_one_commit_and_reads_the_state_once(pg_url, pg):
    """A question in ``snapshot()`` sees the rows and generations of the commit it began
    on, while another store (another process) writes; after it, the new ones."""
    reader = pg("a")
    _put(reader, "m.py", ["f"])
    writer = open_store(pg_url, workspace=reader.workspace)
    try:
        before = reader.generation()
        with reader.snapshot():
            _put(writer, "n.py", ["g"])  # committed meanwhile
            assert reader.generation() == before and reader.counts()["items"] == 1
            assert not reader.items_by_ids(["n.py::g"])
            with reader.snapshot():  # nested: the same view
                assert reader.generation() == before
            # A write of this thread inside goes through and is not seen inside.
            _put(reader, "o.py", ["h"])
            assert not reader.items_by_ids(["o.py::h"])
        assert reader.generation() == before + 2 and reader.counts()["items"] == 3
    finally:
        writer.close()


@pytest.mark.parametrize("lean", [False, True])
def test_a_lean_store_answers_as_a_pooled_one(pg_url, pg, lean):
    """A process asking one question opens connections without a pool; it reads the
    meta rows once and again after its own writes."""
    base = pg("a")
    _put(base, "m.py", ["alpha_beta"])
    store = open_store(pg_url, workspace=base.workspace, lean=lean)
    try:
        terms = [KeywordTerm("alpha_beta", 1)]
        assert store.keyword_search(terms, 5) == base.keyword_search(terms, 5)
        assert store.generation() == base.generation()
        _put(store, "n.py", ["alpha_beta"])  # its own write is seen at once
        assert store.generation() == base.generation() and store.counts()["items"] == 2
        # Two threads at once each get a connection (none waits for the other's).
        results, barrier = [], threading.Barrier(2)

        def read():
            with store.snapshot():
                barrier.wait(timeout=10)
                results.append(len(store.keyword_search(terms, 5)))

        threads = [threading.Thread(target=read) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert results == [2, 2]
    finally:
        store.close()


def test_a_cli_question_on_postgres_starts_no_pool_and_no_typer(sample_repo, pg_url, pg_workspace):
    url = f"{pg_url}{'&' if '?' in pg_url else '?'}workspace={pg_workspace}_cli"
    env = {**os.environ, "SMARTCONTEXT_EMBEDDING_MODEL": "none"}
    env.pop("SMARTCONTEXT_STORE_URL", None)
    probe = (
        "import contextlib, io, json, sys\nfrom smartcontext.cli import main\n"
        f"sys.argv = ['smartcontext', '--store', {url!r}, 'context', 'How does AuthService handle login?', "
        f"{str(sample_repo)!r}]\n"
        "buf = io.StringIO()\n"
        "try:\n    with contextlib.redirect_stdout(buf):\n        main()\n"
        "except SystemExit as exc:\n    assert not exc.code, exc.code\n"
        "print(json.dumps({m: m in sys.modules for m in ('typer', 'psycopg_pool')}))\n"
        "print('AuthService' in buf.getvalue())"
    )
    try:
        for _ in range(2):  # the first builds the index, the second answers from it
            done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env,
                                  timeout=300)
            assert done.returncode == 0, done.stderr
            *_, loaded, answered = done.stdout.strip().splitlines()
            assert json.loads(loaded) == {"typer": False, "psycopg_pool": False}
            assert answered == "True"
        # The folder walk and the catalogue are kept beside the folder, as for SQLite.
        kept = {p.name for p in (sample_repo / ".smartcontext").iterdir()}
        assert "walk.bin" in kept and any(n.startswith("catalogue-") for n in kept)
    finally:
        drop_workspace(pg_url, f"{pg_workspace}_cli")


def test_psycopg_imported_without_metadata_reports_its_installed_versions():
    """store/pg_import.py reads psycopg's versions from the installed distributions' folder
    names: they must be what importlib.metadata says."""
    probe = (
        "import sys\nimport smartcontext.store.postgres\nimport psycopg, psycopg_binary\n"
        "skipped = 'importlib.metadata' not in sys.modules\n"
        "from importlib import metadata\n"
        "print(skipped, psycopg.__version__ == metadata.version('psycopg'), "
        "psycopg_binary.__version__ == metadata.version('psycopg-binary'), psycopg.pq.__impl__)"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "True", "True", "binary"]


def test_a_warm_search_is_one_snapshot_and_one_ranking_with_the_item_rows(sample_repo, pg_url, pg_workspace, monkeypatch):
    """A server's warm keyword search on PostgreSQL is one round trip: BEGIN, the read of
    the state and the ranking with its best items' rows (by a plan kept for the
    connection) in one pipeline, the state checked against the one assumed; the COMMIT
    is sent without waiting, as no statement; the term counts and word forms come from
    the vocabulary held for the generation (they were two more statements, and the item
    rows one or two). Counted where psycopg sends each statement, so one added to the
    path fails here; the answers are SQLite's."""
    import psycopg

    def open_ws(url):
        cfg = Config.load(sample_repo)
        cfg.embeddings.model = "none"
        if url:
            cfg.store.url, cfg.store.workspace = url, pg_workspace
        ws = Workspace.open(sample_repo, cfg)
        ws.index()
        return ws

    begin, state = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", "SELECT key, value FROM meta"
    lite, pg = open_ws(None), open_ws(pg_url)
    try:
        for q in ("apply a discount", "session token"):  # a generation's first questions
            pg.search(q, mode="keyword")
        sent = statements_sent(monkeypatch)
        trips: list[int | None] = []  # the pipeline each statement went in (None: a round trip of its own)
        counted = psycopg.Cursor.execute

        def in_pipeline(self, query, params=None, **kw):
            trips.append(id(self.connection._pipeline) if self.connection._pipeline else None)
            return counted(self, query, params, **kw)

        monkeypatch.setattr(psycopg.Cursor, "execute", in_pipeline)
        for q in ("How does AuthService handle login?", "price with discount", "hash the password",
                  "user accounts"):
            for mode in ("keyword", "hybrid"):
                sent.clear()
                trips.clear()
                hits = pg.search(q, mode=mode)
                what = [s[:60] for s in sent]
                assert "COMMIT" not in sent, what
                # hybrid asks the keyword question again: its ranking is remembered
                ranked = sum("fts_postings" in s for s in sent)
                assert ranked == (mode == "keyword"), (q, mode, what)
                assert not any("fts_terms" in s for s in sent if "fts_postings" not in s), what
                # The ranking brings the rows of its best items (the hits, a note's aliases);
                # a remembered ranking has them read, in at most two statements.
                reads = sum(s.startswith("SELECT i.rowid, i.id") for s in sent)
                assert reads == 0 if ranked else reads <= 2, (q, mode, what)
                # The ranking runs by its kept generic plan: a setting before and after it.
                plan = [s for s in sent if s.startswith("SET LOCAL plan_cache_mode")]
                assert plan == ["SET LOCAL plan_cache_mode = force_generic_plan",
                                "SET LOCAL plan_cache_mode TO DEFAULT"] * ranked, what
                if ranked or reads:  # BEGIN and the state go with the first statement
                    assert sent[:2] == [begin, state], what
                    assert len(sent) == 2 + ranked + reads + len(plan), what
                    first = 2 + len(plan) // 2 + 1  # BEGIN, state, [setting], the statement
                    assert trips[0] is not None and len(set(trips[:first])) == 1, (what, trips)
                    if ranked:
                        assert len(set(trips)) == 1, (what, trips)  # the whole search: one round trip
                else:  # every answer from memory: the state read alone, to check it
                    assert sent == [state], what
                assert [(h.id, h.score) for h in hits] == [(h.id, h.score) for h in lite.search(q, mode=mode)]
    finally:
        lite.close()
        pg.close()


def test_a_question_on_an_assumed_state_that_moved_is_asked_again(sample_repo, pg_url, pg_workspace):
    """A snapshot begun on the last known state finds it moved (another process wrote)
    at its first statement, or at its end when the answer came from memory; the
    question is asked again and answers with the write."""
    def open_ws():
        cfg = Config.load(sample_repo)
        cfg.store.url, cfg.store.workspace, cfg.embeddings.model = pg_url, pg_workspace, "none"
        return Workspace.open(sample_repo, cfg)

    reader, writer = open_ws(), open_ws()
    try:
        reader.index()
        for q in ("zebrafish migration", "zebrafish migration"):  # the second from memory
            assert reader.search(q, mode="keyword") == []
        note = sample_repo / "zebra.md"
        note.write_text("# Zebrafish\n\nZebrafish migration patterns.\n", encoding="utf-8")
        writer.index()  # the reader's last known state is now old
        # answered from memory (a remembered empty ranking) unless the state is checked
        assert [h.path for h in reader.search("zebrafish migration", mode="keyword")] == ["zebra.md"]
        (sample_repo / "zebra2.md").write_text("# Zebra two\n\nZebrafish again.\n", encoding="utf-8")
        writer.index()
        hits = reader.search("zebrafish", mode="keyword")  # a new ranking: checked at its statement
        assert sorted(h.path for h in hits) == ["zebra.md", "zebra2.md"]
        assert reader.context("zebrafish migration patterns").text.count("Zebrafish migration") >= 1
    finally:
        reader.close()
        writer.close()
