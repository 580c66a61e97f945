"""The command line: parses arguments, calls the library, prints. Nothing else.

One module per command group registers its commands on ``app``; ``output`` holds what
they print and how they fail.
"""

from __future__ import annotations

# Each module registers its commands on import, in the order help lists them.
from . import index, context, search, tool, serve, sc, chat  # noqa: F401,I001
from .app import app


def main() -> None:
    app()


__all__ = ["app", "main"]
