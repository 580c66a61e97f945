"""Imported messages are identified by their content (or their own id): re-importing an
export with messages removed, inserted, appended or edited adds what is new, updates
what was edited, keeps the chat's order and never drops a message."""

from __future__ import annotations

import json

from smartcontext.chat import ChatFile
from smartcontext.chat.importers import content_id, merge_messages
from smartcontext.chat.files import Message
from smartcontext.workspace import Workspace


def write(path, messages):
    path.write_text(json.dumps(messages))
    return path


def contents(tmp_path, chat_id="trip"):
    return [m.content for m in ChatFile(tmp_path / ".memory", chat_id).load().messages]


def test_reimport_with_one_message_removed_and_one_appended_loses_nothing(tmp_path):
    sc = Workspace.open(tmp_path).chats()
    msgs = [{"role": "user" if n % 2 else "assistant", "content": f"message {n}"} for n in range(15)]
    src = write(tmp_path / "trip.json", msgs)
    assert sc.import_file(src).chats[0]["added"] == 15
    second = msgs[:3] + msgs[4:] + [{"role": "user", "content": "message 15, the new one"}]
    got = sc.import_file(write(src, second)).chats[0]
    assert (got["added"], got["updated"], got["skipped"], got["total"]) == (1, 0, 14, 16)
    assert contents(tmp_path) == [f"message {n}" for n in range(15)] + ["message 15, the new one"]


def test_reimport_inserts_new_messages_in_their_place_and_repeats_are_distinct(tmp_path):
    sc = Workspace.open(tmp_path).chats()
    src = write(tmp_path / "trip.json", [{"role": "user", "content": c} for c in ["a", "ok", "b", "ok"]])
    sc.import_file(src)
    assert contents(tmp_path) == ["a", "ok", "b", "ok"]
    sc.import_file(write(src, [{"role": "user", "content": c} for c in ["start", "a", "ok", "new", "b", "ok"]]))
    assert contents(tmp_path) == ["start", "a", "ok", "new", "b", "ok"]


def test_messages_with_their_own_ids_are_updated_when_edited(tmp_path):
    sc = Workspace.open(tmp_path).chats()
    src = write(tmp_path / "trip.json", [{"id": "x1", "role": "user", "content": "Ferry at 9?"},
                                         {"id": "x2", "role": "assistant", "content": "Yes, at 9."}])
    sc.import_file(src)
    got = sc.import_file(write(src, [{"id": "x2", "role": "assistant", "content": "No: at 10."}])).chats[0]
    assert (got["added"], got["updated"], got["total"]) == (0, 1, 2)
    assert contents(tmp_path) == ["Ferry at 9?", "No: at 10."]


def test_chats_imported_with_position_ids_merge_by_content(tmp_path):
    # Chats imported before ids came from content were numbered m00001...: still one message each.
    memory = tmp_path / ".memory"
    memory.mkdir()
    old = {"messages": [{"id": f"m{n:05d}", "role": "user", "content": f"old {n}"} for n in range(1, 4)], "topics": []}
    (memory / "trip.json").write_text(json.dumps(old))
    sc = Workspace.open(tmp_path).chats()
    src = write(tmp_path / "trip.json", [{"role": "user", "content": f"old {n}"} for n in (1, 3)]
                + [{"role": "user", "content": "fresh"}])
    got = sc.import_file(src).chats[0]
    assert (got["added"], got["skipped"], got["total"]) == (1, 2, 4)
    assert [m.id for m in ChatFile(memory, "trip").load().messages][:3] == ["m00001", "m00002", "m00003"]


def test_content_ids_are_stable_and_depend_on_role_text_and_time():
    assert content_id("user", "hi", None) == content_id("user", "hi", None)
    assert len({content_id("user", "hi", None), content_id("assistant", "hi", None),
                content_id("user", "hi", "2026-01-01"), content_id("user", "hi!", None)}) == 4
    have = [Message("a", "user", "x"), Message("b", "user", "y")]
    merged, added, updated, unchanged = merge_messages(have, [])
    assert merged == have and (added, updated, unchanged) == (0, 0, 0)


def test_a_chat_file_with_a_byte_order_mark_loads_and_is_indexed(tmp_path):
    memory = tmp_path / ".memory"
    memory.mkdir()
    chat = {"messages": [{"id": "b1", "role": "user", "content": "Windows wrote a BOM before this ferry chat"}],
            "topics": []}
    (memory / "bom.json").write_bytes(b"\xef\xbb\xbf" + json.dumps(chat).encode())
    assert contents(tmp_path, "bom") == ["Windows wrote a BOM before this ferry chat"]
    ws = Workspace.open(tmp_path)
    ws.index(embeddings=False)
    hits = ws.search("ferry chat")
    assert any(h.path == ".memory/bom.json" for h in hits)
