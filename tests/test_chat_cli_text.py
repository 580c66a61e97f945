"""``smartcontext chat`` as a user types it (a subprocess each): message text that starts
with ``-``, ``--text`` and stdin; ``chat add`` re-indexes the chat as HTTP and MCP do;
``chat events`` prints readable lines (``--json`` stays JSON)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

from smartcontext.workspace import Workspace

from test_chat import make_chat

ENV = {**os.environ, "SMARTCONTEXT_EMBEDDING_MODEL": "none"}


def sc(root, *args, stdin=None):
    return subprocess.run([sys.executable, "-m", "smartcontext", *args], cwd=root, env=ENV, input=stdin,
                          capture_output=True, text=True, timeout=120)


def contents(root, chat_id="trip"):
    return [m.content for m in Workspace.open(root).chats().chat(chat_id).messages()]


def test_message_text_may_start_with_a_dash_or_come_from_text_or_stdin(tmp_path):
    root = str(tmp_path)
    done = sc(root, "chat", "add", "trip", "assistant", "- The last bus leaves at 23:10", root)
    assert done.returncode == 0, done.stderr
    assert sc(root, "chat", "add", "trip", "user", "--text", "-v is not an option here", root).returncode == 0
    assert sc(root, "chat", "add", "trip", "user", "-", root, stdin="from stdin\nsecond line\n").returncode == 0
    assert sc(root, "chat", "add", "trip", "user", stdin="piped, folder from cwd\n").returncode == 0
    assert contents(root) == ["- The last bus leaves at 23:10", "-v is not an option here",
                              "from stdin\nsecond line", "piped, folder from cwd"]
    both = sc(root, "chat", "add", "trip", "user", "one", root, "--text", "two")
    assert both.returncode == 1 and "not both" in both.stderr


def test_chat_add_brings_the_message_into_the_index(tmp_path):
    make_chat(tmp_path, "trip")
    (tmp_path / "notes.md").write_text("# Notes\n\nA note.\n")
    assert sc(str(tmp_path), "index", str(tmp_path)).returncode == 0
    done = sc(str(tmp_path), "chat", "add", "trip", "user", "Is the zanzibar ferry running?", str(tmp_path))
    assert done.returncode == 0, done.stderr
    ws = Workspace.open(tmp_path)
    cat = ws.catalogue()
    texts = [cat.entries[r].qualname for r in cat.by_path.get(".memory/trip.json", [])]
    msg_id = Workspace.open(tmp_path).chats().chat("trip").messages()[-1].id
    assert msg_id in texts


def test_chat_events_are_readable_lines_and_json_stays_json(tmp_path):
    make_chat(tmp_path, "trip")
    root = str(tmp_path)
    assert sc(root, "chat", "topics", "trip", "--extract", "--method", "local", root).returncode == 0
    assert sc(root, "chat", "filter", "trip", root).returncode == 0
    lines = sc(root, "chat", "events", root).stdout.strip().splitlines()
    assert len(lines) == 2
    assert re.match(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d  smart_context\.topics_updated  chat trip: \d topics \(", lines[0])
    assert lines[1].endswith("smart_context.filter_changed  chat trip: filter cleared")
    assert "{" not in "".join(lines) and "'" not in "".join(lines)
    data = json.loads(sc(root, "chat", "events", root, "--json").stdout)
    assert data["count"] == 2 and isinstance(data["events"][0]["time"], float)
