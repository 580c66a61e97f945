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
