"""Names of a package that load on first use (PEP 562), so importing the package (as the
plugin manager does for every registry) costs nothing until a name is asked for."""

from __future__ import annotations

import sys
from collections.abc import Callable
from importlib import import_module
from typing import Any


def lazy_names(package: str, where: dict[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package``: ``where`` maps each public name to
    the (relative) module defining it; a loaded name is kept in the package's globals."""

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(module, package), name)
        vars(sys.modules[package])[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted([*vars(sys.modules[package]), *where])

    return __getattr__, __dir__


class Logger:
    """``logging.getLogger(name)``, looked up when first written to: ``logging`` (with
    ``traceback``) cost a question process about 4 ms to import, for a warning it
    seldom writes."""

    __slots__ = ("_name",)

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        import logging

        return getattr(logging.getLogger(self._name), attr)


class LazyModule:
    """A module imported when one of its names is first read: ``np = LazyModule("numpy")``
    in a module whose one-question path needs no numpy (its import is a quarter of such
    a process) while its other functions use ``np.`` as usual."""

    __slots__ = ("_name", "_module")

    def __init__(self, name: str):
        self._name = name
        self._module: Any = None

    def __getattr__(self, attr: str) -> Any:
        module = self._module
        if module is None:
            module = self._module = import_module(self._name)
        return getattr(module, attr)
