"""The fast path of the two commands run most (``context`` and ``search``) and ``--version``.

Its option tables are generated from the same declarations as the typer commands
(``query.options``), so the two ways in accept the same flags.

Building the typer application imports typer, click, pydantic and rich: about a fifth of a
``context`` process on a large index. When the arguments are in the plain forms below, they
are read here and handed to the same command bodies (``cli/questions.py``) the typer
commands call. Anything else (``--help``, root options, a short-option cluster, an unknown
or malformed option, a value typer would convert differently, shell completion) returns
None and typer handles the command, so help, completion and every usage error stay
typer's own.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..query.options import CONTEXT_OPTIONS, SEARCH_OPTIONS, Option



def option_table(options: Sequence[Option]) -> dict[str, tuple[str, Any]]:
    """flag -> (parameter, kind) for the CLI side of a command's declared options; kind
    is "int", "float", "str", "list", or the constant a flag stores."""
    table: dict[str, tuple[str, Any]] = {}
    for o in options[1:]:  # the first is the positional text
        if not o.on_cli:
            continue
        for flag in o.flags:
            table[flag] = (o.name, True if o.kind == "bool" else o.kind)
        if o.off_flag:
            table[o.off_flag] = (o.name, False)
    return table


CONTEXT_TABLE = option_table(CONTEXT_OPTIONS)
SEARCH_TABLE = option_table(SEARCH_OPTIONS)
# (options, names of the positional arguments, how many are required)
COMMANDS: dict[str, tuple[dict[str, tuple[str, Any]], tuple[str, ...], int]] = {
    "context": (CONTEXT_TABLE, ("question", "path"), 1),
    "search": (SEARCH_TABLE, ("query", "path"), 1),
}
# Numbers in the forms every converter reads alike; others (1_000, +5, 1e3, " 5") go to typer.
_INT = re.compile(r"-?(0|[1-9][0-9]{0,17})")
_FLOAT = re.compile(r"-?(0|[1-9][0-9]{0,17})(\.[0-9]{1,17})?")


def parse(argv: Sequence[str], environ: Mapping[str, str] = os.environ) -> Callable[[], None] | None:
    """The command ``argv`` (without the program name) asks for, ready to run, or None
    when typer should read it."""
    if any(k.startswith("_") and k.endswith("_COMPLETE") for k in environ):
        return None  # shell completion is typer's
    if not argv or not all(_plain(a) for a in argv):
        return None
    if list(argv) == ["--version"]:
        return _version
    store: str | None = None
    if argv[0].startswith("--store="):
        store, argv = argv[0].partition("=")[2], argv[1:]
    elif argv[0] == "--store" and len(argv) > 1 and not argv[1].startswith("-"):
        store, argv = argv[1], argv[2:]
    if not argv:
        return None
    spec = COMMANDS.get(argv[0])
    if spec is None:
        return None
    options, names, required = spec
    values: dict[str, Any] = {}
    positional: list[str] = []
    args = list(argv[1:])
    while args:
        arg = args.pop(0)
        if arg == "-" or not arg.startswith("-"):
            positional.append(arg)
            continue
        name, eq, attached = arg.partition("=") if arg.startswith("--") else (arg, "", "")
        found = options.get(name)
        if found is None:
            return None  # --help, --, unknown options, -abc clusters, -t500
        param, kind = found
        if kind not in ("int", "float", "str", "list"):
            if eq:
                return None  # a flag given a value
            values[param] = kind
            continue
        if eq:
            raw = attached
        elif args and not args[0].startswith("-"):
            raw = args.pop(0)
        else:
            return None  # missing value, or one that looks like an option
        value = _convert(raw, kind)
        if value is None:
            return None
        if kind == "list":
            values.setdefault(param, []).append(value)
        else:
            values[param] = value
    if not required <= len(positional) <= len(names):
        return None
    for name, raw in zip(names, positional):
        values[name] = raw
    if "path" in values:
        path = values["path"]
        if not path or (os.path.exists(path) and not os.access(path, os.R_OK)):
            return None  # typer's own answer (the current folder, or "not readable")
        values["path"] = Path(path)
    return lambda: _run(argv[0], values, store)


def _plain(arg: str) -> bool:
    """Text every converter passes through unchanged (no lone surrogates from undecodable bytes)."""
    try:
        arg.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _convert(raw: str, kind: str) -> Any:
    if kind == "int":
        return int(raw) if _INT.fullmatch(raw) else None
    if kind == "float":
        return float(raw) if _FLOAT.fullmatch(raw) else None
    return raw


def _version() -> None:
    from .. import __version__

    sys.stdout.write(f"smartcontext {__version__}\n")
    sys.stdout.flush()


def _run(command: str, values: dict[str, Any], store: str | None = None) -> None:
    from . import questions

    if store is not None:  # as typer's root callback sets it
        questions.STORE_URL = store
    if command == "context":
        questions.run_context(**values)
    else:
        questions.run_search(**values)


def run(call: Callable[[], None]) -> None:
    """Run a parsed command as typer's standalone mode would: exit 0 when it returns,
    130 on Ctrl-C, 1 quietly when the reader of its output went away."""
    import errno
    import gc

    # A one-question process makes some 50,000 objects that live until it exits (modules,
    # numpy, the catalogue's keys) and little cyclic garbage: the collector's passes over
    # them, and over all of them again at exit, were a tenth of its instructions. It still
    # collects, once that many more objects are held; at exit, what is left is frozen.
    gc.set_threshold(100_000)
    # Vector search multiplies in blocks under OpenBLAS's threading threshold
    # (retrieval/matrix.py), so its thread pool, started when numpy loads, only spins
    # beside the question on the other core: one thread, unless the user chose otherwise.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    try:
        call()
    except KeyboardInterrupt:
        raise SystemExit(130) from None
    except EOFError:
        from typer import rich_utils

        sys.stderr.write("\n")
        rich_utils.rich_abort_error()
        raise SystemExit(1) from None
    except OSError as exc:
        if exc.errno != errno.EPIPE:
            raise
        from typer._click.utils import PacifyFlushWrapper

        sys.stdout = PacifyFlushWrapper(sys.stdout)
        sys.stderr = PacifyFlushWrapper(sys.stderr)
        raise SystemExit(1) from None
    finally:
        gc.freeze()
    raise SystemExit(0)
