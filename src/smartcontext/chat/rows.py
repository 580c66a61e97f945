"""One chat's message items in the workspace index.

The chat source makes each message an item (``sources.chat``): its row id scopes the
index's keyword search to this chat (``Store.keyword_search(..., within=rows)``), and its
``tokens`` is the exact count of the message's rendered history line, counted once when
the file was indexed. Rows are kept per chat file and read again only for the files the
index changed since (``Store.changed_paths``): after an append, the one log segment
written.
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import itemgetter
from typing import Any

from ..memory import collector_paused


class ChatRows:
    """Row id and exact token count by message id, for the files of one chat."""

    def __init__(self) -> None:
        self._store: Any = None
        self._generation: int | None = None
        self._paths: tuple[str, ...] = ()
        self._by_path: dict[str, dict[str, tuple[int, int]]] = {}
        self.by_message: dict[str, tuple[int, int]] = {}
        self.message_of: dict[int, str] = {}  # row id -> message id: the search's scope

    def refresh(self, store: Any, paths: Sequence[str]) -> "ChatRows":
        """Bring the rows up to date with ``store`` for the chat's files ``paths`` (the
        JSON file first, then its log segments, as the chat reads them)."""
        generation = store.generation()
        paths = tuple(paths)
        if store is self._store and generation == self._generation and paths == self._paths:
            return self
        with collector_paused():
            self._refresh(store, paths, generation)
        return self

    def _refresh(self, store: Any, paths: tuple[str, ...], generation: int) -> None:
        changed = (store.changed_paths(self._generation)
                   if store is self._store and self._generation is not None else None)
        stale = [p for p in paths if p not in self._by_path or changed is None or p in changed]
        gone = [p for p in self._by_path if p not in paths]
        fresh: dict[str, dict[str, tuple[int, int]]] = {p: {} for p in stale}
        if stale:
            # Built from columns at C speed: a long chat's first history reads 50,000 rows.
            for path, (rowids, mids, tokens) in store.item_size_columns(stale, "message").items():
                if path in fresh:
                    fresh[path] = dict(zip(mids, zip(rowids, tokens)))
        if paths[:1] == self._paths[:1] and paths[0] not in stale and not gone:
            # Only log segments changed (an append): their messages follow the JSON
            # file's, so the maps are patched rather than rebuilt for 50,000 messages.
            for p in stale:
                for mid, (rowid, _) in self._by_path.get(p, {}).items():
                    self.message_of.pop(rowid, None)
                    if self.by_message.get(mid, (None,))[0] == rowid:
                        del self.by_message[mid]
            self._by_path.update(fresh)
            for p in stale:
                for mid, row in fresh[p].items():
                    if mid not in self.by_message:
                        self.by_message[mid] = row
                        self.message_of[row[0]] = mid
        else:
            self._by_path.update(fresh)
            for p in gone:
                del self._by_path[p]
            by_message: dict[str, tuple[int, int]] = {}
            # A rewrite cut short leaves a message in two files: the chat reads the first,
            # so the earlier files are laid over the later ones.
            for p in reversed(paths):
                by_message.update(self._by_path[p])
            self.by_message = by_message
            self.message_of = dict(zip(map(itemgetter(0), by_message.values()), by_message))
        self._store, self._generation, self._paths = store, generation, paths
