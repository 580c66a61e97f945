"""Frontmatter: find the ``---`` block, parse it safely, read tags and aliases from it.

Parsing uses PyYAML's safe loader (the C build when present: same rules, about ten times
faster), refuses blocks too large to be metadata and YAML aliases that expand
exponentially, and reports a malformed block instead of raising, so a note with broken
frontmatter is still readable and indexable as text.
"""

from __future__ import annotations

import base64
import datetime as _dt
import math
import re
from typing import TYPE_CHECKING, Any

from .tags import dedupe

if TYPE_CHECKING:  # PyYAML loads with the first frontmatter block: a code question needs none
    import yaml

# A frontmatter block larger than this is treated as text: it is not metadata any more.
FRONTMATTER_MAX_CHARS = 64_000
# YAML aliases can make a small document expand exponentially when copied to JSON.
FRONTMATTER_MAX_NODES = 20_000
# ...and lists nested thousands deep make every recursive copy, comparison or dump fail.
FRONTMATTER_MAX_DEPTH = 64

_FM_DELIM = re.compile(r"^---[ \t]*$")
_FM_CLOSE = re.compile(r"^(?:---|\.\.\.)[ \t]*$")


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
    """Parse a frontmatter block with the safe loader; values keep their YAML types
    (dates stay ``datetime.date``). Returns ``(mapping, None)`` or ``(None, error)``."""
    if len(raw) > FRONTMATTER_MAX_CHARS:
        return None, f"frontmatter is larger than {FRONTMATTER_MAX_CHARS} characters"
    import yaml

    try:
        data = yaml.load(raw, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as exc:
        return None, f"frontmatter is not valid YAML ({_yaml_problem(exc)})"
    except RecursionError:
        return None, "frontmatter is nested too deeply to be metadata"
    if data is None:
        return {}, None
    if not isinstance(data, dict):
        return None, f"frontmatter is a {type(data).__name__}, not a mapping of properties"
    if not within_nodes(data, FRONTMATTER_MAX_NODES):
        # An alias bomb ("billion laughs"): tiny as text, exponential once copied, compared
        # or dumped; or nesting deeper than any metadata. Refused here so no reader or
        # writer ever walks it.
        return None, (f"frontmatter expands to more than {FRONTMATTER_MAX_NODES} values "
                      f"or nests deeper than {FRONTMATTER_MAX_DEPTH} levels")
    return data, None


def within_nodes(value: Any, limit: int, max_depth: int = FRONTMATTER_MAX_DEPTH) -> bool:
    """Whether ``value`` expanded (aliases copied out) holds at most ``limit`` values,
    nested at most ``max_depth`` deep. Stops counting past the limit, so the check itself
    is bounded."""
    budget = limit
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        budget -= 1
        if budget < 0:
            return False
        v, depth = stack.pop()
        if isinstance(v, dict):
            children = [*v.keys(), *v.values()]
        elif isinstance(v, (list, tuple, set, frozenset)):
            children = list(v)
        else:
            continue
        if children and depth >= max_depth:
            return False
        stack.extend((c, depth + 1) for c in children)
    return True


def read_frontmatter(text: str) -> tuple[dict[str, Any], int, str | None]:
    """``(frontmatter as JSON-ready values, lines it spans, error)``.

    A malformed block gives ``({}, 0, "why")``: it is not metadata, so its lines belong
    to the body (the note stays readable and indexable as text).
    """
    raw, _, lines = split_frontmatter(text)
    if raw is None:
        return {}, 0, None
    data, error = load_frontmatter_yaml(raw)
    if data is None:
        return {}, 0, error
    try:
        return to_jsonable(data, budget=[FRONTMATTER_MAX_NODES]), lines, None
    except _TooComplex:
        return {}, 0, f"frontmatter expands to more than {FRONTMATTER_MAX_NODES} values"


def parse_frontmatter(text: str) -> tuple[dict[str, Any], str, str | None]:
    """``(frontmatter, body, error)`` of a note; see :func:`read_frontmatter`."""
    frontmatter, lines, error = read_frontmatter(text)
    if not lines:
        return {}, text, error
    return frontmatter, split_frontmatter(text)[1], None


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
    return dedupe(t.lstrip("#") for t in found if t.lstrip("#"))


def frontmatter_aliases(frontmatter: dict[str, Any]) -> list[str]:
    """Aliases from ``aliases``/``alias``: a list, or a comma separated string."""
    found: list[str] = []
    for key, value in frontmatter.items():
        if isinstance(key, str) and key.lower() in ("aliases", "alias"):
            for item in _flatten(value):
                found.extend(a.strip() for a in item.split(",") if a.strip())
    return dedupe(found)


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
