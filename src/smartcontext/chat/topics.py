"""Topics of a chat without a language model: cluster the message embeddings, label each
cluster with its most distinctive terms.

Spherical k-means (cosine) with a seeded k-means++ start groups the messages; a cluster's
label is the pair of terms (words or two-word phrases) most frequent in it relative to
the whole chat (class-based tf-idf), in Title Case, 2-4 words, as the seed's LLM prompt
asks. Sticky instruction messages (``chat.sticky``) are left out of the clustering and
come back as the one sticky topic. Deterministic: the same chat gives the same topics.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..retrieval.keyword import STOPWORDS
from .files import STICKY_LABEL, Message

MIN_TOPICS, MAX_TOPICS = 3, 8
# Words that carry no topic in conversation (on top of the retrieval stopwords).
CHAT_STOPWORDS = STOPWORDS | frozenset(
    """yes yeah yep ok okay sure right great good nice cool awesome thanks thank really
    just know think going go got get gets getting say said tell told ask asked let lets
    would could should might maybe also much many lot lots bit kind sort pretty quite
    actually definitely probably today yesterday tomorrow now time times day days thing
    something anything everything nothing someone anyone everyone sounds sound glad happy
    love like likes liked feel feels felt wow hey oh ah um hmm sorry absolutely totally
    amazing wonderful things stuff able sure cause since ever never always keep kept
    new old first last next back take took come came well way though really im ive youre
    dont thats whats its youve id""".split()
)
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9+#'-]*")


@dataclass
class TopicResult:
    """Topics in the chat file's shape plus which method made them.

    topics:     ``[{"label", "count"}...]`` then, when there are instructions, the sticky
                ``{"label": STICKY_LABEL, "sticky": true, "message_ids", "count"}``.
    method:     ``local:kmeans-terms``, ``llm:<model>``, ...
    error:      set when the method failed; the chat then keeps its previous topics.
    """

    topics: list[dict[str, Any]]
    method: str
    sticky_ids: list[str] = field(default_factory=list)
    error: str | None = None
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        d = {"topics": self.topics, "method": self.method, "sticky_message_ids": self.sticky_ids,
             "seconds": round(self.seconds, 3)}
        if self.error:
            d["error"] = self.error
        return d


def with_sticky(topics: list[dict[str, Any]], sticky_ids: list[str]) -> list[dict[str, Any]]:
    """The topics plus the one sticky entry (when there are instruction messages)."""
    out = [t for t in topics if not t.get("sticky")]
    if sticky_ids:
        out.append({"label": STICKY_LABEL, "sticky": True, "message_ids": list(sticky_ids),
                    "count": len(sticky_ids)})
    return out


def _tokens(text: str) -> list[str]:
    return [w.strip("'-").lower() for w in _WORD.findall(text)]


def _terms(text: str) -> list[str]:
    """Content words and two-word phrases of content words (adjacent in the text)."""
    toks = _tokens(text)
    keep = [t if len(t) > 2 and t not in CHAT_STOPWORDS and not t.isdigit() else None for t in toks]
    out = [t for t in keep if t]
    out += [f"{a} {b}" for a, b in zip(keep, keep[1:]) if a and b and a != b]
    return out


def choose_k(n: int) -> int:
    """About one topic per dozen messages, within the seed's 3-8 (fewer for tiny chats)."""
    if n <= 0:
        return 0
    return max(1, min(MAX_TOPICS, n, max(MIN_TOPICS, round(math.sqrt(n / 2)))))


def spherical_kmeans(x: np.ndarray, k: int, iterations: int = 30, seed: int = 0) -> np.ndarray:
    """Cluster of each unit row of ``x`` (cosine k-means, k-means++ start)."""
    n = len(x)
    rng = np.random.default_rng(seed)
    centres = [x[int(rng.integers(n))]]
    for _ in range(1, k):
        sims = np.max(x @ np.stack(centres).T, axis=1)
        d = np.clip(1.0 - sims, 0.0, None) ** 2
        total = float(d.sum())
        idx = int(rng.choice(n, p=d / total)) if total > 0 else int(rng.integers(n))
        centres.append(x[idx])
    c = np.stack(centres)
    labels = np.full(n, -1)
    for _ in range(iterations):
        new = np.argmax(x @ c.T, axis=1)
        if np.array_equal(new, labels):
            break
        labels = new
        for j in range(k):
            members = x[labels == j]
            if len(members):
                v = members.sum(axis=0)
                c[j] = v / max(float(np.linalg.norm(v)), 1e-9)
    return labels


def label_clusters(texts: list[str], labels: np.ndarray, k: int) -> list[str]:
    """A 2-4 word Title Case label per cluster from its distinctive terms (class tf-idf)."""
    per_cluster: list[Counter[str]] = [Counter() for _ in range(k)]
    for text, c in zip(texts, labels):
        per_cluster[int(c)].update(set(_terms(text)))  # message frequency, not raw counts
    df: Counter[str] = Counter()
    for counter in per_cluster:
        df.update(counter.keys())
    sizes = Counter(int(c) for c in labels)
    out: list[str] = []
    used: set[str] = set()
    for j in range(k):
        counter = per_cluster[j]
        scored = []
        for term, tf in counter.items():
            if tf < 2 and sizes[j] > 2:
                continue  # a term of one message does not name a group of them
            # Frequent inside, rare in the other clusters; phrases get a small bonus.
            score = (tf / max(1, sizes[j])) * math.log(1 + k / df[term]) * (1.3 if " " in term else 1.0)
            scored.append((score, term))
        scored.sort(key=lambda s: (-s[0], s[1]))
        words: list[str] = []
        for _, term in scored:
            parts = term.split()
            if any(p in words for p in parts):
                continue
            if len(words) + len(parts) > 3:
                continue
            words.extend(parts)
            if len(words) >= 2:
                break
        if not words:
            words = ["General", "Discussion"]
        elif len(words) == 1:
            words.append("Discussion")
        label = " ".join(w[:1].upper() + w[1:] for w in words)
        n = 2
        base = label
        while label in used:
            label = f"{base} {n}"
            n += 1
        used.add(label)
        out.append(label)
    return out


# Terms of the vectors that stand in for embeddings when embeddings are off: the most
# widespread content words, enough to tell a chat's subjects apart.
TERM_VOCABULARY = 256


def _stem(word: str) -> str:
    """Plurals folded (ferries -> ferry, coroutines -> coroutine): enough for words to meet."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def term_vectors(messages: list[Message], labels: list[str] | None = None):
    """Unit bag-of-words rows for ``messages`` (embeddings off).

    Without ``labels``: over the chat's most common content words (in 2+ messages),
    tf-idf weighted; returns the matrix. With ``labels`` (topic labels): over the labels'
    words; returns (message rows, label rows), so a cosine above 0 means a shared word."""
    toks = [{_stem(t) for t in _terms(m.content) if " " not in t} for m in messages]
    if labels is None:
        df = Counter(t for ts in toks for t in ts)
        vocab = [t for t, n in df.most_common(TERM_VOCABULARY) if n >= 2]
    else:
        vocab = sorted({_stem(t) for label in labels for t in _terms(label) if " " not in t})
    col = {t: j for j, t in enumerate(vocab)}
    x = np.zeros((len(messages), max(1, len(vocab))), dtype=np.float32)
    for i, ts in enumerate(toks):
        for t in ts:
            j = col.get(t)
            if j is not None:
                x[i, j] = 1.0
    if labels is None and vocab:
        x *= np.log(1 + len(messages) / np.maximum(x.sum(axis=0), 1.0)).astype(np.float32)
    x /= np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-9)
    if labels is None:
        return x
    lx = np.zeros((len(labels), x.shape[1]), dtype=np.float32)
    for i, label in enumerate(labels):
        for t in _terms(label):
            if _stem(t) in col:
                lx[i, col[_stem(t)]] = 1.0
    lx /= np.maximum(np.linalg.norm(lx, axis=1, keepdims=True), 1e-9)
    return x, lx


def _cohesion(x: np.ndarray, labels: np.ndarray) -> float:
    total = 0.0
    for c in set(labels.tolist()):
        v = x[labels == c].sum(axis=0)
        total += float(np.linalg.norm(v))  # = the members' total cosine to their unit centre
    return total


def local_topics(messages: list[Message], vectors: np.ndarray | None, sticky_ids: list[str]) -> list[dict[str, Any]]:
    """``[{"label", "count"}...]`` (largest first) for the non-sticky messages; with no
    vectors (embeddings off), clustered by their words (``term_vectors``)."""
    sticky = set(sticky_ids)
    keep = [i for i, m in enumerate(messages) if m.id not in sticky and _terms(m.content)]
    if not keep:
        return []
    k = choose_k(len(keep))
    if vectors is None:
        # Word vectors are sparse and k-means++ often seeds two centres in one subject:
        # the best of a few starts (by total cosine to the centres) is cheap here.
        x = term_vectors([messages[i] for i in keep])
        labels = max((spherical_kmeans(x, k, seed=seed) for seed in range(5)), key=lambda lab: _cohesion(x, lab))
    else:
        x = vectors[keep]
        labels = spherical_kmeans(x, k)
    # Clusters k-means left empty are dropped by relabelling the used ones densely.
    used = sorted(set(int(c) for c in labels))
    remap = {c: i for i, c in enumerate(used)}
    labels = np.array([remap[int(c)] for c in labels])
    names = label_clusters([messages[i].content for i in keep], labels, len(used))
    counts = Counter(int(c) for c in labels)
    topics: list[dict[str, Any]] = [{"label": names[j], "count": counts[j]} for j in range(len(used))]
    topics.sort(key=lambda t: (-t["count"], t["label"]))
    return topics[:MAX_TOPICS]
