"""The store contract: a ``Store`` is an item store, a keyword index and a vector index;
both real backends are each of them, and what they do alike is written once
(``store/shared.StoreBase``) and answers alike on each backend."""

import inspect

import pytest

from smartcontext.model import Edge, Item
from smartcontext.store import ItemStore, KeywordIndex, Store, VectorIndex
from smartcontext.store import shared
from smartcontext.store.postgres import PostgresStore
from smartcontext.store.shared import StoreBase
from smartcontext.store.sqlite import SQLiteStore


def _members(protocol: type) -> set[str]:
    own = {n for n in vars(protocol) if not n.startswith("_")}
    return own | set(vars(protocol).get("__annotations__", {}))


def _note(path: str, links: list[str] = ()) -> tuple[Item, list[Edge]]:
    item = Item(id=path, path=path, kind="note", name=path, qualname=path, start_line=1,
                end_line=1, text=f"note {path}", language="markdown", tokens=3)
    return item, [Edge(path, "links_to", dst_name=target) for target in links]


def _put(store, path: str, links: list[str] = ()) -> None:
    item, edges = _note(path, links)
    store.replace_file(path=path, mtime_ns=1, size=1, hash=path, language="markdown",
                       source="vault", module="", warnings=[],
                       items=[(item, path, 1, "c-" + path)], edges=edges)


def test_each_backend_is_each_narrow_interface(make_store):
    s = make_store()
    for protocol in (ItemStore, KeywordIndex, VectorIndex, Store):
        assert isinstance(s, protocol), protocol.__name__


def test_a_store_is_the_three_narrow_interfaces_and_nothing_else_but_counts():
    parts = [_members(p) for p in (ItemStore, KeywordIndex, VectorIndex)]
    assert all(parts) and not (parts[0] & parts[1] or parts[0] & parts[2] or parts[1] & parts[2])
    assert _members(Store) == {"counts"}  # the one question that spans items and vectors
    assert {"keyword_search", "doc_freqs"} <= parts[1] and {"nearest", "put_vectors"} <= parts[2]


@pytest.mark.parametrize("backend_class", [SQLiteStore, PostgresStore])
def test_the_shared_logic_is_the_bases_in_every_backend(backend_class):
    shared_methods = [
        "get_meta", "generation", "vector_generation", "changed_paths", "counts", "item_count",
        "vector_models", "load_vectors", "put_vectors", "cache_vectors", "clear_cached_vectors", "links_ending",
        "file_records",
    ]
    # A backend may layer a cache over a shared method, reading through the base's: SQLite
    # keeps the vectors in a mapped file beside the index (store/vector_file.py);
    # PostgreSQL fills the base's per-generation counts in one statement.
    layered = {SQLiteStore: {"load_vectors"}, PostgresStore: {"counts"}}.get(backend_class, set())
    for name in shared_methods:
        # SQLite wraps every query method in its error translation (functools.wraps)
        method = inspect.unwrap(getattr(backend_class, name))
        if name in layered:
            assert f"super().{name}(" in inspect.getsource(method), name
        else:
            assert method is getattr(StoreBase, name), name
    assert issubclass(backend_class, StoreBase) and not backend_class.__abstractmethods__


def test_the_change_log_answers_and_forgets_alike(make_store, monkeypatch):
    # pruned every 4 generations, keeping 4: the shared bookkeeping over each backend's rows
    monkeypatch.setattr(shared, "CHANGES_PRUNE_EVERY", 4)
    monkeypatch.setattr(shared, "CHANGES_KEPT", 4)
    s = make_store()
    start = s.generation()
    assert s.changed_paths(start) == set()
    _put(s, "a.md")
    _put(s, "b.md")
    assert s.changed_paths(start) == {"a.md", "b.md"}
    assert s.changed_paths(start + 1) == {"b.md"}
    s.put_vectors("m", [s.items_by_ids(["a.md"])["a.md"].rowid], [[1.0, 0.0]])
    assert s.changed_paths(start + 1) == {"b.md"}  # vectors are not changes
    for n in range(8):
        _put(s, f"n{n}.md")
    now = s.generation()
    assert now == start + 10
    assert s.changed_paths(now - 2) == {"n6.md", "n7.md"}
    assert s.changed_paths(start) is None  # pruned: the caller reads everything again
    s.delete_files(["n7.md"])
    assert s.changed_paths(now) == {"n7.md"}


def test_links_ending_matches_case_and_letters_outside_ascii_alike(make_store):
    s = make_store()
    _put(s, "notes/Café.md", links=["Topics/Über"])
    _put(s, "notes/cafe.md", links=["uber", "Readme"])
    _put(s, "README.md")
    assert sorted(s.links_ending("readme")[0]) == ["README.md"]
    assert s.links_ending("readme")[1] == [("notes/cafe.md", "Readme")]
    # é matches any run of characters: a superset, for the caller to narrow
    assert sorted(s.links_ending("café")[0]) == ["notes/Café.md", "notes/cafe.md"]
    paths, links = s.links_ending("über")
    assert paths == [] and sorted(links) == [("notes/Café.md", "Topics/Über"), ("notes/cafe.md", "uber")]


def test_counts_come_from_one_generation(make_store):
    s = make_store()
    _put(s, "a.md", links=["b"])
    assert s.counts() == {"files": 1, "items": 1, "edges": 1, "vectors": 0}
    _put(s, "b.md")
    s.put_vectors("m", [s.items_by_ids(["b.md"])["b.md"].rowid], [[0.0, 1.0]])
    assert s.counts() == {"files": 2, "items": 2, "edges": 1, "vectors": 1}
    assert s.item_count() == 2 and s.clear_cached_vectors("m") == 1
    assert s.counts()["vectors"] == 0
