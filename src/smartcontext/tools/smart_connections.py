"""``semantic_search`` and ``similar_notes`` over the vectors of the Obsidian Smart
Connections plugin, as registry tools."""

from __future__ import annotations

from typing import Any

from ..query.options import SEMANTIC_SEARCH_OPTIONS, SIMILAR_NOTES_OPTIONS, json_schema
from .spec import ToolContext, ToolSpec

# The server's one Smart Connections reader in ``ToolContext.shared``.
READER_KEY = "smart_connections.reader"


def smart_connections_tools(ctx: ToolContext) -> list[ToolSpec]:
    """semantic_search and similar_notes over the vectors of the Obsidian Smart Connections
    plugin. Offered in Obsidian vaults only (a ``.obsidian`` or ``.smart-env`` folder), where
    an unconfigured plugin gets the seed's message telling the user what to do."""
    if not ((ctx.root / ".smart-env").is_dir() or (ctx.root / ".obsidian").is_dir()):
        return []
    from ..smart_connections import SmartConnections, semantic_search_tool, similar_notes_tool

    def reader() -> SmartConnections:
        # One reader per server, built on the first call and kept in step with disk by its
        # own incremental checks (an inotify poll, or a stat of the folder), never rebuilt
        # per call: a rebuild reloads every vector from the parse store (~0.3-1 s at 4,000
        # notes). Its keyword fallback reads the server's own workspace (one index, one
        # refresh schedule), which the handler refreshes before taking the read lock.
        return ctx.shared(READER_KEY, lambda: SmartConnections(ctx.root, workspace=lambda: ctx.workspace))

    # The workspace is refreshed first (that may write), then read under the shared read
    # lock, so an index batch never shows half-written rows to the keyword fallback.
    def semantic_search(args: dict[str, Any]) -> dict[str, Any]:
        ctx.ready_workspace()
        with ctx.reading():
            return semantic_search_tool(ctx.root, reader=reader(), **args)

    # Stored vectors only: no index to refresh or lock.
    def similar_notes(args: dict[str, Any]) -> dict[str, Any]:
        return similar_notes_tool(ctx.root, reader=reader(), **args)

    # The schemas come from the vault-semantic options, which the reader checks too.
    return [
        ToolSpec(
            "semantic_search",
            "Find notes by meaning with the embeddings the Smart Connections plugin already computed "
            "(.smart-env). Returns paths, scores and snippets.",
            json_schema(SEMANTIC_SEARCH_OPTIONS, required=["query"]),
            semantic_search, provider="smart_connections",
        ),
        ToolSpec(
            "similar_notes",
            "Notes most similar to a given note, from the Smart Connections embeddings.",
            json_schema(SIMILAR_NOTES_OPTIONS, required=["path"]),
            similar_notes, provider="smart_connections",
        ),
    ]
