"""Chat context end to end with the real local embedding model and real chat files:
topics (local method), sticky instructions, the seed's topic filter, the automatic
filter, the commands and their events."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from smartcontext.chat import STICKY_LABEL, Message
from smartcontext.chat.filter import topic_filter
from smartcontext.chat.sticky import is_instruction, sticky_message_ids
from smartcontext.chat.topics import choose_k
from smartcontext.chat.vectors import MessageVectors
from smartcontext.errors import InvalidArgument
from smartcontext.workspace import Workspace

# Every test once on SQLite and once on PostgreSQL (conftest.store_env).
pytestmark = pytest.mark.usefixtures("store_env")


CHAT = [
    ("u1", "user", "be concise"),
    ("u2", "user", "How do I run several coroutines concurrently with Python asyncio?"),
    ("a2", "assistant", "Use asyncio.gather with the coroutines; await the gather call inside an async function."),
    ("u3", "user", "What does the asyncio event loop do when a coroutine awaits a socket read?"),
    ("a3", "assistant", "The asyncio event loop suspends the coroutine and resumes it when the socket is readable."),
    ("u4", "user", "Which ferry goes from Piraeus to Naxos island in Greece?"),
    ("a4", "assistant", "Blue Star ferries sail from Piraeus port to Naxos island daily; the ferry takes five hours."),
    ("u5", "user", "Is there a ferry from Naxos island on to Santorini?"),
    ("a5", "assistant", "Yes, ferries link Naxos island and Santorini several times a day in summer."),
    ("u6", "user", "answer in French"),
    ("u7", "user", "My sourdough bread starter smells of acetone, is the sourdough starter dead?"),
    ("a7", "assistant", "An acetone smell means the sourdough starter is hungry: feed the starter flour twice a day."),
]


def make_chat(root: Path, chat_id: str = "c1", pairs=CHAT) -> Path:
    p = root / ".memory" / f"{chat_id}.json"
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps({"messages": [{"id": i, "role": r, "content": c} for i, r, c in pairs],
                             "topics": []}), encoding="utf-8")
    return p


@pytest.fixture(scope="module")
def embedder():
    from smartcontext.embeddings import get_embedder

    return get_embedder("local:minilm")


@pytest.fixture
def ws(tmp_path, embedder):
    make_chat(tmp_path)
    w = Workspace.open(tmp_path)
    w._embedder = embedder  # one model load for the module
    yield w
    w.close()


def test_instruction_classifier():
    msgs = [Message(str(i), "user", t) for i, t in enumerate(
        ["be concise", "answer in French", "use Python 3", "Don't use global variables",
         "How does async work in Python?", "Thanks, that worked!",
         "The ferry leaves Piraeus at seven and reaches Naxos around noon, with a stop at Paros on the way there."])]
    assert sticky_message_ids(msgs) == ["0", "1", "2", "3"]
    assert not is_instruction(Message("x", "assistant", "be concise"))


def test_choose_k_stays_in_the_seed_range():
    assert choose_k(2) == 2 and choose_k(10) == 3 and choose_k(500) == 8


def test_embedding_cache_embeds_only_new_or_edited_messages(tmp_path, embedder):
    msgs = [Message("a", "user", "hello there"), Message("b", "user", "ferry to Naxos")]
    mv = MessageVectors(tmp_path, "c", embedder)
    first = mv.matrix(msgs)
    assert mv.embedded_last == 2 and first.shape == (2, embedder.dim)
    raw = json.loads((tmp_path / "c.embeddings.json").read_text())
    assert any(k.startswith("a:") for k in raw) and raw["_model"] == embedder.name
    msgs.append(Message("c", "user", "new one"))
    msgs[0] = Message("a", "user", "hello there, edited")
    mv2 = MessageVectors(tmp_path, "c", embedder)
    mv2.matrix(msgs)
    assert mv2.embedded_last == 2  # the edited one and the new one
    mv2.matrix(msgs)
    assert mv2.embedded_last == 0
    assert np.allclose(mv2.matrix(msgs)[1], first[1], atol=1e-5)


def test_a_long_chats_new_vectors_are_appended_to_a_log_then_folded_in(tmp_path, embedder, monkeypatch):
    """From APPEND_FROM vectors, new ones are a line of the log beside the file (the file is
    not rewritten); a line torn by a crash is ignored; past a quarter of the file's count
    the log is folded back in."""
    from smartcontext.chat import vectors

    monkeypatch.setattr(vectors, "APPEND_FROM", 4)
    msgs = [Message(f"m{n}", "user", f"message {n} about the ferry") for n in range(8)]
    MessageVectors(tmp_path, "c", embedder).matrix(msgs)
    sidecar, log = tmp_path / "c.embeddings.json", tmp_path / "c.embeddings.jsonl"
    before = sidecar.read_bytes()
    msgs.append(Message("n0", "user", "a new message"))
    first = MessageVectors(tmp_path, "c", embedder).matrix(msgs)
    assert sidecar.read_bytes() == before
    assert [sorted(json.loads(line)) for line in log.read_text().splitlines()] == [
        ["_model", vectors.cache_key("n0", "a new message")]]
    with log.open("a") as handle:
        handle.write('{"_model": "%s", "x:1": [0.1, 0.' % embedder.name)
    vectors._memo.clear()  # as another process reads it
    again = MessageVectors(tmp_path, "c", embedder)
    assert np.allclose(again.matrix(msgs), first, atol=1e-5) and again.embedded_last == 0
    msgs += [Message("n1", "user", "another new message"), Message("n2", "user", "and a third")]
    again.matrix(msgs)  # 3 logged vectors > 8 // 4: folded in
    assert not log.exists()
    raw = json.loads(sidecar.read_text())
    assert len(raw) == 12 and "x:1" not in raw
    vectors._memo.clear()
    final = MessageVectors(tmp_path, "c", embedder)
    assert final.matrix(msgs).shape == (11, embedder.dim) and final.embedded_last == 0


def test_local_topics_sticky_and_counts(ws):
    chat = ws.chat("c1")
    result = chat.extract_topics()
    assert result.method.startswith("local:") and result.error is None
    regular = [t for t in result.topics if not t.get("sticky")]
    sticky = [t for t in result.topics if t.get("sticky")]
    assert 3 <= len(regular) <= 8
    assert sticky == [{"label": STICKY_LABEL, "sticky": True, "message_ids": ["u1", "u6"], "count": 2}]
    assert sum(t["count"] for t in regular) == len(CHAT) - 2
    for t in regular:
        words = t["label"].split()
        assert 2 <= len(words) <= 4 and all(w[0].isupper() for w in words)
    labels = " ".join(t["label"] for t in regular).lower()
    assert "asyncio" in labels or "coroutine" in labels
    assert "ferry" in labels or "naxos" in labels
    assert "sourdough" in labels or "starter" in labels
    # Written to the chat file, fully regenerated.
    on_disk = json.loads(chat.path.read_text())["topics"]
    assert on_disk == result.topics


def test_topic_filter_rules():
    msgs = [Message("s", "user", "be concise"), Message("m1", "user", "a"), Message("m2", "user", "b")]
    mv = np.array([[0.0, 1.0], [0.9, 0.1], [0.1, 0.9]], dtype=np.float32)
    lab = np.array([[1.0, 0.0]], dtype=np.float32)
    assert topic_filter("c", msgs, ["s"], [], True, 0.4).mode == "all"
    assert topic_filter("c", msgs, ["s"], ["T"], False, 0.4).message_ids == ["s", "m1", "m2"]
    kept = topic_filter("c", msgs, ["s"], ["T"], True, 0.7, mv, lab)
    assert kept.mode == "topics" and kept.message_ids == ["s", "m1"]
    assert kept.status_line() == "2 of 3 messages in context"
    none = topic_filter("c", msgs, ["s"], ["T"], True, 0.99, mv, lab)
    assert none.mode == "topics-fallback" and len(none.messages) == 3


def test_commands_events_and_the_topic_filter(ws):
    sc = ws.chats()
    chat = ws.chat("c1")
    chat.extract_topics()
    seen: list[tuple[str, dict]] = []
    sc.subscribe("*", lambda e, p: seen.append((e, p)))
    assert sc.get_topics("c1")["total_messages"] == len(CHAT)
    assert sc.set_similarity_mode(True) == {"status": "success", "embedding_search": True}
    answer = sc.execute("smart_context.set_filter", topics=["Naxos Island"])
    assert answer == {"status": "success", "active_topics": ["Naxos Island"]}
    assert seen[0] == ("smart_context.filter_changed", {"active_topics": ["Naxos Island"], "chat_id": "c1"})
    assert seen[1][0] == "smart_context.highlight_applied"
    hist = chat.history()
    assert hist.mode == "topics"
    assert {"u4", "a4", "u5", "a5"} <= set(hist.message_ids)
    assert {"u1", "u6"} <= set(hist.message_ids)  # sticky always in
    assert "u7" not in hist.message_ids and "a2" not in hist.message_ids
    assert seen[1][1]["message_ids"] == hist.message_ids
    assert hist.message_ids == [m for m, _, _ in CHAT if m in set(hist.message_ids)]  # chronological
    # The state is shared with a second opening of the folder (the CLI's case).
    again = Workspace.open(ws.root).chats()
    assert again.active_topics == ["Naxos Island"] and again.current_chat_id == "c1"
    sc.set_filter([])
    assert chat.history().mode == "all"
    sc.set_similarity_mode(False)
    assert seen[-1] == ("smart_context.filter_changed", {"active_topics": [], "chat_id": "c1"})
    assert [e["event"] for e in sc.recent_events()][-1] == "smart_context.filter_changed"
    with pytest.raises(InvalidArgument):
        sc.execute("smart_context.nope")


def test_auto_history_retrieves_within_budget(ws):
    chat = ws.chat("c1")
    chat.extract_topics()
    hist = chat.history("How long does the ferry from Piraeus to Naxos take?", share=0.4)
    assert hist.mode == "auto" and hist.tokens <= hist.budget
    assert {"a4", "u4"} <= set(hist.message_ids)
    assert {"u1", "u6"} <= set(hist.message_ids)
    assert "a7" not in hist.message_ids
    assert set(hist.signals) == {"keyword", "semantic"}
    small = chat.history("sourdough starter acetone", max_tokens=60)
    assert small.tokens <= 60 and "a7" in small.message_ids


GROUP = [
    ("g1", "Caroline", "I went to a support group yesterday and it was so powerful."),
    ("g2", "Melanie", "That's great! I also went to a support group, for parents, last month."),
    ("g3", "Caroline", "My friends have been there for me since I moved here four years ago."),
    ("g4", "Melanie", "Wow."),
    ("g5", "Melanie", "I signed up for a pottery class; painting with my kids is how I relax."),
    ("g6", "Caroline", "I am thinking of a career in counselling, to help young people."),
]


def test_auto_history_favours_the_speaker_the_message_names(tmp_path, embedder):
    from smartcontext.chat.auto import named_speaker

    assert named_speaker("When did Caroline go to the support group?", ["Caroline", "Melanie"]) == "Caroline"
    assert named_speaker("Did caroline's friend call?", ["Caroline", "Melanie"]) == "Caroline"
    assert named_speaker("Did Caroline and Melanie meet?", ["Caroline", "Melanie"]) is None
    assert named_speaker("What did the assistant say?", ["user", "assistant"]) is None
    assert named_speaker("Carolines", ["Caroline"]) is None
    make_chat(tmp_path, "grp", GROUP)
    with Workspace.open(tmp_path) as w:
        w._embedder = embedder
        chat = w.chat("grp")
        budget = chat.token_counts(chat.messages(), "cl100k_base")
        # Room for one of the two support-group turns: the named speaker's wins.
        for name, want, other in (("Caroline", "g1", "g2"), ("Melanie", "g2", "g1")):
            hist = chat.history(f"When did {name} go to a support group?", max_tokens=max(budget[0], budget[1]) + 1)
            assert want in hist.message_ids and other not in hist.message_ids, (name, hist.message_ids)
            assert "speaker" in hist.signals


def test_auto_history_prefers_the_longer_of_two_equal_turns():
    from smartcontext.chat.auto import auto_filter

    msgs = [Message("s", "user", "Wow."), Message("l", "user", "We went camping at the beach with the kids.")]
    # Both turns tie on every signal (the same rank in one ranking each, no vectors).
    res = auto_filter("c", msgs, [], ["s", "l"], None, None, max_tokens=100, token_counts=[2, 11])
    full = auto_filter("c", msgs, [], ["l", "s"], None, None, max_tokens=100, token_counts=[2, 11])
    assert res.message_ids == full.message_ids == ["s", "l"]
    one = auto_filter("c", msgs, [], [], np.eye(2, dtype=np.float32), np.array([0.6, 0.6], np.float32),
                      max_tokens=11, token_counts=[2, 11])
    assert one.message_ids == ["l"]


def test_token_counts_are_counted_once_per_text(ws):
    from smartcontext.tokens import count_tokens

    chat = ws.chat("c1")
    msgs = chat.messages()
    counts = chat.token_counts(msgs, "cl100k_base")
    assert counts == [count_tokens(f"{m.role}: {m.content}", "cl100k_base") for m in msgs]
    assert chat.token_counts(chat.messages(), "cl100k_base") is counts  # same file: same list
    chat.add_message("user", "one more", id="x1", extract=False)
    now = chat.messages()
    again = chat.token_counts(now, "cl100k_base")
    # The new message carries its timestamp, which the model reads too.
    assert again[:-1] == counts and again[-1] == count_tokens(f"[{now[-1].timestamp}] user: one more", "cl100k_base")


def test_adding_an_assistant_reply_extracts_topics_in_the_background(ws):
    chat = ws.chat("c1")
    got = []
    ws.chats().subscribe("smart_context.topics_updated", lambda e, p: got.append(p))
    chat.add_message("user", "What flour should I feed the sourdough starter?")
    chat.add_message("assistant", "Feed the sourdough starter rye flour for a livelier starter.")
    result = chat.wait_for_topics(timeout=60)
    assert result is not None and result.error is None
    assert got and got[-1]["chat_id"] == "c1" and got[-1]["total_messages"] == len(CHAT) + 2
    assert got[-1]["topics"] == chat.load().topics


def test_vault_toml_plugin_table_configures_chat(tmp_path):
    (tmp_path / ".vault.toml").write_text(
        "[plugins.smart_context]\nenabled = true\nsimilarity_threshold = 0.55\nembedding_search = false\n"
        'extraction_category = "cheap"\n\n[plugins.smart_context.chat]\nhistory_share = 0.1\n'
    )
    with Workspace.open(tmp_path) as w:
        cfg = w.config.chat
        assert (cfg.similarity_threshold, cfg.embedding_search, cfg.extraction_category, cfg.history_share) == (
            0.55, False, "cheap", 0.1)
        sc = w.chats()
        assert sc.similarity_threshold == 0.55 and sc.embedding_search is False
    (tmp_path / ".vault.toml").write_text("[plugins.smart_context]\nsimilarity_threshold = \"high\"\n")
    from smartcontext.errors import ConfigError

    with pytest.raises(ConfigError, match="similarity_threshold must be a number"):
        Workspace.open(tmp_path)


def test_misspelt_top_level_chat_key_is_named_with_the_nearest(tmp_path):
    from smartcontext.errors import ConfigError

    (tmp_path / ".vault.toml").write_text("[plugins.smart_context]\nenabld = true\n")
    with pytest.raises(ConfigError, match=r"unknown key 'enabld' in \[plugins\.smart_context\]; did you mean 'enabled'\?"):
        Workspace.open(tmp_path)
    (tmp_path / ".vault.toml").write_text("[plugins.smart_context.chatt]\nenabled = true\n")
    with pytest.raises(ConfigError, match=r"unknown section \[plugins\.smart_context\.chatt\]; did you mean 'chat'\?"):
        Workspace.open(tmp_path)
