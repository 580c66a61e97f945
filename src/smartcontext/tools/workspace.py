"""The workspace's own tools: ``context``, ``search``, ``similar``, ``status`` and ``files``
over the folder's index.

The ``context`` and ``search`` argument schemas are generated from the declared options
(``query.options``), the same declarations the CLI's flags come from. Each tool answers its
result type's ``to_dict`` (``ContextResult``, ``SearchHit``, ``WorkspaceStatus``...), the same
JSON that the CLI prints with ``--json``.
"""

from __future__ import annotations

from typing import Any

from ..query import Query
from ..query.options import CONTEXT_OPTIONS, SEARCH_OPTIONS, Option, json_schema
from ..retrieval.search import SearchHit
from .spec import ToolContext, ToolSpec

# The context tool lists at most this many ranked files besides the text (a model rarely
# needs the tail, and every path costs tokens); ``more_files`` counts the others.
CONTEXT_FILES_SHOWN = 20
# The context tool lists at most this many candidates left out (``omitted_counts`` counts
# them all): enough to see why a symbol is missing, few enough to cost a model little.
CONTEXT_OMITTED_SHOWN = 10
# The files tool lists at most this many files of each kind; ``more`` says how many more.
FILES_SHOWN = 500


def workspace_tools(ctx: ToolContext) -> list[ToolSpec]:
    """context, search, similar and status over the folder's index."""

    def context(args: dict[str, Any]) -> dict[str, Any]:
        ws = ctx.ready_workspace()
        # Options left out fall back to the folder's smartcontext.toml [context] defaults.
        query = Query.build("code-context", args["question"], defaults=ws.config.context,
                            **_query_args(CONTEXT_OPTIONS, args))
        with ctx.reading():
            result = ws.answer_context(query)
        result.omitted = result.omitted[:CONTEXT_OMITTED_SHOWN]
        # 'text' already holds every selected item; the item list (without text) only on request.
        return result.to_dict(include_text=False, details=bool(args.get("include_items")),
                              max_files=CONTEXT_FILES_SHOWN)

    def search(args: dict[str, Any]) -> dict[str, Any]:
        query = Query.build("search", args["query"], **_query_args(SEARCH_OPTIONS, args))
        ws = ctx.ready_workspace()
        with ctx.reading():
            hits, info = ws.answer_search(query)
        return search_answer(hits, info)

    def similar(args: dict[str, Any]) -> dict[str, Any]:
        ws = ctx.ready_workspace()
        with ctx.reading():
            hits = ws.similar(args["path"], limit=args.get("limit", 10))
        return similar_answer(hits)

    def status(args: dict[str, Any]) -> dict[str, Any]:
        return ctx.workspace.status().to_dict()

    def files(args: dict[str, Any]) -> dict[str, Any]:
        ws = ctx.ready_workspace()
        only_skipped = bool(args.get("skipped"))
        with ctx.reading():
            found = ws.files(args.get("path") or None, indexed=not only_skipped)
        return files_answer(found, FILES_SHOWN)

    return [
        ToolSpec(
            "context",
            "The most relevant code (or notes) of this folder for a question, packed into a token "
            "budget: whole bodies of the best matches, signatures of further ones, with the classes "
            "and modules around them. Use it first for questions about how the code works. Returns "
            "'text' (the context to read) with token_count, the ranked 'files' and warnings.",
            json_schema(CONTEXT_OPTIONS, required=["question"]),
            context, provider="workspace", text_field="text",
        ),
        ToolSpec(
            "search",
            "Search the folder's index (code symbols and note sections): keyword (BM25), semantic "
            "(vectors, when the index has embeddings) or hybrid. Returns locations with short "
            "snippets; read whole files with read_file or ask 'context' for code.",
            json_schema(SEARCH_OPTIONS, required=["query"]),
            search, provider="workspace",
        ),
        ToolSpec(
            "status",
            "What the index of this folder holds: files, items by kind, edges, how far embedding is "
            "(state, model, embedded / total) and when it was last indexed.",
            {"type": "object", "properties": {}, "additionalProperties": False},
            status, provider="workspace",
        ),
        ToolSpec(
            "similar",
            "Files or notes most like a given one, by the mean of its items' embeddings (needs an "
            "index with embeddings). Returns locations with short snippets.",
            {
                "type": "object",
                "properties": {
                    "path": {"type": "string", "minLength": 1, "maxLength": 1000,
                             "description": "A file or note: a path relative to the folder, or a bare note name."},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 10,
                              "description": "Number of results."},
                },
                "required": ["path"],
                "additionalProperties": False,
            },
            similar, provider="workspace",
        ),
        ToolSpec(
            "files",
            "Which files of this folder are indexed (source, items, tokens, vectors) and which were "
            "left out, with why (ignored, binary, generated, too large, unreadable, parse error). "
            "Use it when something you expected is missing from context or search.",
            {
                "type": "object",
                "properties": {
                    "path": {"type": "string", "maxLength": 1000,
                             "description": "Only under this folder or file, or matching this glob."},
                    "skipped": {"type": "boolean", "default": False,
                                "description": "Only the files left out, with their reasons."},
                },
                "additionalProperties": False,
            },
            files, provider="workspace",
        ),
    ]


def _query_args(options: tuple[Option, ...], args: dict[str, Any]) -> dict[str, Any]:
    """The arguments that are part of the question (not its text, not how the answer is
    returned)."""
    return {o.name: args[o.name] for o in options[1:] if o.part_of_query and o.name in args}
def files_answer(found: Any, limit: int | None = None) -> dict[str, Any]:
    """The answer of ``files`` (tool and ``files --json``): ``Coverage.to_dict``, each
    list cut to ``limit`` with ``more_files`` / ``more_skipped`` counting the rest."""
    answer = found.to_dict()
    for key in ("files", "skipped"):
        rows = answer[key]
        answer[f"more_{key}"] = max(0, len(rows) - limit) if limit is not None else 0
        if limit is not None:
            answer[key] = rows[:limit]
    return answer


def search_answer(hits: list[SearchHit], info: dict[str, Any]) -> dict[str, Any]:
    """The answer of a search, for the ``search`` tool and ``search --json`` alike:
    ``{"results": [SearchHit.to_dict()...], "count": n, "mode": ..., "signals": [...],
    "note"?: ..., "embedding": EmbeddingStatus.to_dict()}``."""
    return {"results": [h.to_dict() for h in hits], "count": len(hits), **info}


def similar_answer(hits: list[SearchHit]) -> dict[str, Any]:
    """The answer of ``similar``, for the tool and ``similar --json`` alike:
    ``{"results": [SearchHit.to_dict()...], "count": n}``."""
    return {"results": [h.to_dict() for h in hits], "count": len(hits)}
