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
import os
import re
import sys
import threading
import time
import warnings
from collections.abc import Callable
from typing import Any

import pluggy

from .lazy import Logger

PROJECT = "smartcontext"

log = Logger("smartcontext.plugins")

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
    for name, value in installed_entry_points(group):
        if pm.get_plugin(name) is not None or pm.is_blocked(name):
            continue
        try:
            plugin = _load(value)
            pm.register(plugin, name=name)
        except Exception as exc:  # one broken plugin must not take smartcontext down
            message = (f"smartcontext plugin {name!r} ({value}) was not loaded: "
                       f"{type(exc).__name__}: {exc}")
            log.warning(message)
            warnings.warn(message, RuntimeWarning, stacklevel=2)
            continue
        loaded.append(name)
    return loaded


# The entry points found, by the folders they were looked for in (see
# installed_entry_points).
_SCAN_MAGIC = b"smartcontext entry points 1\n"
_SCANS_KEPT = 16
_RACY_NS = 2_000_000_000
# importlib.metadata's EntryPoint.value syntax: "module", "module:attr.attr", extras ignored.
_VALUE = re.compile(r"(?P<module>[\w.]+)\s*(:\s*(?P<attr>[\w.]+)\s*)?((?P<extras>\[.*\])\s*)?$")


def installed_entry_points(group: str = PROJECT) -> list[tuple[str, str]]:
    """(name, value) of the entry points of ``group``, as ``importlib.metadata`` finds them.

    Importing ``importlib.metadata`` and reading every installed distribution took a
    tenth of a second of each process that used a registry (a question that embeds its
    text, for one), for a list that changes only when packages are installed or removed.
    So the list is remembered in the cache folder by the folders of ``sys.path`` and their
    modification times, which installing or removing a distribution moves (a distribution
    whose entry points are edited in place is seen once reinstalled, as the folder walk's
    saved answer sees plugins)."""
    from .cachedir import cache_dir
    from .sealed import load_sealed, remember

    stamps: list[tuple[str, tuple[int, int] | None]] = []
    now = time.time_ns()
    trusted = True
    for i, entry in enumerate(sys.path):
        folder = entry or os.getcwd()
        if i == 0 and not _holds_distributions(folder):
            # The script's folder, or the current one for `python -m`: another for each
            # project a command runs in, and moved by every file added there. Without a
            # distribution in it (what importlib.metadata reads there), it adds nothing.
            stamps.append(("", None))
            continue
        try:
            st = os.stat(folder)
        except OSError:
            stamps.append((entry, None))
            continue
        stamps.append((entry, (st.st_mtime_ns, st.st_ino)))
        trusted = trusted and now - st.st_mtime_ns > _RACY_NS
    key = repr((group, sys.executable, stamps))
    memo_file = cache_dir() / "entry_points.bin"
    memo = load_sealed(memo_file, _SCAN_MAGIC)
    memo = memo if isinstance(memo, dict) else {}
    found = memo.get(key)
    if isinstance(found, list):
        return [(str(name), str(value)) for name, value in found]
    import importlib.metadata

    found = [(ep.name, ep.value) for ep in importlib.metadata.entry_points(group=group)]
    if trusted:
        remember(memo_file, _SCAN_MAGIC, memo, key, found, _SCANS_KEPT)
    return found


def _holds_distributions(folder: str) -> bool:
    """Whether ``folder`` may hold a distribution's metadata (or is no folder to list)."""
    try:
        names = os.listdir(folder)
    except OSError:
        return True
    return any(n.lower().endswith((".dist-info", ".egg-info", ".egg")) or n.lower() == "egg-info" for n in names)


def _load(value: str) -> Any:
    """What an entry point's value names, as ``EntryPoint.load`` reads it."""
    match = _VALUE.match(value)
    if match is None:
        raise ValueError(f"not an entry point value: {value!r}")
    target: Any = importlib.import_module(match.group("module"))
    for attr in filter(None, (match.group("attr") or "").split(".")):
        target = getattr(target, attr)
    return target



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
