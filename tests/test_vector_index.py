"""Semantic search over the vectors of a real store (SQLite and PostgreSQL), by both
indexes: the in-memory matrix and the store's own search (pgvector HNSW, or SQLite's exact
``nearest``)."""

import numpy as np
import pytest

from smartcontext.model import Item
from smartcontext.retrieval.vector import StoreVectorIndex, VectorIndex, vector_index


@pytest.fixture(params=[VectorIndex, StoreVectorIndex], ids=["memory", "store"])
def Index(request):
    return request.param


def _store(make_store, n=5, same_content=False):
    s = make_store()
    items = [Item(id=f"a.py::f{i}", path="a.py", kind="function", name=f"f{i}", qualname=f"f{i}",
                  start_line=i + 1, end_line=i + 1, text=f"def f{i}(): pass") for i in range(n)]
    s.replace_file(path="a.py", mtime_ns=1, size=1, hash="h", language="python", source="code",
                   module="a", warnings=[], items=[(it, f"a.{it.name}", 1, "same" if same_content else f"c{i}")
                                                for i, it in enumerate(items)],
                   edges=[])
    return s, [r.rowid for r in s.item_light_rows()]


def _unit(rows):
    m = np.asarray(rows, dtype=np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def test_search_ranks_by_cosine_and_respects_allowed(make_store, Index):
    s, rowids = _store(make_store)
    vecs = _unit([[1, 0, 0], [0.9, 0.1, 0], [0, 1, 0], [0, 0, 1], [-1, 0, 0]])
    s.put_vectors("m", rowids, vecs)
    index = Index(s, "m")
    assert len(index) == 5 and index.generation == s.generation()
    hits = index.search(np.array([1, 0, 0], dtype=np.float32), k=3)
    assert len(hits) == 3 and [r for r, _ in hits][:2] == rowids[:2]
    assert hits[0][1] > hits[1][1] > hits[2][1] and abs(hits[0][1] - 1.0) < 1e-6
    only = index.search(np.array([1, 0, 0], dtype=np.float32), k=3, allowed={rowids[3], rowids[4]})
    assert [r for r, _ in only] == [rowids[3], rowids[4]]
    assert index.search(np.array([1, 0, 0], dtype=np.float32), allowed=set()) == []


def test_never_compares_vectors_of_another_size_or_model(make_store, Index):
    s, rowids = _store(make_store, 2)
    s.put_vectors("m", rowids, _unit([[1, 0, 0], [0, 1, 0]]))
    assert Index(s, "m").search(np.ones(4, dtype=np.float32)) == []
    other = Index(s, "other-model")
    assert len(other) == 0 and other.search(np.ones(3, dtype=np.float32)) == []


def test_vector_of_and_similar_to(make_store, Index):
    s, rowids = _store(make_store, 3)
    vecs = _unit([[1, 0], [0.8, 0.2], [0, 1]])
    s.put_vectors("m", rowids, vecs)
    index = Index(s, "m")
    assert np.allclose(index.vector_of(rowids[2]), vecs[2]) and index.vector_of(999999) is None
    both = index.vectors_of([rowids[0], rowids[2], 999999])
    assert sorted(both) == [rowids[0], rowids[2]] and np.allclose(both[rowids[0]], vecs[0])
    assert [r for r, _ in index.similar_to(rowids[0], k=1)] == [rowids[1]]
    assert index.similar_to(999999) == []


def test_items_sharing_content_share_a_vector(make_store):
    # both items are embedded from the same text (same content hash): one cache row
    s, rowids = _store(make_store, 2, same_content=True)
    s.cache_vectors("m", [("same", _unit([[0.6, 0.8]])[0])])
    index = VectorIndex(s, "m")
    assert sorted(index.rowids.tolist()) == rowids
    assert s.vector_models() == {"m": 2} and list(s.cached_vectors("m", ["same", "c0"])) == ["same"]


def test_the_store_decides_where_semantic_search_runs(make_store, backend, monkeypatch):
    # Retrieval keeps the matrix in memory and searches it exactly; PostgreSQL searches its
    # HNSW index instead past IN_MEMORY_VECTORS of a model.
    from smartcontext.store import postgres

    s, rowids = _store(make_store, 2)
    s.put_vectors("m", rowids, _unit([[1, 0], [0, 1]]))
    assert type(vector_index(s, "m")) is VectorIndex
    monkeypatch.setattr(postgres, "IN_MEMORY_VECTORS", 1)
    expected = StoreVectorIndex if backend == "postgres" else VectorIndex
    assert type(vector_index(s, "m")) is expected


def test_store_search_with_many_allowed_rows_uses_the_filtered_scan(make_store):
    # More allowed rows than the exact path takes: PostgreSQL filters inside the HNSW scan.
    from smartcontext.store import postgres

    s = make_store()
    n = 40
    items = [Item(id=f"b.py::g{i}", path="b.py", kind="function", name=f"g{i}", qualname=f"g{i}",
                  start_line=i + 1, end_line=i + 1, text=f"def g{i}(): pass") for i in range(n)]
    s.replace_file(path="b.py", mtime_ns=1, size=1, hash="h", language="python", source="code",
                   module="b", warnings=[], items=[(it, f"b.{it.name}", 1, f"d{i}") for i, it in enumerate(items)],
                   edges=[])
    rowids = [r.rowid for r in s.item_light_rows()]
    angles = np.linspace(0, np.pi / 2, n)
    s.put_vectors("m", rowids, np.stack([np.cos(angles), np.sin(angles)], axis=1).astype(np.float32))
    allowed = set(rowids[n // 2:])
    old = postgres.EXACT_AMONG
    postgres.EXACT_AMONG = 4
    try:
        hits = StoreVectorIndex(s, "m").search(np.array([1, 0], dtype=np.float32), k=3, allowed=allowed)
    finally:
        postgres.EXACT_AMONG = old
    assert [r for r, _ in hits] == rowids[n // 2 : n // 2 + 3]
