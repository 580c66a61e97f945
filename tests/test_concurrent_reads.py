"""Writers that do not stall readers, and caches that give their memory back (issue 25).

How long reads take beside a writer is measured by ``bench/load.py --agents``; these tests
check the mechanisms: a question answers while a write is held mid-way, from one snapshot
of the index; a tool's own write does not make the next check re-index the folder; caches
are bounded and emptied when the server goes idle.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from smartcontext.store import sqlite as sqlite_store
from smartcontext.tools import ToolRegistry

WAIT = 60  # seconds: generous, for a loaded machine; a stalled reader never answers


@pytest.fixture(autouse=True)
def _no_embeddings(monkeypatch):
    monkeypatch.setenv("SMARTCONTEXT_EMBEDDING_MODEL", "none")


def make_vault(root: Path, notes: int = 12) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / ".obsidian").mkdir()
    for i in range(notes):
        (root / f"Note {i}.md").write_text(f"# Note {i}\n\nGardening notes about tomatoes, number {i}.\n")
    (root / "Journal.md").write_text("# Journal\n\nA day at the harbour.\n")
    return root


def call_in_thread(reg: ToolRegistry, name: str, args: dict) -> tuple[threading.Thread, list]:
    answers: list = []
    thread = threading.Thread(target=lambda: answers.append(reg.call(name, args)), daemon=True)
    thread.start()
    return thread, answers


@contextmanager
def append_held_mid_reindex(reg: ToolRegistry) -> Iterator[tuple[threading.Thread, list]]:
    """An append_to_file of "A quokka on the pier." to Journal.md, stopped while
    re-indexing the note (this thread holds the store's write) until the block ends."""
    assert reg.call("search", {"query": "tomatoes", "mode": "keyword"})["count"] > 0
    with reg.context.workspace.store.transaction():
        writer, wrote = call_in_thread(reg, "append_to_file",
                                       {"path": "Journal.md", "content": "A quokka on the pier."})
        time.sleep(0.3)  # the append is now waiting to store the note's rows
        assert not wrote
        yield writer, wrote


def test_questions_answer_while_a_write_is_held_mid_way(tmp_path):
    # The writer's transaction is held open by this thread, so append_to_file stops while
    # re-indexing the note it wrote. Questions and vault reads must answer meanwhile, from
    # the index as it was; once the write goes through, they see it.
    reg = ToolRegistry.open(make_vault(tmp_path / "vault"), refresh_interval=-1)
    try:
        with append_held_mid_reindex(reg) as (writer, wrote):
            reads = [
                call_in_thread(reg, "search", {"query": "quokka", "mode": "keyword"}),
                call_in_thread(reg, "context", {"question": "harbour", "max_tokens": 500}),
                call_in_thread(reg, "read_file", {"path": "Journal.md"}),
                call_in_thread(reg, "search_vault", {"query": "harbour"}),
            ]
            for thread, _ in reads:
                thread.join(WAIT)
            answers = [a[0] if a else None for _, a in reads]
            assert all(a is not None and a["success"] for a in answers), answers
            assert not wrote  # they answered while the write was still held
            assert answers[0]["count"] == 0  # the index as it was before the write
            assert "quokka" in answers[2]["content"]  # the file itself is already whole
        writer.join(WAIT)
        assert wrote and wrote[0]["success"], wrote
        found = reg.call("search", {"query": "quokka", "mode": "keyword"})
        assert [r["path"] for r in found["results"]] == ["Journal.md"]
    finally:
        reg.close()


def test_a_write_does_not_wait_for_another_writes_reindexing(tmp_path):
    # The first append stops while re-indexing its note (this thread holds the store's
    # write). Writes hold the vault's lock for their file change only: a preference saved
    # and a second note appended to meanwhile are on disk before the first re-index ends
    # (16 MCP clients saving at once queued each save behind every re-index before them).
    vault = make_vault(tmp_path / "vault")
    reg = ToolRegistry.open(vault, refresh_interval=-1)
    try:
        with append_held_mid_reindex(reg) as (first, wrote_first):
            saving, saved = call_in_thread(reg, "save_preference", {"preference": "Answer in French."})
            saving.join(WAIT)
            assert saved and saved[0]["success"], saved
            second, wrote_second = call_in_thread(reg, "append_to_file",
                                                  {"path": "Note 1.md", "content": "A wombat in the garden."})
            deadline = time.monotonic() + WAIT
            while "wombat" not in (vault / "Note 1.md").read_text() and time.monotonic() < deadline:
                time.sleep(0.05)
            assert "wombat" in (vault / "Note 1.md").read_text()
            assert not wrote_first  # all while the first re-index was still held
        first.join(WAIT)
        second.join(WAIT)
        assert wrote_first and wrote_first[0]["success"], wrote_first
        assert wrote_second and wrote_second[0]["success"], wrote_second
        for word, path in (("quokka", "Journal.md"), ("wombat", "Note 1.md")):
            found = reg.call("search", {"query": word, "mode": "keyword"})
            assert [r["path"] for r in found["results"]] == [path], word
    finally:
        reg.close()


def test_a_write_whose_reindexing_fails_is_saved_with_a_warning(tmp_path, monkeypatch):
    vault = make_vault(tmp_path / "vault")
    reg = ToolRegistry.open(vault, refresh_interval=-1)
    try:
        reg.call("search", {"query": "tomatoes", "mode": "keyword"})

        def broken(paths):
            raise RuntimeError("the index is on a disk that went away")

        monkeypatch.setattr(reg.context, "files_changed", broken)
        answer = reg.call("append_to_file", {"path": "Journal.md", "content": "A quokka on the pier."})
        assert answer["success"], answer
        assert answer["warning"] == (
            "the change is saved but the search index was not updated (the index is on a disk that "
            "went away); run `smartcontext index` to catch up")
        assert "quokka" in (vault / "Journal.md").read_text()
    finally:
        reg.close()


def test_a_nested_deferral_gives_the_outer_one_back():
    from smartcontext.tools.vault import _IndexForVault

    class Context:
        def __init__(self):
            self.updated: list[list[str]] = []

        def files_changed(self, paths):
            self.updated.append(list(paths))

    ctx = Context()
    index = _IndexForVault(ctx)
    outer: list[str] = []
    inner: list[str] = []
    with index.deferring(outer):
        index.update_files(["a.md"])
        with index.deferring(inner):
            index.update_files(["b.md"])
        index.update_files(["c.md"])  # the outer deferral again, not re-indexed at once
    index.update_files(["d.md"])  # no deferral: re-indexed at once
    assert (outer, inner, ctx.updated) == (["a.md", "c.md"], ["b.md"], [["d.md"]])


def test_a_snapshot_does_not_see_a_commit_made_during_it(tmp_path):
    reg = ToolRegistry.open(make_vault(tmp_path / "vault"), refresh_interval=-1)
    try:
        reg.call("search", {"query": "tomatoes"})
        ws = reg.context.workspace
        before = ws.store.generation()
        old_hash = ws.store.file_states(["Journal.md"])["Journal.md"].hash
        with ws.store.snapshot():
            assert ws.store.generation() == before
            other = threading.Thread(target=lambda: ws.update_files(["Journal.md"]))
            (tmp_path / "vault" / "Journal.md").write_text("# Journal\n\nA lighthouse.\n")
            other.start()
            other.join(WAIT)
            assert not other.is_alive()  # the write did not wait for the snapshot
            assert ws.store.generation() == before  # ... and the snapshot did not move
            assert ws.store.file_states(["Journal.md"])["Journal.md"].hash == old_hash
        assert ws.store.generation() > before
        assert ws.store.file_states(["Journal.md"])["Journal.md"].hash != old_hash
    finally:
        reg.close()


def test_a_tools_own_write_is_not_a_change_for_the_next_check(tmp_path):
    # The written note is "racily clean" (written just now, its stamp stored after): its
    # content decides. Before, every check while an agent wrote re-indexed the folder
    # holding every question off.
    reg = ToolRegistry.open(make_vault(tmp_path / "vault"), refresh_interval=-1)
    try:
        reg.call("search", {"query": "tomatoes"})
        ws = reg.context.workspace
        assert not ws.pending_changes()
        assert reg.call("append_to_file", {"path": "Note 3.md", "content": "More basil."})["success"]
        assert reg.call("create_file", {"path": "Fresh.md", "content": "# Fresh\n\nnew\n"})["success"]
        assert not ws.pending_changes()
        # A change the tools did not make is still seen, with the same stamp size and all.
        note = tmp_path / "vault" / "Note 4.md"
        stamp = note.stat()
        note.write_text(note.read_text().replace("tomatoes", "potatoes"))
        os.utime(note, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
        assert note.stat().st_size == stamp.st_size
        assert ws.pending_changes()
    finally:
        reg.close()


def test_a_change_found_by_the_check_reaches_a_later_question(tmp_path):
    # The check runs on a thread of its own; the question that started it answers at once.
    vault = make_vault(tmp_path / "vault")
    reg = ToolRegistry.open(vault, refresh_interval=0.05)
    try:
        reg.call("search", {"query": "tomatoes"})
        time.sleep(2.1)  # past the racy window of the first build
        (vault / "Edited.md").write_text("# Edited\n\nA wombat in the garden.\n")
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            found = reg.call("search", {"query": "wombat", "mode": "keyword"})
            if found["count"]:
                break
            time.sleep(0.1)
        assert found["count"] == 1 and found["results"][0]["path"] == "Edited.md"
    finally:
        reg.close()


def test_idle_reader_connections_are_closed_past_the_limit(tmp_path, monkeypatch):
    reg = ToolRegistry.open(make_vault(tmp_path / "vault"), refresh_interval=-1)
    try:
        reg.call("search", {"query": "tomatoes"})
        store = reg.context.workspace.store
        held = sqlite_store._IDLE_READERS_KEPT + 3
        inside, release = threading.Barrier(held + 1), threading.Event()

        def read() -> None:
            with store.snapshot():
                store.generation()
                inside.wait(WAIT)
                release.wait(WAIT)

        threads = [threading.Thread(target=read, daemon=True) for _ in range(held)]
        for t in threads:
            t.start()
        inside.wait(WAIT)  # every reader holds a connection of its own now
        assert len(store._all_readers) >= held
        release.set()
        for t in threads:
            t.join(WAIT)
        assert len(store._idle_readers) == len(store._all_readers) == sqlite_store._IDLE_READERS_KEPT
    finally:
        reg.close()


def test_full_text_answers_of_older_generations_are_dropped(tmp_path):
    reg = ToolRegistry.open(make_vault(tmp_path / "vault"), refresh_interval=-1)
    try:
        for q in ("tomatoes", "harbour", "gardening"):
            reg.call("search", {"query": q, "mode": "keyword"})
        store = reg.context.workspace.store
        assert len(store._searches) >= 3
        reg.call("append_to_file", {"path": "Journal.md", "content": "Sailing boats."})
        reg.call("search", {"query": "boats", "mode": "keyword"})
        generation = store.generation()
        assert store._searches and all(g == generation for g, _, _ in store._searches.values())
        assert store._search_pairs == sum(n for _, _, n in store._searches.values())
    finally:
        reg.close()


def test_an_idle_server_drops_its_caches_and_answers_as_before(tmp_path):
    reg = ToolRegistry.open(make_vault(tmp_path / "vault"), refresh_interval=-1)
    try:
        before = reg.call("context", {"question": "tomatoes", "max_tokens": 400})
        store = reg.context.workspace.store
        assert store._texts._files and store._searches
        reg.context.release_when_idle(after=0.2)
        deadline = time.monotonic() + WAIT
        while (store._texts._files or store._searches) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not store._texts._files and not store._searches and not store._idle_readers
        # Once per quiet spell: without a call since, nothing is dropped again.
        released = reg.context._released
        time.sleep(1.0)
        assert reg.context._released == released
        after = reg.call("context", {"question": "tomatoes", "max_tokens": 400})
        assert after["text"] == before["text"]
    finally:
        reg.close()
