"""The workspace's own tools: ``context``, ``search``, ``status`` and ``files`` over the folder's index.

Each answers its result type's ``to_dict`` (``ContextResult``, ``SearchHit``,
``WorkspaceStatus``), the same JSON that the CLI prints with ``--json``.
"""

from __future__ import annotations

from typing import Any

from ..retrieval.search import SearchHit
from .spec import STR_LIST, ToolContext, ToolSpec

# The context tool lists at most this many ranked files besides the text (a model rarely
# needs the tail, and every path costs tokens); ``more_files`` counts the others.
CONTEXT_FILES_SHOWN = 20
# The context tool lists at most this many candidates left out (``omitted_counts`` counts
# them all): enough to see why a symbol is missing, few enough to cost a model little.
CONTEXT_OMITTED_SHOWN = 10
# The files tool lists at most this many files of each kind; ``more`` says how many more.
FILES_SHOWN = 500


def workspace_tools(ctx: ToolContext) -> list[ToolSpec]:
    """context, search and status over the folder's index."""

    def context(args: dict[str, Any]) -> dict[str, Any]:
        ws = ctx.ready_workspace()
        # Options left out fall back to the folder's smartcontext.toml [context] defaults.
        options = {key: args[name] for name, key in (("exclude_tests", "exclude_tests"), ("depth", "expand_depth"))
                   if name in args}
        with ctx.reading():
            result = ws.context(
                args["question"], max_tokens=args.get("max_tokens"), format=args.get("format", "mu"),
                paths=args.get("paths") or None, exclude=args.get("exclude") or None,
                explain=args.get("explain", True), **options,
            )
        result.omitted = result.omitted[:CONTEXT_OMITTED_SHOWN]
        # 'text' already holds every selected item; the item list (without text) only on request.
        answer = result.to_dict(include_text=False, details=bool(args.get("include_items")),
                                max_files=CONTEXT_FILES_SHOWN)
        # How much of the index the semantic signal covered ("8,480 / 36,947"), and
        # whether the rest is being embedded now.
        answer.update(ws.vector_summary())
        return answer

    def search(args: dict[str, Any]) -> dict[str, Any]:
        ws = ctx.ready_workspace()
        with ctx.reading():
            hits, info = ws.search_with_info(
                args["query"], limit=args.get("limit", 10), mode=args.get("mode", "hybrid"),
                paths=args.get("paths") or None, tags=args.get("tags") or None,
                kinds=args.get("kinds") or None, min_score=args.get("min_score", 0.0),
                exclude=args.get("exclude") or None,
            )
        return search_answer(hits, info)

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
            {
                "type": "object",
                "properties": {
                    "question": {"type": "string", "minLength": 1, "maxLength": 4000,
                                 "description": "The question in plain language; naming functions or classes helps."},
                    "max_tokens": {"type": "integer", "minimum": 200, "maximum": 100_000, "default": 8000,
                                   "description": "Token budget for 'text' (exact count); default 8000 "
                                                  "or the folder's configured budget."},
                    "format": {"type": "string", "enum": ["mu", "markdown", "json"], "default": "mu",
                               "description": "mu: compact sigil format (fewest tokens); markdown; json."},
                    "exclude_tests": {"type": "boolean", "default": False, "description": "Leave out test files."},
                    "depth": {"type": "integer", "minimum": 0, "maximum": 3, "default": 1,
                              "description": "Hops along calls/imports/links from the direct matches (0 = none)."},
                    "paths": {**STR_LIST, "description": "Only these folders, files or globs ('src/**/*.py')."},
                    "exclude": {**STR_LIST, "description": "Leave out these folders, files or globs."},
                    "explain": {"type": "boolean", "default": True,
                                "description": "List the best candidates left out ('omitted': path, name, "
                                               "kind, score, tokens, reason) and what the budget went to."},
                    "include_items": {"type": "boolean", "default": False,
                                      "description": "Also list the selected items (id, path, lines, score, "
                                                     "signals), without their text."},
                },
                "required": ["question"],
                "additionalProperties": False,
            },
            context, provider="workspace", text_field="text",
        ),
        ToolSpec(
            "search",
            "Search the folder's index (code symbols and note sections): keyword (BM25), semantic "
            "(vectors, when the index has embeddings) or hybrid. Returns locations with short "
            "snippets; read whole files with read_file or ask 'context' for code.",
            {
                "type": "object",
                "properties": {
                    "query": {"type": "string", "minLength": 1, "maxLength": 2000, "description": "What to look for."},
                    "mode": {"type": "string", "enum": ["hybrid", "keyword", "semantic"], "default": "hybrid",
                             "description": "hybrid fuses keyword and semantic ranks; semantic needs embeddings."},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 50, "default": 10,
                              "description": "Number of results."},
                    "tags": {**STR_LIST,
                             "description": "Only notes with one of these tags ('ai' also matches 'ai/llm')."},
                    "paths": {**STR_LIST, "description": "Only under these folders, files or globs ('*.md')."},
                    "exclude": {**STR_LIST, "description": "Leave out these folders, files or globs."},
                    "kinds": {**STR_LIST,
                              "description": "Only these item kinds, e.g. function, class, method, section."},
                    "min_score": {"type": "number", "minimum": 0, "maximum": 1, "default": 0,
                                  "description": "Drop results scoring below this (scores are 0..1)."},
                },
                "required": ["query"],
                "additionalProperties": False,
            },
            search, provider="workspace",
        ),
        ToolSpec(
            "status",
            "What the index of this folder holds: files, items by kind, edges, vectors, the embedding "
            "model and when it was last indexed.",
            {"type": "object", "properties": {}, "additionalProperties": False},
            status, provider="workspace",
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
    ``{"results": [SearchHit.to_dict()...], "count": n, "mode": ..., "signals": [...], "note"?: ...}``."""
    return {"results": [h.to_dict() for h in hits], "count": len(hits), **info}
