"""HTTP routes for the agent's chat sessions (``agent.AgentSessions``), on the web server's
tool registry, so the agent shares its index and locks.

    GET    /api/agent/sessions                    the sessions, most recent first
    POST   /api/agent/sessions {title?}           a new session
    GET    /api/agent/sessions/{id}               a session with its messages
    DELETE /api/agent/sessions/{id}
    POST   /api/agent/sessions/{id}/messages {text, stream?}
           the answer streamed as NDJSON: one line per event (``history``, ``delta``,
           ``assistant``, ``tool_call``, ``tool_result``, ``compaction``, ``error``,
           ``done``), then ``{"type": "result", "success": ...}``; with ``stream: false``,
           that result alone as JSON.

The chat view's routes (any chat is answered the same way, ``AgentSessions.reply``):

    GET    /api/model                             {configured, model, budgets} or {configured: false, how, budgets}
    POST   /api/chats/{id}/reply {text, stream?}  the answer, streamed as above
    POST   /api/chats/{id}/stop                   stop the answer being written {stopped}

Every event also goes to the WebSocket as ``smartcontext.agent_event``.
"""

from __future__ import annotations

import asyncio
import builtins
import json
import threading
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

import anyio
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.routing import Route

from ..errors import InvalidArgument, LLMError, SessionBusy, SessionNotFound, SmartContextError
from .hub import EventHub

if TYPE_CHECKING:
    from ..agent import AgentSessions
    from ..tools import ToolRegistry

AGENT_EVENT = "smartcontext.agent_event"
# What each refusal is, in HTTP terms (a model that fails while answering: 502).
STATUS = ((SessionNotFound, 404), (SessionBusy, 409), (InvalidArgument, 400), (LLMError, 502))


def error_answer(exc: SmartContextError, llm_status: int = 502) -> tuple[dict[str, Any], int]:
    status = llm_status if isinstance(exc, LLMError) else next((c for k, c in STATUS if isinstance(exc, k)), 400)
    return {"success": False, "error": str(exc)}, status


class AgentApi:
    """The agent session routes; ``respond(data, status)`` builds the JSON response and
    ``read_body(request)`` the checked JSON body (the web server's own)."""

    def __init__(self, registry: "ToolRegistry", hub: EventHub, respond: Callable[..., Any],
                 read_body: Callable[[Request], Any]):
        self.registry = registry
        self.hub = hub
        self.respond = respond
        self.read_body = read_body
        self._sessions: AgentSessions | None = None
        self._lock = threading.Lock()

    def sessions(self) -> "AgentSessions":
        with self._lock:
            if self._sessions is None:
                from ..agent import AgentSessions

                # Topics after each answer, for the panel; streamed text for the page; the
                # filtered history and the folder's context for each question, within the
                # budgets of [chat] (history_tokens, context_tokens).
                chat = self.registry.context.workspace.config.chat
                self._sessions = AgentSessions(registry=self.registry, stream=True, extract_topics=True,
                                               history_tokens=chat.history_tokens,
                                               context_tokens=chat.context_tokens)
            return self._sessions

    async def run(self, fn: Callable[[], dict[str, Any]], llm_status: int = 502):
        def call() -> tuple[dict[str, Any], int]:
            try:
                return {"success": True, **fn()}, 200
            except SmartContextError as exc:
                return error_answer(exc, llm_status)

        data, status = await anyio.to_thread.run_sync(call)
        return self.respond(data, status)

    async def list(self, request: Request):
        def fn() -> dict[str, Any]:
            found = self.sessions().list()
            return {"sessions": found, "count": len(found)}

        return await self.run(fn)

    async def create(self, request: Request):
        title = (await self.read_body(request)).get("title")
        return await self.run(lambda: self.sessions().create(title))

    async def get(self, request: Request):
        sid = request.path_params["session_id"]
        return await self.run(lambda: self.sessions().get(sid))

    async def delete(self, request: Request):
        sid = request.path_params["session_id"]

        def fn() -> dict[str, Any]:
            self.sessions().delete(sid)
            return {"deleted": sid}

        return await self.run(fn)

    async def model(self, request: Request):
        return await self.run(lambda: self.sessions().model_info())

    async def stop(self, request: Request):
        chat_id = request.path_params["chat_id"]
        await self.read_body(request)  # checked like every write
        return await self.run(lambda: {"chat_id": chat_id, "stopped": self.sessions().stop(chat_id)})

    async def reply(self, request: Request):
        return await self.send(request, chat=True)

    async def send(self, request: Request, chat: bool = False):
        sid = request.path_params["chat_id" if chat else "session_id"]
        body = await self.read_body(request)
        text, stream = body.get("text"), body.get("stream", True)
        if not isinstance(text, str) or not text.strip():
            return self.respond({"success": False, "error": "'text' is required: the message to answer"}, 400)
        # The session and the model are checked first, so a missing one is a plain error
        # answer rather than a stream that fails.
        def check() -> dict[str, Any]:
            if chat:
                from ..chat.files import check_chat_id

                check_chat_id(sid)
            else:
                self.sessions().get(sid)
            self.sessions().model()
            return {}

        checked = await self.run(check, llm_status=400)  # no model configured: the request cannot be answered
        if checked.status_code != 200:
            return checked
        answer = self.sessions().reply if chat else self.sessions().send
        if stream is False:
            return await self.run(lambda: answer(sid, text, self._publish))
        return StreamingResponse(self._stream(answer, sid, text), media_type="application/x-ndjson")

    def _publish(self, event: dict[str, Any]) -> None:
        self.hub.publish(AGENT_EVENT, event)

    async def _stream(self, answer: Callable[..., dict[str, Any]], sid: str, text: str) -> AsyncIterator[str]:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()

        def put(item: dict[str, Any] | None) -> None:
            loop.call_soon_threadsafe(queue.put_nowait, item)

        def on_event(event: dict[str, Any]) -> None:
            self._publish(event)
            put(event)

        def run() -> None:
            try:
                put({"type": "result", "success": True, **answer(sid, text, on_event)})
            except SmartContextError as exc:
                put({"type": "result", **error_answer(exc)[0]})
            except Exception as exc:  # the stream ends with an answer, whatever happened
                put({"type": "result", "success": False, "error": f"{type(exc).__name__}: {exc}"})
            finally:
                put(None)

        # The answer goes on in its thread if the client leaves: every round is saved.
        threading.Thread(target=run, name=f"smartcontext-agent-{sid}", daemon=True).start()
        while (item := await queue.get()) is not None:
            yield json.dumps(item, ensure_ascii=False, default=str) + "\n"

    def routes(self) -> builtins.list[Route]:  # ``list`` here is the method
        return [
            Route("/api/agent/sessions", self.list, methods=["GET"]),
            Route("/api/agent/sessions", self.create, methods=["POST"]),
            Route("/api/agent/sessions/{session_id}", self.get, methods=["GET"]),
            Route("/api/agent/sessions/{session_id}", self.delete, methods=["DELETE"]),
            Route("/api/agent/sessions/{session_id}/messages", self.send, methods=["POST"]),
            Route("/api/model", self.model, methods=["GET"]),
            Route("/api/chats/{chat_id}/reply", self.reply, methods=["POST"]),
            Route("/api/chats/{chat_id}/stop", self.stop, methods=["POST"]),
        ]
