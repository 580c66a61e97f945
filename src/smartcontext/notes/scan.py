"""One pass over a note: frontmatter, fences, headings, tags and links per line.

Every reader of notes starts here: the markdown source splits the result into
sections, the vault tools keep a :class:`NoteFacts` per note, Smart Connections filters
by its tags. Fenced code is opaque (no headings, tags or links inside it), and so is
inline code.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from typing import Any

from .frontmatter import frontmatter_aliases, frontmatter_tags, read_frontmatter
from .links import Link, frontmatter_links, links_in_line
from .syntax import FenceTracker, heading_text, without_attributes
from .tags import dedupe, tags_in_line


@dataclass
class NoteScan:
    """A note's lines and what each holds.

    lines:       the text split on ``\\n`` without line endings (a BOM removed).
    body_start:  0-based index of the first line after the frontmatter (0 when there is
                 none, or when it is malformed and so read as text).
    fence_id:    per line, 0 outside fences, else the id of the fence block.
    headings:    ``(index, level, text)`` of every ATX heading outside fences.
    line_tags, line_links: per line outside fences, only for lines that have any.
    """

    lines: list[str]
    body_start: int
    frontmatter: dict[str, Any]
    frontmatter_error: str | None
    fence_id: list[int]
    headings: list[tuple[int, int, str]] = field(default_factory=list)
    line_tags: dict[int, list[str]] = field(default_factory=dict)
    line_links: dict[int, list[Link]] = field(default_factory=dict)

    def tags_between(self, start: int, end: int) -> list[str]:
        return [t for i in range(start, end) for t in self.line_tags.get(i, ())]

    def links_between(self, start: int, end: int) -> list[Link]:
        return [link for i in range(start, end) for link in self.line_links.get(i, ())]

    def tags(self) -> list[str]:
        """Frontmatter ``tags``/``tag`` then inline ``#tags``, deduplicated
        case-insensitively (Obsidian treats tags case-insensitively)."""
        return dedupe(frontmatter_tags(self.frontmatter) + self.tags_between(self.body_start, len(self.lines)))

    def links(self) -> list[Link]:
        """Links in properties first, then the body's, in order."""
        return frontmatter_links(self.frontmatter) + self.links_between(self.body_start, len(self.lines))

    def title(self, path: str) -> str:
        """Frontmatter ``title``, else the first level-1 heading, else the file name."""
        fm_title = self.frontmatter.get("title")
        if isinstance(fm_title, (str, int, float)) and str(fm_title).strip():
            return str(fm_title).strip()
        for _, level, text in self.headings:
            if level == 1 and text:
                return text
        return posixpath.splitext(posixpath.basename(path))[0]


def scan_note(text: str) -> NoteScan:
    lines = [line.rstrip("\r") for line in text.split("\n")]
    if lines and lines[0].startswith("\ufeff"):
        lines[0] = lines[0][1:]
    frontmatter, body_start, error = read_frontmatter(text)
    scan = NoteScan(lines, body_start, frontmatter, error, [0] * len(lines))
    fences = FenceTracker()
    for i in range(body_start, len(lines)):
        line = lines[i]
        if fences.step(line):
            scan.fence_id[i] = fences.count
            continue
        h = heading_text(line)
        if h:
            # Sections are named as a reader sees them: "Props", not "Props {#props}".
            scan.headings.append((i, h[0], without_attributes(h[1])))
        if "#" in line:
            tags = tags_in_line(line)
            if tags:
                scan.line_tags[i] = tags
        if "[" in line:
            links = links_in_line(line, i + 1)
            if links:
                scan.line_links[i] = links
    return scan


@dataclass
class NoteFacts:
    """What the vault tools and Smart Connections need from a note, from one pass."""

    frontmatter: dict[str, Any]
    frontmatter_error: str | None
    title: str
    tags: list[str]
    aliases: list[str]
    links: list[Link]
    body_start: int = 1  # 1-based line where the text after the frontmatter starts


def read_note(path: str, text: str) -> NoteFacts:
    scan = scan_note(text)
    return NoteFacts(
        frontmatter=scan.frontmatter,
        frontmatter_error=scan.frontmatter_error,
        title=scan.title(path),
        tags=scan.tags(),
        aliases=frontmatter_aliases(scan.frontmatter),
        links=scan.links(),
        body_start=scan.body_start + 1,
    )


def extract_tags(text: str) -> list[str]:
    """The note's tags (see :meth:`NoteScan.tags`)."""
    return scan_note(text).tags()


def extract_links(text: str) -> list[Link]:
    """Every link of a note, in order: frontmatter properties first, then the body
    (links inside fenced or inline code are not links)."""
    return scan_note(text).links()
