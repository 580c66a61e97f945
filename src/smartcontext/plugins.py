"""Extension points: sources, languages, embedders and tools plug in through pluggy hooks.

The built-ins register themselves through the same hooks as third-party plugins, so
there is one way in. A plugin is a module (or object) with ``@hookimpl`` functions,
published under the ``smartcontext`` entry-point group:

    # pyproject.toml of a plugin
    [project.entry-points.smartcontext]
    orgmode = "smartcontext_orgmode"

    # smartcontext_orgmode.py
    from smartcontext.plugins import hookimpl

    @hookimpl
    def register_sources(register):
        register(OrgSource())

Each registry (``sources.registry``, ``sources.lang``, ``embeddings.registry``,
``tools.registry``) calls its hook once, on first use, and keeps what was registered.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import logging
import threading
import warnings
from collections.abc import Callable
from typing import Any

import pluggy

PROJECT = "smartcontext"

log = logging.getLogger("smartcontext.plugins")

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)

# Modules holding the built-in hook implementations, registered before any plugin so a
# plugin's registration of the same name replaces a built-in one.
BUILTIN_PLUGINS: tuple[str, ...] = (
    "smartcontext.sources.builtin",      # code, markdown and plain-text sources
    "smartcontext.sources.lang.builtin",  # the tree-sitter language specs
    "smartcontext.embeddings.builtin",   # local:, onnx:, litellm: embedders
    "smartcontext.tools.builtin",        # workspace, vault and Smart Connections tools
)


class Hooks:
    """The hook specifications. ``register`` is the registry's own add function."""

    @hookspec
    def register_sources(self, register: Callable[..., Any]) -> None:
        """Register sources: ``register(source)`` with an object following ``sources.base.Source``."""

    @hookspec
    def register_languages(self, register: Callable[..., Any]) -> None:
        """Register code languages: ``register(lang_spec)`` with a ``sources.lang.base.LangSpec``."""

    @hookspec
    def register_embedders(self, register: Callable[..., Any]) -> None:
        """Register embedders: ``register(spec_or_scheme, factory, scheme=False)``."""

    @hookspec
    def register_tools(self, register: Callable[..., Any]) -> None:
        """Register tool providers: ``register(provider, name)``; a provider maps a tool
        context to a list of tool specs."""


_manager: pluggy.PluginManager | None = None
_lock = threading.RLock()


def plugin_manager() -> pluggy.PluginManager:
    """The process-wide plugin manager: built-ins first, then installed plugins."""
    global _manager
    with _lock:
        if _manager is None:
            pm = pluggy.PluginManager(PROJECT)
            pm.add_hookspecs(Hooks)
            for name in BUILTIN_PLUGINS:
                pm.register(importlib.import_module(name), name=name)
            load_entry_points(pm)
            _manager = pm
        return _manager


def load_entry_points(pm: pluggy.PluginManager, group: str = PROJECT) -> list[str]:
    """Register the plugins published under ``group``, each on its own: a plugin that
    fails to import or does not fit the hook specifications is skipped with a warning
    naming it, and the others (and the built-ins) still load. Returns the names loaded."""
    loaded = []
    for ep in importlib.metadata.entry_points(group=group):
        if pm.get_plugin(ep.name) is not None or pm.is_blocked(ep.name):
            continue
        try:
            plugin = ep.load()
            pm.register(plugin, name=ep.name)
        except Exception as exc:  # one broken plugin must not take smartcontext down
            message = (f"smartcontext plugin {ep.name!r} ({ep.value}) was not loaded: "
                       f"{type(exc).__name__}: {exc}")
            log.warning(message)
            warnings.warn(message, RuntimeWarning, stacklevel=2)
            continue
        loaded.append(ep.name)
    return loaded



class HookOnce:
    """Calls one registration hook on first use, for one registry.

    A failed call is tried again on the next use (nothing is marked loaded), and a hook
    implementation that itself calls the registry's public ``register_*`` (re-entering on
    the same thread) does not ask the hook a second time.
    """

    def __init__(self, hook_name: str, lock: threading.RLock):
        self.hook_name = hook_name
        self.lock = lock
        self.loaded = False
        self._loading = False

    def __call__(self, register: Callable[..., Any]) -> None:
        with self.lock:
            if self.loaded or self._loading:
                return
            self._loading = True
            try:
                getattr(plugin_manager().hook, self.hook_name)(register=register)
            finally:
                self._loading = False
            self.loaded = True
