"""The markdown syntax every note scanner shares: fences, headings, inline code.

Kept in one place so the tag scanner, the link scanner, the section splitter and the
Smart Connections snippets agree on what is code and what is a heading.
"""

from __future__ import annotations

import re

# A fence may sit inside a blockquote ("> ```"), as Obsidian renders it.
FENCE_OPEN = re.compile(r"^[ \t]*(?:>[ \t]*)*(`{3,}|~{3,})(.*)$")
# ATX headings only: "# Title" (the space is required, "#tag" is a tag); setext
# underlines are rare in vaults and "---" under a paragraph is far more often a rule.
HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
# A heading's attribute list, as Pandoc, kramdown, mkdocs and VitePress write it after the
# text: "## Props {#props}", "## Setup {#setup .advanced}", "## Notes {: #notes}". Only
# #id, .class and key=value tokens: "{#each items as item}" (Svelte) is text.
_ATTR = r"""(?:[#.][A-Za-z][\w:.-]*|[\w-]+=(?:"[^"]*"|'[^']*'|[^\s}]+))"""
HEADING_ATTRIBUTES = re.compile(rf"[ \t]+\{{[ \t]*:?[ \t]*{_ATTR}(?:[ \t]+{_ATTR})*[ \t]*\}}[ \t]*$")
INLINE_CODE = re.compile(r"(`+)(.+?)(?<!`)\1(?!`)")
URL = re.compile(r"\b[A-Za-z][A-Za-z0-9+.\-]*://\S+")
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:")
WIKILINK = re.compile(r"(!?)\[\[([^\[\]\n]+?)\]\]")
MD_LINK = re.compile(
    r"(!?)\[((?:[^\[\]\n]|\[[^\[\]\n]*\])*)\]"
    r"\(\s*(<[^<>\n]*>|(?:[^()\s]|\([^()\s]*\))+)"
    r"(?:\s+(?:\"[^\"\n]*\"|'[^'\n]*'|\([^()\n]*\)))?\s*\)"
)


def mask(pattern: re.Pattern[str], text: str) -> str:
    """Blank out matches, keeping positions, so later patterns cannot see inside them."""
    return pattern.sub(lambda m: " " * len(m.group(0)), text)


def without_attributes(heading: str) -> str:
    """A heading's text without a trailing attribute list (``HEADING_ATTRIBUTES``): the
    name a reader sees and searches for."""
    if not heading.endswith("}"):
        return heading
    stripped = HEADING_ATTRIBUTES.sub("", heading)
    return stripped if stripped.strip() else heading


def heading_text(line: str) -> tuple[int, str] | None:
    """``(level, text)`` when ``line`` is an ATX heading, else None."""
    if not line[:4].lstrip().startswith("#"):
        return None
    m = HEADING.match(line)
    if m is None:
        return None
    return len(m.group(1)), (m.group(2) or "").strip()


class FenceTracker:
    """Feed lines in order; ``step(line)`` says whether the line is part of a fence
    (its opening and closing lines included). A closing fence uses the opening's
    character and is at least as long, with nothing after it (CommonMark)."""

    def __init__(self) -> None:
        self.open: tuple[str, int] | None = None
        self.count = 0  # fences opened so far: an id for the current one

    def step(self, line: str) -> bool:
        # Cheap substring tests first: most lines are prose and need no regex at all.
        may_fence = "```" in line or "~~~" in line
        m = FENCE_OPEN.match(line) if may_fence else None
        if self.open is not None:
            if m and m.group(1)[0] == self.open[0] and len(m.group(1)) >= self.open[1] and not m.group(2).strip():
                self.open = None
            return True
        if m and not (m.group(1)[0] == "`" and "`" in m.group(2)):
            self.count += 1
            self.open = (m.group(1)[0], len(m.group(1)))
            return True
        return False
