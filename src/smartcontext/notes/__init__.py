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
"""

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

__all__ = [
    "Link",
    "LinkResolver",
    "NoteFacts",
    "NoteScan",
    "extract_links",
    "extract_tags",
    "frontmatter_aliases",
    "frontmatter_links",
    "frontmatter_tags",
    "links_in_line",
    "load_frontmatter_yaml",
    "normalise_folder",
    "normalise_tag",
    "parse_frontmatter",
    "path_matches",
    "read_frontmatter",
    "read_note",
    "resolve_link",
    "scan_note",
    "split_frontmatter",
    "tag_matches",
    "tags_in_line",
    "to_jsonable",
]
