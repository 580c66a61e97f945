"""Typed errors with messages a user can act on.

The CLI prints ``str(error)`` without a traceback and exits non-zero; tools answer
``{"success": false, "error": str(error)}``.
"""


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


class ConfigError(SmartContextError):
    """smartcontext.toml (or .vault.toml) is malformed or names something unknown."""


class ChatFileError(SmartContextError):
    """A chat file (``.memory/{chat_id}.json``) or an import file is not valid; it is left
    untouched."""


class LLMError(SmartContextError):
    """A language model call failed or answered something that could not be used."""


class Interrupted(SmartContextError):
    """A long operation (an index run) was asked to stop; what it finished is kept."""
