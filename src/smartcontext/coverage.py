"""What the index covers: the files it holds and the ones it left out, with why
(``smartcontext files``, the ``files`` tool, ``status``)."""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from .notes.match import PathFilter

if TYPE_CHECKING:
    from .workspace import Workspace

# A parse that failed still indexes the file, as text windows: listed with the skipped
# files under this reason, since its symbols are missing.
PARSE_ERROR = "parse error (indexed as text)"
MINIFIED = "minified (indexed as text)"
_PARSE_FAILED = ("could not parse", "failed (")
_MINIFIED = "(minified?)"


@dataclass
class IndexedFile:
    """A file in the index: the source that read it, its items, their estimated tokens
    (about 4 bytes a token) and how many have a vector of the configured model."""

    path: str
    source: str
    language: str
    items: int
    tokens: int
    vectors: int
    warnings: list[str] = field(default_factory=list)


@dataclass
class SkippedFile:
    """A file or folder (ending in "/") the index left out, and why: ignored (.gitignore,
    .smartcontextignore, [index] exclude), not included ([index] include), vendored,
    symlink, generated, too large, not a regular file, binary, unreadable; or a file
    whose parse failed or whose lines are minified (``PARSE_ERROR``, ``MINIFIED``:
    indexed, but as text windows without symbols)."""

    path: str
    reason: str


@dataclass
class Coverage:
    """``files``: indexed files by path; ``skipped``: left out, by path; ``summary``:
    how many were skipped for each reason (of all of them, whatever ``path`` was)."""

    root: str
    files: list[IndexedFile]
    skipped: list[SkippedFile]
    summary: dict[str, int]

    def to_dict(self) -> dict[str, Any]:
        return {
            "root": self.root,
            "files": [asdict(f) for f in self.files],
            "file_count": len(self.files),
            "skipped": [asdict(s) for s in self.skipped],
            "skipped_count": len(self.skipped),
            "skipped_by_reason": self.summary,
        }


def skipped_reasons(ws: Workspace) -> dict[str, str]:
    """path -> why the last index run left it out (folders end with "/"), with the files
    whose parse failed."""
    from .indexer import skipped_files

    if not ws.has_index:
        return {}
    out = skipped_files(ws.store)
    if out is not None:
        for path, warnings in ws.store.file_warnings().items():
            if any(m in w for w in warnings for m in _PARSE_FAILED):
                out[path] = PARSE_ERROR
            elif any(_MINIFIED in w for w in warnings):
                out[path] = MINIFIED
    return out


def skipped_by_name(reasons: dict[str, str]) -> dict[str, list[tuple[str, str]]]:
    """Skipped files by lower-cased file name and stem (``big.py`` and ``big``), for a
    question that names one."""
    out: dict[str, list[tuple[str, str]]] = {}
    for p, why in reasons.items():
        if p.endswith("/"):
            continue
        name = p.rsplit("/", 1)[-1].lower()
        for key in {name, name.split(".", 1)[0]}:
            out.setdefault(key, []).append((p, why))
    return out


def coverage(ws: Workspace, path: str | None = None, indexed: bool = True, skipped: bool = True) -> Coverage:
    """The indexed and skipped files under ``path`` (a folder, file or glob; None: all).

    indexed, skipped: which of the two lists to fill (the summary is always complete).
    """
    where = PathFilter([path]) if path else None
    reasons = skipped_reasons(ws)
    summary = dict(Counter(reasons.values()).most_common())
    files: list[IndexedFile] = []
    if indexed and ws.has_index:
        files = _indexed(ws, where)
    left_out = []
    if skipped:
        for p, why in sorted(reasons.items()):
            # A folder matches a filter on its path; a filter inside it matches it too
            # (``files src/gen/x.py --skipped`` explains the ignored ``src/gen/``).
            if where is None or where.allows(p.rstrip("/")) or (p.endswith("/") and path
                                                               and path.strip("/").startswith(p)):
                left_out.append(SkippedFile(p, why))
    return Coverage(str(ws.root), files, left_out, summary)


def _indexed(ws: Workspace, where: PathFilter | None) -> list[IndexedFile]:
    cat = ws.catalogue()
    states = ws.store.file_states()
    warnings = ws.store.file_warnings()
    missing: Counter = Counter()
    if ws.config.embeddings.active:
        try:
            model = ws.embedder().name
        except Exception:  # an unusable model: no file counts as embedded
            model = None
        if model is not None:
            for rowid, _ in ws.store.items_missing_vectors(model):
                e = cat.entries.get(rowid)
                if e is not None:
                    missing[e.path] += 1
            has_vectors = True
        else:
            has_vectors = False
    else:
        has_vectors = False
    out = []
    for p in sorted(states):
        if where is not None and not where.allows(p):
            continue
        st = states[p]
        rows = cat.by_path.get(p, [])
        mod = cat.module_of_path.get(p)
        if mod is not None and mod in cat.entries:
            tokens = cat.entries[mod].tokens
        else:  # no item stands for the whole file: its top-level items do
            tokens = sum(cat.entries[r].tokens for r in rows if not cat.entries[r].parent_id)
        vectors = len(rows) - missing[p] if has_vectors else 0
        out.append(IndexedFile(p, st.source, st.language, len(rows), tokens, max(0, vectors),
                               list(warnings.get(p, []))))
    return out
