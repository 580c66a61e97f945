"""Copy an index from one store to another (SQLite to PostgreSQL, or back) without
parsing a file or embedding a text again: file rows, items, edges, full-text values and
the vectors of the items, as they are.

A copy destroys nothing by surprise: a source that does not exist or is empty is refused
before anything is opened or created; a destination that already holds an index is
replaced only with ``force``; :func:`plan_copy` says what a copy would change. The
destination records a copy in progress (meta ``copy``) and marks it complete only at the
end, so a copy cut short is reported as such, never taken for a whole index.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InvalidArgument, did_you_mean
from .base import Store

# Files per transaction in the destination: large enough that a batch is a few bulk
# statements, small enough that a failure loses little and readers see progress.
BATCH_FILES = 200
VECTOR_BATCH = 5000
# Meta key of the destination: {"state": "copying" | "complete", "source", "started", ...}.
COPY_META = "copy"
# Where a workspace folder keeps its SQLite index (workspace.INDEX_DIR / INDEX_FILE).
_FOLDER_INDEX = (".smartcontext", "index.db")


@dataclass
class CopyStats:
    source: str
    destination: str
    files: int = 0
    items: int = 0
    edges: int = 0
    vectors: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    replaced_files: int = 0
    """Files the destination held before the copy (all replaced or removed)."""
    previous_copy: dict[str, Any] | None = None
    """The destination's earlier copy that was cut short (its source and start), if any."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class CopyPlan:
    """What ``store copy`` would do, learnt without writing or creating anything."""

    source: str
    destination: str
    source_counts: dict[str, int]
    destination_counts: dict[str, int] | None
    """None when the destination does not exist yet (the copy creates it)."""
    new_files: int = 0
    changed_files: int = 0
    unchanged_files: int = 0
    removed_files: int = 0
    previous_copy: dict[str, Any] | None = None
    needs_force: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def describe(self) -> str:
        s = self.source_counts
        lines = [
            f"Would copy {s['files']:,} file(s), {s['items']:,} items, {s['edges']:,} edges and "
            f"{s['vectors']:,} vectors from {self.source} to {self.destination}."
        ]
        d = self.destination_counts
        if d is None:
            lines.append("The destination does not exist yet: it would be created.")
        elif not d["files"]:
            lines.append("The destination exists and is empty.")
        else:
            lines.append(
                f"The destination holds {d['files']:,} file(s) and {d['items']:,} items: "
                f"{self.new_files:,} file(s) would be added, {self.changed_files:,} replaced by a "
                f"different version, {self.unchanged_files:,} rewritten unchanged and "
                f"{self.removed_files:,} removed."
            )
        if self.previous_copy:
            lines.append(f"An earlier copy into it was cut short ({copy_origin(self.previous_copy)}); "
                         f"this copy would replace what it left.")
        elif self.needs_force:
            lines.append("It already holds an index: the copy needs --force.")
        return "\n".join(lines)


@dataclass
class _Place:
    """One side of a copy: what ``open_store`` takes, and how to name it in messages."""

    given: str
    target: str
    url: str | None = None  # a PostgreSQL URL (without its workspace=)
    workspace: str | None = None

    @property
    def label(self) -> str:
        if self.url is None:
            return self.given
        from .postgres import redact

        return f"{redact(self.url)} workspace {self.workspace!r}"

    def exists(self) -> bool:
        if self.url is None:
            return Path(self.target).is_file()
        from .postgres import workspace_info

        return workspace_info(self.url, self.workspace or "") is not None

    def open(self) -> Store:
        from . import open_store

        if self.url is None:
            Path(self.target).parent.mkdir(parents=True, exist_ok=True)
        return open_store(self.target, workspace=self.workspace)


def _places(source: str, destination: str, workspace: str | None) -> tuple[_Place, _Place]:
    """Both sides, with the workspace of each PostgreSQL side: the URL's ``workspace=``,
    else ``--workspace``, else the name of the folder on the other side."""
    src, src_folder = _local(source, is_source=True)
    dst, dst_folder = _local(destination, is_source=False)
    for place, other_folder in ((src, dst_folder), (dst, src_folder)):
        if place.url is None:
            continue
        from .postgres import is_postgres_url, split_url

        if not is_postgres_url(place.given):
            raise InvalidArgument(
                f"no store for {place.given.split('://', 1)[0]!r} URLs ({place.given}); use a folder, "
                f"an index file or postgresql://user@host/database"
            )
        conninfo, in_url = split_url(place.given)
        if in_url and workspace and in_url != workspace:
            raise InvalidArgument(
                f"{place.given} names workspace {in_url!r} and --workspace names {workspace!r}; give one"
            )
        place.url, place.workspace = conninfo, in_url or workspace or other_folder
        place.target = place.given
        if not place.workspace:
            raise InvalidArgument(
                f"which workspace of {place.label}? Add --workspace NAME or &workspace=NAME to the URL"
                + _existing(place.url)
            )
    if src.url == dst.url and src.workspace == dst.workspace and src.target == dst.target:
        raise InvalidArgument(f"the source and the destination are the same index ({src.label})")
    return src, dst


def _local(location: str, is_source: bool) -> tuple[_Place, str | None]:
    """A place for a URL (its workspace filled in later), an index file or a workspace
    folder, and the folder's name (the default workspace name on the other side)."""
    if "://" in location:
        if location.startswith("sqlite://"):
            location = location[len("sqlite://"):]
        else:
            return _Place(location, location, url=location), None
    p = Path(location).expanduser()
    if p.is_dir():
        index = p.joinpath(*_FOLDER_INDEX)
        if is_source and not index.is_file():
            raise InvalidArgument(f"{location} has no index ({index}); run `smartcontext index {location}` first")
        return _Place(location, str(index)), p.resolve().name
    if is_source and not p.is_file():
        raise InvalidArgument(f"no index at {location}: give a workspace folder, an index file or a URL")
    parent = p.resolve().parent
    return _Place(location, str(p)), (parent.parent.name if parent.name == _FOLDER_INDEX[0] else None)


def _existing(url: str) -> str:
    from .postgres import list_workspaces

    names = [f"{w.name} ({w.files:,} files)" for w in list_workspaces(url)]
    return f"; workspaces there: {', '.join(names)}" if names else "; the database has no workspace yet"


def _check_source(src: _Place) -> None:
    """Refuse a source that does not exist or holds nothing, naming what does exist."""
    if src.url is not None:
        from .postgres import list_workspaces, schema_name

        listed = list_workspaces(src.url)
        info = next((w for w in listed if w.schema == schema_name(src.workspace or "")), None)
        if info is None:
            hint = did_you_mean(src.workspace or "", [w.name for w in listed])
            raise InvalidArgument(f"no workspace {src.workspace!r} in {src.url.split('?')[0]}{hint}"
                                  + _existing(src.url))
        if not info.files:
            raise InvalidArgument(f"workspace {src.workspace!r} is empty (0 files): nothing to copy"
                                  + _existing(src.url))


def copy_origin(meta: dict[str, Any]) -> str:
    return f"from {meta.get('source', '?')}, started {meta.get('started', '?')}"


def _copy_meta(store: Store) -> dict[str, Any] | None:
    raw = store.get_meta(COPY_META)
    try:
        value = json.loads(raw) if raw else None
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def incomplete_copy(store: Store) -> str | None:
    """A sentence when ``store`` holds a ``store copy`` that never finished, else None."""
    meta = _copy_meta(store)
    if meta and meta.get("state") == "copying":
        return (f"this index is an unfinished `store copy` ({copy_origin(meta)}); run the copy "
                f"again (or `smartcontext index`) to complete it")
    return None


def _plan(src_store: Store, dst_store: Store | None, src: _Place, dst: _Place) -> CopyPlan:
    src_files = src_store.file_states()
    counts = src_store.counts()
    if not counts["files"]:
        raise InvalidArgument(f"the index at {src.label} is empty (0 files): nothing to copy")
    plan = CopyPlan(src.label, dst.label, counts, dst_store.counts() if dst_store else None)
    dst_files = dst_store.file_states() if dst_store else {}
    for path, state in src_files.items():
        old = dst_files.get(path)
        if old is None:
            plan.new_files += 1
        elif old.hash == state.hash:
            plan.unchanged_files += 1
        else:
            plan.changed_files += 1
    plan.removed_files = len(set(dst_files) - set(src_files))
    if dst_store is not None:
        previous = _copy_meta(dst_store)
        if previous and previous.get("state") == "copying":
            plan.previous_copy = previous
        plan.needs_force = bool(dst_files) and plan.previous_copy is None
    return plan


@contextlib.contextmanager
def _opened(source: str, destination: str, workspace: str | None, create: bool):
    """(source store, destination store or None when it does not exist and ``create`` is
    False, both places); checks the source before opening anything."""
    src, dst = _places(source, destination, workspace)
    _check_source(src)
    with contextlib.ExitStack() as stack:
        src_store = src.open()
        stack.callback(src_store.close)
        dst_store = None
        if create or dst.exists():
            dst_store = dst.open()
            stack.callback(dst_store.close)
        yield src_store, dst_store, src, dst


def plan_copy(source: str, destination: str, workspace: str | None = None) -> CopyPlan:
    """What ``copy_store`` with the same arguments would change (``--dry-run``); creates
    nothing, writes nothing."""
    with _opened(source, destination, workspace, create=False) as (src_store, dst_store, src, dst):
        return _plan(src_store, dst_store, src, dst)


def copy_store(
    source: str, destination: str, workspace: str | None = None, force: bool = False,
    progress: Callable[[str, int, int], None] | None = None,
) -> CopyStats:
    """``smartcontext store copy SRC DST``: open both (a workspace folder, an index file or
    a ``postgresql://`` URL) and copy SRC's index into DST.

    workspace: the workspace name on the PostgreSQL side (default: ``workspace=`` in the
               URL, else the folder's name on the other side).
    force: replace an index DST already holds (refused otherwise, before anything is
           written). A DST that holds an unfinished copy is replaced without it.
    """
    plan = plan_copy(source, destination, workspace)
    if plan.needs_force and not force:
        d = plan.destination_counts or {}
        raise InvalidArgument(
            f"{plan.destination} already holds an index ({d.get('files', 0):,} files, {d.get('items', 0):,} "
            f"items); --force replaces it with the copy, --dry-run shows what would change"
        )
    with _opened(source, destination, workspace, create=True) as (src_store, dst_store, _src, _dst):
        return copy_index(src_store, dst_store, progress)


def copy_index(
    src: Store, dst: Store, progress: Callable[[str, int, int], None] | None = None
) -> CopyStats:
    """Make ``dst`` hold what ``src`` holds: every file of ``src`` replaces the same file
    in ``dst`` (files only ``dst`` has are removed), then every item's vector is put in
    ``dst``'s embedding cache under its model and content hash. ``dst`` records the copy
    as in progress first and complete last.

    progress: called as ``progress(phase, done, total)`` (phases "files", "vectors").
    """
    t0 = time.perf_counter()
    stats = CopyStats(src.location, dst.location)
    previous = _copy_meta(dst)
    if previous and previous.get("state") == "copying":
        stats.previous_copy = previous
    started = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    dst.set_meta(COPY_META, json.dumps({"state": "copying", "source": src.location, "started": started}))
    paths = sorted(src.file_states())
    before = set(dst.file_states())
    stats.replaced_files = len(before)
    stale = before - set(paths)
    if stale:
        dst.delete_files(sorted(stale))
    hashes: set[str] = set()
    # Into an empty workspace, a store with keyword indexes builds them once at the end.
    first_load = getattr(dst, "first_load", None)
    with first_load(len(paths)) if first_load else contextlib.nullcontext():
        for start in range(0, len(paths), BATCH_FILES):
            records = list(src.file_records(paths[start : start + BATCH_FILES]))
            dst.load_files(records)
            for rec in records:
                stats.files += 1
                stats.items += len(rec.items)
                stats.edges += len(rec.edges)
                hashes.update(row[3] for row in rec.items)
            if progress:
                progress("files", stats.files, len(paths))
    # A store with a vector index (pgvector HNSW) builds it once after the load when none
    # exists yet, rather than growing it vector by vector.
    deferred = getattr(dst, "deferred_vector_index", None)
    wanted = sorted(hashes)
    with deferred() if deferred else contextlib.nullcontext():
        for model in sorted(src.vector_models()):
            copied = 0
            for start in range(0, len(wanted), VECTOR_BATCH):
                vectors = src.cached_vectors(model, wanted[start : start + VECTOR_BATCH])
                if vectors:
                    dst.cache_vectors(model, list(vectors.items()))
                copied += len(vectors)
                if progress:
                    progress("vectors", min(start + VECTOR_BATCH, len(wanted)), len(wanted))
            stats.vectors[model] = copied
    # What parsed the files comes with them: without it, the destination's first run would
    # read every file again as if parsed by an older reader (indexer.READER_VERSIONS).
    for key in ("last_indexed", "reader_versions"):
        value = src.get_meta(key)
        if value:
            dst.set_meta(key, value)
    stats.seconds = round(time.perf_counter() - t0, 3)
    dst.set_meta(COPY_META, json.dumps({
        "state": "complete", "source": src.location, "started": started,
        "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "files": stats.files, "items": stats.items,
    }))
    return stats


def finish_copy_by_index(store: Store) -> None:
    """An index run over the workspace's folder completes an unfinished copy: what the copy
    did not bring, the run indexed."""
    meta = _copy_meta(store)
    if meta and meta.get("state") == "copying":
        store.set_meta(COPY_META, json.dumps({**meta, "state": "completed by index",
                                              "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z")}))
