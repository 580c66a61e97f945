"""Markdown notes (Obsidian flavoured) -> section items and ``links_to`` edges.

A note becomes one ``section`` item per heading block. The text before the first heading
is the note's intro section, named after the note's title; it is the parent of the
top-level headings. Ids are ``<path>`` for the intro and ``<path>#<Heading>/<Sub>`` for
headings; a repeated id gets ``@<line>`` appended. Sections longer than
``SECTION_MAX_TOKENS`` are split into parts that overlap by a few lines; part 1 keeps the
section's id, later parts are ``<id>@<first line>``.

Every section carries the note-level metadata (``title``, ``tags``, ``aliases`` and the
whole ``frontmatter``) so a filter on any item needs no join back to its note.

Only ATX headings (``# Title``) count; setext underlines are rare in vaults and ``---``
under a paragraph is far more often meant as a rule. Fenced code is opaque: no headings,
tags or links are read inside it, nor inside inline code spans.
"""

from __future__ import annotations

import base64
import datetime as _dt
import math
import posixpath
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

import yaml

from ..model import Edge, Item, ParsedFile

SECTION_MAX_TOKENS = 400
OVERLAP_LINES = 3
SUMMARY_CHARS = 200
# A frontmatter block larger than this is treated as text: it is not metadata any more.
FRONTMATTER_MAX_CHARS = 64_000
# YAML aliases can make a small document expand exponentially when copied to JSON.
FRONTMATTER_MAX_NODES = 20_000

# The C build of PyYAML's safe loader when present: same rules, about ten times faster.
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

_FENCE_OPEN = re.compile(r"^[ \t]*(?:>[ \t]*)*(`{3,}|~{3,})(.*)$")
_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_FM_DELIM = re.compile(r"^---[ \t]*$")
_FM_CLOSE = re.compile(r"^(?:---|\.\.\.)[ \t]*$")
_INLINE_CODE = re.compile(r"(`+)(.+?)(?<!`)\1(?!`)")
_WIKILINK = re.compile(r"(!?)\[\[([^\[\]\n]+?)\]\]")
_MD_LINK = re.compile(
    r"(!?)\[((?:[^\[\]\n]|\[[^\[\]\n]*\])*)\]"
    r"\(\s*(<[^<>\n]*>|(?:[^()\s]|\([^()\s]*\))+)"
    r"(?:\s+(?:\"[^\"\n]*\"|'[^'\n]*'|\([^()\n]*\)))?\s*\)"
)
_URL = re.compile(r"\b[A-Za-z][A-Za-z0-9+.\-]*://\S+")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:")
# Obsidian: a tag starts after whitespace or at line start and is made of letters,
# digits, _, - and / (nesting); it needs at least one non-digit.
_TAG = re.compile(r"(?<![^\s])#([\w/\-]+)")


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


# ---------------------------------------------------------------- frontmatter


def split_frontmatter(text: str) -> tuple[str | None, str, int]:
    """``(raw_yaml, body, lines)`` of a note.

    ``raw_yaml`` is the text between the ``---`` delimiters (``None`` when the note has
    no frontmatter block), ``body`` is everything after the closing delimiter's line
    ending, byte for byte, and ``lines`` is how many lines the block spans.
    """
    start = 1 if text.startswith("\ufeff") else 0
    first_end = text.find("\n", start)
    if first_end < 0 or not _FM_DELIM.match(text[start:first_end].rstrip("\r")):
        return None, text, 0
    pos = first_end + 1
    line_count = 1
    while pos <= len(text):
        end = text.find("\n", pos)
        line = text[pos:] if end < 0 else text[pos:end]
        line_count += 1
        if _FM_CLOSE.match(line.rstrip("\r")):
            raw = text[first_end + 1 : pos]
            body = "" if end < 0 else text[end + 1 :]
            return raw, body, line_count
        if end < 0:
            break
        pos = end + 1
    return None, text, 0


def load_frontmatter_yaml(raw: str) -> tuple[dict[str, Any] | None, str | None]:
    """Parse a frontmatter block with PyYAML's safe loader; values keep their YAML types
    (dates stay ``datetime.date``). Returns ``(mapping, None)`` or ``(None, error)``."""
    if len(raw) > FRONTMATTER_MAX_CHARS:
        return None, f"frontmatter is larger than {FRONTMATTER_MAX_CHARS} characters"
    try:
        data = yaml.load(raw, Loader=_SAFE_LOADER)
    except yaml.YAMLError as exc:
        return None, f"frontmatter is not valid YAML ({_yaml_problem(exc)})"
    if data is None:
        return {}, None
    if not isinstance(data, dict):
        return None, f"frontmatter is a {type(data).__name__}, not a mapping of properties"
    return data, None


def parse_frontmatter(text: str) -> tuple[dict[str, Any], str, str | None]:
    """``(frontmatter, body, error)`` of a note.

    The frontmatter is JSON-serialisable: dates become ISO strings, keys become strings.
    A malformed block gives ``({}, text, "why")``: the whole text stays the body, so the
    note is still readable and indexable as text.
    """
    raw, body, _ = split_frontmatter(text)
    if raw is None:
        return {}, text, None
    data, error = load_frontmatter_yaml(raw)
    if error is not None:
        return {}, text, error
    try:
        return to_jsonable(data, budget=[FRONTMATTER_MAX_NODES]), body, None
    except _TooComplex:
        return {}, text, f"frontmatter expands to more than {FRONTMATTER_MAX_NODES} values"


class _TooComplex(ValueError):
    pass


def to_jsonable(value: Any, budget: list[int] | None = None) -> Any:
    """A JSON-serialisable copy of a YAML value (dates -> ISO strings, sets -> lists)."""
    if budget is not None:
        budget[0] -= 1
        if budget[0] < 0:
            raise _TooComplex
    if isinstance(value, dict):
        return {_key(k): to_jsonable(v, budget) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v, budget) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((to_jsonable(v, budget) for v in value), key=str)
    if isinstance(value, (_dt.date, _dt.datetime, _dt.time)):
        return value.isoformat()
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def _key(key: Any) -> str:
    if isinstance(key, (_dt.date, _dt.datetime)):
        return key.isoformat()
    if isinstance(key, bool) or key is None:
        return str(key).lower() if key is not None else "null"
    return str(key)


def _yaml_problem(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    if mark is not None:
        # +2: the mark counts from 0 inside the block, which starts after the "---" line.
        return f"{problem} at line {mark.line + 2}"
    return problem


def frontmatter_tags(frontmatter: dict[str, Any]) -> list[str]:
    """Tags from ``tags``/``tag`` (any key case): a list, or a comma/space separated string."""
    found: list[str] = []
    for key, value in frontmatter.items():
        if isinstance(key, str) and key.lower() in ("tags", "tag"):
            for item in _flatten(value):
                found.extend(t for t in re.split(r"[,\s]+", item) if t)
    return _dedupe(t.lstrip("#") for t in found if t.lstrip("#"))


def frontmatter_aliases(frontmatter: dict[str, Any]) -> list[str]:
    """Aliases from ``aliases``/``alias``: a list, or a comma separated string."""
    found: list[str] = []
    for key, value in frontmatter.items():
        if isinstance(key, str) and key.lower() in ("aliases", "alias"):
            for item in _flatten(value):
                found.extend(a.strip() for a in item.split(",") if a.strip())
    return _dedupe(found)


def _flatten(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, (list, tuple, set)):
        out: list[str] = []
        for v in value:
            out.extend(_flatten(v))
        return out
    if isinstance(value, dict):
        return []
    return [str(value)]


def _dedupe(values: Iterable[str]) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    for v in values:
        low = v.lower()
        if low not in seen:
            seen.add(low)
            out.append(v)
    return out


# ---------------------------------------------------------------- scanning


@dataclass
class _Scan:
    lines: list[str]  # without line endings
    body_start: int  # 0-based index of the first line after the frontmatter
    frontmatter: dict[str, Any]
    frontmatter_error: str | None
    fence_id: list[int]  # 0 outside fences, else the id of the fence block
    headings: list[tuple[int, int, str]] = field(default_factory=list)  # (index, level, text)
    # Per line outside fences, only for lines that have any.
    line_tags: dict[int, list[str]] = field(default_factory=dict)
    line_links: dict[int, list[Link]] = field(default_factory=dict)

    def tags_between(self, start: int, end: int) -> list[str]:
        return [t for i in range(start, end) for t in self.line_tags.get(i, ())]

    def links_between(self, start: int, end: int) -> list[Link]:
        return [link for i in range(start, end) for link in self.line_links.get(i, ())]


def _scan(text: str) -> _Scan:
    lines = [line.rstrip("\r") for line in text.split("\n")]
    if lines and lines[0].startswith("\ufeff"):
        lines[0] = lines[0][1:]
    raw, _, fm_lines = split_frontmatter(text)
    frontmatter: dict[str, Any] = {}
    error = None
    body_start = 0
    if raw is not None:
        data, error = load_frontmatter_yaml(raw)
        if data is not None:
            try:
                frontmatter = to_jsonable(data, budget=[FRONTMATTER_MAX_NODES])
                body_start = fm_lines
            except _TooComplex:
                error = f"frontmatter expands to more than {FRONTMATTER_MAX_NODES} values"
    scan = _Scan(lines, body_start, frontmatter, error, [0] * len(lines))
    fence: tuple[str, int] | None = None
    fence_count = 0
    for i in range(body_start, len(lines)):
        line = lines[i]
        # Cheap substring tests first: most lines are prose and need no regex at all.
        may_fence = "```" in line or "~~~" in line
        if fence is not None:
            scan.fence_id[i] = fence_count
            m = _FENCE_OPEN.match(line) if may_fence else None
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= fence[1] and not m.group(2).strip():
                fence = None
            continue
        m = _FENCE_OPEN.match(line) if may_fence else None
        if m and not (m.group(1)[0] == "`" and "`" in m.group(2)):
            fence_count += 1
            fence = (m.group(1)[0], len(m.group(1)))
            scan.fence_id[i] = fence_count
            continue
        h = _HEADING.match(line) if line[:4].lstrip().startswith("#") else None
        if h:
            scan.headings.append((i, len(h.group(1)), (h.group(2) or "").strip()))
        if "#" in line:
            tags = _tags_in_line(line)
            if tags:
                scan.line_tags[i] = tags
        if "[" in line:
            links = _links_in_line(line, i + 1)
            if links:
                scan.line_links[i] = links
    return scan


def _mask(pattern: re.Pattern[str], text: str) -> str:
    """Blank out matches, keeping positions, so later patterns cannot see inside them."""
    return pattern.sub(lambda m: " " * len(m.group(0)), text)


def _links_in_line(line: str, line_no: int) -> list[Link]:
    visible = _mask(_INLINE_CODE, line) if "`" in line else line
    links: list[Link] = []
    if "[[" in visible:
        for m in _WIKILINK.finditer(visible):
            links.append(_wikilink(m.group(2), m.group(1) == "!", line_no))
        visible = _mask(_WIKILINK, visible)
    if "](" not in visible:
        return links
    for m in _MD_LINK.finditer(visible):
        link = _markdown_link(m.group(3), m.group(2), m.group(1) == "!", line_no)
        if link is not None:
            links.append(link)
    return links


def _wikilink(inner: str, embed: bool, line_no: int) -> Link:
    # Inside tables the alias pipe is escaped as "\|".
    inner = inner.replace("\\|", "|")
    target, _, alias = inner.partition("|")
    target, _, heading = target.partition("#")
    return Link(_normalise_target(target), heading.strip(), alias.strip(), embed, "wikilink", line_no)


def _markdown_link(dest: str, text: str, embed: bool, line_no: int) -> Link | None:
    if dest.startswith("<") and dest.endswith(">"):
        dest = dest[1:-1]
    dest = dest.strip()
    if not dest or _SCHEME.match(dest):
        return None  # a URL (http:, mailto:, obsidian:, ...) is not a note in this vault
    target, _, heading = dest.partition("#")
    return Link(_normalise_target(unquote(target)), unquote(heading).strip(), text.strip(), embed, "markdown", line_no)


def _normalise_target(target: str) -> str:
    target = target.strip().replace("\\", "/")
    if target.lower().endswith(".md"):
        target = target[:-3]
    return target


def _tags_in_line(line: str) -> list[str]:
    visible = _mask(_INLINE_CODE, line) if "`" in line else line
    if "[" in visible:
        visible = _mask(_MD_LINK, _mask(_WIKILINK, visible))
    if "://" in visible:
        visible = _mask(_URL, visible)
    tags = []
    for m in _TAG.finditer(visible):
        tag = m.group(1).rstrip("/")
        if tag and not tag.isdigit() and any(c.isalnum() for c in tag) and not tag.replace("/", "").isdigit():
            tags.append(tag)
    return tags


def _frontmatter_links(frontmatter: dict[str, Any]) -> list[Link]:
    """Obsidian treats ``[[...]]`` inside property values as links."""
    links: list[Link] = []

    def walk(value: Any) -> None:
        if isinstance(value, str):
            for m in _WIKILINK.finditer(value):
                links.append(_wikilink(m.group(2), m.group(1) == "!", 1))
        elif isinstance(value, dict):
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    walk(frontmatter)
    return links


@dataclass
class NoteFacts:
    """What the vault tools need from a note, from one pass over its text."""

    frontmatter: dict[str, Any]
    frontmatter_error: str | None
    title: str
    tags: list[str]
    aliases: list[str]
    links: list[Link]


def read_note(path: str, text: str) -> NoteFacts:
    scan = _scan(text)
    stem = posixpath.splitext(posixpath.basename(path))[0]
    return NoteFacts(
        frontmatter=scan.frontmatter,
        frontmatter_error=scan.frontmatter_error,
        title=_title(scan, stem),
        tags=_note_tags(scan),
        aliases=frontmatter_aliases(scan.frontmatter),
        links=_scan_links(scan),
    )


def extract_links(text: str) -> list[Link]:
    """Every link of a note, in order: frontmatter properties first, then the body
    (links inside fenced or inline code are not links)."""
    return _scan_links(_scan(text))


def _scan_links(scan: _Scan) -> list[Link]:
    return _frontmatter_links(scan.frontmatter) + scan.links_between(scan.body_start, len(scan.lines))


def extract_tags(text: str) -> list[str]:
    """The note's tags: frontmatter ``tags``/``tag`` then inline ``#tags``, deduplicated
    case-insensitively (Obsidian treats tags case-insensitively)."""
    scan = _scan(text)
    return _note_tags(scan)


def _note_tags(scan: _Scan) -> list[str]:
    return _dedupe(frontmatter_tags(scan.frontmatter) + scan.tags_between(scan.body_start, len(scan.lines)))


# ---------------------------------------------------------------- token estimate


def _estimate_tokens(line: str) -> int:
    # About 4 bytes of UTF-8 per BPE token holds for English and code, and it does not
    # undercount CJK or emoji (3-4 bytes, about one token each) the way len()/4 would.
    return (len(line.encode("utf-8")) + 3) // 4 + 1


def _line_costs(lines: list[str]) -> list[int]:
    """Tokens per line (+1 for the newline): exact when the tokenizer is available, else
    the estimate. Only sections that may be long get here, so exact counting is cheap."""
    try:
        from ..tokens import count_many

        return [n + 1 for n in count_many(lines)]
    except Exception:  # no tokenizer files: a close estimate is enough to place cuts
        return [_estimate_tokens(line) for line in lines]


# ---------------------------------------------------------------- sections


@dataclass
class _Block:
    start: int  # 0-based, inclusive
    end: int  # exclusive
    level: int
    heading_path: list[str]
    heading_line: str


def parse_markdown(path: str, text: str) -> ParsedFile:
    """Sections, ``contains`` edges (parent section -> sub-section or part) and
    ``links_to`` edges (section -> ``dst_name`` = normalised link target; resolve it
    with :func:`resolve_link`)."""
    parsed = ParsedFile(path=path, language="markdown")
    scan = _scan(text)
    if scan.frontmatter_error:
        parsed.warnings.append(f"{path}: {scan.frontmatter_error}; the block is indexed as text")
    stem = posixpath.splitext(posixpath.basename(path))[0]
    title = _title(scan, stem)
    tags = _note_tags(scan)
    aliases = frontmatter_aliases(scan.frontmatter)
    note_meta = {"title": title, "tags": tags, "aliases": aliases, "frontmatter": scan.frontmatter}

    blocks = _blocks(scan)
    used: set[str] = set()
    parent_stack: list[tuple[int, str]] = []  # (level, item id)
    intro_id: str | None = None
    fm_links = _frontmatter_links(scan.frontmatter)
    for block in blocks:
        base = path if block.level == 0 else f"{path}#{'/'.join(block.heading_path)}"
        while parent_stack and parent_stack[-1][0] >= block.level:
            parent_stack.pop()
        parent = parent_stack[-1][1] if parent_stack else (intro_id if block.level > 0 else None)
        ranges = _split(scan, block.start, block.end)
        first_id = ""
        owned_from = block.start  # lines shared by overlapping parts: their links belong to the earlier part
        for part_no, (start, end) in enumerate(ranges, start=1):
            item_id = _unique(base if part_no == 1 else f"{base}@{start + 1}", start + 1, used)
            if part_no == 1:
                first_id = item_id
            body_lines = scan.lines[start:end]
            links = scan.links_between(max(start, owned_from), end)
            owned_from = end
            if fm_links and not parsed.items:
                links = fm_links + links
            meta: dict[str, Any] = {
                "heading_path": list(block.heading_path),
                "level": block.level,
                **note_meta,
                "section_tags": _dedupe(scan.tags_between(start, end)),
            }
            if links:
                meta["links"] = [link.to_dict() for link in links]
            if len(ranges) > 1:
                meta.update(part=part_no, parts=len(ranges))
                if part_no > 1:
                    meta["part_of"] = first_id
            name = block.heading_path[-1] if block.heading_path else title
            parsed.items.append(
                Item(
                    id=item_id,
                    path=path,
                    kind="section",
                    name=name,
                    qualname="/".join(block.heading_path),
                    start_line=start + 1,
                    end_line=max(end, start + 1),
                    signature=block.heading_line if block.level else title,
                    docstring=_summary(scan, start, end),
                    text="\n".join(body_lines),
                    parent_id=parent,
                    language="markdown",
                    meta=meta,
                )
            )
            if parent:
                parsed.edges.append(Edge(src=parent, kind="contains", dst=item_id))
            seen_targets: set[str] = set()
            for link in links:
                if link.target and link.target not in seen_targets:
                    seen_targets.add(link.target)
                    parsed.edges.append(Edge(src=item_id, kind="links_to", dst_name=link.target))
        if block.level == 0:
            intro_id = first_id
        else:
            parent_stack.append((block.level, first_id))
    return parsed


def _title(scan: _Scan, stem: str) -> str:
    fm_title = scan.frontmatter.get("title")
    if isinstance(fm_title, (str, int, float)) and str(fm_title).strip():
        return str(fm_title).strip()
    for _, level, text in scan.headings:
        if level == 1 and text:
            return text
    return stem


def _blocks(scan: _Scan) -> list[_Block]:
    blocks: list[_Block] = []
    n = len(scan.lines)
    first_heading = scan.headings[0][0] if scan.headings else n
    intro = _trim(scan.lines, scan.body_start, first_heading)
    if intro is not None or not scan.headings:
        empty_at = min(scan.body_start, max(n - 1, 0))
        start, end = intro if intro is not None else (empty_at, empty_at)
        blocks.append(_Block(start, end, 0, [], ""))
    stack: list[tuple[int, str]] = []
    for k, (index, level, text) in enumerate(scan.headings):
        next_index = scan.headings[k + 1][0] if k + 1 < len(scan.headings) else n
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, text))
        _, end = _trim(scan.lines, index, next_index) or (index, index + 1)
        blocks.append(_Block(index, end, level, [t for _, t in stack], scan.lines[index].strip()))
    return blocks


def _trim(lines: list[str], start: int, end: int) -> tuple[int, int] | None:
    """(start, end) without leading/trailing blank lines, or None when all are blank."""
    while start < end and not lines[start].strip():
        start += 1
    while end > start and not lines[end - 1].strip():
        end -= 1
    return (start, end) if start < end else None


def _unique(item_id: str, line: int, used: set[str]) -> str:
    candidate = item_id
    if candidate in used:
        candidate = f"{item_id}@{line}"
    counter = 2
    while candidate in used:
        candidate = f"{item_id}@{line}.{counter}"
        counter += 1
    used.add(candidate)
    return candidate


def _summary(scan: _Scan, start: int, end: int) -> str:
    """The first paragraph of prose, for a compact rendering of the section."""
    words: list[str] = []
    for i in range(start, end):
        line = scan.lines[i].strip()
        if scan.fence_id[i] or _HEADING.match(scan.lines[i]):
            if words:
                break
            continue
        if not line:
            if words:
                break
            continue
        words.append(line)
    summary = " ".join(words)
    return summary if len(summary) <= SUMMARY_CHARS else summary[: SUMMARY_CHARS - 1].rstrip() + "…"


def _split(scan: _Scan, start: int, end: int) -> list[tuple[int, int]]:
    """Line ranges of at most about SECTION_MAX_TOKENS each, overlapping by OVERLAP_LINES.

    Cuts go at paragraph ends when one leaves a part at least half full, else at any
    line outside a fence; only a fence longer than a whole part is cut inside.
    """
    lines, fence = scan.lines, scan.fence_id
    if sum(_estimate_tokens(lines[i]) for i in range(start, end)) <= SECTION_MAX_TOKENS // 2:
        return [(start, end)]
    costs = dict(zip(range(start, end), _line_costs(lines[start:end]), strict=True))
    if sum(costs.values()) <= SECTION_MAX_TOKENS:
        return [(start, end)]

    def inside_fence(b: int) -> bool:  # would a cut before line b split a fence?
        return fence[b] != 0 and fence[b] == fence[b - 1]

    ranges: list[tuple[int, int]] = []
    s = start
    while s < end:
        acc, j = 0, s
        while j < end and (j == s or acc + costs[j] <= SECTION_MAX_TOKENS):
            acc += costs[j]
            j += 1
        if j >= end:
            ranges.append((s, end))
            break
        cut = None
        running = sum(costs[i] for i in range(s, j))
        for b in range(j, s, -1):
            if b < j:
                running -= costs[b]
            if running < SECTION_MAX_TOKENS // 2:
                break
            if not inside_fence(b) and (not lines[b - 1].strip() or fence[b] != fence[b - 1]):
                cut = b
                break
        if cut is None:
            cut = next((b for b in range(j, s, -1) if not inside_fence(b)), j)
        trimmed = _trim(lines, s, cut)
        if trimmed:
            ranges.append(trimmed)
        nxt = max(cut - OVERLAP_LINES, s + 1)
        while nxt < cut and (inside_fence(nxt) or not lines[nxt].strip()):
            nxt += 1
        s = nxt
        while s < end and not lines[s].strip():
            s += 1
    return ranges


# ---------------------------------------------------------------- link resolution


_MEMO_MAX = 500_000


class LinkResolver:
    """Obsidian's link resolution over a fixed list of vault paths; build once, resolve many.

    Order: an exact path from the vault root (``folder/Note``), then a path relative to
    the linking note's folder, then a match on the file name (``Note`` -> any
    ``.../Note.md``; ``sub/Note`` -> any ``.../sub/Note.md``). Ambiguous names prefer the
    linking note's own folder, then the shortest path. Matching is case-insensitive
    (an exact-case hit wins). A target without a known file extension means ``.md``.
    """

    def __init__(self, paths: Iterable[str]):
        self.paths = sorted({p.replace("\\", "/").lstrip("/") for p in paths})
        self._exact = set(self.paths)
        self._lower: dict[str, str] = {}
        self._by_name: dict[str, list[str]] = {}
        for p in self.paths:
            self._lower.setdefault(p.lower(), p)
            self._by_name.setdefault(posixpath.basename(p).lower(), []).append(p)
        # Only the linking note's folder matters, and vaults repeat the same links a lot.
        self._memo: dict[tuple[str, str], str | None] = {}

    def resolve(self, target: str, from_path: str = "") -> str | None:
        key = (target, posixpath.dirname(from_path.replace("\\", "/")))
        try:
            return self._memo[key]
        except KeyError:
            if len(self._memo) >= _MEMO_MAX:
                self._memo.clear()
            hit = self._memo[key] = self._resolve(target, key[1])
            return hit

    def _resolve(self, target: str, folder: str) -> str | None:
        target = target.strip().replace("\\", "/")
        target = target.split("|", 1)[0].split("#", 1)[0].strip()
        if not target:
            return None
        explicit_relative = target.startswith(("./", "../"))
        target = target.lstrip("/") if target.startswith("/") else target
        forms = [target] if target.lower().endswith(".md") else [target, target + ".md"]
        # Try the name as written first ("v1.2 notes" may be a note, "img.png" a file).
        if not explicit_relative:
            for form in forms:
                hit = self._lookup(posixpath.normpath(form))
                if hit:
                    return hit
        for form in forms:
            hit = self._lookup(posixpath.normpath(posixpath.join(folder, form)))
            if hit:
                return hit
        if explicit_relative:
            return None
        for form in forms:
            candidates = self._by_suffix(form)
            if candidates:
                return self._pick(candidates, folder)
        return None

    def _lookup(self, path: str) -> str | None:
        if path == ".." or path.startswith("../"):
            return None
        if path in self._exact:
            return path
        return self._lower.get(path.lower())

    def _by_suffix(self, form: str) -> list[str]:
        name = posixpath.basename(form).lower()
        candidates = self._by_name.get(name, [])
        if "/" in form:
            suffix = "/" + form.lower()
            candidates = [p for p in candidates if ("/" + p.lower()).endswith(suffix)]
        return candidates

    @staticmethod
    def _pick(candidates: list[str], folder: str) -> str:
        same = [p for p in candidates if posixpath.dirname(p) == folder]
        if same:
            return same[0]
        return min(candidates, key=lambda p: (p.count("/"), len(p), p))


def resolve_link(target: str, from_path: str, all_paths: list[str]) -> str | None:
    """The vault path a link target points to, or None (see :class:`LinkResolver`;
    use that class directly to resolve many links against the same paths)."""
    return LinkResolver(all_paths).resolve(target, from_path)
