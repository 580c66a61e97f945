"""What every group of vault tools shares: the root, path checks, the note cache,
re-index notifications, and the guard that turns any failure into ``err(...)``."""

from __future__ import annotations

import datetime as _dt
import functools
import inspect
import posixpath
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from ..errors import SmartContextError, WorkspaceNotFound, did_you_mean
from ..notes import LinkResolver, NoteFacts, read_note
from ..safeio import read_regular
from .paths import VaultFile, rel_path, resolve_in_vault, walk_vault, write_lock
from .responses import answered, err
from ..validate import ToolError, check_arguments, compile_schema
from .schema import SPECS_BY_NAME

MARKDOWN_SUFFIXES = (".md", ".markdown")
# Suffixes kept as given by create_file/move_file; any other "suffix" ("Meeting 2024.01.05",
# "v1.2 notes") is part of a note's name and gets ".md".
TEXT_SUFFIXES = {
    ".md", ".markdown", ".txt", ".canvas", ".base", ".json", ".csv", ".tsv", ".yaml", ".yml",
    ".toml", ".ini", ".html", ".htm", ".css", ".js", ".ts", ".py", ".sh", ".xml", ".org",
    ".rst", ".tex", ".bib", ".adoc", ".log",
}
# Binary formats: writing text into them is a mistake, so create_file refuses them.
BINARY_SUFFIXES = {
    ".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp", ".tif", ".tiff", ".ico", ".heic", ".svgz",
    ".pdf", ".zip", ".gz", ".tgz", ".7z", ".rar", ".tar", ".exe", ".dll", ".so", ".dylib", ".bin",
    ".mp3", ".mp4", ".m4a", ".wav", ".ogg", ".flac", ".mov", ".avi", ".mkv", ".webm",
    ".docx", ".xlsx", ".pptx", ".odt", ".ods", ".db", ".sqlite", ".woff", ".woff2", ".ttf", ".otf",
}
MAX_READ_BYTES = 20_000_000


def with_default_suffix(path: str, default: str = ".md") -> str:
    suffix = PurePosixPath(path.replace("\\", "/")).suffix.lower()
    if suffix in TEXT_SUFFIXES or suffix in BINARY_SUFFIXES:
        return path
    return path + default


@functools.cache
def tool_validator(name: str) -> Any:
    """The compiled schema check of vault tool ``name`` (built once)."""
    return compile_schema(SPECS_BY_NAME[name]["parameters"])


def tool(method: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
    """Serve a tool method: check its arguments against the tool's schema and answer
    ``ok``/``err`` as a dict instead of raising, whatever goes wrong: a model must always
    get a response it can read.

    ``method.checked(self, arguments)`` runs the tool on arguments that were checked
    already (by ``VaultTools.call_tool`` or the tool registry), so a call is checked once:
    it returns the answer's data and raises ``ToolError`` with the message a caller reads.
    """
    name = method.__name__
    signature = inspect.signature(method)

    def checked(self: VaultBase, arguments: dict[str, Any]) -> dict[str, Any]:
        try:
            return method(self, **arguments)
        except ToolError:
            raise
        except (SmartContextError, FileNotFoundError, FileExistsError, IsADirectoryError) as exc:
            raise ToolError(_message(exc)) from exc
        except OSError as exc:
            raise ToolError(f"{name} failed: {exc.strerror or exc}") from exc
        except Exception as exc:  # whatever broke, the caller gets a message it can read
            raise ToolError(f"{name} failed: {type(exc).__name__}: {exc}") from exc

    @functools.wraps(method)
    def guarded(self: VaultBase, *args: Any, **kwargs: Any) -> dict[str, Any]:
        try:
            # Partial: a missing required argument is reported by the schema check below,
            # in the same words whether the call came from a model or from Python.
            bound = signature.bind_partial(self, *args, **kwargs)
        except TypeError as exc:
            return err(f"{name}: {exc}")
        arguments = {k: v for k, v in bound.arguments.items() if k != "self"}
        try:
            return answered(checked(self, check_arguments(name, tool_validator(name), arguments)))
        except ToolError as exc:
            return err(str(exc))

    guarded.is_tool = True  # type: ignore[attr-defined]
    guarded.checked = checked  # type: ignore[attr-defined]
    return guarded


def _message(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.filename and not exc.args[1:]:
        return f"{exc.strerror}: {exc.filename}"
    return str(exc.args[0]) if len(exc.args) == 1 else str(exc)


@dataclass
class _Cached:
    stamp: tuple[int, int]  # (mtime_ns, size)
    facts: NoteFacts


class VaultBase:
    def __init__(
        self,
        root: Path | str,
        workspace: Any = None,
        preferences_file: Path | str | None = None,
        clock: Callable[[], _dt.datetime] | None = None,
    ):
        root = Path(root).expanduser()
        if not root.is_dir():
            raise WorkspaceNotFound(f"vault folder not found: {root}")
        self.root = root.resolve()
        self.workspace = workspace
        self.clock = clock or (lambda: _dt.datetime.now().astimezone())
        state = self.root / ".smartcontext"
        if preferences_file is None:
            self.preferences_file = state / "preferences.md"
        else:
            p = Path(preferences_file).expanduser()
            self.preferences_file = p if p.is_absolute() else self.root / p
        self.log_file = state / "interactions.jsonl"
        self.lock_file = state / "write.lock"
        self._notes: dict[str, _Cached] = {}
        self._resolver: tuple[tuple[str, ...], LinkResolver] | None = None

    # -- paths

    def _resolve(self, rel: str, **kwargs: Any) -> Path:
        return resolve_in_vault(self.root, rel, **kwargs)

    def _rel(self, path: Path) -> str:
        return rel_path(self.root, path)

    def _existing_file(self, rel: str, *, by_name: bool = False) -> Path:
        """An existing file for ``rel``: as given, then with ``.md``, then (``by_name``)
        as a note name resolved the way Obsidian resolves ``[[rel]]``."""
        path = self._resolve(rel)
        if path.is_file():
            return path
        if path.is_dir():
            raise IsADirectoryError(f"{rel} is a folder, not a file")
        if path.suffix.lower() not in MARKDOWN_SUFFIXES:
            md = self._resolve(rel.rstrip() + ".md")
            if md.is_file():
                return md
        if by_name:
            hit = self._link_resolver().resolve(rel)
            if hit:
                found = self._resolve(hit)
                if found.is_file():
                    return found
        raise FileNotFoundError(f"File not found: {rel}{self._closest(rel)}")

    def _closest(self, rel: str) -> str:
        """``"; did you mean 'folder/Note'?"`` for the file nearest a name that matched
        none: by note name when no folder was given, else by path."""
        paths = self._link_resolver().paths
        text = rel.strip().replace("\\", "/")
        if "/" in text:
            return did_you_mean(text, paths)
        names: dict[str, str] = {}
        for p in sorted(paths, key=len):  # shortest first, as links resolve ambiguous names
            names.setdefault(posixpath.splitext(posixpath.basename(p))[0], posixpath.splitext(p)[0])
        return did_you_mean(posixpath.splitext(text)[0], names, show=names)

    def _write_lock(self):
        """The vault's write lock (all processes): hold it around every read-modify-write."""
        return write_lock(self.lock_file)

    # -- notes

    def _walk(self) -> list[VaultFile]:
        return walk_vault(self.root)

    def _link_resolver(self, walk: list[VaultFile] | None = None) -> LinkResolver:
        """A resolver over the vault's current files, rebuilt only when the set of files
        changes (it memoises resolutions, so repeated scans resolve almost nothing)."""
        key = tuple(f.rel for f in (walk if walk is not None else self._walk()))
        if self._resolver is None or self._resolver[0] != key:
            self._resolver = (key, LinkResolver(key))
        return self._resolver[1]

    def _facts(self, rel: str, stamp: tuple[int, int] | None = None) -> NoteFacts | None:
        """Parsed facts of a note, re-read only when its mtime or size changed."""
        path = self.root / rel
        if stamp is None:
            try:
                st = path.stat()
            except OSError:
                self._notes.pop(rel, None)
                return None
            stamp = (st.st_mtime_ns, st.st_size)
        cached = self._notes.get(rel)
        if cached is not None and cached.stamp == stamp:
            return cached.facts
        if stamp[1] > MAX_READ_BYTES:
            return None
        try:
            text = read_regular(path, MAX_READ_BYTES).decode("utf-8", errors="replace")
        except OSError:
            return None
        facts = read_note(rel, text)
        self._notes[rel] = _Cached(stamp, facts)
        return facts

    def _all_facts(self, walk: list[VaultFile] | None = None) -> list[tuple[str, NoteFacts]]:
        """(path, facts) of every markdown note, in path order."""
        walk = walk if walk is not None else self._walk()
        notes = [f for f in walk if f.rel.lower().endswith(MARKDOWN_SUFFIXES)]
        present = {f.rel for f in notes}
        for gone in [k for k in self._notes if k not in present]:
            del self._notes[gone]
        out = []
        for f in notes:
            facts = self._facts(f.rel, (f.mtime_ns, f.size))
            if facts is not None:
                out.append((f.rel, facts))
        return out

    # -- side effects

    def _notify(self, paths: list[str]) -> dict[str, str]:
        """Tell the index which files changed. The write already happened, so a failure
        here is reported as a warning, not as a failed tool call."""
        update = getattr(self.workspace, "update_files", None)
        if update is None or not paths:
            return {}
        try:
            update(list(dict.fromkeys(paths)))
        except Exception as exc:
            return {"warning": index_not_updated(exc)}
        return {}

    def _now(self) -> _dt.datetime:
        return self.clock()


def index_not_updated(exc: Exception) -> str:
    """The warning of a write whose file is saved but whose re-indexing failed."""
    return f"the change is saved but the search index was not updated ({exc}); run `smartcontext index` to catch up"


def local_date(timestamp: float) -> _dt.date:
    return _dt.datetime.fromtimestamp(timestamp).date()


def file_created(path: Path) -> float:
    st = path.stat()
    birth = getattr(st, "st_birthtime", None)
    return birth if birth else min(st.st_mtime, st.st_ctime)
