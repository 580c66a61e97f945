"""Language specs for the code source, looked up by language label.

Specs are registered through the ``register_languages`` hook: the built-ins
(``sources.lang.builtin``) first, then plugins. ``register(spec, key=None)`` files a
spec under ``key`` (default: its ``label``); a spec's ``extensions`` (lower case,
without the dot) map files to its label, ahead of the built-in table in ``paths``.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from ...errors import ConfigError
from .paths import language_for_path as _builtin_language_for_path

if TYPE_CHECKING:  # tree-sitter: loaded with the specs, when a file is parsed
    from .base import LangSpec

_lock = threading.RLock()
_SPECS: dict[str, LangSpec] = {}
_EXTENSIONS: dict[str, str] = {}  # from registered specs: extension -> label
_loaded = False

# Markers that a ``.h`` file is C++ rather than C (checked on raw bytes, once per file).
_CPP_HEADER_MARKERS = (b"class ", b"namespace ", b"template<", b"template <", b"public:", b"std::")
_CPP_HEADER_EXTENSIONS = (".hpp", ".hh", ".hxx", ".h++")


def register_language(spec: LangSpec, key: str | None = None) -> None:
    """File ``spec`` under ``key`` (default: its label); a later spec of the same key replaces it."""
    name = key or getattr(spec, "label", "")
    if not isinstance(name, str) or not name:
        raise ConfigError(f"a language spec needs a `label` (or a key); got {spec!r}")
    if not getattr(spec, "grammar", ""):
        raise ConfigError(f"language spec {name!r} names no tree-sitter `grammar`")
    _SPECS[name] = spec
    for ext in getattr(spec, "extensions", ()):
        _EXTENSIONS[ext.lower().lstrip(".")] = spec.label


def _specs() -> dict[str, LangSpec]:
    global _loaded
    with _lock:
        if not _loaded:
            from ...plugins import plugin_manager

            plugin_manager().hook.register_languages(register=register_language)
            _loaded = True
    return _SPECS


def reload() -> None:
    """Ask the hook again (after a plugin was registered with the plugin manager at run time)."""
    global _loaded
    with _lock:
        _SPECS.clear()
        _EXTENSIONS.clear()
        _loaded = False
        _specs()


def language_for_path(path: str) -> str | None:
    """The language label of a file by its extension, or None when no spec reads it."""
    _specs()
    if _EXTENSIONS:
        base = path.rsplit("/", 1)[-1]
        dot = base.rfind(".")
        label = _EXTENSIONS.get(base[dot + 1 :].lower()) if dot > 0 else None
        if label:
            return label
    return _builtin_language_for_path(path)


def spec_for(label: str, path: str, source: bytes) -> LangSpec | None:
    """The spec that reads ``path``; None when no grammar is known for ``label``."""
    specs = _specs()
    if label == "typescript" and path.lower().endswith(".tsx"):
        return specs["tsx"]
    lower = path.lower()
    if label == "c" and lower.endswith(".h"):
        if any(m in source for m in _CPP_HEADER_MARKERS):
            return specs["cpp-header"]
        return specs["c-header"]
    if label == "cpp" and lower.endswith(_CPP_HEADER_EXTENSIONS):
        return specs["cpp-header"]
    return specs.get(label)


def known_languages() -> list[str]:
    """Labels of the languages that get structure (others are indexed as text)."""
    return sorted({spec.label for spec in _specs().values()})
