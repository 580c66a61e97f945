"""The registry of sources: which source reads a path, and the source of a given name.

Filled once per process through the ``register_sources`` hook: the built-ins
(``sources.builtin``) first, then installed plugins. A registration with a name already
taken replaces that source in its place. For a path, the most recently registered
source that claims it wins, so a plugin can take over some files of a built-in source
(say ``.md`` files under ``chats/``) without replacing it.
"""

from __future__ import annotations

import threading

from ..errors import ConfigError
from .base import Source

_lock = threading.RLock()
# What the indexer calls on a source (``sources.base.Source``).
_MEMBERS = ("name", "skip_generated", "language_for", "parse", "module_name", "fqname",
            "fts_bodies", "warm_up")


class SourceRegistry:
    """Sources by name, in registration order."""

    def __init__(self) -> None:
        self._sources: dict[str, Source] = {}

    def register(self, source: Source) -> None:
        name = getattr(source, "name", None)
        if not isinstance(name, str) or not name:
            raise ConfigError(f"a source needs a non-empty string `name`; got {source!r}")
        missing = [m for m in _MEMBERS if not hasattr(source, m)]
        if missing:
            raise ConfigError(
                f"source {name!r} lacks {', '.join(sorted(missing))}; subclass "
                "smartcontext.sources.base.BaseSource for the defaults"
            )
        self._sources[name] = source

    def unregister(self, name: str) -> None:
        self._sources.pop(name, None)

    def names(self) -> list[str]:
        return list(self._sources)

    def get(self, name: str) -> Source:
        try:
            return self._sources[name]
        except KeyError:
            raise ConfigError(
                f"no source named {name!r} is registered (registered: {', '.join(self._sources)}); "
                "is the plugin that provides it installed?"
            ) from None

    def for_path(self, path: str) -> tuple[Source, str] | None:
        """(source, language) for a workspace-relative path, or None when no source claims it."""
        for source in reversed(self._sources.values()):
            language = source.language_for(path)
            if language:
                return source, language
        return None


_registry: SourceRegistry | None = None


def registry() -> SourceRegistry:
    """The process-wide registry, filled through the plugin hook on first use."""
    global _registry
    with _lock:
        if _registry is None:
            from ..plugins import plugin_manager

            reg = SourceRegistry()
            plugin_manager().hook.register_sources(register=reg.register)
            _registry = reg
        return _registry


def reload() -> SourceRegistry:
    """Ask the hook again (after a plugin was registered with the plugin manager at run time)."""
    global _registry
    with _lock:
        _registry = None
        return registry()


def source_for_path(path: str) -> tuple[Source, str] | None:
    return registry().for_path(path)


def get_source(name: str) -> Source:
    return registry().get(name)
