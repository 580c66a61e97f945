"""A chat message goes to the embedding model once, whichever side embeds it first: the
index (the chat source's message items) or the chat's own vector cache
(``.memory/{chat_id}.embeddings.json``). Counted on a real model behind an embedder
plugin that records every text it is sent."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from smartcontext.embeddings import get_embedder, registry
from smartcontext.indexer import embed_text
from smartcontext.model import Item, ItemKind
from smartcontext.plugins import hookimpl, plugin_manager
from smartcontext.workspace import Workspace

MESSAGES = [
    ("u1", "user", "be concise"),
    ("u2", "user", "Which ferry goes from Piraeus to Naxos island?"),
    ("a2", "assistant", "Blue Star ferries sail daily from Piraeus to Naxos; the crossing takes five hours."),
    ("c1", "Caroline", "I went to a support group yesterday and it was so powerful."),
    ("m1", "Melanie", "That sounds great! I signed up for a pottery class last week."),
]


class Counting:
    """The real local model, recording every text sent to ``embed``."""

    def __init__(self, inner):
        self.inner = inner
        self.texts: list[str] = []

    @property
    def name(self):
        return "counting:" + self.inner.name

    @property
    def dim(self):
        return self.inner.dim

    def embed(self, texts):
        self.texts += list(texts)
        return self.inner.embed(texts)

    def embed_query(self, text):
        return self.inner.embed_query(text)


class CountingPlugin:
    def __init__(self, embedder):
        self.embedder = embedder

    @hookimpl
    def register_embedders(self, register):
        register("counting", lambda arg, **options: self.embedder, scheme=True)


@pytest.fixture(scope="module")
def real():
    return get_embedder("local:minilm")


@pytest.fixture
def counting(real, monkeypatch):
    monkeypatch.setattr(registry, "_named", {})
    monkeypatch.setattr(registry, "_schemes", {})
    monkeypatch.setattr(registry._hook, "loaded", False)  # ask the hook again, with the plugin
    emb = Counting(real)
    plugin = CountingPlugin(emb)
    pm = plugin_manager()
    pm.register(plugin, name="counting-embedder-test")
    yield emb
    pm.unregister(plugin)


def make_workspace(root: Path) -> Path:
    # Chats share the index's model here ("" = the [embeddings] model), so one vector serves both.
    (root / "smartcontext.toml").write_text(
        '[embeddings]\nmodel = "counting:minilm"\n\n[chat]\nembedding_model = ""\n', encoding="utf-8")
    mem = root / ".memory"
    mem.mkdir()
    (mem / "trip.json").write_text(json.dumps(
        {"messages": [{"id": i, "role": r, "content": c} for i, r, c in MESSAGES], "topics": []}), encoding="utf-8")
    return root


def test_a_message_item_is_embedded_from_the_chat_text():
    item = Item(id=".memory/t.json#c1", path=".memory/t.json", kind=ItemKind.MESSAGE, name="Caroline",
                qualname="c1", start_line=1, end_line=1, text="I went hiking.")
    assert embed_text(item) == "Caroline: I went hiking."
    item.name = "assistant"
    assert embed_text(item) == "I went hiking."
    code = Item(id="a.py::f", path="a.py", kind=ItemKind.FUNCTION, name="f", qualname="f", start_line=1,
                end_line=2, text="def f(): pass")
    assert embed_text(code).startswith("a.py function f\n")


def test_index_first_then_filter_embeds_each_message_once(tmp_path, counting):
    ws = Workspace.open(make_workspace(tmp_path))
    assert ws.embedder() is counting
    ws.index(embeddings=True)
    assert sorted(counting.texts) == sorted(
        c if r in ("user", "assistant") else f"{r}: {c}" for _, r, c in MESSAGES)
    chat = ws.chat("trip")
    vec = chat.vectors()
    matrix = vec.matrix(chat.messages())
    assert vec.embedded_last == 0 and len(counting.texts) == len(MESSAGES)
    # The chat's vectors are the index's, row for row, and the sidecar file is written.
    assert np.allclose(np.linalg.norm(matrix, axis=1), 1.0, atol=1e-4)
    sidecar = json.loads((tmp_path / ".memory" / "trip.embeddings.json").read_text())
    assert sidecar["_model"] == counting.name and len(sidecar) == len(MESSAGES) + 1
    result = chat.history("How long does the ferry to Naxos take?", max_tokens=40)
    assert "a2" in result.message_ids
    assert len(counting.texts) == len(MESSAGES)
    ws.close()


def test_filter_first_then_index_embeds_each_message_once(tmp_path, counting):
    ws = Workspace.open(make_workspace(tmp_path))
    ws.index(embeddings=False)  # a keyword index: the chat's filter embeds the messages
    chat = ws.chat("trip")
    chat.history("When did Caroline go to the support group?", mode="auto")
    assert len(counting.texts) == len(MESSAGES)
    ws.index(embeddings=True)  # now the index wants vectors: all cache hits
    assert len(counting.texts) == len(MESSAGES), counting.texts[len(MESSAGES):]
    assert ws.store.items_missing_vectors(counting.name) == []
    # One new message: one text, once, for both sides.
    chat.add_message("Melanie", "We went camping at the beach last weekend.", id="m2", extract=False)
    chat.history("Where did Melanie camp?", mode="auto")
    assert counting.texts[len(MESSAGES):] == ["Melanie: We went camping at the beach last weekend."]
    ws.index(embeddings=True)
    assert len(counting.texts) == len(MESSAGES) + 1
    ws.close()
