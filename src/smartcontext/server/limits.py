"""Connection limits for both HTTP servers (the web page's and MCP's streamable HTTP).

uvicorn has a keep-alive timeout (idle between requests) but none while a request is being
read, and its ``limit_concurrency`` answers 503 to every new request once enough
connections are open, idle ones included. So a thousand clients that connect and say
nothing, or send a header a byte at a time, held every file descriptor and shut everyone
else out. This protocol (uvicorn's h11 one, plus three rules) keeps the server reachable:

- a request's line and headers must arrive within ``header_timeout`` seconds of the
  connection (or of the first byte of the next request on a kept-alive connection);
- its body within ``body_timeout`` seconds of its headers;
- at most ``max_connections`` are open: a new connection beyond that closes the one that
  has been waiting longest without a request in progress (a real request is never cut),
  and when every connection is busy the new one is told 503 and closed.

A connection that overruns is closed without an answer, as the keep-alive timeout does.
"""

from __future__ import annotations

import asyncio
import resource
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

HEADER_TIMEOUT = 10.0
BODY_TIMEOUT = 30.0
# Descriptors the process keeps for itself (SQLite files, the index, logs, workers).
RESERVED_FDS = 128
MAX_CONNECTIONS = 512
_BUSY_TEXT = b"the server is busy: too many open connections; try again\n"
BUSY = (b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\n"
        b"connection: close\r\ncontent-length: %d\r\n\r\n%s" % (len(_BUSY_TEXT), _BUSY_TEXT))


def raise_open_file_limit() -> int:
    """Raise this process's soft limit on open files to its hard limit (a server's
    connections are files) and return the soft limit now in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY:
        hard = max(soft, 65536)
    if soft != resource.RLIM_INFINITY and soft < hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError):  # not allowed here: keep the limit there is
            pass
    return soft


def connection_cap(open_file_limit: int) -> int:
    """How many connections fit in ``open_file_limit`` with room to spare for the rest."""
    return max(8, min(MAX_CONNECTIONS, (open_file_limit - RESERVED_FDS) // 2))


def guarded_protocol(header_timeout: float = HEADER_TIMEOUT, body_timeout: float = BODY_TIMEOUT,
                     max_connections: int | None = None) -> type[H11Protocol]:
    """uvicorn's h11 protocol with the rules above; pass it as ``uvicorn.Config(http=...)``.
    ``max_connections`` None: from this process's open-file limit, raised first."""
    cap = max_connections if max_connections is not None else connection_cap(raise_open_file_limit())

    class GuardedH11Protocol(H11Protocol):
        max_open = cap

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._deadline: asyncio.TimerHandle | None = None
            self._phase: Any = None
            self._idle_since = self.loop.time()
            if len(self.connections) > cap and not self._make_room():
                transport.write(BUSY)
                transport.close()
                return
            self._watch()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            self._watch()

        def on_response_complete(self) -> None:
            self._idle_since = self.loop.time()
            super().on_response_complete()
            self._watch()

        # -- rules -----------------------------------------------------------------------

        def _idle(self) -> bool:
            """No request being answered: waiting for one, or for the rest of its headers."""
            return (self.conn.their_state is h11.IDLE
                    and (self.cycle is None or self.cycle.response_complete))

        def _make_room(self) -> bool:
            """Close the connection idle the longest (not this one); False when none is."""
            idle = [c for c in self.connections
                    if c is not self and isinstance(c, GuardedH11Protocol) and c._idle()
                    and not c.transport.is_closing()]
            if not idle:
                return False
            oldest = min(idle, key=lambda c: c._idle_since)
            oldest._close()
            return True

        def _watch(self) -> None:
            """Arm the timer for the part of a request being read, if it changed."""
            if self.transport.is_closing() or self.transport.get_protocol() is not self:
                self._disarm()  # closed, or now a WebSocket: not ours to time
                return
            state = self.conn.their_state
            if state is h11.IDLE and self._idle():
                # Between requests with nothing received, uvicorn's keep-alive timer is the
                # one that runs; from the first byte of a request, or a new connection, ours.
                phase: Any = ("headers", id(self.cycle)) if self.cycle is None or self._partial() else None
                timeout = header_timeout
            elif state is h11.SEND_BODY:
                phase, timeout = ("body", id(self.cycle)), body_timeout
            else:
                phase = None
            if phase == self._phase:
                return
            self._disarm()
            if phase is not None:
                self._phase = phase
                self._deadline = self.loop.call_later(timeout, self._overrun, phase)

        def _partial(self) -> bool:
            return bool(self.conn.trailing_data[0])

        def _disarm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
            self._deadline, self._phase = None, None

        def _overrun(self, phase: Any) -> None:
            self._deadline = None
            if phase == self._phase:
                self._close()

        def _close(self) -> None:
            self._disarm()
            if not self.transport.is_closing():
                self.transport.close()

    return GuardedH11Protocol
