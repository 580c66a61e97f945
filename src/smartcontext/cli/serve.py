"""``smartcontext serve ...``: run the servers."""

from __future__ import annotations

import os
from enum import Enum
from pathlib import Path
from typing import Optional

import typer

from ..config import DEFAULT_REFRESH_INTERVAL
from .root import PathArg, app, open_workspace, workspace_root
from .output import EXIT_INTERRUPTED, errors, print_json, warn

serve_app = typer.Typer(help="Serve a folder to programs (MCP) and people (the web page and HTTP API).",
                        no_args_is_help=True)
app.add_typer(serve_app, name="serve")

LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")
TOKEN_ENV = "SMARTCONTEXT_TOKEN"


class Transport(str, Enum):
    stdio = "stdio"
    http = "http"


@serve_app.command("mcp")
def mcp(
    path: Optional[Path] = PathArg,
    transport: Transport = typer.Option(
        Transport.stdio, "--transport", help="stdio (for desktop clients) or http (streamable HTTP)."
    ),
    host: str = typer.Option("127.0.0.1", "--host", help="Address to bind for --transport http."),
    port: int = typer.Option(8765, "--port", help="Port for --transport http.", min=1, max=65535),
    refresh: float = typer.Option(
        DEFAULT_REFRESH_INTERVAL, "--refresh-interval",
        help="Seconds between checks for changed files before a question (longer on huge "
        "folders); negative: never.",
    ),
    warm: bool = typer.Option(True, "--warm/--no-warm", help="Build a missing index in the background at start."),
    list_tools: bool = typer.Option(False, "--list-tools", help="Print the tools as JSON and exit."),
) -> None:
    """Serve PATH over the Model Context Protocol: context, search, status and the vault tools."""
    path = workspace_root(path)
    with errors(OSError):  # OSError: e.g. the port is taken
        open_workspace(path)  # a wrong folder is reported before the MCP SDK is even imported
        from ..server.mcp import serve
        from ..tools import ToolRegistry

        if list_tools:
            registry = ToolRegistry.open(path)
            try:
                print_json([s.describe() for s in registry.specs()])
            finally:
                registry.close()
            return
        if transport is Transport.http and host not in LOCAL_HOSTS:
            warn(
                f"binding {host}: the MCP server has no authentication; "
                "anyone who can reach this address can read and write files in the folder"
            )
        try:
            serve(path, transport.value, host=host, port=port, refresh_interval=refresh, warm=warm)
        except KeyboardInterrupt:  # the usual way to stop a server: not an error to report
            raise typer.Exit(EXIT_INTERRUPTED) from None


@serve_app.command("web")
def web(
    path: Optional[Path] = PathArg,
    host: str = typer.Option("127.0.0.1", "--host", help="Address to bind."),
    port: int = typer.Option(8766, "--port", help="Port to listen on (0: any free port).", min=0, max=65535),
    browser: bool = typer.Option(True, "--browser/--no-browser", help="Open the page in a browser."),
    refresh: float = typer.Option(
        DEFAULT_REFRESH_INTERVAL, "--refresh-interval",
        help="Seconds between checks for changed files before a question; negative: never.",
    ),
    warm: bool = typer.Option(True, "--warm/--no-warm", help="Build a missing index in the background at start."),
    token: bool = typer.Option(
        False, "--token",
        help=f"Require an access token: ${TOKEN_ENV} when set (a token on the command line would show "
        "in the process list), else a new one. The printed address carries it. Always on when "
        f"--host is not a loopback address or ${TOKEN_ENV} is set.",
    ),
) -> None:
    """Serve PATH's web page (chat with the Smart Context panel, search and context) and its
    HTTP API: every tool at /api/tools/NAME, events over the WebSocket /ws."""
    path = workspace_root(path)
    with errors(OSError):  # OSError: e.g. the port is taken
        open_workspace(path)  # a wrong folder is reported before the server starts
        from ..server.http import serve as serve_web

        if host not in LOCAL_HOSTS:
            warn(
                f"binding {host}: the connection is not encrypted; anyone who can reach this address "
                "and sees the access token can read and write files in the folder"
            )
        try:
            given = os.environ.get(TOKEN_ENV) or None
            serve_web(path, host=host, port=port, refresh_interval=refresh, warm=warm, open_browser=browser,
                      token=given if given else ("" if token else None))
        except KeyboardInterrupt:
            raise typer.Exit(EXIT_INTERRUPTED) from None
