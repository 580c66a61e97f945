"""The one registry of tools that the MCP server, the CLI and the HTTP API offer.

Tools come from *providers*: functions ``provider(context) -> list[ToolSpec]``. Providers
register through the ``register_tools`` plugin hook (``smartcontext.plugins``); the
built-in ones (workspace, vault, Smart Connections, in ``tools.builtin``) register first,
so a plugin's provider of the same name replaces a built-in one, and a later provider's
tool replaces an earlier tool of the same name. ``ToolRegistry.call`` checks the
arguments once against the tool's schema, runs the handler and wraps its data as
``{"success": true, ...}``; every failure becomes ``{"success": false, "error": "..."}``,
so no call, however malformed, raises.

Every built-in handler returns data and raises typed errors. Third-party tools written to
the seed's vault protocol (``{name, description, parameters}`` specs and
``call_tool(name, arguments)`` answering an ok/err dict, or its JSON text) plug in with
``spec_tools``, which unwraps their answers:

    @hookimpl
    def register_tools(register):
        register(lambda ctx: spec_tools(SPECS, MyTools(ctx.root).call_tool, "mine"), "mine")
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from ..errors import SmartContextError, did_you_mean
from ..plugins import HookOnce
from .spec import DEFAULT_REFRESH_INTERVAL, ToolContext, ToolSpec
from ..validate import ToolError, check_arguments

Provider = Callable[[ToolContext], list[ToolSpec]]

# Whole calls above this size are refused before anything parses them further: a model
# looping on a giant string must get an answer, not stall the server.
MAX_ARGUMENTS_CHARS = 2_000_000

_providers: dict[str, Provider] = {}
_lock = threading.RLock()
_hook = HookOnce("register_tools", _lock)


def _add(provider: Provider, name: str | None = None) -> Provider:
    key = name or str(getattr(provider, "__name__", repr(provider)))
    with _lock:
        _providers.pop(key, None)  # re-registering moves the provider last: it wins ties
        _providers[key] = provider
    return provider


def _load_plugins() -> None:
    _hook(_add)


def register_provider(provider: Provider, name: str | None = None) -> Provider:
    """Offer the tools of ``provider`` in every registry built afterwards (MCP, CLI);
    registering a name again replaces the earlier provider."""
    _load_plugins()  # so a built-in registered later cannot replace this one
    return _add(provider, name)


def registered_providers() -> list[tuple[str, Provider]]:
    """The registered providers, built-ins first, as (name, provider)."""
    _load_plugins()
    with _lock:
        return list(_providers.items())


class ToolRegistry:
    """The tools of one folder. ``call`` never raises."""

    def __init__(self, context: ToolContext, providers: Iterable[Provider] | None = None):
        self.context = context
        self.warnings: list[str] = []
        self._tools: dict[str, ToolSpec] = {}
        if providers is None:
            providers = [p for _, p in registered_providers()]
        for provider in providers:
            try:
                specs = provider(context)
            except Exception as exc:  # one broken provider must not take the others down
                self.warnings.append(f"tools of {getattr(provider, '__name__', provider)} unavailable: {exc}")
                continue
            for spec in specs:
                if spec.name in self._tools:
                    hidden = self._tools[spec.name].provider
                    self.warnings.append(f"tool {spec.name} of {spec.provider} replaces the one of {hidden}")
                self._tools[spec.name] = spec

    @classmethod
    def open(cls, root: str | Path, refresh_interval: float = DEFAULT_REFRESH_INTERVAL) -> "ToolRegistry":
        return cls(ToolContext(root, refresh_interval))

    def specs(self) -> list[ToolSpec]:
        return list(self._tools.values())

    def names(self) -> list[str]:
        return list(self._tools)

    def get(self, name: Any) -> ToolSpec | None:
        return self._tools.get(name) if isinstance(name, str) else None

    def input_schema(self, name: str) -> dict[str, Any] | None:
        spec = self.get(name)
        return spec.input_schema if spec else None

    def call(self, name: Any, arguments: Any = None) -> dict[str, Any]:
        """Run tool ``name``: ``{"success": true, **data}``, or ``{"success": false, "error": ...}``."""
        spec = self.get(name)
        if spec is None:
            shown = name if isinstance(name, str) and len(name) <= 100 else f"{str(name)[:100]}…"
            hint = did_you_mean(name, self._tools) if isinstance(name, str) else ""
            return _err(f"Unknown tool: {shown}{hint}. Available tools: {', '.join(self._tools)}")
        try:
            size = len(arguments) if isinstance(arguments, str) else len(json.dumps(arguments, default=str))
        except Exception as exc:  # not JSON-encodable, or nested deeper than the recursion limit
            return _err(f"{spec.name}: arguments are not plain JSON ({type(exc).__name__})")
        if size > MAX_ARGUMENTS_CHARS:
            return _err(f"{spec.name}: arguments are {size:,} characters; the limit is {MAX_ARGUMENTS_CHARS:,}")
        try:
            clean = check_arguments(spec.name, spec.validator, arguments)
            with self.context.busy():
                if spec.lock is not None:
                    with spec.lock:
                        data = spec.handler(clean)
                else:
                    data = spec.handler(clean)
        except SmartContextError as exc:
            return _err(str(exc))
        except (FileNotFoundError, FileExistsError, IsADirectoryError, NotADirectoryError, PermissionError) as exc:
            return _err(f"{spec.name}: {exc.strerror or exc}" + (f": {exc.filename}" if exc.filename else ""))
        except Exception as exc:  # a tool answers, whatever the library does
            return _err(f"{spec.name} failed: {type(exc).__name__}: {exc}")
        if not isinstance(data, dict):
            return _err(f"{spec.name} answered {type(data).__name__}, not a JSON object")
        if "success" in data:
            return _err(f"{spec.name} answered its own success flag; a handler returns data only")
        return {"success": True, **data}

    def call_json(self, name: Any, arguments: Any = None) -> str:
        return json.dumps(self.call(name, arguments), ensure_ascii=False, default=str)

    def close(self) -> None:
        self.context.close()


def _err(message: str) -> dict[str, Any]:
    return {"success": False, "error": message}


def answer_data(tool: str, answer: Any) -> dict[str, Any]:
    """The data of an ok/err answer (JSON text or dict): the fields besides ``success``,
    or ToolError with its ``error`` when it failed."""
    data = json.loads(answer) if isinstance(answer, (str, bytes)) else answer
    if not isinstance(data, dict):
        raise ToolError(f"{tool} answered {type(data).__name__}, not a JSON object")
    if data.get("success") is False:
        raise ToolError(str(data.get("error") or f"{tool} failed"))
    return {k: v for k, v in data.items() if k != "success"}


def spec_tools(
    specs: Iterable[dict[str, Any]],
    call_tool: Callable[[str, dict[str, Any]], Any],
    provider: str,
    write_tools: Iterable[str] = (),
    destructive_tools: Iterable[str] = (),
    lock: Any = None,
) -> list[ToolSpec]:
    """ToolSpecs for third-party tools that follow the seed's vault protocol: specs as
    ``{name, description, parameters}`` and ``call_tool(name, arguments)`` answering an
    ok/err dict or its JSON text. ``call_tool`` receives arguments the registry already
    checked."""
    writes, destructive = set(write_tools), set(destructive_tools)
    out = []
    for s in specs:
        name = s["name"]

        def handler(args: dict[str, Any], _name: str = name) -> dict[str, Any]:
            return answer_data(_name, call_tool(_name, args))

        out.append(ToolSpec(name, s["description"], s["parameters"], handler,
                            read_only=name not in writes, destructive=name in destructive,
                            provider=provider, lock=lock))
    return out
