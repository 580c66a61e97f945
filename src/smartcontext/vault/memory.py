"""save_preference, list_preferences, remove_preference, log_interaction, get_current_date.

Preferences live in ``.smartcontext/preferences.md`` (configurable), one ``- item`` per
line, so a person can read and edit them; other lines in that file are left alone. The
interaction log is ``.smartcontext/interactions.jsonl``, one JSON object per line,
only ever appended to.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

from .base import VaultBase, tool
from .paths import atomic_write
from .responses import ok
from ..validate import ToolError

PREFERENCE_MAX_CHARS = 2000
_ITEM = re.compile(r"^[-*+][ \t]+(.*\S)\s*$")
_HEADER = (
    "# Preferences\n\n"
    "One preference per line, starting with '- '. The assistant adds and removes them "
    "with its preference tools; you can edit them here too.\n\n"
)


class MemoryTools(VaultBase):
    @tool
    def save_preference(self, preference: str) -> dict[str, Any]:
        text = " ".join(preference.split())
        if not text:
            raise ToolError("preference cannot be empty")
        if len(text) > PREFERENCE_MAX_CHARS:
            raise ToolError(f"preference is longer than {PREFERENCE_MAX_CHARS} characters; save a shorter one")
        with self._write_lock():
            return self._save_preference(text)

    def _save_preference(self, text: str) -> dict[str, Any]:
        lines = self._preference_lines()
        if any(p.lower() == text.lower() for _, p in _items(lines)):
            return ok(f"Preference already saved: {text}")
        if lines and not lines[-1].endswith("\n"):
            lines[-1] += "\n"
        if not lines:
            lines = [_HEADER]
        lines.append(f"- {text}\n")
        self._write_preferences(lines)
        return ok(f"Saved preference: {text}")

    @tool
    def list_preferences(self) -> dict[str, Any]:
        preferences = [p for _, p in _items(self._preference_lines())]
        if not preferences:
            return ok("No preferences saved.", results=[])
        return ok(results=[f"{i}. {pref}" for i, pref in enumerate(preferences, start=1)])

    @tool
    def remove_preference(self, line_number: int) -> dict[str, Any]:
        with self._write_lock():
            return self._remove_preference(line_number)

    def _remove_preference(self, line_number: int) -> dict[str, Any]:
        lines = self._preference_lines()
        items = _items(lines)
        if not items:
            raise ToolError("No preferences to remove")
        if not 1 <= line_number <= len(items):
            raise ToolError(f"Invalid line number. Must be between 1 and {len(items)}")
        index, removed = items[line_number - 1]
        del lines[index]
        self._write_preferences(lines)
        return ok(f"Removed preference: {removed}")

    @tool
    def log_interaction(
        self,
        task_description: str,
        query: str,
        summary: str,
        files: list[str] | None = None,
        full_response: str | None = None,
    ) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "timestamp": self._now().isoformat(timespec="seconds"),
            "task_description": task_description,
            "query": query,
            "summary": summary,
            "files": list(files or []),
        }
        if full_response is not None:
            entry["full_response"] = full_response
        line = (json.dumps(entry, ensure_ascii=False) + "\n").encode("utf-8")
        try:
            self.log_file.parent.mkdir(parents=True, exist_ok=True)
            # One write() on an O_APPEND descriptor: concurrent loggers never interleave
            # inside a line, and earlier lines are never rewritten.
            fd = os.open(self.log_file, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, line)
            finally:
                os.close(fd)
        except OSError as exc:
            raise ToolError(f"Logging failed: {exc.strerror or exc}") from None
        return ok(f"Logged to {self._shown(self.log_file)}")

    @tool
    def get_current_date(self) -> dict[str, Any]:
        now = self._now()
        return ok(date=now.strftime("%Y-%m-%d"), weekday=now.strftime("%A"), time=now.strftime("%H:%M"),
                  datetime=now.isoformat(timespec="seconds"))

    # -- helpers

    def _preference_lines(self) -> list[str]:
        try:
            return self.preferences_file.read_text(encoding="utf-8").splitlines(keepends=True)
        except FileNotFoundError:
            return []

    def _write_preferences(self, lines: list[str]) -> None:
        atomic_write(self.preferences_file, "".join(lines).encode("utf-8"), overwrite=True)

    def _shown(self, path: Any) -> str:
        try:
            return self._rel(path)
        except ValueError:
            return str(path)


def _items(lines: list[str]) -> list[tuple[int, str]]:
    """(line index, preference) for every list item of the file."""
    out = []
    for i, line in enumerate(lines):
        m = _ITEM.match(line)
        if m:
            out.append((i, m.group(1)))
    return out
