"""The MCP server: the tool registry of one folder, over stdio or streamable HTTP.

Built on the SDK's low-level ``Server`` because every tool already has a JSON schema;
the registry validates arguments and answers ``{"success": ...}`` JSON text, and the
result is flagged ``isError`` when ``success`` is false so a model sees it failed.

    smartcontext serve mcp path/to/repo                      # stdio, for desktop clients
    smartcontext serve mcp path/to/vault --transport http    # http://127.0.0.1:8765/mcp
"""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import types
from mcp.server.lowlevel import Server

from .. import __version__
from ..errors import PortUnavailable
from ..tools import DEFAULT_REFRESH_INTERVAL, ToolRegistry, ToolSpec

SERVER_NAME = "smartcontext"
HTTP_PATH = "/mcp"
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765

INSTRUCTIONS = """\
Smart Context answers questions about one folder (a code repository, a notes vault, or both).
- `context`: the best slice of the code/notes for a question within a token budget. Start here.
- `search`: locations and short snippets for a query; cheap, for finding where things are.
- `read_file`: a whole note or file, paged; the other vault tools list, link, move and edit notes.
Every tool answers JSON: {"success": true, ...} or {"success": false, "error": "..."}."""

log = logging.getLogger(__name__)


def mcp_tool(spec: ToolSpec) -> types.Tool:
    annotations = types.ToolAnnotations(
        read_only_hint=spec.read_only,
        destructive_hint=None if spec.read_only else spec.destructive,
        open_world_hint=False,
    )
    return types.Tool(name=spec.name, description=spec.description, input_schema=spec.input_schema,
                      annotations=annotations)


def build_server(registry: ToolRegistry) -> Server[Any]:
    """A low-level MCP server whose tools are the registry's."""
    tools = [mcp_tool(s) for s in registry.specs()]

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    text_fields = {s.name: s.text_field for s in registry.specs() if s.text_field}

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        # Tools do file and SQLite work; a worker thread keeps the server answering meanwhile.
        result = await anyio.to_thread.run_sync(registry.call, params.name, params.arguments)
        return tool_result(result, text_fields.get(params.name))

    return Server(
        SERVER_NAME,
        version=__version__,
        title="Smart Context",
        description=f"Context, search and vault tools for {registry.context.root}",
        instructions=INSTRUCTIONS,
        get_tool_input_schema=registry.input_schema,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def tool_result(result: dict[str, Any], text_field: str | None = None) -> types.CallToolResult:
    """A tool's answer as MCP content: one JSON text block; for a tool with a ``text_field``
    (the context), that text as its own block first, exactly as counted against the budget,
    then the rest (token_count, files, warnings) as JSON and as structured content."""
    ok = bool(result.get("success", False))
    if ok and text_field and isinstance(result.get(text_field), str):
        meta = {k: v for k, v in result.items() if k != text_field}
        meta_json = json.loads(json.dumps(meta, ensure_ascii=False, default=str))  # plain JSON types
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=result[text_field]),
                     types.TextContent(type="text", text=json.dumps(meta_json, ensure_ascii=False))],
            structured_content=meta_json,
            is_error=False,
        )
    text = json.dumps(result, ensure_ascii=False, default=str)
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=not ok)


async def run_stdio(server: Server[Any]) -> None:
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def http_app(server: Server[Any], host: str = DEFAULT_HOST):
    """The app serving MCP at ``/mcp``, behind the web server's checks (``server.guard``):
    the SDK accepts an Origin of 127.0.0.1 on any port, so a page on another local port
    could call the tools; here the Origin must be this server's own (and the Host, for a
    loopback bind, a loopback name with this port), and a POST must be JSON."""
    from .guard import GuardMiddleware

    # The SDK's own checks stay in place beneath (its body limit, its Content-Type check).
    app = server.streamable_http_app(streamable_http_path=HTTP_PATH, host=host)
    return GuardMiddleware(app, host, json_methods={"POST"}, page_headers=False)


def bind(host: str = DEFAULT_HOST, port: int = DEFAULT_PORT) -> socket.socket:
    """A listening socket for the HTTP server, bound before anything is announced, so a
    taken port is one clear error rather than a printed URL followed by uvicorn's log."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP named, not left 0: asyncio turns Nagle off (TCP_NODELAY) only on accepted
    # sockets whose proto says TCP, and with Nagle on, each answer's later SSE chunks wait
    # for the client's delayed ACK: about 40 ms added to every call.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise PortUnavailable(
            f"cannot listen on {host}:{port} ({exc.strerror or exc}); "
            f"another server may be using it: choose another with --port"
        ) from None
    return sock


def run_http(
    server: Server[Any], host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, log_level: str = "warning",
    sock: socket.socket | None = None,
) -> None:
    import uvicorn

    from .limits import guarded_protocol

    sock = sock or bind(host, port)
    config = uvicorn.Config(http_app(server, host), host=host, port=port, log_level=log_level,
                            lifespan="on", access_log=False, http=guarded_protocol())
    uvicorn.Server(config).run(sockets=[sock])


def serve(
    path: str | Path,
    transport: str = "stdio",
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    refresh_interval: float = DEFAULT_REFRESH_INTERVAL,
    warm: bool = True,
) -> None:
    """Open the folder once and serve its tools until the client goes away (stdio) or the
    process is stopped (http). ``warm`` builds a missing index in the background."""
    if transport not in ("stdio", "http"):
        raise ValueError(f"unknown transport {transport!r}; choose stdio or http")
    # The port first: a taken one fails before any index work starts in the background.
    sock = bind(host, port) if transport == "http" else None
    try:
        registry = ToolRegistry.open(path, refresh_interval=refresh_interval)
    except BaseException:
        if sock is not None:
            sock.close()
        raise
    for warning in registry.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    try:
        if transport == "stdio":
            exit_with_parent()
        if warm:
            registry.context.warm_up()
        registry.context.release_when_idle()
        server = build_server(registry)
        if transport == "stdio":
            anyio.run(run_stdio, server)
        else:
            print(f"Smart Context MCP server for {registry.context.root} at http://{_url_host(host)}:{port}{HTTP_PATH}",
                  file=sys.stderr, flush=True)
            run_http(server, host, port, sock=sock)
    finally:
        registry.close()


# Seconds between the stdio server's checks that the process that started it is alive,
# and how long it then has to stop cleanly before it exits regardless.
PARENT_CHECK_SECONDS = 0.5
PARENT_GONE_GRACE = 5.0


def exit_with_parent() -> threading.Thread | None:
    """End this process when its parent dies (it is then re-parented, so ``getppid``
    changes). A stdio server belongs to the client that started it: killed clients
    usually close its stdin too, but a pipe inherited elsewhere can stay open. The
    server gets SIGTERM (the CLI stops like Ctrl-C: background work ends, the index
    keeps every finished batch), and exits anyway after ``PARENT_GONE_GRACE`` seconds."""
    parent = os.getppid()
    if parent <= 1:  # started by init (a container's entry point): no parent to follow
        return None

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_CHECK_SECONDS)
        log.warning("the process that started this server is gone; stopping")
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(PARENT_GONE_GRACE)
        os._exit(1)

    thread = threading.Thread(target=watch, name="smartcontext-parent-watch", daemon=True)
    thread.start()
    return thread


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host
