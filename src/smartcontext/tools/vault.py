"""The vault tools (files, links, frontmatter, preferences, vault search) of
``smartcontext.vault`` as registry tools, with the index kept fresh by their writes."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .spec import ToolContext, ToolSpec

# Vault tools that change files (everything else only reads); used for MCP annotations.
VAULT_WRITE_TOOLS = frozenset({
    "create_file", "move_file", "batch_move_files", "append_to_file", "update_frontmatter",
    "save_preference", "remove_preference", "log_interaction",
})
# ...and those that may replace or remove content rather than only add to it.
VAULT_DESTRUCTIVE_TOOLS = frozenset({
    "create_file", "move_file", "batch_move_files", "update_frontmatter", "remove_preference",
})


class _IndexForVault:
    """What the vault tools expect of a workspace, routed through the context so their
    searches see a fresh index and their writes keep it fresh."""

    def __init__(self, ctx: ToolContext):
        self._ctx = ctx
        self._indexed = False
        self._deferred = threading.local()

    def update_files(self, paths: list[str]) -> None:
        collected = getattr(self._deferred, "paths", None)
        if collected is not None:
            collected.extend(paths)
            return
        self._ctx.files_changed(paths)

    @contextmanager
    def deferring(self, into: list[str]) -> Iterator[None]:
        """Collect the paths this thread's writes change into ``into``, for
        ``files_changed`` once the vault's write lock is let go (``vault_tools``). A nested
        deferral gives the outer one back when it ends."""
        outer = getattr(self._deferred, "paths", None)
        self._deferred.paths = into
        try:
            yield
        finally:
            self._deferred.paths = outer

    def links_to(self, name: str):
        """The links that may resolve to the note ``name``, from the index
        (``notes.link_index.NameLinks``); None while there is no index (it is not built
        for this: the vault tools read the notes instead)."""
        from ..notes.link_index import NameLinks, link_key

        # Counting the index's files is a query of its own (25 ms on PostgreSQL): once
        # there is an index, there stays one.
        if not self._indexed:
            if not self._ctx.workspace.has_index:
                return None
            self._indexed = True
        ws = self._ctx.ready_workspace()
        with self._ctx.reading():
            paths, links = ws.store.links_ending(link_key(name))
        return NameLinks(name, paths, links)

    def search(self, query: str, **options: Any):
        ws = self._ctx.ready_workspace()
        with self._ctx.reading():
            return ws.search(query, **options)


def vault_tools(ctx: ToolContext) -> list[ToolSpec]:
    """The vault tools (files, links, frontmatter, preferences, search) of smartcontext.vault."""
    from ..vault import TOOL_SPECS, VaultTools
    from ..vault.base import index_not_updated

    index = ctx.shared("vault-index", lambda: _IndexForVault(ctx))
    tools = ctx.shared("vault", lambda: VaultTools(ctx.root, workspace=index))

    def read(name: str, args: dict[str, Any]) -> dict[str, Any]:
        return tools.call_checked(name, args)

    def write(name: str, args: dict[str, Any]) -> dict[str, Any]:
        # Writes run one at a time (across processes the vault's file lock serialises them
        # too); the files they changed are re-indexed after the lock is let go, so a write
        # waits for the writes before it, not for their re-indexing as well (16 MCP clients
        # saving at once queued every save behind every re-index, 2 s on PostgreSQL). The
        # index reads each file as it is then: the later of two writes to one file wins.
        changed: list[str] = []
        try:
            with index.deferring(changed), ctx.vault_lock:
                data = tools.call_checked(name, args)
        finally:
            warning = None
            if changed:  # also when the tool failed part-way: what it wrote is re-indexed
                try:
                    ctx.files_changed(list(dict.fromkeys(changed)))
                except Exception as exc:  # the write happened: a warning, not a failed call
                    warning = index_not_updated(exc)
        return data if warning is None else {**data, "warning": warning}

    specs = []
    for s in TOOL_SPECS:
        name = s["name"]
        read_only = name not in VAULT_WRITE_TOOLS

        def handler(args: dict[str, Any], _name: str = name, _run=read if read_only else write) -> dict[str, Any]:
            return _run(_name, args)

        # Reads take no lock: a note is replaced whole (temp file + rename), so a read sees
        # it before or after a write, and never waits for one, nor for the re-indexing that
        # follows it.
        specs.append(ToolSpec(
            name, s["description"], s["parameters"], handler,
            read_only=read_only, destructive=name in VAULT_DESTRUCTIVE_TOOLS, provider="vault",
        ))
    return specs
