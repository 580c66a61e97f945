"""search_vault and keyword_search: thin calls into the workspace index.

Results keep the fields the agent's compaction reads (``source``, ``heading``,
``content``), plus where the section is and how it scored.
"""

from __future__ import annotations

from typing import Any

from ..notes.match import normalise_folder
from .base import VaultBase, tool
from .responses import ok
from ..validate import ToolError

NO_INDEX = (
    "search needs an index: open the vault as a Smart Context workspace "
    "(`smartcontext index <vault>`) and give it to the vault tools"
)


class SearchTools(VaultBase):
    @tool
    def search_vault(
        self,
        query: str,
        limit: int = 10,
        mode: str = "hybrid",
        folder: str | None = None,
        tags: list[str] | None = None,
    ) -> dict[str, Any]:
        return self._search(query, limit, mode, folder, tags)

    @tool
    def keyword_search(self, query: str, limit: int = 10) -> dict[str, Any]:
        return self._search(query, limit, "keyword", None, None)

    def _search(self, query: str, limit: int, mode: str, folder: str | None, tags: list[str] | None) -> dict[str, Any]:
        if not query.strip():
            raise ToolError("query cannot be empty")
        search = getattr(self.workspace, "search", None)
        if search is None:
            raise ToolError(NO_INDEX)
        prefix = ""
        text = normalise_folder(folder) if folder is not None else ""
        if text:
            target = self._resolve(text)
            if not target.is_dir():
                raise ToolError(f"Folder not found: {folder}")
            prefix = self._rel(target) + "/"
        kwargs: dict[str, Any] = {"limit": limit, "mode": mode}
        if prefix:
            kwargs["paths"] = [prefix.rstrip("/")]  # the index filters by folder prefix
        if tags:
            kwargs["tags"] = [t.lstrip("#") for t in tags]
        try:
            hits = search(query, **kwargs)
        except Exception as exc:
            raise ToolError(f"Search failed: {exc}") from None
        results = []
        for hit in hits:
            row = _row(hit)
            if prefix and not row["source"].startswith(prefix):
                continue  # the index already filters; this keeps the promise if it does not
            results.append(row)
            if len(results) >= limit:
                break
        if not results:
            return ok(f"No results found for '{query}'", results=[])
        return ok(results=results)


def _row(hit: Any) -> dict[str, Any]:
    get = hit.get if isinstance(hit, dict) else (lambda name, default=None: getattr(hit, name, default))
    row: dict[str, Any] = {
        "source": get("path", ""),
        "heading": get("heading", "") or "",
        "content": get("snippet", "") or "",
        "lines": [get("start_line", 0), get("end_line", 0)],
        "score": round(float(get("score", 0.0) or 0.0), 4),
        "id": get("id", ""),
    }
    signals = get("signals", None)
    if signals:
        row["signals"] = list(signals)
    return row
