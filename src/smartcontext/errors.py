"""Typed errors with messages a user can act on.

The CLI prints ``str(error)`` without a traceback and exits non-zero; tools answer
``{"success": false, "error": str(error)}``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping


class SmartContextError(Exception):
    """Base class of every error Smart Context raises on purpose."""


class WorkspaceNotFound(SmartContextError):
    """The folder to open does not exist or is not a folder."""


class EmptyWorkspace(SmartContextError):
    """The folder holds no file that any source can index."""


class IndexCorrupt(SmartContextError):
    """The index file cannot be read; it can be rebuilt with ``smartcontext index --rebuild``."""


class IndexDamaged(IndexCorrupt):
    """Pages of the index file are damaged; ``smartcontext index`` rebuilds it."""


class IndexUnwritable(SmartContextError):
    """The index (or its folder) cannot be created or written: a read-only folder."""


class PathOutsideWorkspace(SmartContextError):
    """A path from a user or a model resolves outside the workspace root."""


class InvalidArgument(SmartContextError):
    """An argument is out of range or malformed."""


class EmbeddingError(SmartContextError):
    """An embedding model could not be loaded or failed to embed."""


class PortUnavailable(SmartContextError):
    """A server cannot listen on the address it was given (taken, or not allowed)."""


class StoreUnavailable(SmartContextError):
    """The index's database cannot be used: a bad URL, a server that is down, a missing
    extension or driver."""


class ConfigError(SmartContextError):
    """smartcontext.toml (or .vault.toml) is malformed or names something unknown."""


class ChatFileError(SmartContextError):
    """A chat file (``.memory/{chat_id}.json``) or an import file is not valid; it is left
    untouched."""


class ChatNotFound(SmartContextError):
    """No chat has this id (``.memory/{chat_id}.json`` does not exist), or no topic of
    the chat has this label."""


class LLMError(SmartContextError):
    """A language model call failed or answered something that could not be used."""


class SessionNotFound(SmartContextError):
    """No agent session has this id (``agent.AgentSessions``)."""


class SessionBusy(SmartContextError):
    """An agent session is answering another message; one message at a time."""


class Interrupted(SmartContextError):
    """A long operation (an index run) was asked to stop; what it finished is kept."""


def did_you_mean(
    value: str, choices: Iterable[str], n: int = 1, show: Mapping[str, str] | None = None, cutoff: float = 0.6,
) -> str:
    """``"; did you mean 'function'?"`` for the nearest of ``choices``, or ``""``: the tail
    of an error message about a misspelt kind, folder or configuration key. ``show`` maps
    a choice to the text offered for it (a note's name to its path)."""
    import difflib

    choices = [str(c) for c in choices]  # StrEnum members print as their value
    close = difflib.get_close_matches(value, choices, n=n, cutoff=cutoff)
    if not close:
        # Case or separators differ more than difflib's ratio forgives ("05 - concepts").
        folded = {c.casefold(): c for c in choices}
        close = difflib.get_close_matches(value.casefold(), list(folded), n=n, cutoff=cutoff)
        close = [folded[c] for c in close]
    shown = [show.get(c, c) for c in close] if show else close
    return f"; did you mean {' or '.join(repr(c) for c in shown)}?" if close else ""


class DiskFull(SmartContextError):
    """No space is left where the index (or a file) is written. Reading still works;
    nothing that writes more (a rebuild) helps."""
