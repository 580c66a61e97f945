"""Translated copies of a project's documents: ``docs/fr/tutorial/x.md`` beside ``docs/en/tutorial/x.md``.

A project that translates its documentation keeps one copy of each page per language, at
the same path under a folder named by the language's code (fastapi: ``docs/en/docs/...``,
``docs/pt/docs/...`` and eleven more). Code blocks and names are not translated, so every
copy matches a question about them; on fastapi, "How are dependencies with yield cleaned up
after the response is sent?" filled a 4,000-token context with one page in seven
languages. The English copy is the one kept first; the others are found here so ranking
can weigh them down (retrieval/scoring.path_prior). Only pages that have an English copy
at the same place count: without one there is no telling a language folder from a folder
that happens to have a two-letter name.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable

# ISO 639-1 codes of the languages documentation is commonly translated into (the fastapi,
# Django, Vue, React, MDN and Python docs translations among them); a region or script may
# follow: pt-br, pt_BR, zh-hans, zh-hant.
LANGUAGE_CODES = frozenset(
    "af am ar az be bg bn bs ca cs cy da de el en eo es et eu fa fi fil fr ga gl gu he hi hr hu "
    "hy id is it ja ka kk km kn ko ky lo lt lv mk ml mn mr ms my nb ne nl nn no pa pl ps pt ro "
    "ru si sk sl sq sr sv sw ta te th tl tr uk ur uz vi zh".split()
)
PRIMARY = "en"
_CODE = re.compile(r"^([a-z]{2,3})(?:[-_][a-z]{2,4})?$")


def language_of(folder: str) -> str | None:
    """The language a folder name stands for (``pt_BR`` -> pt), or None."""
    m = _CODE.match(folder.lower())
    return m.group(1) if m and m.group(1) in LANGUAGE_CODES else None


# A folder named for English (en, en-us, en_gb) anywhere: without one nothing is a
# translation. One search of the joined, lower-cased paths, each led by "/", says so; the
# pattern's literal start lets the search skip ahead at C speed (about 15 ms for 50,000
# paths that all hold "/en", where splitting every path took 30).
_ENGLISH_FOLDER = re.compile(r"/en(?:[-_][a-z]{2,4})?/")


def translated_copies(paths: Iterable[str]) -> set[str]:
    """The paths that are a translation of a page whose English copy is indexed at the
    same place (the same folders before and the same path after the language folder)."""
    paths = list(paths)
    if not _ENGLISH_FOLDER.search("/" + "\n/".join(paths).lower()):
        return set()
    places: dict[tuple[str, str], dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for path in paths:
        parts = path.split("/")
        for i, folder in enumerate(parts[:-1]):
            lang = language_of(folder)
            if lang is not None:
                place = ("/".join(parts[:i]), "/".join(parts[i + 1 :]))
                places[place][folder.lower()].append(path)
    out: set[str] = set()
    for by_folder in places.values():
        if len(by_folder) > 1 and any(language_of(f) == PRIMARY for f in by_folder):
            for folder, copies in by_folder.items():
                if language_of(folder) != PRIMARY:
                    out.update(copies)
    return out
