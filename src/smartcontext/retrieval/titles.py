"""Exact note names: a query that is a note's title, alias or file name finds that note.

BM25 ranks a note by the words its title shares with the query, and a vault holds many
notes sharing them (``font-size``: hundreds of notes say "font" and "size"), so the note a
user named can sit below longer notes that repeat those words. A name is not a bag of
words: when the whole query, normalised, *is* one of a note's names, that note is what
was asked for.

Names are compared after :func:`normalise_name`: link syntax reduced to its shown text,
Unicode compatibility forms folded, case folded, every run of characters that is not a
letter or digit (spaces, ``-``, ``_``, ``.``, punctuation, emoji) one separator. So
``obsidian-bulk-rename-plugin``, ``Obsidian Bulk Rename Plugin`` and
``obsidian_bulk_rename_plugin`` are one name, and ``🗂️ 02.05 All Community Expansions``
is found by ``02.05 All Community Expansions``.

A note's names are its title (frontmatter ``title``, else its first level-1 heading,
else its file name) and its file name, both known to the catalogue, and its frontmatter
``aliases``, which only the stored item holds: those are checked on the notes the keyword
signal found (the indexer puts title and aliases in the note item's name column, so a
note named by an alias is among them).
"""

from __future__ import annotations

import os
import re
import unicodedata
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..model import ItemKind

if TYPE_CHECKING:
    from ..store.base import Store
    from .catalogue import Catalogue

# A title or file name outranks an alias: Obsidian resolves a link by file name first.
TITLE, ALIAS = 2, 1
# Note items among the keyword signal's best hits whose aliases are checked. Measured on
# the hub vault's 2,224 unique aliases (bench/titles.py): 50 found 2,220 first, 20 and 10
# found 2,219; reading 50 notes' metadata cost 6.3 ms a query, 20 cost 2.8 ms.
ALIAS_POOL = 20
_LINK = re.compile(r"!?\[\[([^\[\]|\n]*)(?:\|([^\[\]\n]*))?\]\]")
_MD_LINK = re.compile(r"!?\[([^\[\]\n]*)\]\([^()\n]*\)")
_SEPARATORS = re.compile(r"[\W_]+")
_NOTE_SUFFIXES = (".md", ".markdown")


def normalise_name(text: str) -> str:
    """The comparable form of a name: shown link text, NFKC, case folded, words joined by
    single spaces (anything but letters and digits separates words)."""
    text = _LINK.sub(lambda m: m.group(2) if m.group(2) is not None else m.group(1), text)
    text = _MD_LINK.sub(lambda m: m.group(1), text)
    text = unicodedata.normalize("NFKC", text).casefold()
    return " ".join(_SEPARATORS.split(text)).strip()


@dataclass(frozen=True)
class NoteNames:
    """The notes of a catalogue: normalised title or file name -> [(note item row, TITLE)]
    (in path order), the rows standing for whole notes (where aliases are indexed), and
    each such row's names (so a write re-reads only the notes it changed)."""

    names: dict[str, list[tuple[int, int]]]
    rows: frozenset[int]
    of_row: dict[int, frozenset[str]] = field(default_factory=dict)


def _note_of(cat: "Catalogue", path: str) -> tuple[int, frozenset[str]] | None:
    """The item standing for the note at ``path`` and its names; None for other files."""
    if not path.lower().endswith(_NOTE_SUFFIXES):
        return None
    r = cat.note_item(path)
    if r is None:
        return None
    e = cat.entries.get(r)
    if e is None or e.kind != ItemKind.SECTION:
        return None
    names = {normalise_name(os.path.splitext(os.path.basename(path))[0])}
    if not e.qualname:  # the intro section: its name is the note's title
        names.add(normalise_name(e.name))
    return r, frozenset(names - {""})


def note_names(cat: "Catalogue") -> NoteNames:
    """The names of every note of the catalogue (a markdown file whose item standing for
    the whole note is a section)."""
    out: dict[str, list[tuple[int, int]]] = defaultdict(list)
    of_row: dict[int, frozenset[str]] = {}
    for path in cat.paths:
        found = _note_of(cat, path)
        if found is None:
            continue
        r, names = found
        of_row[r] = names
        for name in names:
            out[name].append((r, TITLE))
    return NoteNames(dict(out), frozenset(of_row), of_row)


def patched_note_names(old: NoteNames, cat: "Catalogue", changed: Iterable[str], gone: Iterable[int]) -> NoteNames:
    """``old`` (the names before a write) with the rows ``gone`` dropped and the notes at the
    ``changed`` paths read again from ``cat`` (patched already): equal to
    ``note_names(cat)``, at the cost of the changed notes only (normalising every name
    of a 6,500-note vault after each write held every reader up for a tenth of a second).
    ``old`` is left as it was: readers on other threads may hold it."""
    names = dict(old.names)
    of_row = dict(old.of_row)
    touched: set[str] = set()
    for r in gone:
        for name in of_row.pop(r, ()):
            names[name] = [x for x in names.get(name, ()) if x[0] != r]
            touched.add(name)
    for path in changed:
        found = _note_of(cat, path)
        if found is None:
            continue
        r, row_names = found
        of_row[r] = row_names
        for name in row_names:
            names[name] = [*names.get(name, ()), (r, TITLE)]
            touched.add(name)
    for name in touched:
        rows = names[name]
        if not rows:
            del names[name]
        elif len(rows) > 1:  # in path order, as a full read lists them
            names[name] = sorted(rows, key=lambda x: cat.entries[x[0]].path)
    return NoteNames(names, frozenset(of_row), of_row)


def name_matches(
    query: str,
    cat: "Catalogue",
    store: "Store",
    keyword_rows: Iterable[int],
    allowed: set[int] | None = None,
) -> dict[int, int]:
    """Note item row -> TITLE or ALIAS, for the notes ``query`` names exactly; only rows in
    ``allowed`` when given. ``keyword_rows``: the keyword signal's hits, best first (the
    notes whose aliases are read)."""
    wanted = normalise_name(query)
    if not wanted:
        return {}
    known = cat.note_names()
    found = {r: how for r, how in known.names.get(wanted, ()) if allowed is None or r in allowed}
    # A note whose first heading is its title, under a name the keyword signal cannot
    # see (diacritics, one letter, digits, a stop word): its item carries that name
    # (checked against the note's title below).
    notes = [r for r in cat.by_name.get(" ".join(query.split()).lower(), ())
             if r in known.rows and r not in found and (allowed is None or r in allowed)][:ALIAS_POOL]
    for r in keyword_rows:
        if len(notes) >= ALIAS_POOL:
            break
        if r in known.rows and r not in found and r not in notes:
            notes.append(r)
    if notes:
        for r, si in store.items_by_rowids(notes).items():
            aliases = si.item.meta.get("aliases") or []
            title = si.item.meta.get("title")
            if isinstance(title, str) and normalise_name(title) == wanted:
                found[r] = TITLE  # a frontmatter title on a note whose first item is a heading
            elif isinstance(aliases, list) and any(
                isinstance(a, (str, int, float)) and normalise_name(str(a)) == wanted for a in aliases
            ):
                found[r] = ALIAS
    return found
