"""Chat files (.memory/{chat_id}.json): validation, atomic writes, concurrent writers, and
the chat source that puts messages into the workspace index."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path

import pytest

from smartcontext.chat.files import STICKY_LABEL, ChatFile, Message, check_chat_id
from smartcontext.errors import ChatFileError, InvalidArgument
from smartcontext.model import ItemKind
from smartcontext.sources.registry import source_for_path
from smartcontext.workspace import Workspace


def write_chat(root: Path, chat_id: str, data) -> Path:
    p = root / ".memory" / f"{chat_id}.json"
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(data) if not isinstance(data, str) else data, encoding="utf-8")
    return p


def test_load_keeps_unknown_keys_and_round_trips(tmp_path):
    write_chat(tmp_path, "c1", {
        "title": "kept", "messages": [{"id": "a", "role": "user", "content": "hi", "mood": "ok"}],
        "topics": [{"label": STICKY_LABEL, "sticky": True, "message_ids": ["a"], "count": 1}],
    })
    cf = ChatFile(tmp_path / ".memory", "c1")
    data = cf.load()
    assert data.messages[0].extra == {"mood": "ok"} and data.sticky_ids() == ["a"]
    cf.update(lambda d: d.messages.append(Message("b", "assistant", "hello")))
    raw = json.loads(cf.path.read_text())
    assert raw["title"] == "kept" and raw["messages"][0]["mood"] == "ok"
    assert [m["id"] for m in raw["messages"]] == ["a", "b"]


@pytest.mark.parametrize("content, message", [
    ("{not json", "not valid JSON"),
    ({"messages": [{"role": "user", "content": "no id"}]}, "has no 'id'"),
    ({"messages": [{"id": "x", "content": "1"}, {"id": "x", "content": "2"}]}, "appears twice"),
    ({"messages": {}}, "'messages' must be a list"),
])
def test_invalid_chat_file_is_a_clear_error_and_left_untouched(tmp_path, content, message):
    p = write_chat(tmp_path, "bad", content)
    before = p.read_bytes()
    cf = ChatFile(tmp_path / ".memory", "bad")
    with pytest.raises(ChatFileError, match=message):
        cf.load()
    with pytest.raises(ChatFileError):
        cf.update(lambda d: d.messages.append(Message("n", "user", "new")))
    assert p.read_bytes() == before


def test_chat_ids_that_cannot_name_a_file_are_refused(tmp_path):
    for bad in ("../x", "a/b", "", "x" * 200, 3):
        with pytest.raises(InvalidArgument):
            check_chat_id(bad)


def _append_many(args):
    memory, worker, n = args
    cf = ChatFile(Path(memory), "shared")
    for i in range(n):
        cf.update(lambda d, i=i: d.messages.append(Message(f"w{worker}-{i}", "user", f"message {i}")))


def test_concurrent_writers_lose_no_message(tmp_path):
    memory = tmp_path / ".memory"
    with multiprocessing.get_context("fork").Pool(4) as pool:
        pool.map(_append_many, [(str(memory), w, 25) for w in range(4)])
    data = ChatFile(memory, "shared").load()
    assert len(data.messages) == 100
    assert len(data.message_ids()) == 100
    assert not [p for p in memory.iterdir() if p.name.endswith(".tmp")]


def test_chat_source_claims_chat_files_only():
    assert source_for_path(".memory/c1.json")[0].name == "chat"
    assert source_for_path("vault/.memory/c1.json")[0].name == "chat"
    assert source_for_path(".memory/c1.embeddings.json") is None
    assert source_for_path("data/c1.json") is None


def test_messages_are_items_of_the_workspace_index(tmp_path):
    write_chat(tmp_path, "trip", {"messages": [
        {"id": "m1", "role": "user", "content": "We should book the ferry to Naxos", "timestamp": "2024-05-01"},
        {"id": "m2", "role": "assistant", "content": "The ferry leaves Piraeus at seven."},
    ], "topics": []})
    write_chat(tmp_path, "broken", "{oops")
    (tmp_path / "notes.md").write_text("# Notes\n\nNothing about boats.\n")
    with Workspace.open(tmp_path) as ws:
        stats = ws.index(embeddings=False)
        assert any("broken" in w for w in stats.warnings)
        hits = ws.search("ferry Naxos", mode="keyword", kinds=[ItemKind.MESSAGE])
        assert [h.id for h in hits][0] == ".memory/trip.json#m1"
        assert hits[0].kind == "message" and hits[0].start_line == 1
        assert ws.status().kinds.get("message") == 2


def test_rewrites_keep_the_file_mode(tmp_path):
    p = write_chat(tmp_path, "m", {"messages": [], "topics": []})
    p.chmod(0o640)
    cf = ChatFile(tmp_path / ".memory", "m")
    cf.update(lambda d: d.messages.append(Message("a", "user", "x")))
    assert p.stat().st_mode & 0o777 == 0o640
    import os

    old = os.umask(0o022)
    try:
        fresh = ChatFile(tmp_path / ".memory", "new")
        fresh.update(lambda d: d.messages.append(Message("a", "user", "x")))
    finally:
        os.umask(old)
    assert fresh.path.stat().st_mode & 0o777 == 0o644  # as open() makes it, not mkstemp's 0600


def test_a_fifo_named_like_a_chat_never_blocks(tmp_path):
    import os
    import threading

    from smartcontext.chat.importers import import_chats
    from smartcontext.chat.session import SmartContext

    (tmp_path / ".memory").mkdir()
    os.mkfifo(tmp_path / ".memory" / "pipe.json")
    os.mkfifo(tmp_path / "import.json")
    errors: list = []

    def run() -> None:
        for call in (lambda: ChatFile(tmp_path / ".memory", "pipe").load(),
                     lambda: import_chats(tmp_path / ".memory", tmp_path / "import.json")):
            try:
                call()
            except ChatFileError as exc:
                errors.append(str(exc))
        errors.append(SmartContext(Workspace.open(tmp_path)).chat_ids())

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(10)
    assert not worker.is_alive(), "reading a FIFO blocked"
    assert len(errors) == 3 and "not a regular file" in errors[0] and "not a regular file" in errors[1]
    assert errors[2] == []
