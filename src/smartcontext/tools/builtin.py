"""The built-in tool providers, registered through the same hook as a plugin's."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..plugins import hookimpl


@hookimpl(tryfirst=True)
def register_tools(register: Callable[..., Any]) -> None:
    # Imported when tools are wanted: the plugin manager loads this module for any
    # registry (a CLI question needs only the sources), and the tools bring jsonschema.
    from .chat import chat_tools
    from .smart_connections import smart_connections_tools
    from .vault import vault_tools
    from .workspace import workspace_tools

    register(workspace_tools, "workspace")
    register(vault_tools, "vault")
    register(smart_connections_tools, "smart_connections")
    register(chat_tools, "chat")
