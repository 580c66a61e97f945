"""The one tag scanner and tag matcher (``search --tag``, the vault tools and
Smart Connections' ``tags=`` all use these, so they name the same notes).

The rule, as Obsidian applies it:

- a tag is ``#`` followed by letters (any script), digits, ``_``, ``-`` and ``/``
  (``/`` nests: ``#area/sub``); a trailing ``/`` is not part of it;
- it needs a letter or digit and must not be digits alone (``#1984``, ``#2024/01``,
  ``#--`` and ``#_`` are not tags; ``#y1984``, ``#-draft`` and ``#2024-01`` are);
- the ``#`` starts the line or follows whitespace or punctuation such as ``(``, ``,``,
  ``*``, ``"`` or ``[`` (``see (#project)``, ``a,#idea``, ``**#bold**`` are tags);
  never a letter, digit or ``_`` (``foo#bar``, ``C#``), another ``#``, a backslash
  (``\\#escaped``), nor ``/ & : .`` (URL fragments such as ``x.com/#frag``, HTML
  entities such as ``&#123;``);
- nothing inside inline code, fenced code, links (``[[Note#Heading]]``,
  ``[text](x.md#part)``) or bare URLs is a tag, nor is frontmatter text (its ``tags``
  property is read as a list instead), and a heading's ``# `` is not one (no name follows).

Emoji are not tag characters here (Obsidian accepts some); everything else above is
checked by ``tests/test_notes.py``.

Tags keep their spelling in results; comparisons ignore case and a leading ``#``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from .syntax import INLINE_CODE, MD_LINK, URL, WIKILINK, mask

_TAG = re.compile(r"(?<![\w/#&:.\\])#([\w/\-]+)")


def _valid(name: str) -> bool:
    return any(c.isalnum() for c in name) and not name.replace("/", "").isdigit()


def tags_in_line(line: str) -> list[str]:
    """The tags written in one line of note text (not frontmatter), in order."""
    if "#" not in line:
        return []
    visible = mask(INLINE_CODE, line) if "`" in line else line
    if "[" in visible:
        # Links hold no tags: "[[Note#Heading]]", "[text](x.md#part)".
        visible = mask(MD_LINK, mask(WIKILINK, visible))
    if "://" in visible:
        visible = mask(URL, visible)
    tags = []
    for m in _TAG.finditer(visible):
        tag = m.group(1).rstrip("/")
        if _valid(tag):
            tags.append(tag)
    return tags


def normalise_tag(tag: str) -> str:
    """How tags compare: without ``#``, case-insensitively (``#AI`` == ``ai``)."""
    return str(tag).strip().lstrip("#").strip().lower()


def tag_matches(note_tags: Iterable[str], wanted: Iterable[str]) -> bool:
    """True when a note with ``note_tags`` has any of ``wanted``, or a tag nested under one
    (``ai`` matches ``ai/llm``). Both sides already normalised (:func:`normalise_tag`):
    filters run this over thousands of notes."""
    for want in wanted:
        for tag in note_tags:
            if tag == want or tag.startswith(want + "/"):
                return True
    return False


def dedupe(values: Iterable[str]) -> list[str]:
    """Values in first-seen order, without case-insensitive repeats."""
    seen: set[str] = set()
    out: list[str] = []
    for v in values:
        low = v.lower()
        if low not in seen:
            seen.add(low)
            out.append(v)
    return out
