"""Smart Context: the best context for a question within a token budget.

The public names load on first use (PEP 562): ``import smartcontext`` stays cheap for the
CLI's ``--version`` and ``--help`` and for tools that import one submodule, while
``from smartcontext import Workspace`` works as always.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# Public name -> the module that defines it.
_EXPORTS = {
    "ContextResult": ".context.models",
    "EmbeddingStatus": ".background",
    "Coverage": ".coverage",
    "ExtractionConfig": ".context.models",
    "OmittedItem": ".context.models",
    "ScoredItem": ".retrieval.scoring",
    "SelectedItem": ".context.models",
    "SmartContextError": ".errors",
    "IndexStats": ".indexer",
    "Edge": ".model",
    "Item": ".model",
    "ExtractedEntity": ".retrieval.entities",
    "SearchHit": ".retrieval.search",
    "Setting": ".config",
    "Workspace": ".workspace",
    "WorkspaceStatus": ".workspace",
}

__all__ = sorted([*_EXPORTS, "__version__"])


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'smartcontext' has no attribute {name!r}")
    value = getattr(import_module(module, __name__), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])


if TYPE_CHECKING:  # for type checkers and IDEs: the names as plain imports
    from .background import EmbeddingStatus
    from .config import Setting
    from .context.models import ContextResult, ExtractionConfig, OmittedItem, SelectedItem
    from .coverage import Coverage
    from .errors import SmartContextError
    from .indexer import IndexStats
    from .model import Edge, Item
    from .retrieval.entities import ExtractedEntity
    from .retrieval.scoring import ScoredItem
    from .retrieval.search import SearchHit
    from .workspace import Workspace, WorkspaceStatus
