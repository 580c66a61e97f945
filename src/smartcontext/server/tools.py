"""The one registry of tools that the MCP server and the CLI offer.

A tool is a name, a description, a JSON schema of its arguments and a handler that
returns a JSON-serialisable dict with ``"success"``. ``ToolRegistry.call`` checks the
arguments against the schema first and turns every failure into
``{"success": false, "error": "..."}``, so no call, however malformed, raises.

Tools come from *providers*: functions ``provider(context) -> list[ToolSpec]``. Three are
built in (``providers.BUILTIN_PROVIDERS``: the workspace's own tools, the vault tools,
Smart Connections); a later provider's tool replaces a built-in one of the same name.
Anything that follows the vault tools' protocol (a list of
``{name, description, parameters}`` specs and ``call_tool(name, arguments) -> JSON text``)
plugs in with one line:

    register_provider(lambda ctx: spec_tools(SPECS, MyTools(ctx.root).call_tool, "mine"), "mine")
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from ..errors import SmartContextError
from ..vault.schema import scalar_from_text
from ..workspace import Workspace

Handler = Callable[[dict[str, Any]], dict[str, Any]]
Provider = Callable[["ToolContext"], list["ToolSpec"]]

# Whole calls above this size are refused before anything parses them further: a model
# looping on a giant string must get an answer, not stall the server.
MAX_ARGUMENTS_CHARS = 2_000_000
# Seconds an index may be stale before a retrieval tool re-checks the folder for changes.
DEFAULT_REFRESH_INTERVAL = 5.0
# ...and, when a check took longer than CHEAP_REFRESH seconds, at least REFRESH_COST_FACTOR
# times its duration, so on a huge folder checks take a small share of the server's time.
CHEAP_REFRESH = 0.25
REFRESH_COST_FACTOR = 20


@dataclass
class ToolSpec:
    """One tool as clients see it, plus how to run it.

    read_only: True when the tool never changes files (an MCP annotation hint).
    destructive: a writing tool that may replace or remove content (not only add).
    provider:  which provider offered it (``workspace``, ``vault``, ``smart_connections``...).
    lock:      held while the handler runs, for tools whose state is not thread-safe.
    """

    name: str
    description: str
    input_schema: dict[str, Any]
    handler: Handler
    read_only: bool = True
    destructive: bool = False
    provider: str = ""
    lock: Any = None
    validator: Draft202012Validator = field(init=False, repr=False)

    def __post_init__(self) -> None:
        Draft202012Validator.check_schema(self.input_schema)
        self.validator = Draft202012Validator(self.input_schema)

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "input_schema": self.input_schema,
                "read_only": self.read_only, "destructive": self.destructive, "provider": self.provider}


class ToolError(SmartContextError):
    """A tool was called wrongly (unknown name, arguments that do not fit its schema)."""


# -- the shared state of one server: a workspace opened once -----------------------------


class ToolContext:
    """What tools share: the folder, its workspace (opened once) and index freshness.

    refresh_interval: seconds after which a retrieval tool first brings the index up to
                      date with the folder (incremental: unchanged files cost a stat; new
                      vectors only when the index already has some), stretched to 20x the
                      last check's duration when checks are slow (huge folders);
                      0 = before every question; negative = never re-check.
    """

    def __init__(self, root: str | Path, refresh_interval: float = DEFAULT_REFRESH_INTERVAL):
        self.workspace = Workspace.open(root)
        self.root = self.workspace.root
        self.refresh_interval = refresh_interval
        # Held while the index is built or refreshed and while a tool reads it, so a
        # question never sees a half-updated index.
        self.index_lock = threading.RLock()
        self._last_refresh = float("-inf")
        self._refresh_seconds = 0.0
        self.last_build: dict[str, Any] | None = None
        self._cache: dict[str, Any] = {}
        self._cache_lock = threading.Lock()

    def shared(self, key: str, make: Callable[[], Any]) -> Any:
        """One instance per key for the server's life (vault tools, readers...)."""
        with self._cache_lock:
            if key not in self._cache:
                self._cache[key] = make()
            return self._cache[key]

    def ready_workspace(self) -> Workspace:
        """The workspace with an index: built on first need (no embeddings, fast), and
        re-checked for changed files at most every ``refresh_interval`` seconds."""
        ws = self.workspace
        with self.index_lock:
            now = time.monotonic()
            if not ws.has_index:
                stats = ws.index(embeddings=False)
                self.last_build = {"files": stats.files_indexed, "items": stats.items, "embeddings": False}
                self._last_refresh = now
            elif self.refresh_interval >= 0 and now - self._last_refresh >= self._refresh_wait():
                # Same rule as Workspace.update_files: vectors only for an index that has them.
                embed = ws.config.embeddings.enabled and bool(ws.store.vector_models())
                ws.index(embeddings=embed)
                self._last_refresh = time.monotonic()
                self._refresh_seconds = self._last_refresh - now
        return ws

    def _refresh_wait(self) -> float:
        if self._refresh_seconds <= CHEAP_REFRESH:
            return self.refresh_interval
        return max(self.refresh_interval, REFRESH_COST_FACTOR * self._refresh_seconds)

    def files_changed(self, paths: list[str]) -> None:
        """Re-index files a tool wrote. Without an index yet there is nothing to update:
        the first build will read them (and updating first would leave an index holding
        only these files)."""
        with self.index_lock:
            if self.workspace.has_index:
                self.workspace.update_files(paths)

    def warm_up(self) -> threading.Thread:
        """Build a missing index in the background so the first question finds it ready."""

        def run() -> None:
            try:
                self.ready_workspace()
            except Exception:  # reported to the first tool call that needs the index
                pass

        thread = threading.Thread(target=run, name="smartcontext-index", daemon=True)
        thread.start()
        return thread

    def close(self, wait: float = 2.0) -> None:
        # A background build may still hold the index; closing under it would fail its
        # writes, and the index stays consistent without a close (one transaction per file).
        if self.index_lock.acquire(timeout=wait):
            try:
                self.workspace.close()
            finally:
                self.index_lock.release()


# -- argument checking --------------------------------------------------------------------


def check_arguments(spec: ToolSpec, arguments: Any) -> dict[str, Any]:
    """The arguments, with plainly spelled numbers, booleans and single strings for lists
    converted (models often send ``"10"``, ``"true"`` or ``"tag"``) and nulls for optional
    arguments dropped; raises ToolError naming the offending argument."""
    if arguments is None:
        arguments = {}
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError as exc:
            raise ToolError(f"{spec.name}: arguments are not valid JSON ({exc.msg})") from None
    if not isinstance(arguments, dict):
        raise ToolError(f"{spec.name}: arguments must be a JSON object, not {_json_type(arguments)}")
    props = spec.input_schema.get("properties", {})
    required = set(spec.input_schema.get("required", []))
    clean = {}
    for key, value in arguments.items():
        if value is None and key not in required:
            continue
        clean[key] = _coerce(value, props.get(key, {})) if isinstance(key, str) else value
    errors = list(spec.validator.iter_errors(clean))
    if errors:
        raise ToolError(f"{spec.name}: {_explain(best_match(errors), props)}")
    return clean


def _coerce(value: Any, schema: dict[str, Any]) -> Any:
    types = schema.get("type")
    allowed = [types] if isinstance(types, str) else list(types or [])
    if isinstance(value, str) and "string" not in allowed:
        parsed = scalar_from_text(value, allowed)
        if parsed is not None:
            return parsed
        if "array" in allowed and schema.get("items", {}).get("type") == "string":
            return [value]
    if isinstance(value, float) and "integer" in allowed and "number" not in allowed and value.is_integer():
        return int(value)
    return value


def _explain(error: Any, props: dict[str, Any]) -> str:
    where = ".".join(str(p) for p in error.absolute_path)
    if error.validator == "required" and isinstance(error.instance, dict):
        missing = [r for r in error.validator_value if r not in error.instance]
        return f"missing required argument(s) {', '.join(missing)}" + (f" in {where}" if where else "")
    if error.validator == "maxLength" and isinstance(error.instance, str):
        return f"{where}: {len(error.instance):,} characters; at most {error.validator_value:,} are accepted"
    if error.validator == "additionalProperties" and not where:
        return f"{error.message} (expected: {', '.join(props) or 'no arguments'})"
    message = error.message
    if len(message) > 300:  # jsonschema quotes the whole value; a huge string must not echo back
        message = message[:300] + "…"
    return f"{where}: {message}" if where else message


def _json_type(value: Any) -> str:
    for name, kind in (("boolean", bool), ("number", (int, float)), ("string", str), ("array", list)):
        if isinstance(value, kind):
            return name
    return "null" if value is None else type(value).__name__


# -- the registry -------------------------------------------------------------------------


_PROVIDERS: list[tuple[str, Provider]] = []


def register_provider(provider: Provider, name: str | None = None) -> Provider:
    """Offer the tools of ``provider``, besides the built-in ones, in every registry built
    afterwards (MCP, CLI); registering a name again replaces the earlier provider."""
    key = name or getattr(provider, "__name__", repr(provider))
    _PROVIDERS[:] = [(k, p) for k, p in _PROVIDERS if k != key]
    _PROVIDERS.append((key, provider))
    return provider


class ToolRegistry:
    """The tools of one folder. ``call`` never raises."""

    def __init__(self, context: ToolContext, providers: Iterable[Provider] | None = None):
        self.context = context
        self.warnings: list[str] = []
        self._tools: dict[str, ToolSpec] = {}
        if providers is None:
            from .providers import BUILTIN_PROVIDERS

            providers = [*BUILTIN_PROVIDERS, *(p for _, p in _PROVIDERS)]
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

    def get(self, name: str) -> ToolSpec | None:
        return self._tools.get(name) if isinstance(name, str) else None

    def input_schema(self, name: str) -> dict[str, Any] | None:
        spec = self.get(name)
        return spec.input_schema if spec else None

    def call(self, name: Any, arguments: Any = None) -> dict[str, Any]:
        """Run tool ``name``; always a dict with ``success`` (and ``error`` when false)."""
        spec = self.get(name)
        if spec is None:
            shown = name if isinstance(name, str) and len(name) <= 100 else f"{str(name)[:100]}…"
            return _err(f"Unknown tool: {shown}. Available tools: {', '.join(self._tools)}")
        try:
            size = len(arguments) if isinstance(arguments, str) else len(json.dumps(arguments, default=str))
        except Exception as exc:  # not JSON-encodable, or nested deeper than the recursion limit
            return _err(f"{spec.name}: arguments are not plain JSON ({type(exc).__name__})")
        if size > MAX_ARGUMENTS_CHARS:
            return _err(f"{spec.name}: arguments are {size:,} characters; the limit is {MAX_ARGUMENTS_CHARS:,}")
        try:
            clean = check_arguments(spec, arguments)
            if spec.lock is not None:
                with spec.lock:
                    result = spec.handler(clean)
            else:
                result = spec.handler(clean)
        except SmartContextError as exc:
            return _err(str(exc))
        except (FileNotFoundError, FileExistsError, IsADirectoryError, NotADirectoryError, PermissionError) as exc:
            return _err(f"{spec.name}: {exc.strerror or exc}" + (f": {exc.filename}" if exc.filename else ""))
        except Exception as exc:  # a tool answers, whatever the library does
            return _err(f"{spec.name} failed: {type(exc).__name__}: {exc}")
        if not isinstance(result, dict) or not isinstance(result.get("success"), bool):
            return _err(f"{spec.name} returned no success flag")
        return result

    def call_json(self, name: Any, arguments: Any = None) -> str:
        return json.dumps(self.call(name, arguments), ensure_ascii=False, default=str)

    def close(self) -> None:
        self.context.close()


def _err(message: str) -> dict[str, Any]:
    return {"success": False, "error": message}


def spec_tools(
    specs: Iterable[dict[str, Any]],
    call_tool: Callable[[str, dict[str, Any]], str],
    provider: str,
    write_tools: Iterable[str] = (),
    destructive_tools: Iterable[str] = (),
    lock: Any = None,
) -> list[ToolSpec]:
    """ToolSpecs for tools that follow the vault tools' protocol: specs as
    ``{name, description, parameters}`` and ``call_tool(name, arguments)`` answering
    ok/err JSON text."""
    writes, destructive = set(write_tools), set(destructive_tools)
    out = []
    for s in specs:
        name = s["name"]

        def handler(args: dict[str, Any], _name: str = name) -> dict[str, Any]:
            answer = call_tool(_name, args)
            data = json.loads(answer) if isinstance(answer, str) else answer
            if not isinstance(data, dict):
                return _err(f"{_name} answered {type(data).__name__}, not a JSON object")
            return data

        out.append(ToolSpec(name, s["description"], s["parameters"], handler,
                            read_only=name not in writes, destructive=name in destructive,
                            provider=provider, lock=lock))
    return out
