"""Which messages of a chat go to the model: the seed's topic filter, and the result
type every history filter answers (``chat.auto`` holds the automatic one).

The topic filter (the seed's ``pipeline.context``): sticky messages are always in; with
no active topic or ``embedding_search`` off, the whole history; otherwise the messages
whose best cosine to a selected topic label reaches the threshold, merged with the sticky
ones, in chronological order; when nothing clears the threshold, the whole history.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .files import Message


@dataclass
class HistoryResult:
    """The history chosen for the next model call.

    mode:      ``all`` (no filter), ``topics`` (the seed's filter), ``topics-fallback``
               (nothing cleared the threshold: whole history), ``threshold`` (cosine to
               the pending message), ``auto`` (retrieval + budget).
    messages:  the kept messages, chronological.
    """

    chat_id: str
    mode: str
    messages: list[Message]
    total_messages: int
    sticky_ids: list[str] = field(default_factory=list)
    active_topics: list[str] = field(default_factory=list)
    tokens: int | None = None
    total_tokens: int | None = None
    budget: int | None = None
    signals: list[str] = field(default_factory=list)

    @property
    def message_ids(self) -> list[str]:
        return [m.id for m in self.messages]

    def to_dict(self, include_messages: bool = True) -> dict[str, Any]:
        d: dict[str, Any] = {
            "chat_id": self.chat_id, "mode": self.mode, "message_ids": self.message_ids,
            "included": len(self.messages), "total_messages": self.total_messages,
            "sticky_message_ids": self.sticky_ids, "active_topics": self.active_topics,
            "status_line": self.status_line(),
        }
        for key in ("tokens", "total_tokens", "budget"):
            if getattr(self, key) is not None:
                d[key] = getattr(self, key)
        if self.signals:
            d["signals"] = self.signals
        if include_messages:
            d["messages"] = [m.to_dict() for m in self.messages]
        return d

    def status_line(self) -> str:
        """The panel's status line, in the seed's words."""
        if self.mode in ("all", "topics-fallback") or len(self.messages) == self.total_messages:
            return "All messages in context"
        return f"{len(self.messages)} of {self.total_messages} messages in context"


def best_cosines(message_vectors: np.ndarray, query_vectors: np.ndarray) -> np.ndarray:
    """Each message's best cosine to any of the queries (rows are unit vectors)."""
    if not len(query_vectors) or not len(message_vectors):
        return np.zeros(len(message_vectors), dtype=np.float32)
    # One matrix-vector product per query: a matrix-matrix product goes to the threaded
    # BLAS kernel, which took 10-20 ms for 1,000 x 2 on a busy 2-core machine, against
    # well under 1 ms this way.
    best = message_vectors @ query_vectors[0]
    for q in query_vectors[1:]:
        np.maximum(best, message_vectors @ q, out=best)
    return best


def topic_filter(
    chat_id: str,
    messages: list[Message],
    sticky_ids: list[str],
    active_topics: list[str],
    embedding_search: bool,
    threshold: float,
    message_vectors: np.ndarray | None = None,
    label_vectors: np.ndarray | None = None,
) -> HistoryResult:
    """The seed's filter. Vectors are needed only when a topic is active and search is on."""
    sticky = set(sticky_ids)
    base: dict[str, Any] = dict(chat_id=chat_id, total_messages=len(messages), sticky_ids=[m.id for m in messages if m.id in sticky],
                active_topics=list(active_topics))
    if not embedding_search or not active_topics:
        return HistoryResult(mode="all", messages=list(messages), **base)
    assert message_vectors is not None and label_vectors is not None
    scores = best_cosines(message_vectors, label_vectors)
    passing = {m.id for m, s in zip(messages, scores) if s >= threshold and m.id not in sticky}
    if not passing:
        return HistoryResult(mode="topics-fallback", messages=list(messages), **base)
    kept = [m for m in messages if m.id in passing or m.id in sticky]
    return HistoryResult(mode="topics", messages=kept, **base)


def threshold_filter(
    chat_id: str,
    messages: list[Message],
    sticky_ids: list[str],
    message_vectors: np.ndarray,
    query_vector: np.ndarray,
    threshold: float,
) -> HistoryResult:
    """The seed's rule with the pending message as the query: cosine >= threshold, plus
    sticky; the whole history when nothing clears it (the benchmark's baseline)."""
    sticky = set(sticky_ids)
    scores = message_vectors @ np.asarray(query_vector, dtype=np.float32)
    passing = {m.id for m, s in zip(messages, scores) if s >= threshold and m.id not in sticky}
    base: dict[str, Any] = dict(chat_id=chat_id, total_messages=len(messages), sticky_ids=[m.id for m in messages if m.id in sticky])
    if not passing:
        return HistoryResult(mode="topics-fallback", messages=list(messages), **base)
    return HistoryResult(mode="threshold", messages=[m for m in messages if m.id in passing or m.id in sticky], **base)
