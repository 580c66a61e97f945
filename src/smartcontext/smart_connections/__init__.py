"""Smart Connections reader: reuse the vectors the Obsidian plugin wrote in ``.smart-env/``.

    from smartcontext.smart_connections import SmartConnections
    sc = SmartConnections("~/Vault")
    sc.status().to_dict()
    sc.semantic_search("gpu scheduling", limit=5, tags=["ai"], paths=["Projects"], scope="both")
    sc.similar_notes("Projects/Level 4.md")

Modules: ``ajson`` (file format), ``config`` (settings, model keys, the seed's errors),
``cache`` (incremental load into the shared ``retrieval.matrix.VectorMatrix``),
``store`` (parsed files kept between processes), ``watch`` (inotify), ``notes`` (tags and
snippets through the notes core and the vault path rules), ``query_models`` (local query
embedders), ``shipped`` (the workspace index's own vectors when the plugin's model is
missing), ``reader`` (the API; its keyword fallback asks the vault workspace's keyword
index), ``tools`` (MCP and CLI entry points).
"""

from .cache import LoadStats
from .config import (
    DIFFERENT_MODEL,
    NO_EMBEDDINGS,
    NOT_CONFIGURED,
    SmartConnectionsModelMismatch,
    SmartConnectionsNoEmbeddings,
    SmartConnectionsNotConfigured,
)
from .reader import (
    MODE_KEYWORD_RERANK,
    MODE_MODEL,
    MODE_VECTORS,
    NoteNotFound,
    SemanticHit,
    SemanticSearchResult,
    SimilarNotesResult,
    SmartConnections,
    SmartConnectionsStatus,
)
from .tools import (
    get_reader,
    render_search,
    render_similar,
    render_status,
    sc_search,
    sc_similar,
    sc_status,
    semantic_search_tool,
    similar_notes_tool,
)

__all__ = [
    "DIFFERENT_MODEL",
    "MODE_KEYWORD_RERANK",
    "MODE_MODEL",
    "MODE_VECTORS",
    "NOT_CONFIGURED",
    "NO_EMBEDDINGS",
    "LoadStats",
    "NoteNotFound",
    "SemanticHit",
    "SemanticSearchResult",
    "SimilarNotesResult",
    "SmartConnections",
    "SmartConnectionsModelMismatch",
    "SmartConnectionsNoEmbeddings",
    "SmartConnectionsNotConfigured",
    "SmartConnectionsStatus",
    "get_reader",
    "render_search",
    "render_similar",
    "render_status",
    "sc_search",
    "sc_similar",
    "sc_status",
    "semantic_search_tool",
    "similar_notes_tool",
]
