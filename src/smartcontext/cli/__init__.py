"""The command line: parses arguments, calls the library, prints. Nothing else.

One module per command group registers its commands on ``app``; ``output`` holds what
they print and how they fail.
"""

from __future__ import annotations

# Each module registers its commands on import, in the order help lists them.
from . import index, context, search, tool, serve, sc  # noqa: F401,I001
from .app import app


def main() -> None:
    import signal

    def terminated(signum: int, frame: object) -> None:
        # SIGTERM stops a command the way Ctrl-C does: workers are stopped, the index keeps
        # every file it finished, and the exit is clean (no traceback).
        raise KeyboardInterrupt

    try:
        signal.signal(signal.SIGTERM, terminated)
    except ValueError:  # not the main thread (an embedding program): leave signals alone
        pass
    app()


__all__ = ["app", "main"]
