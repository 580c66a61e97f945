"""The built-in tool providers: the workspace's own tools (context, search, status), the
vault tools and Smart Connections. Each is a function ``provider(context) -> [ToolSpec]``;
see ``tools`` for the protocol."""

from __future__ import annotations

import json
import threading
from typing import Any

from .tools import ToolContext, ToolSpec, spec_tools

# The context tool returns at most this many ranked file paths besides the text.
CONTEXT_FILES_SHOWN = 20
# Vault tools that change files (everything else only reads); used for MCP annotations.
VAULT_WRITE_TOOLS = frozenset({
    "create_file", "move_file", "batch_move_files", "append_to_file", "update_frontmatter",
    "save_preference", "remove_preference", "log_interaction",
})
# ...and those that may replace or remove content rather than only add to it.
VAULT_DESTRUCTIVE_TOOLS = frozenset({
    "create_file", "move_file", "batch_move_files", "update_frontmatter", "remove_preference",
})


class _IndexForVault:
    """What the vault tools expect of a workspace, routed through the context so their
    searches see a fresh index and their writes keep it fresh."""

    def __init__(self, ctx: ToolContext):
        self._ctx = ctx

    def update_files(self, paths: list[str]) -> None:
        self._ctx.files_changed(paths)

    def search(self, query: str, **options: Any):
        with self._ctx.index_lock:
            return self._ctx.ready_workspace().search(query, **options)


_STR_LIST = {"type": "array", "items": {"type": "string", "maxLength": 1000}, "maxItems": 100}


def workspace_tools(ctx: ToolContext) -> list[ToolSpec]:
    """context, search and status over the folder's index."""

    def context(args: dict[str, Any]) -> dict[str, Any]:
        ws = ctx.ready_workspace()
        # Options left out fall back to the folder's smartcontext.toml [context] defaults.
        options = {key: args[name] for name, key in (("exclude_tests", "exclude_tests"), ("depth", "expand_depth"))
                   if name in args}
        result = ws.context(
            args["question"], max_tokens=args.get("max_tokens"), format=args.get("format", "mu"),
            paths=args.get("paths") or None, **options,
        )
        out: dict[str, Any] = {
            "success": True,
            "text": result.text,
            "format": result.format,
            "token_count": result.token_count,
            "max_tokens": result.max_tokens,
            "items": len(result.items),
            "files": result.files[:CONTEXT_FILES_SHOWN],
            "warnings": result.warnings,
        }
        if len(result.files) > CONTEXT_FILES_SHOWN:
            out["more_files"] = len(result.files) - CONTEXT_FILES_SHOWN
        if not result.items and result.nearest:
            out["nearest"] = result.nearest[:5]
        if args.get("include_items"):
            out["selected"] = [s.to_dict(include_text=False) for s in result.items]
        return out

    def search(args: dict[str, Any]) -> dict[str, Any]:
        ws = ctx.ready_workspace()
        hits, info = ws.search_with_info(
            args["query"], limit=args.get("limit", 10), mode=args.get("mode", "hybrid"),
            paths=args.get("paths") or None, tags=args.get("tags") or None,
            kinds=args.get("kinds") or None, min_score=args.get("min_score", 0.0),
        )
        results = []
        for h in hits:
            row: dict[str, Any] = {"path": h.path, "lines": [h.start_line, h.end_line], "kind": h.kind,
                                   "score": h.score, "snippet": h.snippet, "signals": h.signals}
            if h.heading:
                row["heading"] = h.heading
            elif h.name:
                row["name"] = h.name
            if h.tags:
                row["tags"] = h.tags
            results.append(row)
        out = {"success": True, "results": results, "count": len(results), "mode": info.get("mode"),
               "signals": info.get("signals", [])}
        if info.get("note"):
            out["note"] = info["note"]
        return out

    def status(args: dict[str, Any]) -> dict[str, Any]:
        st = ctx.workspace.status().to_dict()
        st["refresh_interval"] = ctx.refresh_interval
        if ctx.last_build:
            st["built_by_server"] = ctx.last_build
        return {"success": True, **st}

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
                    "paths": {**_STR_LIST, "description": "Only these folders or files (relative paths)."},
                    "include_items": {"type": "boolean", "default": False,
                                      "description": "Also list the selected items (id, path, lines, score), "
                                                     "without text."},
                },
                "required": ["question"],
                "additionalProperties": False,
            },
            context, provider="workspace", lock=ctx.index_lock,
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
                    "tags": {**_STR_LIST,
                             "description": "Only notes with one of these tags ('ai' also matches 'ai/llm')."},
                    "paths": {**_STR_LIST, "description": "Only under these folders or files (relative paths)."},
                    "kinds": {**_STR_LIST,
                              "description": "Only these item kinds, e.g. function, class, method, section."},
                    "min_score": {"type": "number", "minimum": 0, "maximum": 1, "default": 0,
                                  "description": "Drop results scoring below this (scores are 0..1)."},
                },
                "required": ["query"],
                "additionalProperties": False,
            },
            search, provider="workspace", lock=ctx.index_lock,
        ),
        ToolSpec(
            "status",
            "What the index of this folder holds: files, items by kind, edges, vectors, the embedding "
            "model and when it was last indexed.",
            {"type": "object", "properties": {}, "additionalProperties": False},
            status, provider="workspace",
        ),
    ]


def vault_tools(ctx: ToolContext) -> list[ToolSpec]:
    """The vault tools (files, links, frontmatter, preferences, search) of smartcontext.vault."""
    from ..vault import TOOL_SPECS, VaultTools

    tools = ctx.shared("vault", lambda: VaultTools(ctx.root, workspace=_IndexForVault(ctx)))
    return spec_tools(TOOL_SPECS, tools.call_tool, "vault", VAULT_WRITE_TOOLS, VAULT_DESTRUCTIVE_TOOLS,
                      lock=threading.RLock())


def smart_connections_tools(ctx: ToolContext) -> list[ToolSpec]:
    """semantic_search and similar_notes over the vectors of the Obsidian Smart Connections
    plugin. Offered in Obsidian vaults only (a ``.obsidian`` or ``.smart-env`` folder), where
    an unconfigured plugin gets the seed's message telling the user what to do."""
    if not ((ctx.root / ".smart-env").is_dir() or (ctx.root / ".obsidian").is_dir()):
        return []
    from ..smart_connections import semantic_search_tool, similar_notes_tool

    def compact(answer: str) -> dict[str, Any]:
        data = json.loads(answer)
        data.pop("load", None)  # cache statistics: for `status`, not for a model
        for hit in data.get("results", []):
            for key in ("key", "signals"):
                hit.pop(key, None)
            for key in ("heading", "lines"):
                if hit.get(key) is None:
                    hit.pop(key, None)
        return data

    def semantic_search(args: dict[str, Any]) -> dict[str, Any]:
        return compact(semantic_search_tool(ctx.root, **args))

    def similar_notes(args: dict[str, Any]) -> dict[str, Any]:
        return compact(similar_notes_tool(ctx.root, **args))

    limit = {"type": "integer", "minimum": 1, "maximum": 100, "default": 10, "description": "Max results."}
    min_score = {"type": "number", "minimum": -1, "maximum": 1, "default": 0.3, "description": "Minimum similarity."}
    scope = {"type": "string", "enum": ["notes", "blocks", "both"], "default": "notes",
             "description": "Rank whole notes, heading blocks, or both."}
    return [
        ToolSpec(
            "semantic_search",
            "Find notes by meaning with the embeddings the Smart Connections plugin already computed "
            "(.smart-env). Returns paths, scores and snippets.",
            {
                "type": "object",
                "properties": {
                    "query": {"type": "string", "minLength": 1, "maxLength": 2000, "description": "Search query."},
                    "limit": limit,
                    "minScore": min_score,
                    "tags": {**_STR_LIST, "description": "Only notes with one of these tags."},
                    "paths": {**_STR_LIST, "description": "Only notes under these folders."},
                    "scope": scope,
                },
                "required": ["query"],
                "additionalProperties": False,
            },
            semantic_search, provider="smart_connections",
        ),
        ToolSpec(
            "similar_notes",
            "Notes most similar to a given note, from the Smart Connections embeddings.",
            {
                "type": "object",
                "properties": {
                    "path": {"type": "string", "minLength": 1, "maxLength": 1000,
                             "description": "The note's path relative to the vault, e.g. 'Projects/Plan.md'."},
                    "limit": limit,
                    "minScore": min_score,
                    "scope": scope,
                },
                "required": ["path"],
                "additionalProperties": False,
            },
            similar_notes, provider="smart_connections",
        ),
    ]


BUILTIN_PROVIDERS = [workspace_tools, vault_tools, smart_connections_tools]
