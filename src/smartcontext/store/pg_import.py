"""Importing psycopg for a process that asks one question.

``import psycopg`` is the whole difference between a CLI question on PostgreSQL and one on
SQLite (0.13-0.2 s of 0.5). One part of it does nothing a question uses: the version files
of psycopg and of its C module ask ``importlib.metadata`` for their distributions'
versions, which imports email, csv and zipfile and reads the installed distributions
(a tenth of the import). Here each version comes from the name of the distribution's
folder beside the package, which is what ``importlib.metadata`` reads too. Anything
unexpected (another layout, another implementation) falls back to the plain import.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import types


def _installed_version(package: str, distribution: str) -> str | None:
    """The version in ``<distribution>-<version>.dist-info`` beside ``package``, or None."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    site = os.path.dirname(list(spec.submodule_search_locations)[0])
    prefix = distribution.replace("-", "_") + "-"
    found = [e for e in os.listdir(site) if e.startswith(prefix) and e.endswith(".dist-info")]
    if len(found) != 1:
        return None
    return found[0][len(prefix):-len(".dist-info")]


def import_psycopg() -> None:
    """Import ``psycopg`` without the parts a question does not use (see above)."""
    if "psycopg" in sys.modules:
        return
    try:
        for package, distribution in (("psycopg", "psycopg"), ("psycopg_binary", "psycopg-binary")):
            name = f"{package}.version"
            version = None if name in sys.modules else _installed_version(package, distribution)
            if version is not None:
                stub = types.ModuleType(name)
                stub.__version__ = version  # type: ignore[attr-defined]
                sys.modules[name] = stub
    except (ImportError, OSError, ValueError):  # pragma: no cover - an unusual installation
        pass
    import psycopg  # noqa: F401
