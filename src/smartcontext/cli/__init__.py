"""The command line: parses arguments, calls the library, prints. Nothing else.

One module per command group registers its commands on the typer application (``app``,
built on first use); ``plain`` holds what they print and how they fail. ``main`` runs the
common forms of ``context`` and ``search`` without building it (``fast``).
"""

from __future__ import annotations

from typing import Any

from .plain import EXIT_ERROR, EXIT_INTERRUPTED


def load_app() -> Any:
    """The typer application with every command registered."""
    # Each module registers its commands on import, in the order help lists them.
    from . import index, context, search, coverage, tool, serve, sc, store, chat, agent  # noqa: F401,I001
    from .root import app

    return app


def __getattr__(name: str) -> Any:
    if name == "app":
        return load_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main() -> None:
    import signal
    import sys

    from . import plain

    def terminated(signum: int, frame: object) -> None:
        # SIGTERM stops a command the way Ctrl-C does: workers are stopped, the index keeps
        # every file it finished, and the exit is clean (no traceback).
        raise KeyboardInterrupt

    try:
        signal.signal(signal.SIGTERM, terminated)
    except ValueError:  # not the main thread (an embedding program): leave signals alone
        pass
    try:
        from . import fast

        call = fast.parse(sys.argv[1:])
        if call is not None:
            fast.run(call)
        else:
            # One name however it is started (`python -m smartcontext` too): usage lines and the
            # completion variable _SMARTCONTEXT_COMPLETE follow it.
            load_app()(prog_name="smartcontext")
    except SystemExit as exc:
        if plain.interrupted:
            _exit_now(exc.code)
        raise
    except KeyboardInterrupt:
        plain.interrupted = True
        try:
            plain.fail("interrupted", EXIT_INTERRUPTED)
        except SystemExit as exc:
            _exit_now(exc.code)
    except OSError as exc:  # a read-only folder, a full disk, a vanished file
        where = f": {exc.filename}" if getattr(exc, "filename", None) else ""
        plain.fail(f"{exc.strerror or exc}{where}")
    except Exception as exc:  # last resort: one sentence, never a traceback
        import sqlite3

        if isinstance(exc, sqlite3.DatabaseError):
            plain.fail(f"the index cannot be read ({exc}); run `smartcontext index --rebuild` on the folder")
        plain.fail(f"unexpected {type(exc).__name__}: {exc} (please report it)")


def _exit_now(code: object) -> None:
    """Exit an interrupted command at once. A process pool stopped mid-run leaves its
    manager thread behind, and the interpreter's shutdown would join it and print an
    ignored OSError; every index write is already committed or rolled back."""
    import os
    import sys

    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code if isinstance(code, int) else EXIT_ERROR)


__all__ = ["app", "load_app", "main"]
