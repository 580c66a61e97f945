"""Markdown notes (Obsidian flavoured) -> section items and ``links_to`` edges.

A note becomes one ``section`` item per heading block. The text before the first heading
is the note's intro section, named after the note's title; it is the parent of the
top-level headings. Ids are ``<path>`` for the intro and ``<path>#<Heading>/<Sub>`` for
headings; a repeated id gets ``@<line>`` appended. Sections longer than
``SECTION_MAX_TOKENS`` are split into parts that overlap by a few lines; part 1 keeps the
section's id, later parts are ``<id>@<first line>``.

Every section carries the note-level metadata (``title``, ``tags``, ``aliases`` and the
whole ``frontmatter``) so a filter on any item needs no join back to its note.

Reading the note (frontmatter, headings, fences, tags, links) is the notes core's job
(:mod:`smartcontext.notes`); this module only cuts the scanned note into sections.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..model import Edge, Item, ItemKind, ParsedFile
from ..notes.frontmatter import frontmatter_aliases
from ..notes.links import frontmatter_links
from ..notes.scan import NoteScan, scan_note
from ..notes.syntax import HEADING
from ..notes.tags import dedupe

SECTION_MAX_TOKENS = 400
OVERLAP_LINES = 3
SUMMARY_CHARS = 200
# A line of encoded data (base64): one run of such characters, no spaces; a part is data
# when such lines are all it holds and one of them is 100 characters or more. Excalidraw
# keeps a drawing as lines of compressed base64 under `# Drawing` (256 to a line, the last
# shorter); a pasted image or archive has them too. Such a part says nothing to search or
# to a model, and is left out of the index.
_DATA_LINE = re.compile(r"[A-Za-z0-9+/=_-]+")
_DATA_LONG = 100


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
    scan = scan_note(text)
    if scan.frontmatter_error:
        parsed.warnings.append(f"{path}: {scan.frontmatter_error}; the block is indexed as text")
    title = scan.title(path)
    tags = scan.tags()
    aliases = frontmatter_aliases(scan.frontmatter)
    note_meta = {"title": title, "tags": tags, "aliases": aliases, "frontmatter": scan.frontmatter}

    blocks = _blocks(scan)
    used: set[str] = set()
    parent_stack: list[tuple[int, str]] = []  # (level, item id)
    intro_id: str | None = None
    fm_links = frontmatter_links(scan.frontmatter)
    for block in blocks:
        base = path if block.level == 0 else f"{path}#{'/'.join(block.heading_path)}"
        while parent_stack and parent_stack[-1][0] >= block.level:
            parent_stack.pop()
        parent = parent_stack[-1][1] if parent_stack else (intro_id if block.level > 0 else None)
        ranges = _split(scan, block.start, block.end)
        first_id = ""
        owned_from = block.start  # lines shared by overlapping parts: their links belong to the earlier part
        kinds = [_readable_lines(scan, *r) for r in ranges]
        if any(k is None for k in kinds):  # data dropped: a heading left alone goes with it
            ranges = [r for r, k in zip(ranges, kinds, strict=True) if k]
            if not ranges:
                continue  # a section of drawing data: its sub-sections hang from its parent
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
                "section_tags": dedupe(scan.tags_between(start, end)),
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
                    kind=ItemKind.SECTION,
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


def _blocks(scan: NoteScan) -> list[_Block]:
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


def _readable_lines(scan: NoteScan, start: int, end: int) -> int | None:
    """How many lines of ``start:end`` are there to read, besides headings, fence lines and
    Obsidian's ``%%`` comment marks; None when the rest is encoded data only."""
    readable = longest = 0
    for i in range(start, end):
        line = scan.lines[i].strip()
        if not line or line == "%%" or line.startswith(("```", "~~~")) or HEADING.match(line):
            continue
        if _DATA_LINE.fullmatch(line):
            longest = max(longest, len(line))
        else:
            readable += 1
    return None if longest >= _DATA_LONG and not readable else readable


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


def _summary(scan: NoteScan, start: int, end: int) -> str:
    """The first paragraph of prose, for a compact rendering of the section."""
    words: list[str] = []
    for i in range(start, end):
        line = scan.lines[i].strip()
        if scan.fence_id[i] or HEADING.match(scan.lines[i]):
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


def _split(scan: NoteScan, start: int, end: int) -> list[tuple[int, int]]:
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
