"""list_files_by_frontmatter, update_frontmatter, search_by_date_range."""

from __future__ import annotations

import datetime as _dt
import re
from typing import Any

from ..errors import InvalidArgument
from ..notes.frontmatter import frontmatter_aliases, frontmatter_tags
from .base import MARKDOWN_SUFFIXES, VaultBase, file_created, local_date, tool
from .frontmatter import edit_frontmatter
from ..safeio import read_regular
from .paths import atomic_write
from .responses import ok
from ..validate import ToolError

_DATE_PREFIX = re.compile(r"^(\d{4})-(\d{2})-(\d{2})")
# Properties that Obsidian users and templates use for a note's creation date.
CREATED_KEYS = ("created", "created_at", "date created", "creation date", "date_created")


class PropertyTools(VaultBase):
    @tool
    def list_files_by_frontmatter(
        self, field: str, value: Any = None, match_type: str = "contains", limit: int = 100
    ) -> dict[str, Any]:
        field = field.strip()
        if not field:
            raise ToolError("field cannot be empty")
        needle = None if value is None else _text(value).lower()
        if needle is not None and field.lower() in ("tags", "tag"):
            needle = needle.lstrip("#")
        matching: list[str] = []
        invalid: list[str] = []
        for rel, facts in self._all_facts():
            if facts.frontmatter_error:
                invalid.append(rel)
                continue
            key = _find_key(facts.frontmatter, field)
            if key is None:
                continue
            if needle is None:
                matching.append(rel)
                continue
            values = _values(facts.frontmatter, key)
            if match_type == "exact":
                hit = any(v.lower() == needle for v in values)
            else:
                hit = any(needle in v.lower() for v in values)
            if hit:
                matching.append(rel)
        extra: dict[str, Any] = {"invalid_frontmatter": invalid} if invalid else {}
        if not matching:
            if needle is None:
                condition = "has the property"
            else:
                condition = f"{'equals' if match_type == 'exact' else 'contains'} '{_text(value)}'"
            return ok(f"No files found where {field} {condition}", results=[], **extra)
        matching.sort()
        if len(matching) > limit:
            return ok(f"Showing {limit} of {len(matching)} notes; raise limit to see more",
                      results=matching[:limit], total=len(matching), **extra)
        return ok(results=matching, total=len(matching), **extra)

    @tool
    def update_frontmatter(
        self,
        path: str,
        updates: dict[str, Any] | None = None,
        remove: list[str] | None = None,
        append: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        if not updates and not remove and not append:
            raise ToolError("Nothing to change: give updates, remove or append")
        note = self._existing_file(path)
        rel = self._rel(note)
        if note.suffix.lower() not in MARKDOWN_SUFFIXES:
            raise ToolError(f"{rel} is not a markdown note; only notes have frontmatter")
        self._resolve(rel)  # a hidden target behind a symlink is refused here too
        with self._write_lock():  # read, edit, write back: no concurrent edit is lost
            try:
                text = read_regular(note).decode("utf-8")
            except UnicodeDecodeError:
                raise ToolError(f"{rel} is not UTF-8 text; it was left unchanged") from None
            new_text, frontmatter, missing = edit_frontmatter(text, updates, remove, append)
            if new_text != text:
                atomic_write(note, new_text.encode("utf-8"), overwrite=True)
        parts = []
        if updates:
            parts.append("set " + ", ".join(updates))
        removed = [k for k in (remove or []) if k not in missing]
        if removed:
            parts.append("removed " + ", ".join(removed))
        if append:
            parts.append("appended to " + ", ".join(append))
        if missing:
            parts.append("not present: " + ", ".join(missing))
        if new_text == text:
            return ok(f"Frontmatter of {rel} unchanged ({'; '.join(parts)})", path=rel, frontmatter=frontmatter)
        return ok(f"Updated frontmatter of {rel}: {'; '.join(parts)}", path=rel, frontmatter=frontmatter,
                  **self._notify([rel]))

    @tool
    def search_by_date_range(
        self, start_date: str, end_date: str | None = None, date_field: str = "modified", limit: int = 100
    ) -> dict[str, Any]:
        today = self._now().date()
        start = _parse_day(start_date, "start_date", today)
        end = _parse_day(end_date, "end_date", today) if end_date is not None else today
        if start > end:
            raise ToolError(f"start_date {start} is after end_date {end}")
        field = date_field.strip() or "modified"
        dated: list[tuple[_dt.date, str]] = []
        for rel, facts in self._all_facts():
            day = self._note_date(rel, facts.frontmatter, field)
            if day is not None and start <= day <= end:
                dated.append((day, rel))
        if not dated:
            return ok(f"No files found with {field} between {start} and {end}", results=[])
        dated.sort(key=lambda pair: (-pair[0].toordinal(), pair[1]))
        shown = dated[:limit]
        message = None
        if len(dated) > limit:
            message = f"Showing the {limit} newest of {len(dated)} notes; raise limit to see more"
        return ok(message, results=[rel for _, rel in shown], dates={rel: d.isoformat() for d, rel in shown},
                  total=len(dated))

    def _note_date(self, rel: str, frontmatter: dict[str, Any], field: str) -> _dt.date | None:
        path = self.root / rel
        try:
            if field.lower() == "modified":
                return local_date(path.stat().st_mtime)
            if field.lower() == "created":
                for key in CREATED_KEYS:
                    found = _find_key(frontmatter, key)
                    day = _as_day(frontmatter.get(found)) if found else None
                    if day:
                        return day
                return local_date(file_created(path))
        except OSError:
            return None
        found = _find_key(frontmatter, field)
        return _as_day(frontmatter.get(found)) if found else None


def _find_key(frontmatter: dict[str, Any], field: str) -> str | None:
    if field in frontmatter:
        return field
    low = field.lower()
    return next((k for k in frontmatter if k.lower() == low), None)


def _values(frontmatter: dict[str, Any], key: str) -> list[str]:
    if key.lower() in ("tags", "tag"):
        return frontmatter_tags({key: frontmatter[key]})
    if key.lower() in ("aliases", "alias"):
        return frontmatter_aliases({key: frontmatter[key]})
    value = frontmatter[key]
    items = value if isinstance(value, list) else [value]
    return [_text(v) for v in items if not isinstance(v, (dict, list))]


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _as_day(value: Any) -> _dt.date | None:
    if isinstance(value, str):
        m = _DATE_PREFIX.match(value.strip())
        if m:
            try:
                return _dt.date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
            except ValueError:
                return None
    return None


def _parse_day(text: str, name: str, today: _dt.date) -> _dt.date:
    value = text.strip().lower()
    if value == "today":
        return today
    if value == "yesterday":
        return today - _dt.timedelta(days=1)
    day = _as_day(value)
    if day is None:
        raise InvalidArgument(f"Invalid {name} '{text}': use YYYY-MM-DD")
    return day
