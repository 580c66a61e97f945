"""The folder walk of the refresh before every question, remembered between processes.

A full walk lists every folder, reads every .gitignore, asks git for its excludes file and
classifies every file name through the source registry: most of a question's freshness
check on a large repository. Its answer only changes when a folder's listing changes (which
moves that folder's modification and change times), a .gitignore or exclude file changes, the
configuration changes, or the installed packages change (a plugin is added or removed;
a plugin edited in place to claim other files is seen once reinstalled). So the last walk is kept
beside the index with what it rested on, and a later walk that finds all of it unchanged
only stats the files it listed (their own changes are the indexer's to see, by stamp).

As git does for its untracked cache, a stamp taken within ``RACY_NS`` of the walk is never
trusted: a change made in the same clock tick as the walk could leave it equal.
"""

from __future__ import annotations

import os
import sys
import time
from stat import S_ISREG
from collections import Counter
from pathlib import Path

from ..sealed import load_sealed, save_sealed
from .discover import (
    IGNORE_FILE,
    DiscoveredFile,
    Discovery,
    DiscoveryOptions,
    WalkRecord,
    _git_dir,
    classify,
    discover,
    file_stamp,
    size_limit,
    stat_skip_reason,
    symlink_allowed,
)

# Bump when the saved shape or the meaning of a walk changes; an unknown file is ignored.
_MAGIC = b"smartcontext walk 4\n"
RACY_NS = 2_000_000_000
_HERE = Path(__file__).resolve().parent


def discover_cached(root: Path, options: DiscoveryOptions, cache: Path | None) -> Discovery:
    """``discover(root, options)``, from the walk saved at ``cache`` when nothing it rests
    on changed; otherwise a full walk, saved there for the next process."""
    if cache is None:
        return discover(root, options)
    root = root.resolve()
    key = _key(root, options)
    found = _reuse(root, options, cache, key) if key is not None else None
    if found is not None:
        return found
    started = time.time_ns()
    record = WalkRecord()
    found = discover(root, options, record)
    if key is not None and _save(cache, key, started, found, record):
        found.walk = started
    return found


def _key(root: Path, options: DiscoveryOptions) -> tuple | None:
    """Everything besides the folders themselves that a walk's answer depends on, or None
    when that cannot be told without a walk (git configuration with include directives)."""
    git = _git_inputs(root) if options.respect_gitignore else ()
    if git is None:
        return None
    return (
        str(root), tuple(options.include), tuple(options.exclude), options.max_file_bytes,
        options.respect_gitignore, options.index_text_files, git,
        # Which source claims a file: the built-in sources and languages, and plugins
        # (installing or removing a package changes its folder on sys.path).
        # sys.path[0] is the script's or the current folder, which differs between ways of
        # starting the same program; packages live further on.
        # Sorted: the order of sys.path differs between `python -m`, `-c` and a script.
        _tree_stamps(_HERE),
        tuple(sorted((file_stamp(p) for p in sys.path[1:] if p and os.path.isdir(p)), key=repr)),
    )


def _tree_stamps(folder: Path) -> tuple:
    out = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        out += [(f, file_stamp(os.path.join(dirpath, f))) for f in sorted(filenames) if f.endswith(".py")]
    return tuple(out)


def _git_inputs(root: Path) -> tuple | None:
    """Stamps of what git's excludes come from: info/exclude and the configuration files
    that can name core.excludesFile (and the environment that picks them). None when a
    configuration file includes others: those cannot be followed here."""
    git_dir = _git_dir(root)
    if git_dir is None:
        return ()
    home = Path.home()
    xdg = Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")
    configs = [git_dir / "config", git_dir / "config.worktree", home / ".gitconfig", xdg / "git" / "config",
               Path("/etc/gitconfig")]
    for p in configs:
        try:
            text = p.read_text(encoding="utf-8", errors="replace").lower()
        except OSError:
            continue
        if "[include" in text:
            return None
    env = tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith("GIT_")))
    default_excludes = xdg / "git" / "ignore"
    return (str(git_dir), env, str(home), str(xdg), tuple(file_stamp(p) for p in configs),
            file_stamp(git_dir / "info" / "exclude"), file_stamp(default_excludes))


def _trusted(stamp: tuple | None, before: int) -> bool:
    return stamp is None or stamp[0] < before


def _reuse(root: Path, options: DiscoveryOptions, cache: Path, key: tuple) -> Discovery | None:
    state = _load(cache)
    if state is None or state.get("key") != key:
        return None
    before = state["started"] - RACY_NS
    if not all(_trusted(s, before) for s in _stamps_in(key)):
        return None
    # Plain strings, not Paths: this loop runs for every folder and file of the index
    # before every question (a Path per file was a third of it on a 6,500-note vault).
    # The saved names are relative "/" paths, so joining is a concatenation.
    top = str(root)
    prefix = top if top.endswith("/") else top + "/"
    join, stat_of = os.path.join, os.stat
    for rel, (mtime, ctime, *ignores) in state["dirs"].items():
        folder = prefix + rel if rel else top
        try:
            st = stat_of(folder)
        except OSError:
            return None
        # A folder's listing moves both times; a tool that puts the modification time back
        # after adding files (tar -x, rsync -t) cannot put back its change time.
        if st.st_mtime_ns != mtime or st.st_ctime_ns != ctime or mtime >= before:
            return None
        for name, ignore in zip((".gitignore", IGNORE_FILE), ignores):
            stamp = file_stamp(join(folder, name))
            if stamp != ignore or not _trusted(stamp, before):
                return None
    for rel, allowed in state["symlinks"].items():
        if symlink_allowed(root / rel, root) != allowed:
            return None
    for rel, why in state["stat_skipped"].items():
        try:
            skipped_st: os.stat_result | None = os.stat(root / rel)
        except OSError:
            skipped_st = None
        kind = classify(rel)
        if stat_skip_reason(skipped_st, options, kind[0] if kind else None) != why:
            return None
    result = Discovery(skipped=Counter(state["skipped"]), skipped_files=dict(state["skipped_files"]),
                       walk=state["started"])
    files = result.files
    regular, limits = S_ISREG, {}
    for rel, source, language in state["files"]:
        path = prefix + rel
        try:
            st = stat_of(path)
        except OSError:
            return None
        if source not in limits:
            limits[source] = size_limit(options, source)
        if not regular(st.st_mode) or st.st_size > limits[source]:  # stat_skip_reason, inline
            return None
        files.append(DiscoveredFile(rel, path, source, language, st.st_mtime_ns, st.st_size, st.st_ctime_ns))
    return result


def _stamps_in(key: tuple) -> list[tuple]:
    """The file stamps (mtime first) held anywhere in ``key``."""
    out: list[tuple] = []

    def walk(value: object) -> None:
        if isinstance(value, tuple):
            if len(value) == 4 and all(isinstance(v, int) for v in value):
                out.append(value)
            else:
                for v in value:
                    walk(v)

    walk(key)
    return out


def _load(cache: Path) -> dict | None:
    state = load_sealed(cache, _MAGIC)  # None when missing, torn or damaged: walk again
    need = ("key", "started", "dirs", "symlinks", "stat_skipped", "files", "skipped", "skipped_files")
    return state if isinstance(state, dict) and all(k in state for k in need) else None


def _save(cache: Path, key: tuple, started: int, found: Discovery, record: WalkRecord) -> bool:
    """Whether it was saved (best effort: a read-only or missing index folder only costs a walk)."""
    state = {
        "key": key, "started": started, "dirs": record.dirs, "symlinks": record.symlinks,
        "stat_skipped": record.stat_skipped, "skipped": dict(found.skipped),
        "skipped_files": found.skipped_files,
        "files": [(f.path, f.source, f.language) for f in found.files],
    }
    try:
        save_sealed(cache, _MAGIC, state)
    except OSError:
        return False
    return True
