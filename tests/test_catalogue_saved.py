"""The catalogue saved beside the index (issue 12): a new process opens it instead of
reading the whole index, brings it up to date through the change log, and never trusts
a damaged, foreign or stale file."""

import marshal
import random
import subprocess
import sys
import zlib

from smartcontext import Workspace
from smartcontext.config import Config
from smartcontext.retrieval import catalogue_file
from smartcontext.retrieval.catalogue import _SAVED_MAGIC, Catalogue
from smartcontext.store import sqlite as sqlite_store
from smartcontext.workspace import CATALOGUE_FILE
from test_catalogue_update import _put, _random_path, snapshot


def _workspace(root):
    config = Config.load(root)
    config.embeddings.model = "none"
    return Workspace.open(root, config)


def _vault(tmp_path, n=12):
    root = tmp_path / "v"
    (root / ".obsidian").mkdir(parents=True)
    for i in range(n):
        (root / f"note{i}.md").write_text(f"# Note {i}\n\nabout #topic{i % 3} and [[note{(i + 1) % n}]]\n")
    (root / "pkg").mkdir()
    (root / "pkg" / "mod.py").write_text("class Session:\n    def send(self):\n        return 1\n")
    ws = _workspace(root)
    ws.index(embeddings=False)
    return root, ws


def test_a_new_process_opens_the_saved_catalogue_unchanged(tmp_path):
    root, ws = _vault(tmp_path)
    first = ws.catalogue()
    saved = ws.index_dir / CATALOGUE_FILE
    assert saved.is_file()
    stamp = saved.stat().st_mtime_ns
    ws.close()
    again = _workspace(root)
    cat = again.catalogue()
    assert snapshot(cat) == snapshot(first) == snapshot(Catalogue(again.store))
    assert saved.stat().st_mtime_ns == stamp  # up to date: not written again
    again.close()


def test_a_stale_saved_catalogue_is_patched_and_saved_again(tmp_path):
    root, ws = _vault(tmp_path)
    ws.catalogue()
    saved = ws.index_dir / CATALOGUE_FILE
    old_generation = catalogue_file.open_saved(saved).head["generation"]
    (root / "note3.md").write_text("# Changed\n\nnew words #fresh\n")
    (root / "note4.md").unlink()
    ws.update_files(["note3.md", "note4.md"])  # the catalogue of this process is not asked
    ws.close()
    again = _workspace(root)
    cat = again.catalogue()
    assert cat.generation > old_generation
    assert snapshot(cat) == snapshot(Catalogue(again.store))
    assert catalogue_file.open_saved(saved).head["generation"] == cat.generation
    again.close()


def test_a_damaged_or_foreign_catalogue_file_is_ignored_and_rebuilt(tmp_path):
    root, ws = _vault(tmp_path)
    truth = snapshot(ws.catalogue())
    saved = ws.index_dir / CATALOGUE_FILE
    good = saved.read_bytes()
    ws.close()
    payload = marshal.dumps({"index_id": "x"})
    forged_shape = marshal.dumps([1, 2, 3])
    damaged = [
        good[: len(good) // 2],  # torn write
        good[:-10] + b"\x00" * 10,  # flipped bytes: the CRC disagrees
        b"not a catalogue",
        _SAVED_MAGIC + zlib.crc32(payload).to_bytes(4, "big") + payload,  # another index
        _SAVED_MAGIC + zlib.crc32(forged_shape).to_bytes(4, "big") + forged_shape,
    ]
    for bad in damaged:
        saved.write_bytes(bad)
        again = _workspace(root)
        assert snapshot(again.catalogue()) == truth
        assert saved.read_bytes() != bad  # rebuilt and saved
        again.close()


def test_a_rebuilt_index_ignores_the_old_saved_catalogue(tmp_path):
    root, ws = _vault(tmp_path)
    ws.catalogue()
    ws.index(embeddings=False, rebuild=True)  # a new index file: generations start again
    (root / "extra.md").write_text("# Extra\n\nonly in the new index\n")
    ws.index(embeddings=False)
    ws.close()
    again = _workspace(root)
    assert "extra.md" in again.catalogue().by_path
    assert snapshot(again.catalogue()) == snapshot(Catalogue(again.store))
    again.close()


def test_cli_questions_share_the_saved_catalogue(tmp_path):
    root, ws = _vault(tmp_path)
    ws.close()
    saved = root / ".smartcontext" / CATALOGUE_FILE
    run = [sys.executable, "-m", "smartcontext", "context", "Session send", str(root), "--format", "json"]
    first = subprocess.run(run, capture_output=True, text=True)
    assert first.returncode == 0, first.stderr
    stamp = saved.stat().st_mtime_ns
    second = subprocess.run(run, capture_output=True, text=True)
    assert second.returncode == 0 and second.stdout == first.stdout
    assert saved.stat().st_mtime_ns == stamp


def test_a_clean_check_is_remembered_and_a_damaged_file_is_checked_again(tmp_path):
    root, ws = _vault(tmp_path)
    ws.close()
    db = root / ".smartcontext" / "index.db"
    stamp = db.with_name("index.db.checked")
    sqlite_store.SQLiteStore(db).close()
    assert stamp.is_file() and stamp.read_text() == sqlite_store._file_stamp(db)
    clean = stamp.read_text()
    data = bytearray(db.read_bytes())
    pages = len(data) // 4096
    for page in range(1, pages):  # every b-tree page but the first: quick_check must object
        data[4096 * page: 4096 * page + 64] = b"\xde\xad" * 32
    db.write_bytes(bytes(data))
    try:
        sqlite_store.SQLiteStore(db).close()
    except Exception:
        pass  # damage found while opening is fine too
    assert stamp.read_text() == clean != sqlite_store._file_stamp(db)  # never recorded as clean


def test_removing_the_index_removes_what_was_derived_from_it(tmp_path):
    root, ws = _vault(tmp_path)
    ws.catalogue()
    ws.close()
    folder = root / ".smartcontext"
    (folder / "preferences.md").write_text("- keep me\n")
    again = _workspace(root)
    again.store  # opening a settled index checks it and remembers the clean check
    assert (folder / CATALOGUE_FILE).is_file() and (folder / "index.db.checked").is_file()
    again.remove_index()
    assert not (folder / CATALOGUE_FILE).exists() and not (folder / "index.db.checked").exists()
    assert not (folder / "index.db").exists() and (folder / "preferences.md").is_file()


def test_a_lazily_read_catalogue_answers_as_a_full_read_and_is_patched_in_place(tmp_path):
    """A one-question process reads the saved maps a key at a time; after random writes
    it patches what it read and saves only the buckets the patch changed."""
    store = sqlite_store.SQLiteStore(tmp_path / "i.db")
    rng = random.Random(11)
    for _ in range(30):
        _put(store, rng, _random_path(rng))
    saved = tmp_path / CATALOGUE_FILE
    Catalogue.open(store, saved, "idx")
    for step in range(40):
        files = sorted(Catalogue(store).by_path) or [_random_path(rng)]
        if rng.random() < 0.7:
            _put(store, rng, rng.choice(files))
        else:
            store.delete_files([rng.choice(files)])
        lazy = Catalogue.open(store, saved, "idx", lazy=True)
        full = Catalogue(store)
        # Some keys first (the question's lookups), present and absent ones: each must
        # answer as the full read does, before and after the rest is read.
        for rowid in rng.sample(sorted(full.entries), 5) + [10**6]:
            assert lazy.entries.get(rowid) == full.entries.get(rowid)
            assert (rowid in lazy.entries) == (rowid in full.entries)
        for name in rng.sample(sorted(full.by_name), 3) + ["no-such-name"]:
            assert lazy.by_name[name] == full.by_name[name], step
        assert snapshot(lazy) == snapshot(full), step
        assert catalogue_file.open_saved(saved).head["generation"] == store.generation()
        reopened = Catalogue.open(store, saved, "idx", lazy=True)
        assert snapshot(reopened) == snapshot(full), step
    store.close()


def test_a_damaged_bucket_found_mid_question_reads_the_index_instead(tmp_path):
    store = sqlite_store.SQLiteStore(tmp_path / "i.db")
    rng = random.Random(5)
    for n in range(8):
        _put(store, rng, f"pkg/m{n}.py")
    saved = tmp_path / CATALOGUE_FILE
    truth = snapshot(Catalogue(store))
    Catalogue.open(store, saved, "idx")
    data = bytearray(saved.read_bytes())
    data[-40:] = b"\xff" * 40  # the last buckets (of the children map)
    saved.write_bytes(bytes(data))
    lazy = Catalogue.open(store, saved, "idx", lazy=True)  # the head is sound: opened
    assert lazy.entries.get(1) == Catalogue(store).entries.get(1)
    assert snapshot(lazy) == truth  # reading every bucket meets the damage: a full read
    assert saved.read_bytes() != bytes(data)  # and a good file in place of the damaged one
    assert snapshot(Catalogue.open(store, saved, "idx", lazy=True)) == truth
    store.close()


def test_an_index_run_that_changed_files_leaves_the_catalogue_saved_for_the_next_question(tmp_path):
    root, ws = _vault(tmp_path)
    saved = ws.index_dir / CATALOGUE_FILE
    assert saved.is_file()  # saved by `index` itself, not by a first question
    head = catalogue_file.open_saved(saved).head
    assert head["generation"] == ws.store.generation()
    ws.close()
    (root / "note5.md").write_text("# Rewritten\n\nother words\n")
    again = _workspace(root)
    again.index(embeddings=False)
    assert catalogue_file.open_saved(saved).head["generation"] == again.store.generation()
    assert snapshot(again.catalogue()) == snapshot(Catalogue(again.store))
    stamp = saved.stat().st_mtime_ns
    again.index(embeddings=False)  # nothing changed: nothing written
    assert saved.stat().st_mtime_ns == stamp
    again.close()
