"""Topics a person would write, and bubbles that do what they show: local labels without
contractions, stop words, speaker names, one word in two forms or another topic's word;
each local topic selects exactly its members (the count shown); a selected topic that
matched nothing is named in the answer, the event and the status line instead of the
filter silently keeping everything. Small chats built here, real chat files."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from smartcontext.chat import STICKY_LABEL, Message
from smartcontext.chat.filter import topic_filter
from smartcontext.chat.topics import CHAT_STOPWORDS, local_topics, word_key
from smartcontext.workspace import Workspace

SPEAKERS = ("Caroline", "Melanie")
# Four groups of turns; the first two are one subject (dogs) that the vectors below put in
# two clusters, as k-means does with a subject a chat keeps coming back to.
GROUPS = {
    "dogs-a": [
        "It's so cute, Mel! My dogs love running on the beach every morning.",
        "That's my dog Max. Caroline's dogs and my dog play fetch at the beach.",
        "I'm taking the dogs to the vet, the dog has a sore paw from the beach.",
        "Can't believe how fast the dogs run on the beach, Melanie!",
        "Yeah it's true, a dog on the beach is the happiest dog there is.",
        "The dogs slept all afternoon after the beach, that's a tired dog.",
    ],
    "dogs-b": [
        "Mel, we're thinking of adopting another dog, two dogs at home would be fun.",
        "It's a big decision, Caroline, a second dog needs a walk twice a day.",
        "Our dog Max would love a puppy; the dogs could walk together in the park.",
        "That's sweet. I'd walk both dogs in the park before work.",
        "I'm sure a puppy and a dog get along after a week in the park.",
        "You'll need a bigger leash for two dogs, it's what the park ranger said.",
    ],
    "pottery": [
        "I'm signing up for a pottery class, Melanie, the clay bowls are lovely.",
        "That's amazing, Caroline! Pottery with clay is so relaxing; I glazed a bowl.",
        "My pottery teacher showed us the wheel; it's hard to center the clay.",
        "It's my third pottery class, the clay vase finally stood up.",
        "I can't wait to fire the clay bowls in the pottery kiln next week.",
        "Mel, your pottery vase with the blue glaze is beautiful, that's talent.",
        "The kiln cracked one clay bowl, it's part of learning pottery.",
        "We're painting the pottery bowls with glaze before the kiln.",
    ],
    "ferry": [
        "Which ferry goes from Piraeus to Naxos, Caroline? It's our summer trip.",
        "That's the Blue Star ferry; the ferry to Naxos leaves Piraeus at seven.",
        "I'm booking ferry tickets to Naxos island tonight.",
        "Can't we take the fast ferry to Naxos? It's three hours instead of five.",
        "The ferry from Naxos to Santorini runs twice a day in summer, Mel.",
        "Melanie, the ferry port in Piraeus is huge, that's why we left early.",
        "It's windy, the Naxos ferry might be late today.",
        "We watched dolphins from the ferry deck on the way to Naxos island.",
    ],
}
STICKY = ("s0", "user", "Always answer in French")
AXES = np.eye(8, dtype=np.float32)


def chat_messages() -> tuple[list[Message], np.ndarray]:
    """The turns (plus one sticky instruction) and one unit vector per turn: each group
    along its own axis, with a little noise."""
    rng = np.random.default_rng(7)
    msgs, rows = [Message(*STICKY)], [AXES[7]]
    for g, (name, texts) in enumerate(GROUPS.items()):
        for n, text in enumerate(texts):
            msgs.append(Message(f"{name}-{n}", SPEAKERS[n % 2], text))
            v = AXES[g] + rng.normal(0, 0.05, 8).astype(np.float32)
            rows.append(v / np.linalg.norm(v))
    return msgs, np.stack(rows)


def with_group(msgs: list[Message], vectors: np.ndarray, drop: str, name: str, texts: list[str], axis: int):
    """The chat without the turns of group ``drop``, plus ``texts`` along ``axis``."""
    keep = [i for i, m in enumerate(msgs) if not m.id.startswith(drop)]
    added = [Message(f"{name}-{n}", SPEAKERS[n % 2], t) for n, t in enumerate(texts)]
    return [msgs[i] for i in keep] + added, np.vstack([vectors[keep], np.tile(AXES[axis], (len(added), 1))])


def label_problems(labels: list[str]) -> list[str]:
    """What a person would not write, over one chat's labels."""
    names = {s.lower() for s in SPEAKERS}
    problems = []
    seen: dict[str, str] = {}
    for label in labels:
        words = label.split()
        if not 2 <= len(words) <= 4:
            problems.append(f"{label!r}: {len(words)} words")
        for w in words:
            low = w.lower()
            if "'" in w or "\u2019" in w:
                problems.append(f"{label!r}: contraction {w!r}")
            if low in CHAT_STOPWORDS:
                problems.append(f"{label!r}: stop word {w!r}")
            if any(n.startswith(low) for n in names):
                problems.append(f"{label!r}: speaker name {w!r}")
        keys = [word_key(w) for w in words]
        if len(set(keys)) < len(keys):
            problems.append(f"{label!r}: one word twice")
        if re.search(r"\s\d+$", label):
            problems.append(f"{label!r}: numbered duplicate")
        for key in set(keys) - {"discussion"}:
            if key in seen:
                problems.append(f"{label!r} and {seen[key]!r} share a word")
            seen[key] = label
    return problems


def test_local_labels_read_as_a_person_would_write_them():
    msgs, vectors = chat_messages()
    topics = local_topics(msgs, vectors, ["s0"])
    labels = [t["label"] for t in topics]
    assert label_problems(labels) == []
    # The dog turns, two clusters: two labels of their own words, never "Dogs Beach" and
    # "Dogs Park" (or "Dogs Beach 2").
    assert sum("dog" in label.lower() for label in labels) <= 1, labels
    assert any("pottery" in label.lower() or "clay" in label.lower() for label in labels)
    assert any("ferry" in label.lower() or "naxos" in label.lower() for label in labels)
    # Each topic keeps its members; none is the sticky instruction; no turn is in two.
    members = [i for t in topics for i in t["message_ids"]]
    assert all(t["count"] == len(t["message_ids"]) for t in topics)
    assert len(members) == len(set(members)) and "s0" not in members
    assert len(topics) == 4 and {t["count"] for t in topics} == {6, 8}


def test_two_clusters_of_one_subject_are_one_topic():
    # The same beach-and-dogs turns twice over, put on two axes: k-means makes two
    # clusters, whose best word is the same. One bubble, holding both.
    msgs, vectors = with_group(*chat_messages(), "dogs-b", "again", GROUPS["dogs-a"], 1)
    topics = local_topics(msgs, vectors, ["s0"])
    assert label_problems([t["label"] for t in topics]) == []
    beach = [t for t in topics if "beach" in t["label"].lower()]
    assert len(beach) == 1 and beach[0]["count"] == 12, topics


def test_speaker_names_and_two_forms_of_a_word_name_no_topic():
    # Turns that greet each other by name (a cluster of their own in a long chat), and
    # turns whose common words are one word in two forms.
    greetings = ["Hi Melanie!", "Hey Caroline!", "Melanie, hi!", "Caroline! Hello again.", "Mel! Hey!",
                 "Hi hi Caroline."]
    forms = ["My dog loves other dogs, Mel.", "Dogs and a dog, all morning.", "One dog, two dogs.",
             "The dog met three dogs.", "Dogs everywhere, and my dog.", "A dog chasing dogs again."]
    msgs, vectors = with_group(*chat_messages(), "dogs-b", "hello", greetings, 5)
    msgs, vectors = with_group(msgs, vectors, "dogs-a", "forms", forms, 6)
    topics = local_topics(msgs, vectors, ["s0"])
    labels = [t["label"] for t in topics]
    assert label_problems(labels) == [], labels
    assert not any(i.startswith("hello-") for t in topics for i in t["message_ids"])
    dog = [t for t in topics if "dog" in t["label"].lower()]
    assert len(dog) == 1 and dog[0]["label"].lower().count("dog") == 1, labels


def test_labels_on_word_vectors_too():
    msgs, _ = chat_messages()
    topics = local_topics(msgs, None, ["s0"])  # embeddings off: clustered by their words
    assert topics and label_problems([t["label"] for t in topics]) == []
    assert all(t["count"] == len(t["message_ids"]) for t in topics)


def test_word_forms_share_a_key():
    assert word_key("dog") == word_key("dogs")
    assert word_key("dance") == word_key("dancing") == word_key("danced") == word_key("dances")
    assert word_key("recipe") == word_key("recipes") and word_key("berries") == word_key("berry")
    assert word_key("running") == word_key("run") and word_key("class") == word_key("classes")
    assert word_key("pottery") != word_key("potter")


def test_small_talk_is_no_topic():
    # Three subjects and a cluster of greetings and thanks (on the axis the second dog
    # cluster had): the greetings name nothing, so they get no bubble.
    chatter = ["Thanks so much, that's really nice of you!", "Bye for now, talk soon!",
               "Wow, that's awesome, I'm so happy for you!", "Haha yeah, totally, it's great!",
               "Congrats, that's amazing news!", "Thanks! Take care, bye!"]
    msgs, vectors = with_group(*chat_messages(), "dogs-b", "chat", chatter, 1)
    topics = local_topics(msgs, vectors, ["s0"])
    assert len(topics) == 3 and label_problems([t["label"] for t in topics]) == []
    assert not any(i.startswith("chat-") for t in topics for i in t["message_ids"]), topics


def write_chat(root: Path, chat_id: str, msgs: list[Message], topics: list[dict] | None = None,
               toml: str = '[embeddings]\nmodel = "none"\n') -> None:
    mem = root / ".memory"
    mem.mkdir(parents=True, exist_ok=True)
    (mem / f"{chat_id}.json").write_text(json.dumps({"messages": [m.to_dict() for m in msgs], "topics": topics or []}),
                                         encoding="utf-8")
    (root / "smartcontext.toml").write_text(toml, encoding="utf-8")


def test_each_local_bubble_selects_its_count(tmp_path):
    msgs, _ = chat_messages()
    write_chat(tmp_path, "pets", msgs)
    with Workspace.open(tmp_path) as ws:
        sc = ws.chats()
        chat = sc.chat("pets")
        regular = [t for t in chat.extract_topics("local").topics if not t.get("sticky")]
        assert len(regular) >= 2
        for t in regular:
            answer = sc.set_filter([t["label"]], chat_id="pets")
            assert "matched_nothing" not in answer
            hist = chat.history()
            assert hist.mode == "topics" and hist.matched_nothing == []
            kept = set(hist.message_ids) - {"s0"}
            # The count the bubble shows is what it selects: its own members, sticky aside.
            assert kept == set(t["message_ids"]) and len(kept) == t["count"]
            assert "s0" in hist.message_ids
            assert hist.status_line() == f"{len(hist.messages)} of {len(msgs)} messages in context"
        both = [t["label"] for t in regular[:2]]
        sc.set_filter(both, chat_id="pets")
        assert set(chat.history().message_ids) == {"s0", *regular[0]["message_ids"], *regular[1]["message_ids"]}
        # A message added since the extraction joins a topic whose label it matches (the
        # seed's rule) until the next extraction counts it in.
        ferry = next(t for t in regular if "ferry" in t["label"].lower() or "naxos" in t["label"].lower())
        sc.set_filter([ferry["label"]], chat_id="pets")
        chat.add_message("user", "Does the Naxos ferry take cars?", id="late-ferry", extract=False)
        chat.add_message("user", "My clay bowl cracked again.", id="late-clay", extract=False)
        kept = set(chat.history().message_ids)
        assert kept == {"s0", "late-ferry", *ferry["message_ids"]}


# Topics as an LLM writes them (label and count, no members): the seed's threshold rule.
LLM_TOPICS = [{"label": "Adoption Agencies", "count": 19}, {"label": "Naxos Ferry", "count": 8},
              {"label": STICKY_LABEL, "sticky": True, "message_ids": ["s0"], "count": 1}]


def test_a_topic_that_matched_nothing_says_so(tmp_path):
    msgs, _ = chat_messages()
    write_chat(tmp_path, "pets", msgs, LLM_TOPICS)
    with Workspace.open(tmp_path) as ws:
        sc = ws.chats()
        chat = sc.chat("pets")
        events: list[tuple[str, dict]] = []
        sc.subscribe("smart_context.highlight_applied", lambda e, p: events.append((e, p)))
        answer = sc.set_filter(["Adoption Agencies"], chat_id="pets")
        line = '"Adoption Agencies" matches no message: all messages in context'
        assert answer == {"status": "success", "active_topics": ["Adoption Agencies"],
                          "matched_nothing": ["Adoption Agencies"], "status_line": line}
        hist = chat.history()
        # The seed's fallback keeps the whole history, and the result says why.
        assert hist.mode == "topics-fallback" and len(hist.messages) == len(msgs)
        assert hist.matched_nothing == ["Adoption Agencies"] and hist.status_line() == line
        assert hist.to_dict(include_messages=False)["matched_nothing"] == ["Adoption Agencies"]
        assert events[-1][1] == {"message_ids": hist.message_ids, "matched_nothing": ["Adoption Agencies"],
                                 "status_line": line}
        # With a topic that matches, the filter applies and still names the one that did not.
        answer = sc.set_filter(["Adoption Agencies", "Naxos Ferry"], chat_id="pets")
        hist = chat.history()
        ferry = {m.id for m in msgs if m.id.startswith("ferry-")}
        assert hist.mode == "topics" and set(hist.message_ids) == ferry | {"s0"}
        assert answer["matched_nothing"] == ["Adoption Agencies"]
        assert hist.status_line() == (f"{len(ferry) + 1} of {len(msgs)} messages in context; "
                                      '"Adoption Agencies" matches none')


def test_topic_filter_mixes_members_and_the_threshold_rule():
    msgs = [Message("s", "user", "be concise"), Message("m1", "user", "a"), Message("m2", "user", "b"),
            Message("m3", "user", "c")]
    mv = np.array([[0.0, 1.0], [0.9, 0.1], [0.1, 0.9], [0.0, 1.0]], dtype=np.float32)
    members = {"Local": ["m3", "gone"]}  # an id deleted since extraction selects nothing
    lab = np.array([[0.0, 1.0], [1.0, 0.0]], dtype=np.float32)  # a row per active topic
    res = topic_filter("c", msgs, ["s"], ["Local", "LLM"], True, 0.7, mv, lab, members)
    assert res.mode == "topics" and res.message_ids == ["s", "m1", "m3"] and res.matched_nothing == []
    only = topic_filter("c", msgs, ["s"], ["Local"], True, 0.7, members=members)
    assert only.message_ids == ["s", "m3"]
    none = topic_filter("c", msgs, ["s"], ["LLM"], True, 0.99, mv, lab[1:], members)
    assert none.mode == "topics-fallback" and none.matched_nothing == ["LLM"] and len(none.messages) == 4


@pytest.fixture(scope="module")
def embedder():
    from smartcontext.embeddings import get_embedder

    return get_embedder("local:minilm")


def test_threshold_rule_with_embeddings_names_the_topic_that_cleared_nothing(tmp_path, embedder):
    msgs, _ = chat_messages()
    write_chat(tmp_path, "pets", msgs, [{"label": "Quantum Chromodynamics Lattice", "count": 5}] + LLM_TOPICS,
               toml="")
    with Workspace.open(tmp_path) as ws:
        ws._embedder = embedder
        sc = ws.chats()
        sc.chat("pets")
        answer = sc.set_filter(["Quantum Chromodynamics Lattice"], chat_id="pets")
        assert answer["matched_nothing"] == ["Quantum Chromodynamics Lattice"]
        assert "matches no message" in answer["status_line"]
        answer = sc.set_filter(["Naxos Ferry"], chat_id="pets")
        assert "matched_nothing" not in answer
        kept = set(sc.chat("pets").history().message_ids)
        assert kept & {m.id for m in msgs if m.id.startswith("ferry-")} and not any(i.startswith("pottery") for i in kept)


def test_members_deleted_before_the_topics_are_saved_leave_them(tmp_path):
    # An extraction reads the chat, a message is deleted meanwhile, the topics are saved:
    # the stored count is still what the topic selects.
    msgs, _ = chat_messages()
    write_chat(tmp_path, "pets", msgs)
    with Workspace.open(tmp_path) as ws:
        chat = ws.chats().chat("pets")
        chat._save_topics([{"label": "Naxos Ferry", "count": 3, "message_ids": ["ferry-0", "ferry-1", "gone"]},
                           {"label": "Old Topic", "count": 1, "message_ids": ["gone"]}])
        assert chat.load().topics == [{"label": "Naxos Ferry", "count": 2, "message_ids": ["ferry-0", "ferry-1"]}]


def test_a_short_chat_keeps_topics_of_one_message():
    # Four turns make three clusters; in so short a chat a cluster of one turn is a topic.
    msgs = [Message("1", "user", "How do I feed a sourdough starter?"),
            Message("2", "assistant", "Feed it flour and water every day."),
            Message("3", "user", "Which ferry goes from Piraeus to Naxos?"),
            Message("4", "assistant", "Blue Star ferries sail daily from Piraeus to Naxos.")]
    vectors = np.stack([AXES[0], AXES[1], AXES[2], AXES[2]])
    topics = local_topics(msgs, vectors, [])
    assert sorted(t["count"] for t in topics) == [1, 1, 2], topics
    assert any("sourdough" in t["label"].lower() for t in topics)
