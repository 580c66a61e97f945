"""BM25 over the vault's notes, for queries no local model can embed.

An in-memory SQLite FTS5 table holds each note's title and text; a note is re-read only
when its (mtime, size) changed. It is built on the first fallback query, so vaults whose
model is available never pay for it.
"""

from __future__ import annotations

import re
import sqlite3
import threading
from collections.abc import Iterable

from .notes import VaultNotes, note_title, split_frontmatter

_WORD = re.compile(r"\w+", re.UNICODE)
# Title words count more than body words, as in most note search tools.
_TITLE_WEIGHT = 4.0
_BODY_WEIGHT = 1.0


def query_terms(query: str) -> list[str]:
    """Distinct lower-case words of two characters or more, in query order."""
    seen: list[str] = []
    for word in _WORD.findall(query.lower()):
        if len(word) >= 2 and word not in seen:
            seen.append(word)
    return seen


class NoteKeywordIndex:
    """Notes (by vault-relative path) in an FTS5 table, kept in step by ``sync``."""

    def __init__(self, notes: VaultNotes):
        self.notes = notes
        self._db = sqlite3.connect(":memory:", check_same_thread=False)
        self._db.execute(
            "CREATE VIRTUAL TABLE notes USING fts5(title, body, tokenize='unicode61 remove_diacritics 2')"
        )
        self._lock = threading.Lock()
        self._rows: dict[str, tuple[int, int, int]] = {}  # path -> (rowid, mtime_ns, size)
        self._paths: dict[int, str] = {}
        self._next = 1
        self.reads = 0

    def __len__(self) -> int:
        return len(self._rows)

    def sync(self, paths: Iterable[str]) -> int:
        """Index exactly ``paths``: (re)read changed notes, drop the others. Returns notes read."""
        wanted = set(paths)
        read = 0
        with self._lock, self._db:
            for path in [p for p in self._rows if p not in wanted]:
                self._drop(path)
            for path in wanted:
                st = self.notes.stat(path)
                known = self._rows.get(path)
                if st is None:
                    if known:
                        self._drop(path)
                    continue
                if known and (known[1], known[2]) == (st.st_mtime_ns, st.st_size):
                    continue
                text = self.notes.read_text(path)
                if text is None:
                    continue
                if known:
                    self._drop(path)
                frontmatter, body_start = split_frontmatter(text)
                body = "\n".join(text.splitlines()[body_start - 1 :])
                folders = " ".join(path.split("/")[:-1])
                rowid = self._next
                self._next += 1
                self._db.execute(
                    "INSERT INTO notes(rowid, title, body) VALUES (?, ?, ?)",
                    (rowid, note_title(path, frontmatter), f"{folders}\n{body}"),
                )
                self._rows[path] = (rowid, st.st_mtime_ns, st.st_size)
                self._paths[rowid] = path
                read += 1
        self.reads += read
        return read

    def search(self, query: str, k: int) -> list[tuple[str, float]]:
        """Up to ``k`` (path, score) pairs, best first; score is BM25 (higher is better)."""
        terms = query_terms(query)
        if not terms:
            return []
        match = " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
        with self._lock:
            rows = self._db.execute(
                "SELECT rowid, bm25(notes, ?, ?) AS r FROM notes WHERE notes MATCH ? ORDER BY r LIMIT ?",
                (_TITLE_WEIGHT, _BODY_WEIGHT, match, int(k)),
            ).fetchall()
        return [(self._paths[rowid], -float(r)) for rowid, r in rows if rowid in self._paths]

    def _drop(self, path: str) -> None:
        rowid = self._rows.pop(path)[0]
        self._paths.pop(rowid, None)
        self._db.execute("DELETE FROM notes WHERE rowid = ?", (rowid,))
