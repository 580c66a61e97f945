"""The HTTP API and the web page: one Starlette app over the tool registry of one folder.

    smartcontext serve web path/to/vault          # http://127.0.0.1:8766/

Every route is a thin call into the library and answers the JSON that the CLI's ``--json``
and the MCP tools answer (``{"success": true, ...}`` or ``{"success": false, "error": ...}``):
the workspace tools (context, search, status), every registry tool at
``POST /api/tools/{name}``, the chats, and the seed's ``execute_command`` for the
``smart_context.*`` commands, and the agent's sessions (``server.agent_api``). Events reach
the page over the WebSocket ``/ws``. The page's files are plain HTML/CSS/JS in ``web/``.

Requests pass the same checks as the MCP HTTP server (``server.guard``) before any work:
this server's own Host and Origin (exact port), JSON for every write, the access token
when there is one, and the body limit. No GET changes state.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import anyio
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Mount, Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from ..chat.files import ChatFile
from ..errors import InvalidArgument
from ..tools import DEFAULT_REFRESH_INTERVAL, ToolRegistry
from .assets import VersionedStaticFiles, digests, versioned_html
from .guard import GuardMiddleware, check_token, is_loopback, new_token
from .hub import MESSAGE_ADDED, EventHub, ProgressEvents

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8766
WEB_DIR = Path(__file__).parent / "web"
# Bodies are JSON arguments; the registry refuses calls over 2,000,000 characters anyway.
MAX_BODY_BYTES = 4 * 1024 * 1024

log = logging.getLogger(__name__)


class BadRequest(Exception):
    """A request the API cannot read (not JSON, not an object, a bad query value)."""


class JSON(JSONResponse):
    """Like the CLI's ``--json``: non-ASCII kept, anything else as its string."""

    def render(self, content: Any) -> bytes:
        return json.dumps(content, ensure_ascii=False, default=str).encode("utf-8")


def answer(result: dict[str, Any]) -> JSON:
    """A tool's answer; a refusal is a 400 with the same body."""
    return JSON(result, status_code=200 if result.get("success") else 400)


def failure(message: str, status: int) -> JSON:
    return JSON({"success": False, "error": message}, status_code=status)


async def json_body(request: Request) -> dict[str, Any]:
    raw = await request.body()
    if not raw.strip():
        return {}
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadRequest(f"the request body is not valid JSON ({exc})") from None
    except RecursionError:
        raise BadRequest("the request body is nested too deeply: send arguments a few levels deep") from None
    if not isinstance(data, dict):
        raise BadRequest(f"the request body must be a JSON object, not {type(data).__name__}")
    try:
        # JSON's \uXXXX escapes can spell half of a UTF-16 pair, which is no character:
        # refused here, before it reaches a tokenizer, the index or the answer's encoder.
        json.dumps(data, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = exc.object[exc.start:exc.end].encode("unicode_escape").decode("ascii")
        raise BadRequest(f"the request body has a lone surrogate ({bad}) in a string: "
                         "send text as valid Unicode") from None
    except RecursionError:
        raise BadRequest("the request body is nested too deeply: send arguments a few levels deep") from None
    return data


def query_number(request: Request, name: str, kind: Callable[[str], Any], default: Any) -> Any:
    raw = request.query_params.get(name)
    if raw is None:
        return default
    try:
        return kind(raw)
    except ValueError:
        raise BadRequest(f"query parameter {name} must be a number, not {raw!r}") from None


class WebApi:
    """The routes over one registry; ``hub`` carries the events to the WebSocket clients."""

    def __init__(self, registry: ToolRegistry, hub: EventHub):
        self.registry = registry
        self.hub = hub
        self.chats = registry.context.workspace.chats()

    async def call(self, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        # Tools do file and SQLite work (and may embed): a worker thread keeps the loop free.
        return await anyio.to_thread.run_sync(self.registry.call, tool, args)

    async def tool_route(self, tool: str, request: Request, **fixed: Any) -> JSON:
        args = await json_body(request) if request.method == "POST" else {}
        return answer(await self.call(tool, {**args, **fixed}))

    # -- the workspace -----------------------------------------------------------------

    async def status(self, request: Request) -> JSON:
        return await self.tool_route("status", request)

    async def context(self, request: Request) -> JSON:
        return await self.tool_route("context", request)

    async def search(self, request: Request) -> JSON:
        return await self.tool_route("search", request)

    async def files(self, request: Request) -> JSON:
        return await self.tool_route("files", request)

    async def similar(self, request: Request) -> JSON:
        return await self.tool_route("similar", request)

    # -- tools ---------------------------------------------------------------------------

    async def tools(self, request: Request) -> JSON:
        specs = [s.describe() for s in self.registry.specs()]
        return JSON({"success": True, "tools": specs, "count": len(specs)})

    async def call_tool(self, request: Request) -> JSON:
        name = request.path_params["name"]
        if self.registry.get(name) is None:
            return failure(f"unknown tool {name!r}; GET /api/tools lists them", 404)
        return await self.tool_route(name, request)

    async def execute_command(self, request: Request) -> JSON:
        """The seed's ``window.request('execute_command', {command, args})``: a
        ``smart_context.*`` command runs as its tool (``smart_context.set_filter`` is the
        tool ``smart_context_set_filter``), so it is checked and locked the same way."""
        body = await json_body(request)
        command, args = body.get("command"), body.get("args", {})
        if not isinstance(args, dict):
            raise BadRequest("'args' must be a JSON object")
        from ..chat.session import COMMANDS

        if command not in COMMANDS:
            return failure(f"unknown command {command!r}; commands: {', '.join(COMMANDS)}", 404)
        return answer(await self.call(command.replace(".", "_"), args))

    # -- chats ---------------------------------------------------------------------------

    async def list_chats(self, request: Request) -> JSON:
        ids = await anyio.to_thread.run_sync(self.chats.chat_ids)
        return JSON({"success": True, "chats": ids, "count": len(ids)})

    async def state(self, request: Request) -> JSON:
        return JSON({"success": True, **self.chats.state()})

    async def read_chat(self, request: Request) -> JSON:
        chat_id = request.path_params["chat_id"]
        # ?new=1 (the page opening a chat to write): a chat without a file yet is empty.
        new_ok = request.query_params.get("new") in ("1", "true")

        def run() -> dict[str, Any]:
            # The file only: reading a chat does not make it the current one.
            if not new_ok:
                self.chats.require(chat_id)
            data = ChatFile(self.chats.memory_dir, chat_id).load()
            return {"success": True, "chat_id": chat_id, "messages": [m.to_dict() for m in data.messages],
                    "topics": data.topics, "total_messages": len(data.messages)}

        return answer(await anyio.to_thread.run_sync(_guarded(run, "read chat")))

    async def add_message(self, request: Request) -> JSON:
        chat_id = request.path_params["chat_id"]
        result = await self.call("chat_add_message", {**await json_body(request), "chat_id": chat_id})
        if result.get("success"):
            # Other tabs (and this one, whatever answers first) show the message from here.
            self.hub.publish(MESSAGE_ADDED, {"chat_id": chat_id, "message": result["message"]})
        return answer(result)

    async def topics(self, request: Request) -> JSON:
        chat_id = request.path_params["chat_id"]
        if request.method == "POST":  # extract again
            return await self.tool_route("chat_extract_topics", request, chat_id=chat_id)

        def run() -> dict[str, Any]:
            # The file only: a GET changes nothing, so it does not make the chat the current
            # one as smart_context.get_topics does (an <img> elsewhere could switch it).
            self.chats.require(chat_id)
            data = ChatFile(self.chats.memory_dir, chat_id).load()
            return {"success": True, "status": "success", "chat_id": chat_id, "topics": data.topics,
                    "total_messages": len(data.messages)}

        return answer(await anyio.to_thread.run_sync(_guarded(run, "read topics")))

    async def history(self, request: Request) -> JSON:
        return await self.tool_route("chat_history", request, chat_id=request.path_params["chat_id"])

    async def events(self, request: Request) -> JSON:
        args = {"since": query_number(request, "since", float, 0.0), "limit": query_number(request, "limit", int, 50)}
        return answer(await self.call("smart_context_events", args))

    # -- the WebSocket -------------------------------------------------------------------

    async def websocket(self, ws: WebSocket) -> None:
        await ws.accept()
        queue = self.hub.connect()
        try:
            await ws.send_text(json.dumps({"event": "smartcontext.connected", "data": {}}))
            receiver = asyncio.ensure_future(_drain(ws))
            while not receiver.done():
                getter = asyncio.ensure_future(queue.get())
                done, _ = await asyncio.wait({getter, receiver}, return_when=asyncio.FIRST_COMPLETED)
                if getter in done:
                    await ws.send_text(getter.result())
                else:
                    getter.cancel()
        except (WebSocketDisconnect, RuntimeError):
            pass  # the tab went away
        finally:
            self.hub.disconnect(queue)

    # (path under /api, handler, methods)
    API = (
        ("/status", "status", "GET"), ("/context", "context", "POST"), ("/search", "search", "POST"),
        ("/files", "files", "GET POST"),
        ("/similar", "similar", "POST"), ("/tools", "tools", "GET"), ("/tools/{name}", "call_tool", "POST"),
        ("/execute_command", "execute_command", "POST"), ("/state", "state", "GET"), ("/events", "events", "GET"),
        ("/chats", "list_chats", "GET"), ("/chats/{chat_id}", "read_chat", "GET"),
        ("/chats/{chat_id}/messages", "add_message", "POST"), ("/chats/{chat_id}/topics", "topics", "GET POST"),
        ("/chats/{chat_id}/history", "history", "POST"),
    )

    def routes(self) -> list[Any]:
        known = digests(WEB_DIR)
        pages = {name: versioned_html(WEB_DIR / name, known) for name in ("index.html", "search.html")}
        page = lambda name: (lambda request: Response(pages[name], media_type="text/html"))  # noqa: E731
        return [
            Route("/", page("index.html")),
            Route("/search", page("search.html")),
            Mount("/static", VersionedStaticFiles(WEB_DIR, known), name="static"),
            *(Route("/api" + path, getattr(self, handler), methods=methods.split()) for path, handler, methods in self.API),
            WebSocketRoute("/ws", self.websocket),
        ]


async def _drain(ws: WebSocket) -> None:
    """Read (and ignore) what the page sends, to notice when it closes."""
    with contextlib.suppress(WebSocketDisconnect, RuntimeError):
        while True:
            await ws.receive_text()


def _guarded(run: Callable[[], dict[str, Any]], what: str) -> Callable[[], dict[str, Any]]:
    """``run`` answering ``{"success": false, "error": ...}`` as the registry does."""
    from ..errors import SmartContextError

    def call() -> dict[str, Any]:
        try:
            return run()
        except SmartContextError as exc:
            return {"success": False, "error": str(exc)}
        except Exception as exc:  # a route answers, whatever the library does
            log.exception("%s failed", what)
            return {"success": False, "error": f"{what} failed: {type(exc).__name__}: {exc}"}

    return call


def build_app(registry: ToolRegistry, host: str = DEFAULT_HOST, warm: bool = False,
              max_body: int = MAX_BODY_BYTES, token: str | None = None) -> Starlette:
    """The web app for ``registry``'s folder. ``warm`` builds a missing index in the
    background at start-up, with its progress sent as ``smartcontext.index_progress``.
    ``token``: the access token every request must show (``server.guard``); required
    when ``host`` is not a loopback address."""
    if token is not None:
        check_token(token)
    elif not is_loopback(host):
        raise InvalidArgument(f"listening on {host} needs an access token: anyone who can reach "
                              "that address could read and write the folder (pass --token)")
    from .agent_api import AgentApi

    hub = EventHub()
    api = WebApi(registry, hub)
    agent = AgentApi(registry, hub, JSON, json_body)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette):
        hub.attach(asyncio.get_running_loop())
        unsubscribe = api.chats.subscribe("*", hub.publish)
        if warm:
            threading.Thread(target=build_index, args=(registry, ProgressEvents(hub)),
                             name="smartcontext-web-index", daemon=True).start()
        try:
            yield
        finally:
            unsubscribe()
            hub.detach()

    async def bad_request(request: Request, exc: Exception) -> Response:
        return failure(str(exc), 400)

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        if not request.url.path.startswith("/api/"):
            return Response(exc.detail, status_code=exc.status_code)
        return failure(f"{exc.detail}: {request.method} {request.url.path}", exc.status_code)

    app = Starlette(routes=api.routes() + agent.routes(), lifespan=lifespan,
                    middleware=[Middleware(GuardMiddleware, host=host, token=token, max_body=max_body)],
                    exception_handlers={BadRequest: bad_request, HTTPException: http_error})
    app.state.hub = hub
    return app


def build_index(registry: ToolRegistry, progress: ProgressEvents) -> None:
    """Build a missing index with progress events, then let the tool context take over
    (its own warm-up: freshness checks, and background work it adds)."""
    ctx = registry.context
    ws = ctx.workspace
    try:
        if not ws.has_index:
            with ctx.index_lock.writer:
                if not ws.has_index:
                    ws.index(embeddings=False, progress=progress, stop=ctx.stopping)
        ctx.warm_up()
        progress.finished()
    except Exception as exc:  # reported to the page, and again to the first tool that needs the index
        progress.finished(str(exc))


def serve(
    path: str | Path,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    refresh_interval: float = DEFAULT_REFRESH_INTERVAL,
    warm: bool = True,
    open_browser: bool = True,
    log_level: str = "warning",
    token: str | None = None,
) -> None:
    """Serve the folder's web page and HTTP API until the process is stopped. ``token``:
    the access token requests must show ("" makes one up; beyond a loopback address one is
    made up when none is given); the printed address carries it."""
    if token == "" or (token is None and not is_loopback(host)):
        token = new_token()
    elif token is not None:
        check_token(token)  # before the port and the index
    import uvicorn

    from .limits import guarded_protocol
    from .mcp import bind

    sock = bind(host, port)  # a taken port fails before any index work starts
    try:
        registry = ToolRegistry.open(path, refresh_interval=refresh_interval)
    except BaseException:
        sock.close()
        raise
    for warning in registry.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    try:
        url = f"http://{_url_host(host)}:{sock.getsockname()[1]}/" + (f"?token={quote(token)}" if token else "")
        print(f"Smart Context web page for {registry.context.root} at {url}", file=sys.stderr, flush=True)
        if open_browser:
            _open_browser(url)
        registry.context.release_when_idle()
        config = uvicorn.Config(build_app(registry, host, warm=warm, token=token), log_level=log_level,
                                lifespan="on", access_log=False, ws="websockets-sansio",
                                http=guarded_protocol())
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        registry.close()


def _open_browser(url: str) -> None:
    import webbrowser

    try:
        webbrowser.open(url, new=2)
    except Exception:  # no browser here (a server, a container): the printed URL is enough
        pass


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host
