"""The chat events: subscribe from Python; each is also appended to a log that the CLI
(``smartcontext chat events``) and the MCP tool ``smart_context_events`` read.

Names and payloads are the seed's:
    smart_context.topics_updated    {chat_id, topics, total_messages}
    smart_context.filter_changed    {active_topics, chat_id}
    smart_context.highlight_applied {message_ids}
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

TOPICS_UPDATED = "smart_context.topics_updated"
FILTER_CHANGED = "smart_context.filter_changed"
HIGHLIGHT_APPLIED = "smart_context.highlight_applied"
EVENTS = (TOPICS_UPDATED, FILTER_CHANGED, HIGHLIGHT_APPLIED)
# The log keeps the last events only: it is a window for late readers, not a history.
LOG_KEEP = 200

Listener = Callable[[str, dict[str, Any]], None]


class EventBus:
    """Listeners by event name (``"*"`` for all); ``emit`` calls them in order. A failing
    listener never stops the others or the emitter."""

    def __init__(self, log_path: Path | None = None):
        self.log_path = log_path
        self._listeners: dict[str, list[Listener]] = {}
        self._lock = threading.Lock()
        self.errors: list[str] = []

    def subscribe(self, event: str, listener: Listener) -> Callable[[], None]:
        """Call ``listener(event, payload)`` on ``event``; returns the unsubscribe function."""
        if event != "*" and event not in EVENTS:
            from ..errors import InvalidArgument

            raise InvalidArgument(f"unknown event {event!r}; events: {', '.join(EVENTS)} (or '*')")
        with self._lock:
            self._listeners.setdefault(event, []).append(listener)

        def unsubscribe() -> None:
            with self._lock:
                if listener in self._listeners.get(event, []):
                    self._listeners[event].remove(listener)

        return unsubscribe

    def emit(self, event: str, payload: dict[str, Any]) -> None:
        with self._lock:
            listeners = list(self._listeners.get(event, [])) + list(self._listeners.get("*", []))
        self._log(event, payload)
        for listener in listeners:
            try:
                listener(event, payload)
            except Exception as exc:  # a broken subscriber must not break the chat
                self.errors.append(f"{event} listener failed: {type(exc).__name__}: {exc}")

    def _log(self, event: str, payload: dict[str, Any]) -> None:
        if self.log_path is None:
            return
        line = json.dumps({"event": event, "time": time.time(), "data": payload}, ensure_ascii=False)
        with self._lock:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            # O_APPEND writes of one line are atomic enough for concurrent appenders.
            with open(self.log_path, "a", encoding="utf-8") as fh:
                fh.write(line + "\n")
            self._trim(self.log_path)

    def _trim(self, log_path: Path) -> None:
        try:
            if os.path.getsize(log_path) < 512 * 1024:
                return
            lines = log_path.read_text(encoding="utf-8").splitlines()[-LOG_KEEP:]
            from ..vault.paths import atomic_write

            atomic_write(log_path, ("\n".join(lines) + "\n").encode("utf-8"), overwrite=True)
        except OSError:
            pass


def read_events(log_path: Path, since: float = 0.0, limit: int = 50) -> list[dict[str, Any]]:
    """The logged events after ``since`` (a time from an earlier event), oldest first."""
    try:
        lines = log_path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return []
    out = []
    for line in lines:
        try:
            ev = json.loads(line)
        except ValueError:
            continue  # a line cut by a crash
        if ev.get("time", 0) > since:
            out.append(ev)
    return out[-limit:]
