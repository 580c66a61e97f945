"""The command line: parses arguments, calls the library, prints. Nothing else.

One module per command group registers its commands on the typer application (``app``,
built on first use); ``plain`` holds what they print and how they fail. ``main`` runs the
common forms of ``context`` and ``search`` without building it (``fast``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .plain import EXIT_ERROR, EXIT_INTERRUPTED

if TYPE_CHECKING:
    from typer._click import exceptions as click_errors


def load_app() -> Any:
    """The typer application with every command registered."""
    # Each module registers its commands on import, in the order help lists them.
    from . import index, context, search, coverage, tool, serve, sc, store, chat, agent  # noqa: F401,I001
    from .root import app

    _one_line_summaries(app)
    return app


def _one_line_summaries(app: Any) -> None:
    """Give every command whose summary (its docstring's first paragraph) wraps over
    several source lines a one-line ``short_help``: typer's rich command list keeps those
    line breaks, so `smartcontext --help` printed "... answering as it" and " should (...)"
    on two rows of the list."""
    import inspect

    for info in app.registered_commands:
        if info.short_help is None:
            first = inspect.cleandoc(info.help or info.callback.__doc__ or "").split("\n\n")[0]
            if "\n" in first:
                info.short_help = " ".join(first.split())
    for group in app.registered_groups:
        _one_line_summaries(group.typer_instance)


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
            run_app()
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
        from ..space import disk_full, is_disk_full

        if is_disk_full(exc):
            plain.fail(str(disk_full(exc.filename or ".")))
        where = f": {exc.filename}" if getattr(exc, "filename", None) else ""
        plain.fail(f"{exc.strerror or exc}{where}")
    except Exception as exc:  # last resort: one sentence, never a traceback
        import sqlite3

        from ..space import disk_full, is_disk_full

        if is_disk_full(exc):  # never "rebuild": that would write more
            plain.fail(str(disk_full(".")))
        if isinstance(exc, sqlite3.DatabaseError):
            plain.fail(f"the index cannot be read ({exc}); run `smartcontext index --rebuild` on the folder")
        plain.fail(f"unexpected {type(exc).__name__}: {exc} (please report it)")


def run_app(args: list[str] | None = None) -> None:
    """Run the typer application, failing as every command fails: a usage error (an
    unknown option, a missing or malformed argument) is one line on stderr and exit 2,
    not typer's usage box."""
    import sys

    import typer
    from typer._click import exceptions as click_errors  # typer's own copy of click

    from . import plain

    try:
        # One name however it is started (`python -m smartcontext` too): usage lines and the
        # completion variable _SMARTCONTEXT_COMPLETE follow it.
        code = load_app()(args=args, prog_name="smartcontext", standalone_mode=False)
    except click_errors.NoArgsIsHelpError as exc:  # `smartcontext`, `smartcontext store`
        # typer's rich help printed itself when the error was made; plain click returns it.
        plain.print_text(exc.format_message())
        raise SystemExit(plain.EXIT_USAGE) from None
    except click_errors.UsageError as exc:
        plain.fail(usage_message(exc), plain.EXIT_USAGE)
    except click_errors.ClickException as exc:  # e.g. a file argument that cannot be opened
        plain.fail(" ".join(exc.format_message().split()), exc.exit_code or EXIT_ERROR)
    except typer.Abort:  # Ctrl-D at a prompt
        plain.fail("aborted", EXIT_ERROR)
    # A command returns None; `typer.Exit(code)` (and --help, --version) come back as the code.
    sys.exit(code if isinstance(code, int) else 0)


def usage_message(exc: "click_errors.UsageError") -> str:
    """A usage error in one line, with where to read the usage."""
    text = " ".join(exc.format_message().split())
    where = exc.ctx.command_path if exc.ctx is not None else "smartcontext"
    return f"{text} (see `{where} --help`)"


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
