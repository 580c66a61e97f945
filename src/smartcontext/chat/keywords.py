"""BM25 over one chat's messages, held in memory beside the chat.

The automatic history ranks the messages of one chat. Asking the workspace index meant
asking for every keyword hit of the workspace and keeping this chat's (the index cannot
filter by scope), and bringing the chat file into the index first: minutes for a chat of
50,000 messages. Here the chat's own postings are built once per process and extended
by the messages appended since, so a long chat answers in milliseconds and an appended
message costs its own words only.

Terms are those of the workspace's keyword search (``retrieval.keyword``): words and
identifier parts, lower-cased, stop words out, terms in half the messages or more
dropped (as the index's query does), word forms sharing a stem added.
"""

from __future__ import annotations

import math
import re
import threading
from collections import Counter, defaultdict
from collections.abc import Sequence

import numpy as np

from ..retrieval.english import stem
from ..retrieval.keyword import _WORD_RE, MAX_FORMS, question_terms, stem_roots
from ..words import split_identifier
from .files import Message, extends as _extends

K1 = 1.2
B = 0.75


# Words the index splits further: snake_case (into its parts) and camelCase (its parts
# besides the whole word). Found by regular expression, in C: a long chat's messages are
# mostly prose, and a Python call per word would cost seconds at 50,000 messages.
_CAMEL_WORD = re.compile(r"(?<!\w)[^\W\d]\w*?(?:[a-z][A-Z]|[A-Z][A-Z][a-z])\w*")


def message_terms(m: Message) -> Counter:
    """Term frequencies of a message: its words, identifier parts, and its speaker (the
    index's item name is the role, which its full-text search matches too)."""
    text = f"{m.role} {m.content}"[:200_000]
    freq = Counter(_WORD_RE.findall(text.lower()))
    for word in [w for w in freq if "_" in w]:
        n = freq.pop(word)
        for part in split_identifier(word):
            freq[part] += n
    for word in _CAMEL_WORD.findall(text):
        if "_" not in word:
            freq.update(split_identifier(word))
    return freq


class ChatKeywords:
    """The postings of one chat's messages; ``rank`` answers a query over them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._reset()

    def _reset(self) -> None:
        self._messages: list[Message] = []
        self._postings: dict[str, list[tuple[int, int]]] = defaultdict(list)  # term -> [(position, tf)]
        self._arrays: dict[str, tuple[np.ndarray, np.ndarray]] = {}  # the same, as arrays, for terms asked
        self._lengths: list[int] = []
        self._lengths_array: np.ndarray | None = None
        self._stems: dict[str, set[str]] = defaultdict(set)

    def _sync(self, messages: Sequence[Message]) -> None:
        """Index ``messages``: only the ones appended since the last call when the
        earlier ones are the very same objects (a chat read again), else all again."""
        have = self._messages
        n = len(have)
        if not _extends(have, messages):
            self._reset()  # edited, deleted or another chat: start over
            n = 0
        for pos in range(n, len(messages)):
            freq = message_terms(messages[pos])
            for term, tf in freq.items():
                postings = self._postings[term]
                if not postings:
                    self._stems[stem(term)].add(term)
                postings.append((pos, tf))
                self._arrays.pop(term, None)
            self._lengths.append(sum(freq.values()))
        self._messages = list(messages)

    def rank(self, messages: Sequence[Message], query: str, limit: int) -> list[int]:
        """Positions of ``messages``, best BM25 match for ``query`` first (at most ``limit``;
        messages without a query term are left out)."""
        with self._lock:
            self._sync(messages)
            terms, _ = question_terms(query)
            n = len(messages)
            if not terms or not n:
                return []
            present = [t for t in terms if self._postings.get(t)]
            chosen = [t for t in present if len(self._postings[t]) < 0.5 * n] or present
            chosen += self._forms(terms, set(chosen), n)
            if not chosen:
                return []
            if self._lengths_array is None or len(self._lengths_array) != n:
                self._lengths_array = np.asarray(self._lengths, dtype=np.float32)
            lengths = self._lengths_array
            norm = K1 * (1 - B + B * lengths / max(float(lengths.mean()), 1.0))
            scores = np.zeros(n, dtype=np.float32)
            for term in chosen:
                idx, tf = self._term_arrays(term)
                df = len(idx)
                weight = math.log(1 + (n - df + 0.5) / (df + 0.5))
                scores[idx] += weight * tf * (K1 + 1) / (tf + norm[idx])
            hit = np.flatnonzero(scores > 0)
            order = hit[np.lexsort((hit, -scores[hit]))]
            return order[:limit].tolist()

    def _term_arrays(self, term: str) -> tuple[np.ndarray, np.ndarray]:
        hit = self._arrays.get(term)
        if hit is None:
            postings = np.asarray(self._postings[term], dtype=np.int64).reshape(-1, 2)
            hit = self._arrays[term] = (postings[:, 0].astype(np.intp), postings[:, 1].astype(np.float32))
        return hit

    def _forms(self, terms: list[str], chosen: set[str], n: int) -> list[str]:
        forms: dict[str, None] = {}
        for term, root in stem_roots(terms):
            same = [t for t in self._stems.get(root, ()) if t != term and t not in chosen
                    and len(self._postings[t]) < 0.5 * n]
            for t in sorted(same, key=lambda t: -len(self._postings[t]))[:MAX_FORMS]:
                forms[t] = None
        return list(forms)

