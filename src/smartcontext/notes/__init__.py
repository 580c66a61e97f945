"""The notes core: how Smart Context reads an Obsidian-flavoured markdown note.

One implementation of each rule, used by the markdown source (index and search), the
vault tools, the retrieval catalogue and Smart Connections, so that a tag, a link or a
frontmatter block means the same thing to all of them:

- :mod:`.frontmatter`: find, parse (safe YAML, size limits) and read tags/aliases;
- :mod:`.tags`: the tag rule (documented there) and tag matching;
- :mod:`.links`: wikilinks, embeds, markdown links, links in properties;
- :mod:`.resolver`: Obsidian's link resolution over a list of vault paths;
- :mod:`.scan`: one pass over a note (headings, fences, tags, links per line);
- :mod:`.match`: folder filters;
- :mod:`.syntax`: the shared regular expressions (fences, headings, inline code).

The names load on first use (PEP 562): a question imports ``notes.match`` for its path
filters and should not load the YAML reader, the scanner and their dataclasses for it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_names

_WHERE = {
    "frontmatter_aliases": ".frontmatter", "frontmatter_tags": ".frontmatter",
    "load_frontmatter_yaml": ".frontmatter", "parse_frontmatter": ".frontmatter",
    "read_frontmatter": ".frontmatter", "split_frontmatter": ".frontmatter", "to_jsonable": ".frontmatter",
    "Link": ".links", "frontmatter_links": ".links", "links_in_line": ".links",
    "normalise_folder": ".match", "path_matches": ".match",
    "LinkResolver": ".resolver", "resolve_link": ".resolver",
    "NoteFacts": ".scan", "NoteScan": ".scan", "extract_links": ".scan", "extract_tags": ".scan",
    "read_note": ".scan", "scan_note": ".scan",
    "normalise_tag": ".tags", "tag_matches": ".tags", "tags_in_line": ".tags",
}

__all__ = sorted(_WHERE)

__getattr__, __dir__ = lazy_names(__name__, _WHERE)

if TYPE_CHECKING:
    from .frontmatter import (
        frontmatter_aliases,
        frontmatter_tags,
        load_frontmatter_yaml,
        parse_frontmatter,
        read_frontmatter,
        split_frontmatter,
        to_jsonable,
    )
    from .links import Link, frontmatter_links, links_in_line
    from .match import normalise_folder, path_matches
    from .resolver import LinkResolver, resolve_link
    from .scan import NoteFacts, NoteScan, extract_links, extract_tags, read_note, scan_note
    from .tags import normalise_tag, tag_matches, tags_in_line
