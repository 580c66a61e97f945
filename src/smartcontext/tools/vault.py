"""The vault tools (files, links, frontmatter, preferences, vault search) of
``smartcontext.vault`` as registry tools, with the index kept fresh by their writes."""

from __future__ import annotations

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

    def update_files(self, paths: list[str]) -> None:
        self._ctx.files_changed(paths)

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

    tools = ctx.shared("vault", lambda: VaultTools(ctx.root, workspace=_IndexForVault(ctx)))
    specs = []
    for s in TOOL_SPECS:
        name = s["name"]
        read_only = name not in VAULT_WRITE_TOOLS
        def handler(args: dict[str, Any], _name: str = name) -> dict[str, Any]:
            return tools.call_checked(_name, args)

        specs.append(ToolSpec(
            name, s["description"], s["parameters"], handler,
            read_only=read_only, destructive=name in VAULT_DESTRUCTIVE_TOOLS, provider="vault",
            # Writes run one at a time (across processes the vault's file lock serialises
            # them too). Reads take no lock: a note is replaced whole (temp file + rename),
            # so a read sees it before or after a write, and never waits for one, nor for
            # the re-indexing that follows it.
            lock=None if read_only else ctx.vault_lock,
        ))
    return specs
