"""A topic selection carried across re-extraction.

Topics are regenerated after every answer (the seed's background task), and their labels
move: "Naxos Ferry" comes back as "Naxos Ferries", or as "Greek Island Ferries" holding the
same messages. A selection that named the old label would then select nothing, or be
dropped, and the history the next answer gets would silently change. ``carry_selection``
finds each selected topic among the new ones, in this order:

1. the same label (case and spacing aside);
2. the new topic holding most of the old topic's messages (local topics keep their
   members; at least half of them, so a topic split in two is followed to its larger part);
3. a label with the same words (plurals and case aside, at least half of the words of both).

A selected topic found nowhere is ``lost``: the caller says so to the user.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from .topics import plural_stem

MEMBER_SHARE = 0.5
WORD_SHARE = 0.5


@dataclass
class Carried:
    """active: the new labels to select (in the order of the old selection, no repeats);
    renamed: old label -> the new label it continues as (only when the label changed);
    lost: old labels with no continuation."""

    active: list[str] = field(default_factory=list)
    renamed: dict[str, str] = field(default_factory=dict)
    lost: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.renamed or self.lost)


def fold_label(label: str) -> str:
    return " ".join(label.split()).casefold()


def _words(label: str) -> set[str]:
    return {plural_stem(w) for w in re.findall(r"[^\W_]+", label.casefold())}


def _members(topic: dict[str, Any]) -> set[str]:
    ids = topic.get("message_ids")
    return {str(i) for i in ids} if isinstance(ids, list) else set()


def _by_members(old: dict[str, Any] | None, new: list[dict[str, Any]]) -> str | None:
    members = _members(old or {})
    if not members:
        return None
    best, share = None, 0.0
    for topic in new:
        s = len(members & _members(topic)) / len(members)
        if s > share:
            best, share = topic["label"], s
    return best if share >= MEMBER_SHARE else None


def _by_words(label: str, new: list[dict[str, Any]]) -> str | None:
    words = _words(label)
    if not words:
        return None
    best, share = None, 0.0
    for topic in new:
        other = _words(topic["label"])
        common = len(words & other)
        s = min(common / len(words), common / len(other)) if other else 0.0
        if s > share:
            best, share = topic["label"], s
    return best if share >= WORD_SHARE else None


def carry_selection(active: list[str], old_topics: list[dict[str, Any]],
                    new_topics: list[dict[str, Any]]) -> Carried:
    """Where each label of ``active`` (topics of ``old_topics``) went in ``new_topics``.
    Sticky entries are no topics to select and are ignored on both sides."""
    old = {fold_label(t["label"]): t for t in old_topics
           if isinstance(t.get("label"), str) and not t.get("sticky")}
    new = [t for t in new_topics if isinstance(t.get("label"), str) and not t.get("sticky")]
    same = {fold_label(t["label"]): t["label"] for t in new}
    out = Carried()
    for label in active:
        found = same.get(fold_label(label)) or _by_members(old.get(fold_label(label)), new) or _by_words(label, new)
        if found is None:
            out.lost.append(label)
            continue
        if found != label:
            out.renamed[label] = found
        if found not in out.active:
            out.active.append(found)
    return out
