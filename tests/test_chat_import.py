"""Importing OpenAI-style message lists and ChatGPT conversations.json exports."""

from __future__ import annotations

import json

import pytest

from smartcontext.chat import ChatFile
from smartcontext.chat.importers import content_id
from smartcontext.errors import ChatFileError
from smartcontext.workspace import Workspace


def chatgpt_export():
    def node(nid, parent, children, role=None, text=None, t=None, hidden=False):
        msg = None
        if role:
            msg = {"id": nid, "author": {"role": role}, "create_time": t,
                   "content": {"content_type": "text", "parts": [text]},
                   "metadata": {"is_visually_hidden_from_conversation": hidden}}
        return {"id": nid, "message": msg, "parent": parent, "children": children}

    mapping = {
        "root": node("root", None, ["sys"]),
        "sys": node("sys", "root", ["q1"], "system", "", hidden=True),
        "q1": node("q1", "sys", ["a1", "a1b"], "user", "Plan a trip to Crete", 1700000000),
        "a1": node("a1", "q1", [], "assistant", "An abandoned first draft", 1700000010),
        "a1b": node("a1b", "q1", ["q2"], "assistant", "Start in Heraklion, then Chania.", 1700000020),
        "q2": node("q2", "a1b", [], "user", "How many days?", 1700000030),
    }
    return [{"title": "Crete trip", "id": "conv-1", "conversation_id": "conv-1",
             "current_node": "q2", "mapping": mapping}]


def test_import_chatgpt_export_follows_the_current_thread(tmp_path):
    src = tmp_path / "conversations.json"
    src.write_text(json.dumps(chatgpt_export()))
    sc = Workspace.open(tmp_path).chats()
    result = sc.import_file(src)
    assert result.format == "chatgpt" and result.chats[0]["chat_id"] == "conv-1"
    data = ChatFile(tmp_path / ".memory", "conv-1").load()
    assert [m.id for m in data.messages] == ["q1", "a1b", "q2"]
    assert [m.role for m in data.messages] == ["user", "assistant", "user"]
    assert data.messages[0].timestamp.startswith("2023-11-14T22:13:20")
    assert data.extra["title"] == "Crete trip"
    again = sc.import_file(src)
    assert again.chats[0]["added"] == 0 and again.chats[0]["skipped"] == 3


def test_import_openai_messages_list(tmp_path):
    src = tmp_path / "request.json"
    src.write_text(json.dumps({"model": "x", "messages": [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": [{"type": "text", "text": "Hi"}, {"type": "image_url", "image_url": {}}]},
        {"role": "assistant", "content": "Hello."},
    ]}))
    result = Workspace.open(tmp_path).chats().import_file(src, chat_id="req")
    assert result.format == "openai" and result.to_dict()["added"] == 3
    data = ChatFile(tmp_path / ".memory", "req").load()
    # No ids in the request: each comes from the message's role, text and time.
    assert [(m.id, m.content) for m in data.messages] == [
        (content_id("system", "You are terse.", None), "You are terse."),
        (content_id("user", "Hi", None), "Hi"), (content_id("assistant", "Hello.", None), "Hello.")]


@pytest.mark.parametrize("content, message", [
    ("{bad", "not valid JSON"),
    (json.dumps({"foo": 1}), "unrecognised chat format"),
    (json.dumps([{"content": "no role"}]), "unrecognised chat format"),
])
def test_import_refuses_what_it_cannot_read(tmp_path, content, message):
    src = tmp_path / "in.json"
    src.write_text(content)
    with pytest.raises(ChatFileError, match=message):
        Workspace.open(tmp_path).chats().import_file(src)
    assert not (tmp_path / ".memory").exists() or not list((tmp_path / ".memory").glob("in.json"))
