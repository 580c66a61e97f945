"""Edit a note's frontmatter without touching anything else.

Only the properties that change are rewritten: untouched lines (comments, quoting, key
order, date formats) and the whole body stay byte-identical. The edited block is parsed
again and compared with the intended result; when a line edit cannot express the change
(unusual YAML such as a flow mapping), the block is dumped whole instead.
"""

from __future__ import annotations

import datetime as _dt
import re
from typing import Any

import yaml

from ..errors import InvalidArgument
from ..notes.frontmatter import load_frontmatter_yaml, split_frontmatter, to_jsonable

_TOP_KEY = re.compile(r"""^("(?:[^"\\]|\\.)*"|'(?:[^']|'')*'|[^\s#:\-"'][^:#]*?|-[^\s:#][^:#]*?)[ \t]*:(?:[ \t]|$)""")
_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def edit_frontmatter(
    text: str,
    updates: dict[str, Any] | None = None,
    remove: list[str] | None = None,
    append: dict[str, Any] | None = None,
) -> tuple[str, dict[str, Any], list[str]]:
    """``(new_text, new_frontmatter_as_json, keys_asked_to_remove_but_absent)``.

    updates: property -> value to set. A string ``YYYY-MM-DD`` is written as a YAML date,
             which is what Obsidian writes for a date property.
    remove:  properties to delete. When none is left, the block goes away.
    append:  property -> value or list of values added to a list property (created if
             missing, a scalar becomes a one-item list), skipping values already there.

    Raises InvalidArgument when the existing frontmatter is not valid YAML (it is not
    rewritten: a guess could destroy what the user wrote) or the request contradicts
    itself.
    """
    for key in [*(updates or {}), *(remove or []), *(append or {})]:
        if not isinstance(key, str) or not key.strip():
            raise InvalidArgument("property names must be non-empty strings")

    raw, body, _ = split_frontmatter(text)
    newline = "\r\n" if "\r\n" in text.split("\n", 1)[0] + "\n" else "\n"
    if raw is None:
        original: dict[str, Any] = {}
    else:
        data, error = load_frontmatter_yaml(raw)
        if data is None:
            raise InvalidArgument(f"{error}; fix the frontmatter by hand, it will not be rewritten")
        original = data

    # Property names are matched case-insensitively, as Obsidian does: "Status" edits an
    # existing "status" instead of adding a second property.
    spelling = {k.lower(): k for k in original if isinstance(k, str)}

    def existing(key: str) -> str:
        return key if key in original else spelling.get(key.lower(), key)

    updates = {existing(k): v for k, v in (updates or {}).items()}
    remove = [existing(k) for k in (remove or [])]
    append = {existing(k): v for k, v in (append or {}).items()}
    clash = (set(updates) & set(remove)) | (set(append) & set(remove)) | (set(updates) & set(append))
    if clash:
        raise InvalidArgument(f"a property appears twice in one request: {', '.join(sorted(clash))}")

    result = dict(original)
    missing = [key for key in remove if key not in result]
    for key in remove:
        result.pop(key, None)
    for key, value in updates.items():
        result[key] = _yaml_value(value)
    for key, value in append.items():
        result[key] = _appended(result.get(key), value)
    changed = set(updates) | set(append) | (set(remove) - set(missing))

    if raw is None:
        if not result:
            return text, {}, missing
        bom = "\ufeff" if text.startswith("\ufeff") else ""
        block = _dump(result, newline)
        return f"{bom}---{newline}{block}---{newline}{text[len(bom):]}", to_jsonable(result), missing

    if not result:
        return body, {}, missing
    new_raw = _line_edit(raw, result, changed, newline)
    reparsed, _ = load_frontmatter_yaml(new_raw)
    if reparsed != result:
        new_raw = _dump(result, newline)
    open_len = text.index("\n") + 1
    close = text[open_len + len(raw) : len(text) - len(body)]
    return text[:open_len] + new_raw + close + body, to_jsonable(result), missing


def _yaml_value(value: Any) -> Any:
    if isinstance(value, str) and _ISO_DATE.match(value):
        try:
            return _dt.date.fromisoformat(value)
        except ValueError:
            return value
    if isinstance(value, list):
        return [_yaml_value(v) for v in value]
    if isinstance(value, dict):
        return {k: _yaml_value(v) for k, v in value.items()}
    return value


def _appended(existing: Any, value: Any) -> list[Any]:
    items = list(existing) if isinstance(existing, list) else ([] if existing is None else [existing])
    new = value if isinstance(value, list) else [value]
    seen = {_norm(v) for v in items}
    for v in new:
        v = _yaml_value(v)
        if _norm(v) not in seen:
            seen.add(_norm(v))
            items.append(v)
    return items


def _norm(value: Any) -> str:
    text = str(value).strip().lower()
    return text.lstrip("#")  # "#tag" and "tag" are the same tag


def _dump(data: dict[str, Any], newline: str) -> str:
    text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, default_flow_style=False, width=1_000_000)
    return text.replace("\n", newline) if newline != "\n" else text


def _line_edit(raw: str, result: dict[str, Any], changed: set[str], newline: str) -> str:
    """Rewrite only the top-level blocks of changed keys; new keys go at the end."""
    blocks: list[tuple[Any, list[str]]] = []  # (key or None, lines)
    for line in raw.splitlines(keepends=True):
        m = _TOP_KEY.match(line)
        if m:
            blocks.append((_key_of(m.group(1)), [line]))
        elif blocks and blocks[-1][0] is not None and (not line.strip() or line[0] in " \t-"):
            blocks[-1][1].append(line)  # continuation: indented, a list item, or blank
        else:
            blocks.append((None, [line]))
    out: list[str] = []
    written: set[str] = set()
    for key, lines in blocks:
        if key is None or key not in changed:
            out.extend(lines)
            continue
        if key in written or key not in result:
            continue
        written.add(key)
        kept = len(lines)
        while kept > 1 and not lines[kept - 1].strip():
            kept -= 1
        out.append(_dump({key: result[key]}, newline))
        out.extend(lines[kept:])  # blank lines that separated this property from the next
    if out and not out[-1].endswith("\n"):
        out[-1] += newline
    for key in result:
        if key in changed and key not in written:
            out.append(_dump({key: result[key]}, newline))
    return "".join(out)


def _key_of(token: str) -> Any:
    try:
        return yaml.safe_load(token) if token[0] in "\"'" else token.strip()
    except yaml.YAMLError:
        return token.strip()
