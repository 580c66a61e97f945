"""The SQLite index's vectors saved beside it as a mapped file (store/vector_file.py): read in
place when it reflects the index, patched when the index moved on, rebuilt when damaged,
and always equal to what SQLite itself holds."""

from __future__ import annotations

import os

import numpy as np
import pytest

from smartcontext.model import Item
from smartcontext.retrieval.vector import VectorIndex
from smartcontext.store import open_store, vector_file
from smartcontext.store.shared import StoreBase


def _items(path: str, n: int, tag: str):
    items = [Item(id=f"{path}::f{i}", path=path, kind="function", name=f"f{i}", qualname=f"f{i}",
                  start_line=i + 1, end_line=i + 1, text=f"def f{i}(): {tag}") for i in range(n)]
    return [(it, f"{path}.{it.name}", 1, f"{path}-{tag}-{i}") for i, it in enumerate(items)]


def _add(store, path: str, n: int, tag: str, rng) -> list[int]:
    """Index ``n`` items at ``path`` (content ``tag``) and give each a random unit vector."""
    store.replace_file(path=path, mtime_ns=1, size=1, hash=tag, language="python", source="code",
                       module=path, warnings=[], items=_items(path, n, tag), edges=[])
    rowids = [r.rowid for r in store.item_light_rows([path])]
    vecs = rng.standard_normal((len(rowids), 8)).astype(np.float32)
    store.put_vectors("m", rowids, vecs / np.linalg.norm(vecs, axis=1, keepdims=True))
    return rowids


def _from_sqlite(store):
    """What the index holds, read from SQLite alone (the shared implementation)."""
    return StoreBase.load_vectors(store, "m")


def _same(got, want) -> None:
    assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])


@pytest.fixture
def index(tmp_path):
    path = tmp_path / "index.db"
    store = open_store(path)
    rng = np.random.default_rng(7)
    _add(store, "a.py", 30, "one", rng)
    _add(store, "b.py", 20, "one", rng)
    yield path, store, rng
    store.close()


def test_a_new_process_maps_the_saved_vectors_and_searches_them_alike(index):
    path, store, _ = index
    first = VectorIndex(store, "m")  # reads SQLite and saves the file
    saved = vector_file.vectors_path(path)
    assert saved.is_file()
    again = open_store(path)  # as a new process opens the index
    try:
        rowids, matrix = again.load_vectors("m")
        assert not matrix.flags.writeable and not rowids.flags.writeable  # the mapping, not a copy
        _same((rowids, matrix), _from_sqlite(again))
        mapped = VectorIndex(again, "m")
        query = matrix[3] + 0.5 * matrix[11]
        assert mapped.search(query, k=10) == first.search(query, k=10)
        assert mapped.search(query, k=5, allowed=set(rowids[20:].tolist())) == first.search(
            query, k=5, allowed=set(rowids[20:].tolist()))
        assert np.array_equal(mapped.vector_of(int(rowids[7])), matrix[7])
        assert again.vector_models() == {"m": 50}
    finally:
        again.close()


def test_a_changed_index_patches_the_file_to_exactly_what_sqlite_holds(index):
    path, store, rng = index
    store.load_vectors("m")
    before = vector_file.read(vector_file.vectors_path(path), "m")
    assert before is not None
    # The file with the highest row ids goes: SQLite may give its row ids to the next
    # file's items, whose content (and vectors) differ. A row keeps its vector only when
    # its content key matches too.
    b_rows = [r.rowid for r in store.item_light_rows(["b.py"])]
    store.delete_files(["b.py"])
    c_rows = _add(store, "c.py", 25, "two", rng)
    assert set(b_rows) & set(c_rows)  # the case that matters happened
    _add(store, "a.py", 30, "three", rng)  # changed content: new rows and vectors
    patched = store.load_vectors("m")
    _same(patched, _from_sqlite(store))
    after = vector_file.read(vector_file.vectors_path(path), "m")
    assert after is not None and after.state != before.state
    _same((after.rowids, after.matrix), patched)


def test_vectors_added_later_are_seen(index):
    path, store, rng = index
    store.load_vectors("m")
    store.replace_file(path="d.py", mtime_ns=1, size=1, hash="d", language="python", source="code",
                       module="d", warnings=[], items=_items("d.py", 4, "four"), edges=[])
    _same(store.load_vectors("m"), _from_sqlite(store))  # no vectors for d.py yet
    rows = [r.rowid for r in store.item_light_rows(["d.py"])]
    store.put_vectors("m", rows[:2], np.eye(8, dtype=np.float32)[:2])
    got = store.load_vectors("m")
    _same(got, _from_sqlite(store))
    assert set(rows[:2]) <= set(got[0].tolist()) and not set(rows[2:]) & set(got[0].tolist())
    assert store.vector_models() == {"m": 52}


def _put(saved, data: bytes) -> None:
    """``data`` at ``saved`` as another file (a new inode, as a torn copy or a foreign
    file would come): the stamp its writer kept is not that file's."""
    other = saved.with_name("other.tmp")
    other.write_bytes(data)
    os.replace(other, saved)


def test_a_damaged_or_foreign_file_is_read_again_from_sqlite(index):
    path, store, _ = index
    store.load_vectors("m")
    saved = vector_file.vectors_path(path)
    data = bytearray(saved.read_bytes())
    data[-5] ^= 0x40  # one bit of one vector
    _put(saved, bytes(data))
    assert vector_file.read(saved, "m") is None
    _same(store.load_vectors("m"), _from_sqlite(store))
    assert vector_file.read(saved, "m") is not None  # written again
    data = bytearray(saved.read_bytes())
    n = len(store.load_vectors("m")[0])
    data[len(data) - n * (16 + 4 * 8) + 3] ^= 0x01  # one bit of one row id
    _put(saved, bytes(data))
    assert vector_file.read(saved, "m") is None
    _same(store.load_vectors("m"), _from_sqlite(store))
    data = bytearray(saved.read_bytes())
    data[-64:] = bytes(64)  # a zeroed stretch of the matrix
    _put(saved, bytes(data))
    assert vector_file.read(saved, "m") is None
    _same(store.load_vectors("m"), _from_sqlite(store))
    _put(saved, saved.read_bytes()[:-100])  # torn
    _same(store.load_vectors("m"), _from_sqlite(store))
    _put(saved, b"not a vector file")
    _same(store.load_vectors("m"), _from_sqlite(store))
    assert vector_file.read(saved, "other model") is None


def test_the_whole_matrix_is_checked_once_per_file(index, monkeypatch):
    """The writer keeps the stamp of the file it synced, which a reader trusts (no pass
    over the matrix: test_startup's vault question loads no numpy); a file changed in
    place (a new change time) is checked whole again, its damage found."""
    path, store, _ = index
    store.load_vectors("m")
    saved = vector_file.vectors_path(path)
    checked = vector_file.checked_path(saved)
    assert checked.read_text() == vector_file._stamp(os.stat(saved))
    assert vector_file.read(saved, "m") is not None
    data = bytearray(saved.read_bytes())
    data[-5] ^= 0x40
    saved.write_bytes(bytes(data))  # in place: same inode and size
    st = os.stat(saved)
    os.utime(saved, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))  # the clock moved on
    assert vector_file.read(saved, "m") is None
    # A reader whose check passed keeps the stamp only once the file's times are past
    # the racy window.
    _same(store.load_vectors("m"), _from_sqlite(store))
    checked.unlink()
    assert vector_file.read(saved, "m") is not None and not checked.exists()
    monkeypatch.setattr(vector_file, "RACY_NS", 0)
    assert vector_file.read(saved, "m") is not None
    assert checked.read_text() == vector_file._stamp(os.stat(saved))


def test_clearing_the_embedding_cache_is_never_patched_over(index):
    path, store, rng = index
    store.load_vectors("m")
    store.clear_cached_vectors("m")
    rowids, matrix = store.load_vectors("m")
    assert len(rowids) == 0 and store.vector_models() == {}
    new = _add(store, "e.py", 3, "five", rng)
    rowids, _ = store.load_vectors("m")
    assert rowids.tolist() == new
    _same(store.load_vectors("m"), _from_sqlite(store))


def test_an_index_mapped_in_place_still_takes_new_vectors(index):
    path, store, _ = index
    store.load_vectors("m")
    mapped = VectorIndex(open_store(path), "m")
    before = vector_file.vectors_path(path).read_bytes()
    extra = np.eye(8, dtype=np.float32)[:2]
    mapped.extend([10_001, 10_002], extra)  # as a background embedder's batch lands
    assert len(mapped) == 52
    assert mapped.search(extra[1], k=1)[0][0] == 10_002
    assert np.array_equal(mapped.vector_of(10_001), extra[0])
    assert vector_file.vectors_path(path).read_bytes() == before  # the file is never written through


def test_counts_are_saved_by_state(index):
    path, store, rng = index
    assert store.vector_models() == {"m": 50}
    state_file = vector_file.counts_path(path)
    assert state_file.is_file()
    again = open_store(path)
    try:
        assert again.vector_models() == {"m": 50}
        _add(store, "f.py", 2, "six", rng)
        assert again.vector_models() == {"m": 52}  # a new state: counted again
    finally:
        again.close()


def test_the_mapped_file_ranked_in_python_equals_numpys_ranking(index):
    """A process without numpy ranks the mapped rows in Python (``_search_view``); one with
    numpy (a server) ranks them with it: the same hits, scores and order, ties by row."""
    from smartcontext.retrieval.vector import _float32

    path, store, rng = index
    _add(store, "c.py", 6, "same", rng)
    rows = [r.rowid for r in store.item_light_rows(["c.py"])]
    store.put_vectors("m", rows, np.tile(np.eye(8, dtype=np.float32)[:1], (len(rows), 1)))  # equal scores
    store.load_vectors("m")
    again = open_store(path)
    try:
        python, numpy_ranked = VectorIndex(again, "m"), VectorIndex(again, "m")
        assert python._view is not None
        numpy_ranked._in_numpy()
        ids = python.rowids.tolist()
        queries = [rng.standard_normal(8).astype(np.float32) for _ in range(5)]
        queries += [np.eye(8, dtype=np.float32)[0], np.zeros(8, dtype=np.float32)]
        for query in queries:
            for k in (0, 1, 3, 7, 20, 100):
                for allowed in (None, set(ids[::3]), set(rows[1:4]), set()):
                    want = numpy_ranked.search(query, k, allowed)
                    assert python._search_view(_float32(query), k, allowed) == want, (k, allowed)
        assert python.search(queries[-2], 4) == numpy_ranked.search(queries[-2], 4)
        assert [r for r, _ in numpy_ranked.search(queries[-2], 6)] == rows  # ties in row order
    finally:
        again.close()
