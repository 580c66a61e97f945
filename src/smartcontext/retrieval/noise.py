"""When is a semantic hit evidence? The index's own noise floor.

Nearest neighbours always exist: a query of random letters still has a "most similar"
item, and with the static model its cosine is often as high as a real answer's (measured
by ``bench/no_match.py``: nonsense best cosines 0.09-0.77, real questions' 0.26-0.88, the
ranges overlapping on every corpus). So a cosine alone cannot say "nothing found". What
separates them is the keyword signal: every real question measured (LoCoMo, code
questions) shares an indexed word with its corpus, and almost no nonsense does (a word
counts when it is whole, or a piece of a split word of 4+ letters: ``keyword.has_evidence``).

So semantic hits are evidence when the keyword signal found such a word, or, without it,
when the best of them clears this index's noise floor: the cosines that nonsense reaches
here. The floor is measured on the index itself, so it follows the model and the corpus
(0.63 on LoCoMo, 0.73-0.78 on flask, requests and pytest with the static model):
``PROBES`` fixed nonsense strings are embedded once per vector index, each one's best
cosine taken, and the floor is their mean plus ``FLOOR_SDS`` standard deviations.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

# Measured (bench/no_match.py, 120 nonsense strings of another generator): with 32
# probes, mean + 2 sd let 9-18% of them through on each corpus, mean + 3 sd 0-3%; 64
# probes moved the floor by under 0.02.
PROBES = 32
FLOOR_SDS = 3.0
REFRESH_SHARE = 0.1
_SEED = 20

_floors: "weakref.WeakKeyDictionary[Any, tuple[tuple[int, str], float]]" = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def probes(n: int = PROBES, seed: int = _SEED) -> list[str]:
    """Fixed nonsense: random letter strings and made-up syllable words, alternating."""
    import random  # only a question that needs the floor (no keyword evidence) loads it
    import string

    rnd = random.Random(seed)
    consonants, vowels = "bcdfghjklmnprstvwxz", "aeiouy"
    out = []
    for i in range(n):
        if i % 2:
            out.append("".join(rnd.choice(string.ascii_lowercase) for _ in range(rnd.randint(5, 12))))
        else:
            words = ("".join(rnd.choice(consonants) + rnd.choice(vowels) for _ in range(rnd.randint(2, 3)))
                     for _ in range(rnd.randint(1, 2)))
            out.append(" ".join(words))
    return out


def noise_floor(index: Any, embedder: Any) -> float:
    """The cosine a semantic hit must reach to count without keyword evidence, for this
    vector index and query embedder: computed on first need (32 probe embeddings and
    searches), again only for another model or once the index grew or shrank by more
    than ``REFRESH_SHARE`` (a background embedder extends it batch by batch)."""
    import numpy as np

    size, model = len(index), getattr(embedder, "name", "")
    with _lock:
        known = _floors.get(index)
    if known is not None and known[0][1] == model and abs(size - known[0][0]) <= REFRESH_SHARE * known[0][0]:
        return known[1]
    vectors = embedder.embed(probes())
    best = [hits[0][1] if (hits := index.search(v, 1)) else 0.0 for v in vectors]
    floor = float(np.mean(best) + FLOOR_SDS * np.std(best))
    with _lock:
        _floors[index] = ((size, model), floor)
    return floor


def semantic_evidence(hits: list[tuple[int, float]], index: Any, embedder: Any) -> bool:
    """True when the best of ``hits`` (rowid, cosine), best first, clears the noise floor."""
    return bool(hits) and hits[0][1] >= noise_floor(index, embedder)
