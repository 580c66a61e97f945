"""How identifiers break into words, for the full-text index and for questions.

Text helpers shared by the indexer (what gets indexed) and keyword retrieval (what gets
asked); they hold no storage logic, so every store indexes the same tokens.
"""

from __future__ import annotations

import re

_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_IDENT = re.compile(r"[^\W\d]\w*", re.UNICODE)
_HAS_CAMEL = re.compile(r"[a-z][A-Z]|[A-Z][A-Z][a-z]")


def split_identifier(word: str) -> list[str]:
    """``HTTPAdapter`` -> ``[http, adapter]``; ``get_netrc_auth`` -> ``[get, netrc, auth]``."""
    parts: list[str] = []
    for piece in word.split("_"):
        if piece:
            parts.extend(p.lower() for p in _CAMEL.findall(piece))
    return parts


def fts_text(text: str) -> str:
    """Text for the full-text index: the original plus the parts of every camelCase identifier.

    unicode61 already splits on ``_`` and ``.``; camelCase needs help, so ``HTTPAdapter``
    is indexed as ``HTTPAdapter http adapter`` and a question saying "http adapter"
    finds it.
    """
    extra: list[str] = []
    # Distinct words first: the regex runs in C and the Python loop sees each word once.
    for word in set(_IDENT.findall(text)):
        if len(word) < 4 or not _HAS_CAMEL.search(word):
            continue
        parts = split_identifier(word)
        if len(parts) > 1:
            extra.extend(parts)
    if not extra:
        return text
    return text + "\n" + " ".join(sorted(extra))
