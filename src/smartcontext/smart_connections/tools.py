"""Entry points for the MCP tools and the CLI commands, all thin calls into ``SmartConnections``.

- MCP tools ``semantic_search`` and ``similar_notes``: ``semantic_search_tool`` and
  ``similar_notes_tool`` return the data of a tool answer (a dict, the vault tools'
  ``ok(...)``) and raise ``SmartContextError`` (``ToolError`` for an unreadable file); the
  tool registry adds ``"success"`` and turns errors into ``{"success": false, "error": ...}``.
- CLI ``smartcontext sc search QUERY [VAULT]``, ``sc similar NOTE [VAULT]`` and
  ``sc status [VAULT]``: ``sc_search``, ``sc_similar`` and ``sc_status`` return the result
  objects (``.to_dict()`` for ``--json``), ``render_*`` turn them into text to print.
  They raise ``SmartContextError`` subclasses, which the CLI prints without a traceback.

Readers are shared per vault and options (``get_reader``), so repeated calls in one process
keep the incremental cache. A server passes its own reader instead (one per server, see
``tools.smart_connections``): options holding a function (``workspace=``) are keyed by that
function's identity, so a new function per call would build a new reader per call.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..query.options import SEMANTIC_SEARCH_OPTIONS, SIMILAR_NOTES_OPTIONS
from ..validate import ToolError
from ..vault.responses import ok
from .reader import SemanticSearchResult, SimilarNotesResult, SmartConnections, SmartConnectionsStatus

_readers: dict[tuple, SmartConnections] = {}
_readers_lock = threading.Lock()


def get_reader(vault: str | Path = ".", **options: Any) -> SmartConnections:
    """The shared reader for ``vault`` with these ``SmartConnections`` options."""
    root = Path(vault).expanduser().resolve()
    key = (str(root), tuple(sorted((k, _freeze(v)) for k, v in options.items())))
    with _readers_lock:
        reader = _readers.get(key)
        if reader is None:
            reader = _readers[key] = SmartConnections(root, **options)
        return reader


def forget_readers() -> None:
    """Drop every shared reader (their caches go with them); each closes the vault
    workspace it opened for keyword search."""
    with _readers_lock:
        for reader in _readers.values():
            reader.close()
        _readers.clear()


# -- MCP tools ------------------------------------------------------------------------


def semantic_search_tool(
    vault: str | Path, query: str, reader: SmartConnections | None = None, **given: Any
) -> dict[str, Any]:
    """``semantic_search`` over the vault's Smart Connections vectors, as tool data.

    given:  the tool's arguments (``SEMANTIC_SEARCH_OPTIONS``: limit, minScore, tags, paths,
            scope; what is left out takes the declared default); anything else is an
            option of the shared reader of ``vault``.
    reader: the caller's own (a server's), else that shared one."""
    return semantic_search_answer(_ask(vault, reader, given, lambda sc, args: sc.semantic_search(query, **args)))


def similar_notes_tool(
    vault: str | Path, path: str, reader: SmartConnections | None = None, **given: Any
) -> dict[str, Any]:
    """``similar_notes`` from the stored vectors alone, as tool data (``given`` and
    ``reader`` as above, from ``SIMILAR_NOTES_OPTIONS``)."""
    return similar_notes_answer(_ask(vault, reader, given, lambda sc, args: sc.similar_notes(path, **args)))


def _ask(vault: str | Path, reader: SmartConnections | None, given: dict[str, Any], question: Callable) -> Any:
    """``question(reader, arguments)`` as a tool asks it: an unreadable file is a ToolError."""
    args, options = _split(given)
    try:
        return question(reader or get_reader(vault, **options), args)
    except OSError as exc:
        raise ToolError(str(exc)) from exc


# The arguments of both questions; the seed's tools spell the score floor minScore.
_ARGS = {o.name for o in (*SEMANTIC_SEARCH_OPTIONS, *SIMILAR_NOTES_OPTIONS)} | {"min_score"}


def _split(given: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the question's arguments under the library's names, the reader's options)."""
    args = {("min_score" if k == "minScore" else k): v for k, v in given.items() if k in _ARGS}
    return args, {k: v for k, v in given.items() if k not in _ARGS}


def semantic_search_answer(result: SemanticSearchResult) -> dict[str, Any]:
    """The one shape of a ``semantic_search`` answer: the tool's (MCP, HTTP) and
    ``sc search --json``'s."""
    return _answer(f"{result.count} result(s) by {result.mode}", result)


def similar_notes_answer(result: SimilarNotesResult) -> dict[str, Any]:
    """The one shape of a ``similar_notes`` answer: the tool's and ``sc similar --json``'s."""
    return _answer(f"{result.count} note(s) similar to {result.path}", result)


def _answer(message: str, result: SemanticSearchResult | SimilarNotesResult) -> dict[str, Any]:
    data = ok(message, **result.to_dict())
    data.pop("load", None)  # cache statistics: for `sc status`, not for a model
    for hit in data["results"]:
        for key in ("key", "signals"):
            hit.pop(key, None)
        for key in ("heading", "lines"):
            if hit.get(key) is None:
                hit.pop(key, None)
    return data


# -- CLI ------------------------------------------------------------------------------


def sc_search(query: str, vault: str | Path = ".", **given: Any) -> SemanticSearchResult:
    """``smartcontext sc search QUERY [VAULT]`` (``given`` as for ``semantic_search_tool``)."""
    args, options = _split(given)
    return get_reader(vault, **options).semantic_search(query, **args)


def sc_similar(note: str, vault: str | Path = ".", **given: Any) -> SimilarNotesResult:
    """``smartcontext sc similar NOTE [VAULT]`` (``given`` as for ``similar_notes_tool``)."""
    args, options = _split(given)
    return get_reader(vault, **options).similar_notes(note, **args)


def sc_status(vault: str | Path = ".", **options: Any) -> SmartConnectionsStatus:
    """``smartcontext sc status [VAULT]``: never raises for an unusable vault (see ``error``)."""
    return get_reader(vault, **options).status()


def render_search(result: SemanticSearchResult) -> str:
    head = f"{result.count} result(s) for {result.query!r} - mode: {result.mode} (model {result.model_key})"
    return _render(head + f"\nmethod: {result.method}", result.results, result.warnings)


def render_similar(result: SimilarNotesResult) -> str:
    head = f"{result.count} note(s) similar to {result.path} - mode: {result.mode} (model {result.model_key})"
    return _render(head, result.results, result.warnings)


def render_status(status: SmartConnectionsStatus) -> str:
    lines = [f"vault: {status.vault}", f"configured: {'yes' if status.configured else 'no'}"]
    if status.error:
        lines.append(f"error: {status.error}")
    if status.configured:
        lines += [
            f"model: {status.model_key} ({status.dim}-d)",
            "stored models: " + (", ".join(f"{k} ({v})" for k, v in status.stored_models.items()) or "none"),
            f"files: {status.files}  notes: {status.notes}  blocks: {status.blocks}",
            (
                f"skipped: {status.bad_lines} unreadable line(s), {status.no_vector} item(s) without a vector, "
                f"{status.stale_blocks} stale block(s)"
            ),
            "query model: " + (
                status.query_model.get("source", "") if status.query_model.get("available")
                else f"none ({status.query_model.get('reason', '')})"
            ),
            f"free-text search mode: {status.search_mode or 'unavailable (fallback disabled)'}",
        ]
    lines += [f"warning: {w}" for w in status.warnings]
    return "\n".join(lines)


def _render(head: str, hits: list, warnings: list[str]) -> str:
    lines = [head]
    lines += [f"warning: {w}" for w in warnings]
    for i, hit in enumerate(hits, 1):
        where = f"{hit.path} > {hit.heading}" if hit.heading else hit.path
        lines.append(f"{i:>3}. {hit.score:.3f}  {where}")
        if hit.snippet:
            lines.append(f"      {hit.snippet}")
    return "\n".join(lines)


def _freeze(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    try:
        hash(value)
    except TypeError:
        return id(value)
    return value
