"""Copy an index from one store to another (SQLite to PostgreSQL, or back) without
parsing a file or embedding a text again: file rows, items, edges, full-text values and
the vectors of the items, as they are."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from .base import Store

# Files per transaction in the destination: large enough to amortise commits, small
# enough that a failure loses little and readers of a shared database see progress.
BATCH_FILES = 50
VECTOR_BATCH = 2000


@dataclass
class CopyStats:
    source: str
    destination: str
    files: int = 0
    items: int = 0
    edges: int = 0
    vectors: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def copy_index(
    src: Store, dst: Store, progress: Callable[[str, int, int], None] | None = None
) -> CopyStats:
    """Make ``dst`` hold what ``src`` holds: every file of ``src`` replaces the same file
    in ``dst`` (files only ``dst`` has are removed), then every item's vector is put in
    ``dst``'s embedding cache under its model and content hash.

    progress: called as ``progress(phase, done, total)`` (phases "files", "vectors").
    """
    t0 = time.perf_counter()
    stats = CopyStats(src.location, dst.location)
    paths = sorted(src.file_states())
    stale = set(dst.file_states()) - set(paths)
    if stale:
        dst.delete_files(sorted(stale))
    for start in range(0, len(paths), BATCH_FILES):
        chunk = paths[start : start + BATCH_FILES]
        with dst.batch():
            for rec in src.file_records(chunk):
                dst.replace_file(
                    path=rec.path, mtime_ns=rec.mtime_ns, size=rec.size, hash=rec.hash,
                    language=rec.language, source=rec.source, module=rec.module,
                    warnings=rec.warnings, items=rec.items, edges=rec.edges,
                )
                stats.files += 1
                stats.items += len(rec.items)
                stats.edges += len(rec.edges)
        if progress:
            progress("files", stats.files, len(paths))
    # A store with a vector index (pgvector HNSW) builds it once after the load when none
    # exists yet, rather than growing it vector by vector.
    deferred = getattr(dst, "deferred_vector_index", None)
    with deferred() if deferred else contextlib.nullcontext():
        for model in sorted(src.vector_models()):
            rowids, matrix = src.load_vectors(model)
            hashes = {r: si.content_hash for r, si in src.items_by_rowids(rowids.tolist()).items()}
            rows = {hashes[int(r)]: matrix[i] for i, r in enumerate(rowids) if int(r) in hashes}
            pairs = list(rows.items())
            for start in range(0, len(pairs), VECTOR_BATCH):
                dst.cache_vectors(model, pairs[start : start + VECTOR_BATCH])
                if progress:
                    progress("vectors", min(start + VECTOR_BATCH, len(pairs)), len(pairs))
            stats.vectors[model] = len(pairs)
    last = src.get_meta("last_indexed")
    if last:
        dst.set_meta("last_indexed", last)
    stats.seconds = round(time.perf_counter() - t0, 3)
    return stats


# Where a workspace folder keeps its SQLite index (workspace.INDEX_DIR / INDEX_FILE).
_FOLDER_INDEX = (".smartcontext", "index.db")


def _resolve(location: str, must_exist: bool) -> tuple[str, str | None]:
    """(what open_store takes, a default workspace name) for a URL, an index file or a
    workspace folder."""
    from pathlib import Path

    from ..errors import InvalidArgument

    if "://" in location:
        return location, None
    p = Path(location).expanduser()
    if p.is_dir():
        name = p.resolve().name
        p = p.joinpath(*_FOLDER_INDEX)
        if must_exist and not p.exists():
            raise InvalidArgument(f"{location} has no index ({p}); run `smartcontext index {location}` first")
        p.parent.mkdir(exist_ok=True)
        return str(p), name
    if must_exist and not p.is_file():
        raise InvalidArgument(f"no index at {location}: give a workspace folder, an index file or a URL")
    parent = p.resolve().parent
    return str(p), (parent.parent.name if parent.name == _FOLDER_INDEX[0] else None)


def copy_store(
    source: str, destination: str, workspace: str | None = None,
    progress: Callable[[str, int, int], None] | None = None,
) -> CopyStats:
    """``smartcontext store copy SRC DST``: open both (a workspace folder, an index file or
    a ``postgresql://`` URL) and copy SRC's index into DST.

    workspace: the workspace name on the PostgreSQL side (default: the folder's name, or
               ``?workspace=`` in the URL).
    """
    from . import open_store

    src_loc, src_name = _resolve(source, must_exist=True)
    dst_loc, dst_name = _resolve(destination, must_exist=False)
    name = workspace or src_name or dst_name
    src = open_store(src_loc, workspace=workspace or src_name or dst_name)
    try:
        dst = open_store(dst_loc, workspace=name)
        try:
            return copy_index(src, dst, progress)
        finally:
            dst.close()
    finally:
        src.close()
