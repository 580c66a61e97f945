"""The refresh before a question (issue 12, start-up): cheap when nothing changed, and
never blind to a change."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from smartcontext.store import sqlite as sqlite_store

ENV = {**os.environ, "SMARTCONTEXT_EMBEDDING_MODEL": "none"}


def run(*args, cwd=None, check=True):
    proc = subprocess.run([sys.executable, "-m", "smartcontext", *args], capture_output=True, text=True,
                          cwd=cwd, env=ENV, timeout=180)
    if check and proc.returncode != 0:
        raise AssertionError(f"exit {proc.returncode}\nstdout: {proc.stdout}\nstderr: {proc.stderr}")
    return proc


def _index_state(root: Path) -> tuple:
    db = root / ".smartcontext" / "index.db"
    wal = db.with_name("index.db-wal")
    return db.stat().st_mtime_ns, db.stat().st_size, wal.stat().st_size if wal.exists() else 0


def test_a_question_on_an_unchanged_folder_writes_nothing(sample_repo):
    """Nothing written means the index file keeps the stamp of its last clean integrity
    check, so the next process skips reading the whole file again."""
    run("index", str(sample_repo))
    time.sleep(2.1)  # past the racy window of the files just indexed
    run("context", "How does AuthService handle login?", str(sample_repo))  # re-stamps racy files once
    before = _index_state(sample_repo)
    for _ in range(2):
        run("context", "How does AuthService handle login?", str(sample_repo))
        run("search", "login", str(sample_repo))
    assert _index_state(sample_repo) == before
    db = sample_repo / ".smartcontext" / "index.db"
    assert (db.with_name("index.db.checked")).read_text() == sqlite_store._file_stamp(db)
    # ... and a change is still seen by the next question.
    with (sample_repo / "shop" / "pricing.py").open("a") as fh:
        fh.write("\n\ndef quokka_ledger_total(rows):\n    return sum(rows)\n")
    out = run("context", "quokka_ledger_total", str(sample_repo), "-t", "1000")
    assert "quokka_ledger_total(rows)" in out.stdout
    assert _index_state(sample_repo) != before


# -- the remembered walk (sources/walk_cache.py) ---------------------------------------------

from smartcontext.sources import walk_cache  # noqa: E402
from smartcontext.sources.discover import DiscoveryOptions, discover  # noqa: E402

OLD = 1_600_000_000  # seconds: a time far before any walk, outside the racy window


def _age(root: Path, seconds: float = OLD) -> None:
    """Every folder and file as if last changed long ago, so a walk's stamps are trusted."""
    for dirpath, dirnames, filenames in os.walk(root):
        for name in [*dirnames, *filenames]:
            os.utime(os.path.join(dirpath, name), (seconds, seconds), follow_symlinks=False)
    os.utime(root, (seconds, seconds))


def _listing(found) -> tuple:
    return sorted((f.path, f.source, f.language, f.mtime_ns, f.size) for f in found.files), dict(found.skipped)


def _reused(root: Path, options: DiscoveryOptions, cache: Path) -> bool:
    key = walk_cache._key(root.resolve(), options)
    return walk_cache._reuse(root.resolve(), options, cache, key) is not None


def _walks_agree(root: Path, options: DiscoveryOptions, cache: Path) -> tuple:
    cached = walk_cache.discover_cached(root, options, cache)
    full = discover(root, options)
    assert _listing(cached) == _listing(full)
    return _listing(full)


def _ignored_and_oversized(root: Path) -> DiscoveryOptions:
    """An ignored folder and a file over the size limit in ``root``, aged past the racy
    window; the options with that limit."""
    (root / ".gitignore").write_text("build/\n")
    (root / "build").mkdir()
    (root / "build" / "gen.py").write_text("x = 1\n")
    (root / "big.py").write_text("# " + "x" * 3000 + "\n")
    _age(root)
    return DiscoveryOptions(max_file_bytes=2000)


def test_an_unchanged_folder_is_not_walked_again_and_answers_alike(sample_repo, tmp_path):
    options, cache = _ignored_and_oversized(sample_repo), tmp_path / "walk.bin"
    first = _walks_agree(sample_repo, options, cache)
    assert _reused(sample_repo, options, cache)
    assert _walks_agree(sample_repo, options, cache) == first
    assert "build/gen.py" not in {p for p, *_ in first[0]} and first[1].get("too large") == 1
    # Another configuration is another walk.
    assert not _reused(sample_repo, DiscoveryOptions(max_file_bytes=5000), cache)


def test_each_kind_of_change_is_seen_through_the_cache(sample_repo, tmp_path):
    options, cache = _ignored_and_oversized(sample_repo), tmp_path / "walk.bin"
    _walks_agree(sample_repo, options, cache)

    def after(change) -> set[str]:
        """The files found after ``change``, which the saved walk must notice."""
        assert _reused(sample_repo, options, cache)
        change()
        assert not _reused(sample_repo, options, cache)
        return {p for p, *_ in _walks_agree(sample_repo, options, cache)[0]}

    def touch(path: Path, when: int) -> None:
        os.utime(path, (when, when))

    # A new file in a subfolder (aged again, so only the folder's stamp tells).
    assert "shop/refunds.py" in after(lambda: (
        (sample_repo / "shop" / "refunds.py").write_text("def refund():\n    pass\n"), _age(sample_repo, OLD + 10)))
    assert "shop/refunds.py" not in after(lambda: (
        (sample_repo / "shop" / "refunds.py").unlink(), _age(sample_repo, OLD + 20)))
    # A .gitignore edited in place: its own stamp changes, its folder's does not.
    assert "shop/db.py" not in after(lambda: (
        (sample_repo / ".gitignore").write_text("build/\nshop/db.py\n"), touch(sample_repo / ".gitignore", OLD + 30)))
    # A file that shrinks under the size limit, in place.
    assert "big.py" in after(lambda: (
        (sample_repo / "big.py").write_text("small = 1\n"), touch(sample_repo / "big.py", OLD + 40)))
    # git's own exclude file.
    (sample_repo / ".git" / "info").mkdir(parents=True)
    _age(sample_repo, OLD + 50)
    _walks_agree(sample_repo, options, cache)
    assert "shop/auth.py" not in after(lambda: (
        (sample_repo / ".git" / "info" / "exclude").write_text("shop/auth.py\n"),
        touch(sample_repo / ".git" / "info" / "exclude", OLD + 60)))


def test_files_unpacked_with_their_folders_times_put_back_are_seen(sample_repo, tmp_path):
    """`tar -x` and `rsync -t` set a folder's modification time back to the archive's after
    adding files to it; its change time still moves, and the saved walk is not reused."""
    options, cache = DiscoveryOptions(), tmp_path / "walk.bin"
    _age(sample_repo)
    _walks_agree(sample_repo, options, cache)
    assert _reused(sample_repo, options, cache)
    folder = sample_repo / "shop"
    old = os.stat(folder)
    (folder / "unpacked.py").write_text("def unpacked():\n    pass\n")
    os.utime(folder / "unpacked.py", (OLD, OLD))
    os.utime(folder, ns=(old.st_atime_ns, old.st_mtime_ns))
    assert os.stat(folder).st_mtime_ns == old.st_mtime_ns
    assert not _reused(sample_repo, options, cache)
    assert "shop/unpacked.py" in {p for p, *_ in _walks_agree(sample_repo, options, cache)[0]}


def test_a_recent_or_damaged_record_is_never_trusted(sample_repo, tmp_path):
    options, cache = DiscoveryOptions(), tmp_path / "walk.bin"
    (sample_repo / "shop" / "fresh.py").write_text("def fresh():\n    pass\n")  # changed just now
    _walks_agree(sample_repo, options, cache)
    assert not _reused(sample_repo, options, cache)  # a change in the same clock tick could hide
    _age(sample_repo)
    _walks_agree(sample_repo, options, cache)
    assert _reused(sample_repo, options, cache)
    data = bytearray(cache.read_bytes())
    data[-5] ^= 0xFF
    cache.write_bytes(bytes(data))
    assert not _reused(sample_repo, options, cache)
    _walks_agree(sample_repo, options, cache)  # walked again and saved whole
    assert _reused(sample_repo, options, cache)


def test_questions_see_files_added_removed_and_renamed(sample_repo):
    (sample_repo / ".git").mkdir()
    run("index", str(sample_repo))
    _age(sample_repo)
    run("search", "login", cwd=sample_repo)  # a walk recorded with trusted stamps
    assert (sample_repo / ".smartcontext" / "walk.bin").is_file()
    (sample_repo / "shop" / "wombat.py").write_text("def wombat_burrow_depth():\n    return 3\n")
    (sample_repo / "shop" / "pricing.py").rename(sample_repo / "shop" / "costs.py")
    found = json.loads(run("search", "wombat_burrow_depth", "--json", cwd=sample_repo).stdout)
    assert found["results"][0]["path"] == "shop/wombat.py"
    moved = json.loads(run("search", "apply_discount", "--json", cwd=sample_repo).stdout)
    assert {r["path"] for r in moved["results"]} >= {"shop/costs.py"}
    assert "shop/pricing.py" not in {r["path"] for r in moved["results"]}


def test_a_file_left_out_for_its_content_is_not_read_again_until_it_changes(sample_repo):
    from smartcontext.workspace import Workspace

    gen = sample_repo / "shop" / "schema_pb.py"
    gen.write_text("# @generated by protoc. DO NOT EDIT.\ndef generated_marker_fn():\n    pass\n")
    _age(sample_repo)
    with Workspace.open(sample_repo) as ws:
        first = ws.index(embeddings=False)
        assert first.skipped.get("generated") == 1
        assert not ws.pending_changes()  # a skipped file is not a pending change
        again = ws.refresh()
        assert again.skipped.get("generated") == 1 and again.files_indexed == 0
        assert not ws.search("generated_marker_fn", mode="keyword")
    gen.write_text("def generated_marker_fn():\n    return 'hand written now'\n")
    os.utime(gen, (OLD + 10, OLD + 10))
    with Workspace.open(sample_repo) as ws:
        assert ws.pending_changes()
        assert ws.refresh().files_indexed == 1
        assert ws.search("generated_marker_fn", mode="keyword")[0].path == "shop/schema_pb.py"


def test_an_edit_that_keeps_size_and_mtime_is_seen(sample_repo):
    """Size and mtime restored after an edit (``touch -r``, a copy keeping times): the
    inode's ctime still moved, so the file is hashed again and its new text is found."""
    path = sample_repo / "shop" / "auth.py"
    old = os.stat(path)
    os.utime(path, ns=(old.st_atime_ns, old.st_mtime_ns - 3600 * 10**9))  # an hour old
    run("index", str(sample_repo))
    before = os.stat(path)
    text = path.read_text()
    assert "login" in text
    path.write_text(text.replace("login", "logon", 1))  # the same size
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(path)
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    found = run("search", "logon", str(sample_repo), "--json", check=False)
    assert found.returncode == 0, found.stderr
    assert any(r["path"] == "shop/auth.py" for r in json.loads(found.stdout)["results"])


def test_a_walk_saved_by_one_way_of_starting_is_reused_by_another(tmp_path, monkeypatch):
    """`python -m smartcontext`, `python -c` and a script order sys.path differently; the
    saved walk rests on the same folders either way."""
    root = tmp_path / "repo"
    root.mkdir()
    (root / "a.py").write_text("def a():\n    return 1\n")
    _age(root)
    options = DiscoveryOptions()
    cache = tmp_path / "walk.bin"
    walk_cache.discover_cached(root, options, cache)
    assert _reused(root, options, cache)
    folders = [p for p in sys.path[1:] if p and os.path.isdir(p)]
    assert len(folders) >= 2
    monkeypatch.setattr(sys, "path", [sys.path[0], *reversed(sys.path[1:])])
    assert _reused(root, options, cache)


# -- the refresh that found nothing to do (sources/unchanged.py) -------------------------------

import sqlite3  # noqa: E402

from smartcontext.workspace import UNCHANGED_FILE, Workspace  # noqa: E402


def _stored_size(root: Path, rel: str) -> int:
    with sqlite3.connect(root / ".smartcontext" / "index.db") as db:
        return db.execute("SELECT size FROM files WHERE path=?", (rel,)).fetchone()[0]


def _skew_stored_size(root: Path, rel: str) -> None:
    """A stamp in the index that differs from the file, written behind the store's back
    (no generation moved): a refresh that compares rows re-stamps it, one that trusts
    the saved stamps leaves it."""
    with sqlite3.connect(root / ".smartcontext" / "index.db") as db:
        db.execute("UPDATE files SET size = size + 1 WHERE path=?", (rel,))


def _quiet(root: Path) -> None:
    """An index whose files are past the racy window, and a refresh that found nothing."""
    with Workspace.open(root) as ws:
        ws.index(embeddings=False)
        _age(root)  # the index folder too, so the walk is saved with trusted stamps
        ws.refresh()  # re-stamps what was aged (its ctime moved) and moves the racy window
        assert ws.refresh().files_indexed == 0
    assert (root / ".smartcontext" / UNCHANGED_FILE).is_file()


def test_a_refresh_that_found_nothing_spares_the_next_one_the_rows(sample_repo):
    _quiet(sample_repo)
    size = _stored_size(sample_repo, "shop/db.py")
    _skew_stored_size(sample_repo, "shop/db.py")
    with Workspace.open(sample_repo) as ws:
        again = ws.refresh()
        assert (again.files_indexed, again.files_deleted) == (0, 0)
        assert again.files_unchanged == again.files_seen > 0 and again.items > 0
        assert not ws.pending_changes()
    assert _stored_size(sample_repo, "shop/db.py") == size + 1  # the rows were not read
    # A damaged record is not trusted: the rows are compared (and the stamp put right).
    saved = sample_repo / ".smartcontext" / UNCHANGED_FILE
    data = bytearray(saved.read_bytes())
    data[-3] ^= 0xFF
    saved.write_bytes(bytes(data))
    with Workspace.open(sample_repo) as ws:
        assert ws.refresh().files_indexed == 0
    assert _stored_size(sample_repo, "shop/db.py") == size


def test_an_edit_in_place_that_keeps_size_and_mtime_is_seen_past_the_saved_stamps(sample_repo):
    """No folder changes and size and mtime are put back: only the file's ctime moved."""
    _quiet(sample_repo)
    path = sample_repo / "shop" / "auth.py"
    before = os.stat(path)
    text = path.read_text()
    path.write_text(text.replace("login", "logon", 1))  # the same size
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(path)
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    assert os.stat(path.parent).st_mtime_ns == os.stat(path.parent).st_mtime_ns
    with Workspace.open(sample_repo) as ws:
        assert ws.pending_changes()
    found = run("search", "logon", str(sample_repo), "--json", check=False)  # a whole process, as a user's
    assert found.returncode == 0, found.stderr
    assert any(r["path"] == "shop/auth.py" for r in json.loads(found.stdout)["results"])


def test_each_change_after_a_quiet_refresh_is_seen(sample_repo):
    _quiet(sample_repo)
    # An edit with a new mtime.
    (sample_repo / "shop" / "pricing.py").write_text("def numbat_tally():\n    return 7\n")
    with Workspace.open(sample_repo) as ws:
        assert ws.refresh().files_indexed == 1
        assert ws.search("numbat_tally", mode="keyword")[0].path == "shop/pricing.py"
    # A file added in a folder, then one removed (aged, so only the folder's stamp tells).
    _quiet(sample_repo)
    (sample_repo / "shop" / "bilby.py").write_text("def bilby_count():\n    return 2\n")
    _age(sample_repo, OLD + 10)
    with Workspace.open(sample_repo) as ws:
        assert ws.refresh().files_indexed == 1
    _quiet(sample_repo)
    (sample_repo / "shop" / "bilby.py").unlink()
    _age(sample_repo, OLD + 20)
    with Workspace.open(sample_repo) as ws:
        assert ws.refresh().files_deleted == 1
        assert not ws.search("bilby_count", mode="keyword")


def test_another_writer_of_the_index_makes_the_saved_stamps_stale(sample_repo):
    """Rows changed by another process while the files stayed as they were (here a file's
    rows removed) move the index's generation: the next refresh compares the rows again."""
    _quiet(sample_repo)
    with Workspace.open(sample_repo) as writer:
        assert writer.store.delete_files(["shop/db.py"]) == 1
    with Workspace.open(sample_repo) as ws:
        assert ws.pending_changes()
        assert ws.refresh().files_indexed == 1
        assert ws.search("Database", mode="keyword")[0].path == "shop/db.py"
