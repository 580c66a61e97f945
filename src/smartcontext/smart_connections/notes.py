"""Read the vault's notes for what the vectors lack: tags, snippets and plain text.

Paths come from ``.ajson`` keys, which anyone can edit, so every read is resolved inside
the vault root and refused otherwise (symlinks included). Parsed facts are cached per
note by (mtime, size), so a filter over thousands of notes reads each note once.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import yaml

from ..errors import PathOutsideWorkspace

_FENCE = re.compile(r"^\s*(```|~~~)")
_INLINE_CODE = re.compile(r"`[^`\n]*`")
# Obsidian tags: letters, digits, _, -, / (nesting); not all digits; not inside a word
# or a URL fragment.
_TAG = re.compile(r"(?<![\w/#&:.])#([\w][\w/-]*)")
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_WS = re.compile(r"\s+")
TEXT_SUFFIXES = (".md", ".markdown", ".txt", ".canvas")
# libyaml when PyYAML was built with it: ~20x faster on frontmatter.
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass(frozen=True)
class NoteFacts:
    """What one note file says about itself, as of (mtime_ns, size)."""

    mtime_ns: int
    size: int
    tags: frozenset[str]
    body_start: int  # 1-based line where the text after frontmatter starts
    title: str


class VaultNotes:
    """Path-safe, mtime-cached access to note files under one vault root."""

    def __init__(self, root: str | Path, clock: Callable[[], float] = time.monotonic, resolve_ttl: float = 1.0):
        self.root = Path(root).resolve()
        self.clock = clock
        self.resolve_ttl = resolve_ttl
        self._facts: dict[str, tuple[NoteFacts, float]] = {}
        self._resolved: dict[str, tuple[Path, float]] = {}
        self.reads = 0

    def resolve(self, rel: str) -> Path:
        """The absolute path of ``rel`` inside the vault; raises PathOutsideWorkspace.

        Resolving follows every symlink (a few system calls per path component), so a
        result is reused for ``resolve_ttl`` seconds: a search touches the same notes
        again and again.
        """
        now = self.clock()
        hit = self._resolved.get(rel)
        if hit is not None and now - hit[1] < self.resolve_ttl:
            return hit[0]
        if not rel or "\x00" in rel:
            raise PathOutsideWorkspace(f"invalid note path {rel!r}")
        candidate = Path(rel)
        if candidate.is_absolute():
            raise PathOutsideWorkspace(f"note path {rel!r} must be relative to the vault {self.root}")
        resolved = (self.root / candidate).resolve()
        if resolved != self.root and self.root not in resolved.parents:
            raise PathOutsideWorkspace(f"note path {rel!r} resolves outside the vault {self.root}")
        if len(self._resolved) > 50_000:
            self._resolved.clear()
        self._resolved[rel] = (resolved, now)
        return resolved

    def exists(self, rel: str) -> bool:
        try:
            return self.resolve(rel).is_file()
        except (PathOutsideWorkspace, OSError):
            return False

    def read_text(self, rel: str) -> str | None:
        """The note's text, or None when it is missing, unreadable or outside the vault."""
        try:
            path = self.resolve(rel)
            data = path.read_bytes()
        except (PathOutsideWorkspace, OSError):
            return None
        self.reads += 1
        return data.decode("utf-8", errors="replace")

    def stat(self, rel: str) -> os.stat_result | None:
        try:
            return self.resolve(rel).stat()
        except (PathOutsideWorkspace, OSError):
            return None

    def facts(self, rel: str, max_age: float = 0.0) -> NoteFacts | None:
        """Tags, title and where the body starts; re-read only when the file changed.

        ``max_age``: trust facts checked against disk less than this many seconds ago
        without a stat (filters over thousands of notes then cost no system call).
        """
        now = self.clock()
        entry = self._facts.get(rel)
        if entry is not None and now - entry[1] < max_age:
            return entry[0]
        st = self.stat(rel)
        if st is None:
            self._facts.pop(rel, None)
            return None
        cached = entry[0] if entry else None
        if cached is not None and (cached.mtime_ns, cached.size) == (st.st_mtime_ns, st.st_size):
            self._facts[rel] = (cached, now)
            return cached
        text = self.read_text(rel) if rel.lower().endswith(TEXT_SUFFIXES) else ""
        if text is None:
            return None
        frontmatter, body_start = split_frontmatter(text)
        tags = set(frontmatter_tags(frontmatter))
        tags.update(inline_tags(text.splitlines()[body_start - 1 :]))
        facts = NoteFacts(st.st_mtime_ns, st.st_size, frozenset(tags), body_start, note_title(rel, frontmatter))
        self._facts[rel] = (facts, now)
        return facts

    def snippet(
        self, rel: str, lines: tuple[int, int] | None, anchor: str | None, max_chars: int
    ) -> tuple[str, tuple[int, int] | None]:
        """Text for a result and the lines it came from.

        For a block: its stored lines; when the block is a heading section (``anchor`` is
        its heading) and the note was edited since the plugin stored them, the span moves
        to where that heading is now. For a note: the start of the text after frontmatter.
        """
        text = self.read_text(rel) if rel.lower().endswith(TEXT_SUFFIXES) else None
        if text is None:
            return "", lines
        all_lines = text.splitlines()
        if lines is None:
            span = (frontmatter_end(all_lines), len(all_lines))
        else:
            span = _anchor(all_lines, lines, anchor)
        start, end = span
        chunk = all_lines[start - 1 : end]
        while chunk and not chunk[0].strip():
            chunk = chunk[1:]
        # The heading (or note title) is reported separately; the snippet is what follows.
        if len(chunk) > 1 and _HEADING.match(chunk[0]):
            chunk = chunk[1:]
        chunk = [line for line in chunk if line.strip() not in ("---", "...")]
        return shorten(" ".join(chunk), max_chars), (span if lines is not None else None)


def frontmatter_end(lines: list[str]) -> int:
    """1-based first line after the frontmatter (1 when there is none); no YAML parsing."""
    if not lines or lines[0].strip() != "---":
        return 1
    for i in range(1, len(lines)):
        if lines[i].strip() in ("---", "..."):
            return i + 2
    return 1


def split_frontmatter(text: str) -> tuple[dict, int]:
    """(frontmatter mapping, 1-based first line after it); ({}, 1) when there is none."""
    if not text.startswith("---"):
        return {}, 1
    lines = text.splitlines()
    body_start = frontmatter_end(lines)
    if body_start == 1:
        return {}, 1
    try:
        data = yaml.load("\n".join(lines[1 : body_start - 2]), Loader=_YAML_LOADER)
    except yaml.YAMLError:
        data = None
    return (data if isinstance(data, dict) else {}), body_start


def frontmatter_tags(frontmatter: dict) -> list[str]:
    out: list[str] = []
    for field_name in ("tags", "tag"):
        value = frontmatter.get(field_name)
        if isinstance(value, str):
            value = re.split(r"[,\s]+", value)
        if isinstance(value, list):
            for tag in value:
                if isinstance(tag, (str, int)) and str(tag).strip():
                    out.append(normalise_tag(str(tag)))
    return [t for t in out if t]


def inline_tags(lines: list[str]) -> set[str]:
    tags: set[str] = set()
    in_fence = False
    for line in lines:
        if _FENCE.match(line):
            in_fence = not in_fence
            continue
        if in_fence or "#" not in line:
            continue
        for m in _TAG.finditer(_INLINE_CODE.sub("", line)):
            tag = m.group(1).rstrip("/-")
            if tag and not tag.replace("/", "").isdigit():
                tags.add(normalise_tag(tag))
    return tags


def normalise_tag(tag: str) -> str:
    """Obsidian compares tags without ``#`` and case-insensitively."""
    return tag.strip().lstrip("#").strip().lower()


def tag_matches(note_tags: frozenset[str], wanted: list[str]) -> bool:
    """True when the note has any wanted tag, or a nested tag under it (``ai`` ~ ``ai/llm``)."""
    for want in wanted:
        for tag in note_tags:
            if tag == want or tag.startswith(want + "/"):
                return True
    return False


def normalise_folder(prefix: str) -> str:
    """``"./Notes/AI/"`` -> ``"Notes/AI"``; ``""``/``"/"`` mean the whole vault."""
    p = prefix.replace("\\", "/").strip()
    while p.startswith("./"):
        p = p[2:]
    return p.strip("/")


def path_matches(path: str, prefixes: list[str]) -> bool:
    """True when ``path`` is one of ``prefixes`` or inside one of those folders."""
    for prefix in prefixes:
        if not prefix or path == prefix or path.startswith(prefix + "/"):
            return True
    return False


def note_title(rel: str, frontmatter: dict) -> str:
    title = frontmatter.get("title")
    if isinstance(title, str) and title.strip():
        return title.strip()
    name = rel.rsplit("/", 1)[-1]
    return name[: -len(Path(name).suffix)] if Path(name).suffix else name


def heading_parts(key: str) -> list[str]:
    """``"a.md#H1#H2#{1}"`` -> ``["H1", "H2"]``: the headings, without paragraph indexes."""
    parts = key.split("#")[1:]
    out = []
    for part in parts:
        if part.startswith("{") and part.endswith("}"):
            continue
        out.append("frontmatter" if part == "---frontmatter---" else part)
    return out


def shorten(text: str, max_chars: int) -> str:
    text = _WS.sub(" ", text).strip()
    if len(text) <= max_chars:
        return text
    cut = text[:max_chars].rsplit(" ", 1)[0] if " " in text[:max_chars] else text[:max_chars]
    return cut.rstrip(" ,;:") + "…"


def _anchor(lines: list[str], span: tuple[int, int], heading: str | None) -> tuple[int, int]:
    start, end = span
    n = len(lines)
    if heading and not _is_heading(lines, start, heading):
        for i, line in enumerate(lines, start=1):
            m = _HEADING.match(line)
            if m and m.group(2).strip() == heading:
                end, start = i + (end - start), i
                break
    start = min(max(1, start), max(1, n))
    return start, min(max(start, end), max(start, n))


def _is_heading(lines: list[str], line_no: int, want: str) -> bool:
    if not 1 <= line_no <= len(lines):
        return False
    m = _HEADING.match(lines[line_no - 1])
    return bool(m and m.group(2).strip() == want)


def anchor_heading(key: str) -> str | None:
    """The heading a block starts with, or None for paragraph and frontmatter blocks."""
    last = key.rsplit("#", 1)[-1] if "#" in key else ""
    if not last or (last.startswith("{") and last.endswith("}")) or last == "---frontmatter---":
        return None
    return last.strip()
