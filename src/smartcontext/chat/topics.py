"""Topics of a chat without a language model: cluster the message embeddings, label each
cluster with its most distinctive terms, keep each cluster's members.

Spherical k-means (cosine) with a seeded k-means++ start groups the messages. A topic is
named as a person would: 2-3 content words in Title Case (the seed's 2-4), most frequent
in its cluster relative to the whole chat, never a contraction ("It's"), a stop word, a
speaker's name, the chat's background (a word in most of its messages), two forms of one
word ("Dog Dogs") or another topic's word ("X" and "X 2"); clusters whose best word is
the same are one topic, and clusters of small talk (nothing of their own scores) or of
under 3% of the messages are none. Each topic keeps its members (``message_ids``): the
topic filter selects exactly them, so the count a bubble shows is what it selects. Sticky
instruction messages (``chat.sticky``) are left out of the clustering and come back as the
one sticky topic. Deterministic: the same chat gives the same topics.
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..retrieval.keyword import STOPWORDS
from .files import STICKY_LABEL, Message

if TYPE_CHECKING:  # numpy is imported where vectors are used: a keyword-only history never needs it
    import numpy as np

MIN_TOPICS, MAX_TOPICS = 3, 8
# A cluster smaller than this share of the clustered messages is no topic: a bubble
# selecting well under 2% of a long chat is noise to a user.
MIN_TOPIC_SHARE = 0.03
# A word in more than this share of the chat's messages is its background (the speakers'
# names, "photo" in a chat of shared photos): it tells no topic from another. Chats under
# BACKGROUND_FROM messages are exempt: there one topic alone can hold a third of them.
BACKGROUND_SHARE = 0.15
BACKGROUND_FROM = 60
# A cluster whose best term scores under this (``_candidates``) has nothing of its own:
# greetings, thanks and encouragement ("Bye Care", "Congrats Happened"). It is no topic.
MIN_LABEL_SCORE = 0.15
# Code words of the retrieval stopwords that are real subjects of a conversation.
_CHAT_SUBJECTS = frozenset("python code file files bug issue error errors fix version line lines example problem".split())
# Words that carry no topic in conversation (on top of the retrieval stopwords).
CHAT_STOPWORDS = (STOPWORDS - _CHAT_SUBJECTS) | frozenset(
    """yes yeah yep ok okay sure right great good nice cool awesome thanks thank really
    just know think going go got get gets getting say said tell told ask asked let lets
    would could should might maybe also much many lot lots bit kind sort pretty quite
    actually definitely probably today yesterday tomorrow now time times day days thing
    something anything everything nothing someone anyone everyone sounds sound glad happy
    love like likes liked feel feels felt wow hey oh ah um hmm sorry absolutely totally
    amazing wonderful things stuff able sure cause since ever never always keep kept
    new old first last next back take took come came well way though really im ive youre
    dont thats whats its youve id yours mine hers ours theirs every another
    wait soon long little big fantastic incredible fun super real
    appreciate appreciated help helps helped hope hoping proud excited exciting
    interesting special important true looking look looks mean means
    meant find found tried try trying remember reminds reminded share shared sharing
    guess bet wish wishes hear heard gonna wanna gotta kinda lol haha yup nope
    year years week weeks month months ago recently lately later already yet still
    enjoy enjoyed enjoying bye goodbye congrats congratulations hopefully happened
    happen happens give gave given believe catch matter matters ready brings bring best
    top stay stayed tough awe part taking pic pics wanted went gone goes doing done
    person people others ones""".split()
)
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9+#'-]*")
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'"})


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


def _tokens(text: str) -> list[str | None]:
    """Lower-case words; None where a contraction stood ("it's", "can't", "I'm": never a
    topic word, and no phrase runs across it). A possessive keeps its noun ("dog's")."""
    out: list[str | None] = []
    for w in _WORD.findall(text.translate(_APOSTROPHES)):
        w = w.strip("'-").lower()
        if w.endswith("'s"):
            w = w[:-2]
        out.append(None if "'" in w else w)
    return out


def _terms(text: str, exclude: frozenset[str] = frozenset()) -> list[str]:
    """Content words and two-word phrases of content words (adjacent in the text);
    ``exclude``: words that never count (the chat's speaker names)."""
    keep = [t if t and len(t) > 2 and t not in CHAT_STOPWORDS and not t.isdigit() and not _is_name(t, exclude)
            else None for t in _tokens(text)]
    out = [t for t in keep if t]
    out += [f"{a} {b}" for a, b in zip(keep, keep[1:]) if a and b and a != b]
    return out


@functools.lru_cache(maxsize=65536)
def word_key(word: str) -> str:
    """One key for a word's forms (dog/dogs, dance/dancing/danced, recipe/recipes): two
    words of a label never share it, and a topic is counted under it."""
    w = word.lower()
    if len(w) > 4 and w.endswith("ies"):
        w = w[:-3] + "y"
    elif len(w) > 3 and w.endswith("s") and not w.endswith("ss"):
        w = w[:-1]
    for suffix in ("ing", "ed"):
        if len(w) > len(suffix) + 2 and w.endswith(suffix):
            w = w[: -len(suffix)]
            if len(w) > 3 and w[-1] == w[-2] and w[-1] not in "ls":
                w = w[:-1]  # running -> run
            break
    return w[:-1] if len(w) > 3 and w.endswith("e") else w


# Roles that are parts, not people: "user" stays a possible subject ("User Accounts").
_GENERIC_ROLES = frozenset("user assistant system tool function developer human ai bot model".split())


def speaker_words(messages: list[Message]) -> frozenset[str]:
    """The words of the chat's speaker names (roles that name people): a topic is never
    named after who spoke."""
    return frozenset(w for role in {m.role for m in messages} for w in _tokens(role)
                     if w and w not in _GENERIC_ROLES)


def _is_name(word: str, names: frozenset[str]) -> bool:
    # "Mel" for Melanie: a short form of a name is the name.
    return word in names or (len(word) >= 3 and any(n.startswith(word) for n in names))


def choose_k(n: int) -> int:
    """About one topic per dozen messages, within the seed's 3-8 (fewer for tiny chats)."""
    if n <= 0:
        return 0
    return max(1, min(MAX_TOPICS, n, max(MIN_TOPICS, round(math.sqrt(n / 2)))))


def spherical_kmeans(x: np.ndarray, k: int, iterations: int = 30, seed: int = 0) -> np.ndarray:
    """Cluster of each unit row of ``x`` (cosine k-means, k-means++ start)."""
    import numpy as np

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


Candidate = tuple[float, str, frozenset[int]]  # score, the term as written, its messages
TermMap = dict[tuple[str, ...], str]  # a message's terms: word keys -> the term as written


def message_terms(text: str, exclude: frozenset[str] = frozenset()) -> TermMap:
    """A message's terms by their forms' key (``word_key`` of each word), each with the
    form the message uses; a phrase of one word twice ("dog dogs") is none."""
    keys: TermMap = {}
    for term in _terms(text, exclude):
        key = tuple(word_key(w) for w in term.split())
        if len(set(key)) == len(key):
            keys.setdefault(key, term)
    return keys


def _candidates(terms: list[TermMap], labels: np.ndarray, k: int) -> list[list[Candidate]]:
    """Per cluster, its distinctive terms best first: (score, surface form, the messages
    using it).

    A term's forms count together (``word_key``). Score: the share of the cluster's
    messages using the term times the log of how much likelier it is there than in the
    whole chat (its part of the cluster's divergence from the chat). A term of one message
    names no group, nor does the chat's background (``BACKGROUND_SHARE``)."""
    n = len(terms)
    uses: list[dict[tuple[str, ...], set[int]]] = [{} for _ in range(k)]
    surface: Counter[tuple[tuple[str, ...], str]] = Counter()
    for i, (keys, c) in enumerate(zip(terms, labels)):
        for key in keys:  # message frequency, not raw counts
            uses[int(c)].setdefault(key, set()).add(i)
        surface.update(keys.items())
    overall: Counter[tuple[str, ...]] = Counter()
    for cluster in uses:
        overall.update({key: len(ids) for key, ids in cluster.items()})
    form: dict[tuple[str, ...], str] = {}
    for (key, term), _ in sorted(surface.items(), key=lambda kv: -kv[1]):
        form.setdefault(key, term)
    sizes = Counter(int(c) for c in labels)
    background = n >= BACKGROUND_FROM
    out: list[list[Candidate]] = []
    for j in range(k):
        scored = []
        for key, ids in uses[j].items():
            tf = len(ids)
            if tf < 2 and sizes[j] > 2:
                continue
            p_all = overall[key] / n
            if background and any(overall[(w,)] / n > BACKGROUND_SHARE for w in key):
                continue
            p_in = tf / max(1, sizes[j])
            if p_in <= p_all:
                continue
            score = p_in * math.log(p_in / p_all) if p_all < 1 else p_in
            scored.append((score * (1.3 if len(key) > 1 else 1.0), form[key], frozenset(ids)))
        scored.sort(key=lambda s: (-s[0], s[1]))
        out.append(scored if scored and scored[0][0] >= MIN_LABEL_SCORE else [])
    return out


def _cased(texts: list[str]) -> dict[str, str]:
    """Words the chat writes with capitals inside ("LGBTQ", "iPhone"), by lower-case form."""
    forms: Counter[str] = Counter(w for text in texts for w in _WORD.findall(text) if w[1:] != w[1:].lower())
    out: dict[str, str] = {}
    for w, _ in forms.most_common():
        out.setdefault(w.lower(), w)
    return out


def _title(words: list[str], cased: dict[str, str]) -> str:
    return " ".join(cased.get(w, w[:1].upper() + w[1:]) for w in words)


def _label_options(scored: list[Candidate], taken: set[str], tries: int = 6):
    """Labels for one cluster, best first: 2-3 words from its best terms, no two words of
    one form, none a word of another topic's label (``taken``: their ``word_key``), the
    words after the first taken from terms used in the same messages as it (two subjects
    side by side, "Yoga Recipe", name neither); each start term in turn."""
    free = [c for c in scored if not any(word_key(w) in taken for w in c[1].split())]
    for start in range(min(tries, len(free))):
        first = free[start]
        rest = free[:start] + free[start + 1:]
        # Used together in two messages if any are; else in one.
        together = [c for c in rest if len(c[2] & first[2]) >= min(2, len(first[2]))] or \
            [c for c in rest if c[2] & first[2]]
        words = first[1].split()
        for _, term, _ids in together:
            parts = term.split()
            if len(words) >= 2:
                break
            if any(word_key(p) in {word_key(w) for w in words} for p in parts) or len(words) + len(parts) > 3:
                continue
            words.extend(parts)
        yield words if len(words) > 1 else words + ["Discussion"]


def merge_alike(terms: list[TermMap], labels: np.ndarray, k: int) -> np.ndarray:
    """Clusters whose best term is the same word (two "Basketball" clusters) made one:
    to a user they are one topic, and two bubbles would read "Basketball Team",
    "Basketball Court"."""
    import numpy as np

    scored = _candidates(terms, labels, k)
    owner: dict[str, int] = {}
    target = list(range(k))
    sizes = Counter(int(c) for c in labels)
    for j in sorted(range(k), key=lambda c: (-sizes[c], c)):
        if scored[j]:
            first = word_key(scored[j][0][1].split()[0])
            target[j] = owner.setdefault(first, j)
    return np.array([target[int(c)] for c in labels])


def label_clusters(texts: list[str], labels: np.ndarray, k: int, terms: list[TermMap] | None = None,
                   order: list[int] | None = None) -> list[str | None]:
    """A 2-4 word Title Case label per cluster from its distinctive terms, no word shared
    by two labels (in any form: "Dog" and "Dogs" are one word), so no two alike; None for
    a cluster with no label of its own (nothing sets it apart, or only other topics'
    words do). ``order``: the clusters to name first (the largest), who get the best
    labels."""
    scored = _candidates(terms if terms is not None else [message_terms(t) for t in texts], labels, k)
    cased = _cased(texts)
    out: list[str | None] = [None] * k
    taken: set[str] = set()
    for j in order if order is not None else range(k):
        for words in _label_options(scored[j], taken):
            taken.update(word_key(w) for w in words if w != "Discussion")
            out[j] = _title(words, cased)
            break
    return out


# Terms of the vectors that stand in for embeddings when embeddings are off: the most
# widespread content words, enough to tell a chat's subjects apart.
TERM_VOCABULARY = 256


def plural_stem(word: str) -> str:
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
    import numpy as np

    toks = [{plural_stem(t) for t in _terms(m.content) if " " not in t} for m in messages]
    if labels is None:
        df = Counter(t for ts in toks for t in ts)
        vocab = [t for t, n in df.most_common(TERM_VOCABULARY) if n >= 2]
    else:
        vocab = sorted({plural_stem(t) for label in labels for t in _terms(label) if " " not in t})
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
            if plural_stem(t) in col:
                lx[i, col[plural_stem(t)]] = 1.0
    lx /= np.maximum(np.linalg.norm(lx, axis=1, keepdims=True), 1e-9)
    return x, lx


def _cohesion(x: np.ndarray, labels: np.ndarray) -> float:
    import numpy as np

    total = 0.0
    for c in set(labels.tolist()):
        v = x[labels == c].sum(axis=0)
        total += float(np.linalg.norm(v))  # = the members' total cosine to their unit centre
    return total


def local_topics(messages: list[Message], vectors: np.ndarray | None, sticky_ids: list[str]) -> list[dict[str, Any]]:
    """``[{"label", "count", "message_ids"}...]`` (largest first) for the non-sticky
    messages; with no vectors (embeddings off), clustered by their words (``term_vectors``).

    Each topic is a cluster and keeps its members: the filter selects exactly them, so a
    bubble's count is what it selects. Clusters under ``MIN_TOPIC_SHARE`` and clusters
    with no label of their own are left out (their messages are in no topic)."""
    sticky = set(sticky_ids)
    exclude = speaker_words(messages)
    terms_of = {i: message_terms(m.content, exclude) for i, m in enumerate(messages) if m.id not in sticky}
    keep = [i for i, t in terms_of.items() if t]
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
    texts = [messages[i].content for i in keep]
    terms = [terms_of[i] for i in keep]
    labels = merge_alike(terms, labels, k)
    counts = Counter(int(c) for c in labels)
    # In a short chat a cluster of one message is a topic (3 clusters of 4 messages).
    smallest = math.ceil(MIN_TOPIC_SHARE * len(keep))
    order = sorted((c for c, n in counts.items() if n >= smallest), key=lambda c: (-counts[c], c))
    names = label_clusters(texts, labels, k, terms, order)
    topics: list[dict[str, Any]] = []
    for c in order:
        if names[c] is None:
            continue
        ids = [messages[i].id for i, lab in zip(keep, labels) if int(lab) == c]
        topics.append({"label": names[c], "count": len(ids), "message_ids": ids})
    topics.sort(key=lambda t: (-t["count"], t["label"]))
    return topics[:MAX_TOPICS]
