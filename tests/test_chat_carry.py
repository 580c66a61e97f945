"""A topic selection across re-extraction (``chat.carry``): the same label, the topic that
holds most of the old one's messages, a label with the same words; what is found nowhere is
lost and said to be. Then the whole loop on a real chat: select a topic, the chat grows, its
topics are extracted again, the selection follows and ``filter_changed`` says how."""

from __future__ import annotations

import json

import pytest

from smartcontext import Workspace
from smartcontext.chat.carry import carry_selection
from smartcontext.chat.events import FILTER_CHANGED, TOPICS_UPDATED
from smartcontext.errors import ChatNotFound

OLD = [{"label": "Naxos Ferry", "count": 4, "message_ids": ["m1", "m2", "m5", "m6"]},
       {"label": "Sourdough Starter", "count": 2, "message_ids": ["m3", "m4"]},
       {"label": "Budget", "count": 1, "message_ids": ["m7"]},
       {"label": "Instructions & Preferences", "sticky": True, "message_ids": ["m0"], "count": 1}]


def test_the_same_label_is_kept_whatever_its_case():
    new = [{"label": "naxos  ferry", "count": 5}, {"label": "Sourdough Starter", "count": 2}]
    carried = carry_selection(["Naxos Ferry", "Sourdough Starter"], OLD, new)
    assert carried.active == ["naxos  ferry", "Sourdough Starter"]
    assert carried.lost == [] and carried.renamed == {"Naxos Ferry": "naxos  ferry"}


def test_a_renamed_topic_is_followed_by_its_messages():
    # Three of the four messages are now in "Greek Island Boats": the selection moves there,
    # not to the topic that took one of them.
    new = [{"label": "Greek Island Boats", "count": 5, "message_ids": ["m1", "m2", "m5", "m9"]},
           {"label": "Harbour Cafes", "count": 2, "message_ids": ["m6", "m8"]}]
    carried = carry_selection(["Naxos Ferry"], OLD, new)
    assert carried.active == ["Greek Island Boats"] and carried.renamed == {"Naxos Ferry": "Greek Island Boats"}


def test_a_minority_of_the_messages_is_no_continuation():
    new = [{"label": "Harbour Cafes", "count": 2, "message_ids": ["m6", "m8"]}]
    carried = carry_selection(["Naxos Ferry"], OLD, new)
    assert carried.active == [] and carried.lost == ["Naxos Ferry"] and carried.changed


def test_topics_without_members_are_matched_by_their_words():
    # An LLM's topics have labels and counts only: a plural or a reordering is the same topic.
    new = [{"label": "Ferries To Naxos", "count": 3}, {"label": "Bread Baking", "count": 2}]
    carried = carry_selection(["Naxos Ferry", "Sourdough Starter"], [], new)
    assert carried.active == ["Ferries To Naxos"] and carried.lost == ["Sourdough Starter"]


def test_two_selected_topics_merged_into_one_select_it_once():
    new = [{"label": "Island Trip", "count": 7, "message_ids": ["m1", "m2", "m5", "m6", "m3", "m4"]}]
    carried = carry_selection(["Naxos Ferry", "Sourdough Starter"], OLD, new)
    assert carried.active == ["Island Trip"] and len(carried.renamed) == 2 and not carried.lost


def test_the_sticky_entry_is_never_a_continuation():
    new = [{"label": "Instructions & Preferences", "sticky": True, "message_ids": ["m7"], "count": 1}]
    assert carry_selection(["Budget"], OLD, new).lost == ["Budget"]


def test_nothing_changed_is_no_change():
    carried = carry_selection(["Naxos Ferry"], OLD, OLD)
    assert carried.active == ["Naxos Ferry"] and not carried.changed


def write_trip(root, messages) -> None:
    """A chat whose topics ("Island Boats", "Kitchen Chemistry") are named unlike anything the
    local method would call them, embeddings off."""
    mem = root / ".memory"
    mem.mkdir()
    (mem / "trip.json").write_text(json.dumps({
        "messages": [{"id": i, "role": r, "content": c} for i, r, c in messages],
        "topics": [{"label": "Island Boats", "count": 2, "message_ids": ["m1", "m2"]},
                   {"label": "Kitchen Chemistry", "count": 2, "message_ids": ["m3", "m4"]}]}))
    (root / "smartcontext.toml").write_text('[embeddings]\nmodel = "none"\n')


TRIP = [("m1", "user", "Which ferry goes from Piraeus to Naxos?"),
        ("m2", "assistant", "Blue Star ferries sail from Piraeus to Naxos every morning."),
        ("m3", "user", "How do I feed my sourdough starter?"),
        ("m4", "assistant", "Feed the sourdough starter flour and water once a day.")]


def test_a_selection_follows_its_topic_when_the_topics_are_extracted_again(tmp_path):
    write_trip(tmp_path, [("m0", "user", "be concise"), *TRIP])
    with Workspace.open(tmp_path) as ws:
        sc = ws.chats()
        seen = []
        sc.subscribe("*", lambda event, payload: seen.append((event, payload)))
        sc.set_filter(["Island Boats", "Kitchen Chemistry"], chat_id="trip")
        seen.clear()
        # The local method names the clusters by their words ("Naxos"...): both labels change,
        # the ferry messages stay together and the selection follows them.
        chat = sc.chat("trip")
        chat.add_message("user", "Is there a faster ferry from Piraeus to Naxos in summer?")
        result = chat.extract_topics(method="local")
        labels = [t["label"] for t in result.topics if not t.get("sticky")]
        assert "Island Boats" not in labels
        ferry = next(t["label"] for t in result.topics if "m1" in t.get("message_ids", []))
        assert ferry in sc.active_topics
        changed = [p for e, p in seen if e == FILTER_CHANGED]
        assert changed and changed[-1]["renamed"]["Island Boats"] == ferry
        assert changed[-1]["active_topics"] == sc.active_topics
        # The selection is said before the topics arrive, so a page has the labels to keep.
        events = [e for e, _ in seen]
        assert events.index(FILTER_CHANGED) < events.index(TOPICS_UPDATED)
        # Kept on disk: another process (the CLI, a restarted server) reads the new labels.
        assert json.loads((tmp_path / ".smartcontext" / "chat_state.json").read_text())["active_topics"] == sc.active_topics


def test_a_bubble_clicked_while_the_topics_were_extracted_again_selects_its_successor(tmp_path):
    """The click's set_filter reaches the server after the extraction replaced the topics it
    was made on: the old label is carried as if it had arrived a moment earlier; a label the
    chat never had is still refused."""
    write_trip(tmp_path, TRIP)
    with Workspace.open(tmp_path) as ws:
        sc = ws.chats()
        sc.set_filter([], chat_id="trip")  # nothing selected while the topics are replaced
        result = sc.chat("trip").extract_topics(method="local")
        ferry = next(t["label"] for t in result.topics if "m1" in t.get("message_ids", []))
        assert ferry != "Island Boats"
        seen = []
        sc.subscribe("*", lambda event, payload: seen.append((event, payload)))
        answer = sc.set_filter(["Island Boats"], chat_id="trip")
        assert sc.active_topics == [ferry] == answer["active_topics"]
        assert answer["renamed"] == {"Island Boats": ferry} and answer["lost"] == []
        changed = [p for e, p in seen if e == FILTER_CHANGED]
        assert changed[-1]["active_topics"] == [ferry] and changed[-1]["renamed"] == {"Island Boats": ferry}
        with pytest.raises(ChatNotFound, match="no topic 'Budget'"):
            sc.set_filter(["Budget"], chat_id="trip")
        assert sc.active_topics == [ferry]
