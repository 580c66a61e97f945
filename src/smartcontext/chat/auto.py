"""The automatic history filter: the pending user message is the query.

Two signals rank the chat's messages, as in every search of the engine: BM25 over the
workspace index (the chat source's message items, restricted to this chat) and cosine
between message vectors and the pending message. Reciprocal rank fusion merges them; each
retrieved turn lends part of its score to its neighbours (an answer travels with its
question); when the pending message names one of the chat's speakers, that speaker's
turns count more; sticky messages are always in; the best messages, longer turns
preferred at equal score, fill a token budget (``max_tokens``, or ``share`` of the
history's tokens), counted exactly on the rendered lines, each carrying its date; the
result is in chronological order.

Every constant below was chosen on two LoCoMo conversations (``bench/chat_context.py``,
conv-26 and conv-30, categories 1-4) and confirmed on the other three; the measurements,
including the ideas that did not help, are in ``bench/results/history.md``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..query.fusion import reciprocal_rank
from ..query.packers import fill_by_size
from ..query.profiles import CHAT_HISTORY
from .filter import HistoryResult
from .files import Message
from ..sources.chat import render_line
from ..sources.chat import GENERIC_ROLES

if TYPE_CHECKING:
    import numpy as np

# The chat-history profile's measured constants (query/profiles.py says how each was
# measured); module names, so bench/chat_context.py can vary them.
CHAT_RRF_K = CHAT_HISTORY.fusion.k
FUSION_WEIGHTS = (CHAT_HISTORY.fusion.weights["keywords"], CHAT_HISTORY.fusion.weights["vectors"])
NEIGHBOUR_DECAY = CHAT_HISTORY.constants["neighbour_decay"]
SPEAKER_BOOST = CHAT_HISTORY.constants["speaker_boost"]
LENGTH_EXPONENT = CHAT_HISTORY.constants["length_exponent"]


def render_message(m: Message) -> str:
    """A message as the model reads it: date (when known), role, text."""
    return render_line(m.role, m.content, m.timestamp)


def fuse(rankings: Sequence[Sequence[int]], n: int, weights: Sequence[float] | None = None,
         k: float | None = None) -> list[float]:
    """Reciprocal rank fusion of ranked message positions into one score per message
    (``k``: the rank constant, ``CHAT_RRF_K`` when None)."""
    k = CHAT_RRF_K if k is None else k
    scores = [0.0] * n
    for i, score in reciprocal_rank([list(r) for r in rankings], k, weights).items():
        scores[i] = score
    return scores


def spread_to_neighbours(scores: list[float], neighbours: int) -> list[float]:
    """Each scored turn lends ``NEIGHBOUR_DECAY[d - 1]`` of its score to the turns ``d``
    before and after it (a turn keeps the larger of its own and what it is lent)."""
    out = list(scores)
    n = len(scores)
    scored = [i for i, s in enumerate(scores) if s]  # a turn with no score lends nothing
    for d in range(1, min(neighbours, len(NEIGHBOUR_DECAY)) + 1):
        decay = NEIGHBOUR_DECAY[d - 1]
        for i in scored:
            lent = scores[i] * decay
            if i + d < n and out[i + d] < lent:
                out[i + d] = lent
            if i >= d and out[i - d] < lent:
                out[i - d] = lent
    return out


def named_speaker(pending: str, roles: Sequence[str]) -> str | None:
    """The one speaker of the chat the pending message names (a whole word, any case),
    or None when it names none or several. Generic roles (user, assistant...) are not
    names: "what did the assistant say" asks about content, not a person."""
    names = {r for r in roles if r and r.lower() not in GENERIC_ROLES}
    found = [r for r in names if re.search(rf"(?<!\w){re.escape(r)}(?!\w)", pending, re.IGNORECASE)]
    return found[0] if len(found) == 1 else None


def auto_filter(
    chat_id: str,
    messages: list[Message],
    sticky_ids: list[str],
    keyword_ranking: list[str],
    message_vectors: np.ndarray | None,
    query_vector: np.ndarray | None,
    *,
    max_tokens: int | None = None,
    share: float = 0.25,
    neighbours: int = 1,
    encoding: str = "cl100k_base",
    token_counts: Sequence[int] | None = None,
    weights: tuple[float, float] | None = None,
    pending: str | None = None,
    index_of: dict[str, int] | None = None,
    speakers: set[str] | None = None,
) -> HistoryResult:
    """Keep the messages that best answer the pending message within the budget.

    keyword_ranking: message ids, best first, from the index's keyword search scoped to
                     the chat (``Chat.keyword_ranking``).
    token_counts:    tokens of ``render_message`` per message (counted here when None).
    weights:         of the keyword and the semantic ranking in the fusion
                     (``FUSION_WEIGHTS`` when None).
    pending:         the pending message's text, for the speaker it names (optional).
    index_of, speakers: each message's position by id and the distinct roles, when the
                     caller keeps them across calls (a long chat: computed here otherwise).
    """
    from ..tokens import count_many

    weights = FUSION_WEIGHTS if weights is None else weights
    n = len(messages)
    # Plain lists, no numpy: a keyword-only history (embeddings off) of a long chat must
    # not pay numpy's import on its first answer; 50,000 messages cost a few ms here.
    counts = list(token_counts) if token_counts is not None else count_many(
        [render_message(m) for m in messages], encoding)
    total = sum(counts)
    budget = int(max_tokens) if max_tokens else max(1, int(share * total))
    pos = index_of if index_of is not None else {m.id: i for i, m in enumerate(messages)}
    rankings: list[Sequence[int]] = []
    signals, used_weights = [], []
    kw = [pos[i] for i in dict.fromkeys(keyword_ranking) if i in pos]
    if kw:
        rankings.append(kw)
        signals.append("keyword")
        used_weights.append(weights[0])
    if message_vectors is not None and query_vector is not None and n:
        import numpy as np  # vectors are numpy already

        cos = message_vectors @ np.asarray(query_vector, dtype=np.float32)
        rankings.append(np.argsort(-cos, kind="stable").tolist())
        signals.append("semantic")
        used_weights.append(weights[1])
    scores = spread_to_neighbours(fuse(rankings, n, used_weights), neighbours) if rankings else [0.0] * n
    roles = speakers if speakers is not None else {m.role for m in messages}
    speaker = named_speaker(pending, list(roles)) if pending and rankings and SPEAKER_BOOST else None
    if speaker is not None:
        boost = 1.0 + SPEAKER_BOOST
        scores = [s * boost if m.role == speaker else s for s, m in zip(scores, messages)]
        signals.append("speaker")
    sticky = {i for i in sticky_ids if i in pos}
    taken = [False] * n
    for i in sticky:
        taken[pos[i]] = True
    # Best first; ties (no signal at all) go to the most recent turns: the positions go in
    # newest first, and a stable sort keeps that order among equal keys.
    key = [s * float(max(c, 1)) ** LENGTH_EXPONENT if s else 0.0 for s, c in zip(scores, counts)]
    order = sorted(range(n - 1, -1, -1), key=key.__getitem__, reverse=True)
    used = fill_by_size(order, counts, budget, taken, sum(counts[pos[i]] for i in sticky))
    kept = [messages[i] for i, keep in enumerate(taken) if keep]
    return HistoryResult(
        chat_id=chat_id, mode="auto", messages=kept, total_messages=n,
        sticky_ids=[messages[i].id for i in sorted(pos[i] for i in sticky)], tokens=used,
        total_tokens=total, budget=budget, signals=signals,
    )
