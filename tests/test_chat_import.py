"""Importing OpenAI- and Anthropic-style message lists and ChatGPT and Claude conversations.json exports."""

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


def test_import_keeps_an_anthropic_system_prompt_and_the_tool_calls_and_results(tmp_path):
    src = tmp_path / "request.json"
    src.write_text(json.dumps({"model": "claude", "system": "Always answer in French.", "messages": [
        {"role": "user", "content": "How long is the ferry to Naxos?"},
        {"role": "assistant", "content": [{"type": "text", "text": "Let me check."},
                                          {"type": "tool_use", "id": "t1", "name": "ferry_lookup",
                                           "input": {"to": "Naxos"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                      "content": [{"type": "text", "text": "Piraeus to Naxos: 5h10"}]}]},
        {"role": "assistant", "content": "About five hours."},
    ]}))
    Workspace.open(tmp_path).chats().import_file(src, chat_id="trip")
    data = ChatFile(tmp_path / ".memory", "trip").load()
    assert [(m.role, m.content) for m in data.messages] == [
        ("system", "Always answer in French."),
        ("user", "How long is the ferry to Naxos?"),
        ("assistant", 'Let me check.\n[tool call ferry_lookup {"to": "Naxos"}]'),
        ("user", "Piraeus to Naxos: 5h10"),
        ("assistant", "About five hours."),
    ]


def test_import_keeps_openai_tool_calls_as_text(tmp_path):
    src = tmp_path / "calls.json"
    src.write_text(json.dumps([
        {"role": "user", "content": "Weather in Oslo?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "weather", "arguments": '{"city": "Oslo"}'}},
            {"id": "c2", "type": "function", "function": {"name": "clock", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "-3 C, snow"},
    ]))
    Workspace.open(tmp_path).chats().import_file(src)
    data = ChatFile(tmp_path / ".memory", "calls").load()
    assert data.messages[1].content == '[tool call weather {"city": "Oslo"}]\n[tool call clock]'
    assert data.messages[1].extra["tool_calls"][0]["id"] == "c1"
    assert data.messages[2].content == "-3 C, snow"


def claude_export():
    def msg(uuid, sender, text, t, blocks=None):
        return {"uuid": uuid, "sender": sender, "text": text, "created_at": t, "updated_at": t,
                "content": blocks if blocks is not None else [{"type": "text", "text": text}],
                "attachments": [], "files": []}

    return [
        {"uuid": "c0ffee-1", "name": "Crete trip", "created_at": "2025-03-01T10:00:00.000000Z",
         "chat_messages": [
             msg("m1", "human", "Plan a trip to Crete", "2025-03-01T10:00:00.000000Z"),
             msg("m2", "assistant", "Start in Heraklion, then Chania.", "2025-03-01T10:00:05.000000Z"),
             msg("m3", "assistant", "", "2025-03-01T10:00:06.000000Z", blocks=[]),  # an empty turn
         ]},
        {"uuid": "c0ffee-2", "name": "", "chat_messages": [
            msg("m4", "human", "Sourdough hydration?", "2025-03-02T09:00:00Z")]},
    ]


def test_import_claude_export_one_chat_per_conversation(tmp_path):
    src = tmp_path / "conversations.json"
    src.write_text(json.dumps(claude_export()))
    sc = Workspace.open(tmp_path).chats()
    result = sc.import_file(src)
    assert result.format == "claude"
    assert [(c["chat_id"], c["added"]) for c in result.chats] == [("c0ffee-1", 2), ("c0ffee-2", 1)]
    trip = ChatFile(tmp_path / ".memory", "c0ffee-1").load()
    assert [(m.id, m.role, m.content) for m in trip.messages] == [
        ("m1", "user", "Plan a trip to Crete"), ("m2", "assistant", "Start in Heraklion, then Chania.")]
    assert trip.messages[0].timestamp == "2025-03-01T10:00:00.000000Z"
    assert trip.extra["title"] == "Crete trip"
    assert "title" not in ChatFile(tmp_path / ".memory", "c0ffee-2").load().extra
    again = sc.import_file(src)
    assert [c["added"] for c in again.chats] == [0, 0]


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
