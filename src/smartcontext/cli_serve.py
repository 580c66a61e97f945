"""``smartcontext serve ...``: run the servers. Mounted in cli.py as ``serve``."""

from __future__ import annotations

import json
import sys
from enum import Enum
from pathlib import Path

import typer
from rich.console import Console

from .errors import SmartContextError

serve_app = typer.Typer(help="Serve a folder to programs (MCP).", no_args_is_help=True)
err_console = Console(stderr=True)


class Transport(str, Enum):
    stdio = "stdio"
    http = "http"


@serve_app.command("mcp")
def mcp(
    path: Path = typer.Argument(Path("."), help="Workspace folder (a repository or a vault)."),
    transport: Transport = typer.Option(
        Transport.stdio, "--transport", help="stdio (for desktop clients) or http (streamable HTTP)."
    ),
    host: str = typer.Option("127.0.0.1", "--host", help="Address to bind for --transport http."),
    port: int = typer.Option(8765, "--port", help="Port for --transport http.", min=1, max=65535),
    refresh: float = typer.Option(
        5.0, "--refresh-interval",
        help="Seconds between checks for changed files before a question (longer on huge "
        "folders); negative: never.",
    ),
    warm: bool = typer.Option(True, "--warm/--no-warm", help="Build a missing index in the background at start."),
    list_tools: bool = typer.Option(False, "--list-tools", help="Print the tools as JSON and exit."),
) -> None:
    """Serve PATH over the Model Context Protocol: context, search, status and the vault tools."""
    try:
        from .workspace import Workspace

        Workspace.open(path)  # a wrong folder is reported before the MCP SDK is even imported
        from .server.mcp import serve
        from .tools import ToolRegistry

        if list_tools:
            registry = ToolRegistry.open(path)
            try:
                sys.stdout.write(json.dumps([s.describe() for s in registry.specs()], indent=2) + "\n")
            finally:
                registry.close()
            return
        if transport is Transport.http and host not in ("127.0.0.1", "localhost", "::1"):
            err_console.print(
                f"[yellow]warning:[/] binding {host}: the MCP server has no authentication; "
                "anyone who can reach this address can read and write files in the folder",
                highlight=False,
            )
        serve(path, transport.value, host=host, port=port, refresh_interval=refresh, warm=warm)
    except (SmartContextError, OSError) as exc:  # OSError: e.g. the port is taken
        err_console.print(f"[bold red]Error:[/] {exc}", highlight=False)
        raise typer.Exit(1) from None
    except KeyboardInterrupt:
        raise typer.Exit(130) from None
