"""Events from any thread to the WebSocket clients of the web server.

The chat layer emits its events (``smart_context.topics_updated``...) in whatever thread
did the work: a request's worker thread, a background topic extraction, the index build.
``EventHub.publish`` is safe to call from any of them: it hands the message to the
server's event loop, which puts it on each connected client's queue.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from typing import Any

# Extra events of the web server (the seed's three come from the chat layer).
INDEX_PROGRESS = "smartcontext.index_progress"
MESSAGE_ADDED = "smartcontext.message_added"

# A client that stops reading loses its oldest events past this many, never the server's
# memory; the page re-reads the state when it reconnects.
CLIENT_BACKLOG = 1000


class EventHub:
    """Fan-out of ``{"event", "data"}`` messages to the connected clients of one loop."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._clients: set[asyncio.Queue[str]] = set()
        self._lock = threading.Lock()

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        """The loop the clients' queues belong to (the server's, at start-up)."""
        with self._lock:
            self._loop = loop

    def detach(self) -> None:
        with self._lock:
            self._loop = None
            self._clients.clear()

    def connect(self) -> asyncio.Queue[str]:
        """A new client's queue; call from the loop."""
        queue: asyncio.Queue[str] = asyncio.Queue(CLIENT_BACKLOG)
        with self._lock:
            self._clients.add(queue)
        return queue

    def disconnect(self, queue: asyncio.Queue[str]) -> None:
        with self._lock:
            self._clients.discard(queue)

    @property
    def client_count(self) -> int:
        with self._lock:
            return len(self._clients)

    def publish(self, event: str, data: dict[str, Any]) -> None:
        """Send an event to every client; callable from any thread, never raises."""
        message = json.dumps({"event": event, "data": data, "time": time.time()}, ensure_ascii=False, default=str)
        with self._lock:
            loop, clients = self._loop, list(self._clients)
        if loop is None or not clients or loop.is_closed():
            return
        try:
            loop.call_soon_threadsafe(_offer, clients, message)
        except RuntimeError:  # the loop closed between the check and the call
            pass


def _offer(clients: list[asyncio.Queue[str]], message: str) -> None:
    for queue in clients:
        if queue.full():
            queue.get_nowait()  # drop the oldest: a stalled tab must not grow the server
        queue.put_nowait(message)


class ProgressEvents:
    """An indexer ``progress(phase, done, total)`` callback that publishes
    ``smartcontext.index_progress`` at most every ``interval`` seconds (plus the first and
    last step of each phase), so a build of thousands of files sends a few events a second."""

    def __init__(self, hub: EventHub, interval: float = 0.25):
        self.hub = hub
        self.interval = interval
        self._last = 0.0

    def __call__(self, phase: str, done: int, total: int) -> None:
        now = time.monotonic()
        if done in (0, total) or now - self._last >= self.interval:
            self._last = now
            self.hub.publish(INDEX_PROGRESS, {"phase": phase, "done": done, "total": total})

    def finished(self, error: str | None = None) -> None:
        data: dict[str, Any] = {"phase": "error" if error else "done"}
        if error:
            data["error"] = error
        self.hub.publish(INDEX_PROGRESS, data)
