"""The catalogue follows writes file by file (``Catalogue.updated``) and always equals one
read whole from the store: random edits, creates, deletes and moves, on SQLite and
PostgreSQL, through the store and through a real workspace folder."""

import random

import numpy as np

from smartcontext import Workspace
from smartcontext.config import Config
from smartcontext.model import Edge, Item
from smartcontext.retrieval.catalogue import Catalogue
from smartcontext.store import shared as store_shared
from smartcontext.store import sqlite as sqlite_store

NAMES = ["send", "Session", "parse", "load", "Config", "run", "main", "helper", ""]
DIRS = ["pkg", "pkg/sub", "tests", "notes", "notes/daily", "docs"]
STEMS = ["mod", "util", "test_mod", "index", "Daily Log", "util", "conftest"]


def snapshot(cat: Catalogue) -> dict:
    """Everything a catalogue answers with, in the order it answers (lists keep order)."""
    def lists(m):
        return {k: list(v) for k, v in m.items() if v}

    cat.tagged({"x"})  # loads the tag list
    names = cat.note_names()  # built once, then patched by each write
    return {
        "note_names": {k: list(v) for k, v in names.names.items()}, "note_rows": set(names.rows),
        "note_row_names": dict(names.of_row),
        "generation": cat.generation, "entries": dict(cat.entries), "by_id": dict(cat.by_id),
        "by_name": lists(cat.by_name), "by_fqname": lists(cat.by_fqname),
        "by_path": lists(cat.by_path), "module_of_path": dict(cat.module_of_path),
        "by_stem": lists(cat.by_stem), "children": lists(cat.children),
        "test_paths": set(cat.test_paths), "paths": list(cat.paths), "has_code": cat.has_code,
        "tags": sorted(cat._tags), "notes": {p: cat.note_item(p) for p in cat.paths},
        "links": {p: cat.resolve_link(p.rsplit("/", 1)[-1].rsplit(".", 1)[0], "x.md") for p in cat.paths},
    }


def _file_items(rng: random.Random, path: str) -> tuple[list, str]:
    """A random file's items: a module or note row, nested symbols, tags, and now and
    then an item whose path is another file's (a store must handle it)."""
    is_note = path.endswith(".md")
    module = path.rsplit(".", 1)[0].replace("/", ".")
    top = Item(id=path, path=path, kind="section" if is_note else "module", name=path.rsplit("/", 1)[-1],
               qualname="" if is_note else module, start_line=1, end_line=100, text=f"top {path}",
               language="markdown" if is_note else "python", tokens=3,
               meta={"tags": rng.sample(["a", "a/b", "x", "Project/Alpha"], rng.randint(0, 2))} if is_note else {})
    items = [top] if rng.random() < 0.85 else []
    parents = [top.id] if items else [None]
    for n in range(rng.randint(0, 6)):
        name = rng.choice(NAMES)
        qual = f"{name}{n}" if rng.random() < 0.5 else name
        item_path = path if rng.random() < 0.95 else f"other/{rng.choice(STEMS)}.py"
        item = Item(id=f"{path}::{qual}#{n}", path=item_path, kind="section" if is_note else rng.choice(["class", "function", "method"]),
                    name=name, qualname=qual, start_line=2 + n, end_line=3 + n, text=f"{qual} body {rng.random()}",
                    parent_id=rng.choice(parents + ["elsewhere.py::Base"]), language="markdown" if is_note else "python",
                    tokens=5, meta={"tags": [rng.choice(["a", "x/y", "b"])]} if rng.random() < 0.3 else {})
        items.append(item)
        parents.append(item.id)
    return items, module


def _put(store, rng, path):
    items, module = _file_items(rng, path)
    store.replace_file(
        path=path, mtime_ns=1, size=1, hash=str(rng.random()), language="python", source="code", module=module,
        warnings=[], items=[(it, f"{module}.{it.qualname}", 2, f"h{it.id}{it.text}") for it in items],
        edges=[Edge(it.parent_id, "contains", dst=it.id) for it in items if it.parent_id],
    )


def _random_path(rng):
    return f"{rng.choice(DIRS)}/{rng.choice(STEMS)}{rng.randint(0, 3)}.{rng.choice(['py', 'md'])}"


def test_patched_catalogue_equals_a_full_read_after_random_writes(make_store):
    store = make_store()
    rng = random.Random(7)
    for _ in range(25):
        _put(store, rng, _random_path(rng))
    cat = Catalogue(store)
    snapshot(cat)
    patched = rebuilt = 0
    for step in range(120):
        files = sorted(snapshot(Catalogue(store))["by_path"]) or [_random_path(rng)]
        op = rng.random()
        if op < 0.45:
            _put(store, rng, rng.choice(files))  # edit
        elif op < 0.7:
            _put(store, rng, _random_path(rng))  # create (or edit)
        elif op < 0.85:
            store.delete_files(rng.sample(files, min(len(files), rng.randint(1, 2))))
        else:  # a move: the old file goes, the new one comes
            old = rng.choice(files)
            store.delete_files([old])
            _put(store, rng, _random_path(rng))
        if rng.random() < 0.1:  # a vector write bumps the generation with no file changed
            rows = store.item_light_rows()
            if rows:
                store.put_vectors("m", [rows[0].rowid], np.ones((1, 3), dtype=np.float32))
        if rng.random() < 0.6:  # sometimes several writes come between two questions
            before = snapshot(cat)
            new = cat.updated(store)
            assert snapshot(cat) == before, "the old catalogue changed under its readers"
            patched += new.entries is not cat.entries and new.generation == store.generation()
            cat = new
            fresh = Catalogue(store)
            rebuilt += 1
            assert snapshot(cat) == snapshot(fresh), f"step {step}"
    assert patched > 20 and rebuilt > 50


def test_a_vector_write_keeps_the_catalogue_and_an_edit_reads_one_file(make_store):
    store = make_store()
    rng = random.Random(3)
    for n in range(10):
        _put(store, rng, f"pkg/m{n}.py")
    cat = Catalogue(store)
    g = store.generation()
    store.put_vectors("m", [store.item_light_rows()[0].rowid], np.ones((1, 3), dtype=np.float32))
    assert store.changed_paths(g) == set()
    same = cat.updated(store)
    assert same.entries is cat.entries and same.generation == store.generation()
    _put(store, rng, "pkg/m3.py")
    assert store.changed_paths(same.generation) >= {"pkg/m3.py"}
    assert store.changed_paths(same.generation) <= {"pkg/m3.py"} | {f"other/{s}.py" for s in STEMS}
    assert snapshot(same.updated(store)) == snapshot(Catalogue(store))


def test_a_pruned_change_log_makes_the_catalogue_read_everything(tmp_path, monkeypatch):
    monkeypatch.setattr(store_shared, "CHANGES_KEPT", 4)  # the bookkeeping every backend shares
    monkeypatch.setattr(store_shared, "CHANGES_PRUNE_EVERY", 2)
    store = sqlite_store.SQLiteStore(tmp_path / "i.db")
    rng = random.Random(5)
    _put(store, rng, "pkg/a.py")
    cat = Catalogue(store)
    start = cat.generation
    for n in range(12):
        _put(store, rng, f"pkg/b{n}.py")
    assert store.changed_paths(start) is None  # the log no longer reaches back
    assert store.changed_paths(store.generation() - 2) == {"pkg/b10.py", "pkg/b11.py"}
    new = cat.updated(store)
    assert snapshot(new) == snapshot(Catalogue(store))
    store.close()


def _write_tree(root, rng, n):
    for i in range(n):
        if rng.random() < 0.5:
            body = f"# Note {i}\n\nintro #tag{i % 3} [[note{(i + 1) % n}]]\n\n## Part\n\ntext {rng.random()}\n"
            (root / "notes").mkdir(exist_ok=True)
            (root / "notes" / f"note{i}.md").write_text(body)
        else:
            (root / "pkg").mkdir(exist_ok=True)
            (root / "pkg" / f"mod{i}.py").write_text(
                f"class C{i}:\n    def send(self):\n        return {i}\n\n\ndef helper{i % 4}():\n    pass\n"
            )


def test_workspace_writes_and_refreshes_patch_the_catalogue(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    (root / ".obsidian").mkdir()
    rng = random.Random(11)
    _write_tree(root, rng, 30)
    config = Config.load(root)
    config.embeddings.model = "none"
    ws = Workspace.open(root, config)
    ws.index(embeddings=False)
    cat = ws.catalogue()
    snapshot(cat)
    for step in range(40):
        files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()
                       and p.suffix in (".md", ".py") and ".obsidian" not in p.parts)
        target = rng.choice(files)
        op = rng.random()
        if op < 0.4:
            with open(root / target, "a") as f:
                f.write(f"\n## Added {step}\n\nmore #new{step % 2}\n" if target.endswith(".md")
                        else f"\n\ndef added{step}():\n    pass\n")
            changed = [target]
        elif op < 0.6:
            new = f"notes/new{step}.md"
            (root / new).write_text(f"# New {step}\n\n[[{target}]] #fresh\n")
            changed = [new]
        elif op < 0.8:
            (root / target).unlink()
            changed = [target]
        else:
            dest = target.replace(".", f"_moved{step}.", 1)
            (root / target).rename(root / dest)
            changed = [target, dest]
        if rng.random() < 0.7:
            ws.update_files(changed)  # what a vault tool does after its write
        else:
            ws.refresh()  # what a question does after edits on disk
        new_cat = ws.catalogue()
        assert new_cat.entries is not cat.entries
        assert snapshot(new_cat) == snapshot(Catalogue(ws.store)), f"step {step}"
        cat = new_cat
    ws.close()
