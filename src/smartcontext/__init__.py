"""Smart Context: the best context for a question within a token budget."""

from .context.models import ContextResult, ExtractionConfig, SelectedItem
from .errors import SmartContextError
from .indexer import IndexStats
from .model import Edge, Item
from .retrieval.entities import ExtractedEntity
from .retrieval.scoring import ScoredItem
from .retrieval.search import SearchHit
from .workspace import Workspace, WorkspaceStatus

__version__ = "0.1.0"

__all__ = [
    "ContextResult",
    "Edge",
    "ExtractedEntity",
    "ExtractionConfig",
    "IndexStats",
    "Item",
    "ScoredItem",
    "SearchHit",
    "SelectedItem",
    "SmartContextError",
    "Workspace",
    "WorkspaceStatus",
    "__version__",
]
