"""Keyword candidates for the keyword-rerank mode, from the workspace's own index.

The vault is a Smart Context workspace: its notes are already indexed (sections, BM25),
so the fallback asks that index instead of keeping a second one: the same keyword search
``Workspace.search(mode="keyword")`` runs, scored per note (its best section), without
fetching the sections' text and snippets a ranking does not need. The workspace is opened
once per vault and shared by every reader of it; its index is built on first use when
there is none, and brought up to date (only changed files are parsed) at most once per
``refresh_interval`` seconds, so edits made in Obsidian are found.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

from ..errors import SmartContextError
from ..retrieval.keyword import KeywordSearcher
from ..workspace import Workspace

_workspaces: dict[str, Workspace] = {}
_lock = threading.Lock()
# Agents and people repeat queries; an answer holds while the index is unchanged.
MEMO_SIZE = 256
SECTIONS_PER_NOTE = 4


def workspace_for(vault: Path) -> Workspace:
    """The shared workspace of ``vault``."""
    key = str(Path(vault).resolve())
    with _lock:
        ws = _workspaces.get(key)
        if ws is None:
            ws = _workspaces[key] = Workspace.open(key)
        return ws


def forget_workspaces() -> None:
    """Close and drop every shared workspace."""
    with _lock:
        for ws in _workspaces.values():
            ws.close()
        _workspaces.clear()


class WorkspaceKeywords:
    """``candidates(query, k) -> [(note path, score)]`` from the vault's workspace index.

    Scores are the index's keyword scores (best section of each note, 1.0 = best hit).
    ``error`` says why the index could not answer (then there are no candidates).

    ``workspace``: a function returning the vault's workspace with its index up to date
    (a server's ``ToolContext.ready_workspace``), so a server shares its own workspace
    and refresh schedule; without it the workspace is opened and refreshed here.
    """

    def __init__(
        self, vault: Path, refresh_interval: float = 1.0, workspace: Callable[[], Workspace] | None = None
    ):
        self.vault = Path(vault)
        self.provider = workspace
        self.refresh_interval = float(refresh_interval)
        self.error: str | None = None
        self._refreshed = float("-inf")
        self._memo: OrderedDict[tuple[str, int], tuple[int, list[tuple[str, float]]]] = OrderedDict()

    def workspace(self) -> Workspace:
        """The vault's workspace as it is (no refresh)."""
        return self.provider() if self.provider is not None else workspace_for(self.vault)

    def refresh(self, force: bool = False) -> Workspace:
        if self.provider is not None:
            return self.provider()
        ws = workspace_for(self.vault)
        if force or time.monotonic() - self._refreshed >= self.refresh_interval:
            if ws.has_index:
                ws.index(embeddings=ws.keeps_vectors)
            else:
                ws.ensure_index()
            # From the end: a first build can take longer than the interval itself.
            self._refreshed = time.monotonic()
        return ws

    def candidates(self, query: str, k: int, force_refresh: bool = False) -> list[tuple[str, float]]:
        self.error = None
        try:
            ws = self.refresh(force_refresh)
            catalogue = ws.catalogue()
            key = (query, k)
            memo = self._memo.get(key)
            if memo is not None and memo[0] == catalogue.generation:
                self._memo.move_to_end(key)
                return list(memo[1])
            # Hits are sections: ask for several per wanted note.
            hits = KeywordSearcher(ws.store).search(query, SECTIONS_PER_NOTE * k)
        except (SmartContextError, OSError, sqlite3.Error) as exc:
            self.error = f"keyword search over the vault's index failed ({exc})"
            return []
        best: dict[str, float] = {}
        for rowid, score in hits:
            entry = catalogue.entries.get(rowid)
            if entry is not None and score > best.get(entry.path, 0.0):
                best[entry.path] = float(score)
        found = sorted(best.items(), key=lambda kv: -kv[1])[:k]
        self._memo[key] = (catalogue.generation, found)
        if len(self._memo) > MEMO_SIZE:
            self._memo.popitem(last=False)
        return list(found)
