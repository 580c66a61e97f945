"""The one link scanner: wikilinks, embeds, markdown links, links in properties.

Links inside inline or fenced code are not links; a URL (``http:``, ``mailto:``,
``obsidian:``...) is not a note of the vault. Resolving a target to a file is
:mod:`.resolver`'s job.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from .syntax import INLINE_CODE, MD_LINK, SCHEME, WIKILINK, mask


@dataclass
class Link:
    """One link found in a note.

    target:  the note reference with ``.md``, the ``#heading`` and ``|alias`` parts removed
             (``"folder/Note"``, ``"../x/Note"``, ``"image.png"``); ``""`` for a link to a
             heading of the same note.
    heading: what followed ``#`` (``"Heading"``, ``"A#B"``, ``"^block-id"``), or ``""``.
    alias:   the display text after ``|`` (wikilinks) or inside ``[...]`` (markdown links).
    embed:   ``![[...]]`` or ``![...](...)``.
    style:   ``"wikilink"`` or ``"markdown"``.
    line:    1-based line in the file.
    """

    target: str
    heading: str = ""
    alias: str = ""
    embed: bool = False
    style: str = "wikilink"
    line: int = 0

    def to_dict(self) -> dict[str, Any]:
        # By hand: dataclasses.asdict deep-copies and is the slowest step on large vaults.
        return {"target": self.target, "heading": self.heading, "alias": self.alias, "embed": self.embed,
                "style": self.style, "line": self.line}


def links_in_line(line: str, line_no: int) -> list[Link]:
    """The links of one line of note text, in order."""
    if "[" not in line:
        return []
    visible = mask(INLINE_CODE, line) if "`" in line else line
    links: list[Link] = []
    if "[[" in visible:
        for m in WIKILINK.finditer(visible):
            links.append(wikilink(m.group(2), m.group(1) == "!", line_no))
        visible = mask(WIKILINK, visible)
    if "](" not in visible:
        return links
    for m in MD_LINK.finditer(visible):
        link = _markdown_link(m.group(3), m.group(2), m.group(1) == "!", line_no)
        if link is not None:
            links.append(link)
    return links


def wikilink(inner: str, embed: bool = False, line_no: int = 0) -> Link:
    """A ``[[inner]]`` link (``inner`` without the brackets)."""
    # Inside tables the alias pipe is escaped as "\|".
    inner = inner.replace("\\|", "|")
    target, _, alias = inner.partition("|")
    target, _, heading = target.partition("#")
    return Link(normalise_target(target), heading.strip(), alias.strip(), embed, "wikilink", line_no)


def _markdown_link(dest: str, text: str, embed: bool, line_no: int) -> Link | None:
    if dest.startswith("<") and dest.endswith(">"):
        dest = dest[1:-1]
    dest = dest.strip()
    if not dest or SCHEME.match(dest):
        return None
    target, _, heading = dest.partition("#")
    return Link(normalise_target(unquote(target)), unquote(heading).strip(), text.strip(), embed, "markdown", line_no)


def normalise_target(target: str) -> str:
    target = target.strip().replace("\\", "/")
    if target.lower().endswith(".md"):
        target = target[:-3]
    return target


def frontmatter_links(frontmatter: dict[str, Any]) -> list[Link]:
    """Obsidian treats ``[[...]]`` inside property values as links (line 1)."""
    links: list[Link] = []

    def walk(value: Any) -> None:
        if isinstance(value, str):
            for m in WIKILINK.finditer(value):
                links.append(wikilink(m.group(2), m.group(1) == "!", 1))
        elif isinstance(value, dict):
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    walk(frontmatter)
    return links
