"""A long chat's parse kept beside the index (``sources.chat_cache``): a new process reads it
instead of parsing the file, and only while the file holds the very bytes it was parsed
from: an edit (even one of the same size and time), an append or a damaged cache file
gets the file parsed again. Real chat files in temp folders; the size threshold lowered."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from smartcontext.chat import files
from smartcontext.chat.files import ChatFile
from smartcontext.sources import chat_cache as filecache
from smartcontext.workspace import Workspace


def _forget_process_caches() -> None:
    """What a new process starts with: nothing parsed in memory."""
    files._parsed.clear()
    files._combined.clear()
    files._segments_read.clear()


@pytest.fixture
def chat_folder(tmp_path, monkeypatch):
    monkeypatch.setattr(filecache, "CACHE_FROM_BYTES", 1)
    monkeypatch.setenv("SMARTCONTEXT_EMBEDDING_MODEL", "none")
    (tmp_path / ".smartcontext").mkdir()
    memory = tmp_path / ".memory"
    memory.mkdir()
    msgs = [{"id": f"m{n}", "role": "user", "content": f"message {n} about ferries", "timestamp": f"2026-01-0{1 + n % 9}"}
            for n in range(20)]
    msgs[3]["lang"] = "en"  # a key this layer does not name: kept
    (memory / "long.json").write_text(json.dumps({"messages": msgs, "topics": [{"label": "Ferries", "count": 20}],
                                                  "title": "Trip"}))
    yield tmp_path
    _forget_process_caches()


def _cache(root):
    return root / ".smartcontext" / "chats" / "long.json.parsed"


def test_a_new_process_reads_the_kept_parse_and_gets_the_same_chat(chat_folder):
    first = ChatFile(chat_folder / ".memory", "long").load()
    assert _cache(chat_folder).is_file()
    _forget_process_caches()
    raw = (chat_folder / ".memory" / "long.json").read_bytes()
    kept = filecache.load(chat_folder / ".memory" / "long.json", filecache.digest(raw))
    assert kept is not None and kept.to_dict() == first.to_dict()
    again = ChatFile(chat_folder / ".memory", "long").load()
    assert again.to_dict() == first.to_dict()
    assert again.messages[3].extra == {"lang": "en"} and again.extra == {"title": "Trip"}


def test_an_edit_of_the_same_size_and_time_after_a_cached_read_is_seen(chat_folder):
    path = chat_folder / ".memory" / "long.json"
    ChatFile(chat_folder / ".memory", "long").load()
    _forget_process_caches()
    assert ChatFile(chat_folder / ".memory", "long").load().messages[5].content == "message 5 about ferries"
    st = path.stat()
    path.write_bytes(path.read_bytes().replace(b"message 5 about ferries", b"message 5 about bridges"))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_size == st.st_size
    _forget_process_caches()
    assert ChatFile(chat_folder / ".memory", "long").load().messages[5].content == "message 5 about bridges"


def test_an_appended_message_is_seen_by_the_next_process(chat_folder):
    path = chat_folder / ".memory" / "long.json"
    ChatFile(chat_folder / ".memory", "long").load()
    data = json.loads(path.read_text())
    data["messages"].append({"id": "late", "role": "assistant", "content": "the last ferry is at nine"})
    path.write_text(json.dumps(data))
    _forget_process_caches()
    assert ChatFile(chat_folder / ".memory", "long").load().messages[-1].id == "late"


def test_a_damaged_or_foreign_cache_file_is_parsed_around(chat_folder):
    ChatFile(chat_folder / ".memory", "long").load()
    for junk in (b"not marshal at all", b"", b"\x00" * 64):
        _cache(chat_folder).write_bytes(junk)
        _forget_process_caches()
        assert len(ChatFile(chat_folder / ".memory", "long").load().messages) == 20
    # Each parse kept a good copy again.
    raw = (chat_folder / ".memory" / "long.json").read_bytes()
    assert filecache.load(chat_folder / ".memory" / "long.json", filecache.digest(raw)) is not None


def test_no_index_folder_means_no_cache_and_a_link_is_not_followed(chat_folder, tmp_path_factory):
    outside = tmp_path_factory.mktemp("outside")
    (chat_folder / ".smartcontext").rmdir()
    ChatFile(chat_folder / ".memory", "long").load()
    assert not (chat_folder / ".smartcontext").exists()
    (chat_folder / ".smartcontext").mkdir()
    (chat_folder / ".smartcontext" / "chats").symlink_to(outside, target_is_directory=True)
    _forget_process_caches()
    assert len(ChatFile(chat_folder / ".memory", "long").load().messages) == 20
    assert list(outside.iterdir()) == []


def test_history_in_a_new_process_after_an_edit_sees_the_edit(chat_folder):
    """Through a real second and third process: the history of the indexed chat, then the
    file edited and re-indexed, then the history again."""
    ws = Workspace.open(chat_folder)
    ws.index(embeddings=False)
    code = ("import sys, json; from smartcontext.sources import chat_cache as filecache; filecache.CACHE_FROM_BYTES = 1\n"
            "from smartcontext.workspace import Workspace\n"
            "ws = Workspace.open(sys.argv[1]); ws.update_files(['.memory/long.json'])\n"
            "r = ws.chat('long').history('bridges', mode='auto', max_tokens=40)\n"
            "print(json.dumps([m.content for m in r.messages]))")
    env = {**os.environ, "SMARTCONTEXT_EMBEDDING_MODEL": "none"}
    run = lambda: json.loads(subprocess.run([sys.executable, "-c", code, str(chat_folder)], env=env,  # noqa: E731
                                            capture_output=True, text=True, check=True).stdout)
    assert not any("bridges" in c for c in run())
    assert _cache(chat_folder).is_file()
    path = chat_folder / ".memory" / "long.json"
    path.write_bytes(path.read_bytes().replace(b"message 5 about ferries", b"message 5 about bridges"))
    assert "message 5 about bridges" in run()


def test_indexing_a_long_chat_keeps_its_parse_for_the_first_history(chat_folder):
    """The indexer parsed the chat already: it leaves that parse beside the index, so the
    first history right after indexing reads it instead of parsing the file again."""
    assert not _cache(chat_folder).exists()
    Workspace.open(chat_folder).index(embeddings=False)
    raw = (chat_folder / ".memory" / "long.json").read_bytes()
    kept = filecache.load(chat_folder / ".memory" / "long.json", filecache.digest(raw))
    assert kept is not None
    _forget_process_caches()
    assert kept.to_dict() == ChatFile(chat_folder / ".memory", "long").load().to_dict()
    assert kept.messages[3].extra == {"lang": "en"} and kept.topics == [{"label": "Ferries", "count": 20}]


def test_a_chat_the_indexer_decoded_with_replacements_is_not_kept(chat_folder):
    """The index reads a bad byte as U+FFFD; the chat layer refuses such a file. The
    indexer's parse must not stand in for the file then."""
    path = chat_folder / ".memory" / "long.json"
    path.write_bytes(path.read_bytes().replace(b"message 7 about", b"message 7 \xff about"))
    Workspace.open(chat_folder).index(embeddings=False)
    assert not _cache(chat_folder).exists()
    _forget_process_caches()
    with pytest.raises(files.ChatFileError):
        ChatFile(chat_folder / ".memory", "long").load()


# Stops in the middle of ``save``: the temporary file written, the rename never done.
KILLED_WRITER = """
import os, sys, time
from pathlib import Path
from smartcontext.sources import chat_cache
from smartcontext.chat.files import ChatFile
chat_cache.CACHE_FROM_BYTES = 1
os.replace = lambda *args: time.sleep(600)
ChatFile(Path(sys.argv[1]) / ".memory", "long").load()
"""


def test_a_temporary_file_left_by_a_killed_writer_is_removed_by_the_next_save(chat_folder):
    import signal
    import time

    chats = chat_folder / ".smartcontext" / "chats"
    writers = []
    try:
        for _ in range(2):
            proc = subprocess.Popen([sys.executable, "-c", KILLED_WRITER, str(chat_folder)], env=dict(os.environ))
            writers.append(proc)
            deadline = time.monotonic() + 60
            while not list(chats.glob(f"long.json.parsed.{proc.pid}~*.tmp")):
                assert proc.poll() is None and time.monotonic() < deadline, "the writer did not start"
                time.sleep(0.05)
        killed, busy = writers
        os.kill(killed.pid, signal.SIGKILL)
        killed.wait()
        ChatFile(chat_folder / ".memory", "long").load()  # no current copy: parses, saves, sweeps
        left = sorted(p.name for p in chats.glob("*.tmp"))
        # The killed writer's file is gone; the one still being written is left alone.
        assert len(left) == 1 and left[0].startswith(f"long.json.parsed.{busy.pid}~"), left
        assert _cache(chat_folder).is_file()
    finally:
        for proc in writers:
            proc.kill()
            proc.wait()
