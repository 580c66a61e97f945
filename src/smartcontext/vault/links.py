"""find_backlinks, find_outlinks, search_by_folder.

Links are parsed by the notes core (wikilinks, embeds, markdown links, links in
properties; never inside code) and resolved the way Obsidian does. Parsed notes are
cached by (mtime, size), so a second scan of the vault only stats files.
"""

from __future__ import annotations

import posixpath
from typing import Any

from ..notes.links import normalise_target
from ..notes.match import normalise_folder
from .base import MARKDOWN_SUFFIXES, VaultBase, tool
from .paths import walk_vault
from .responses import ok
from ..validate import ToolError


class LinkTools(VaultBase):
    @tool
    def find_backlinks(self, note_name: str) -> dict[str, Any]:
        name = note_name.strip()
        if not name:
            raise ToolError("note_name cannot be empty")
        if name.startswith("[[") and name.endswith("]]"):
            name = name[2:-2].split("|", 1)[0].split("#", 1)[0].strip()
        self._resolve(name.lstrip("/"))  # the same path rules as every tool
        wanted = _bare(name)
        indexed = self._indexed_links(name)
        if indexed is not None:
            # Links are edges of the index: only those whose target ends in this name.
            resolver = indexed.resolver
            target = resolver.resolve(name)
            links = indexed.links
        else:  # no index (or an attachment, which the index does not hold): read the notes
            walk = self._walk()
            resolver = self._link_resolver(walk)
            target = resolver.resolve(name)
            links = [(rel, link.target) for rel, facts in self._all_facts(walk) for link in facts.links]
        backlinks = set()
        for rel, link_target in links:
            if rel == target or rel in backlinks or not link_target:
                continue  # a note's links to itself are not backlinks
            if target is None and _bare(link_target) != wanted:
                continue  # (cheaper than resolving it)
            resolved = resolver.resolve(link_target, rel)
            if resolved == target:  # both None: a link to the same note not written yet
                backlinks.add(rel)
        results = sorted(backlinks)
        if target is None:
            if not results:
                return ok(f"No backlinks found to [[{name}]] (no such note in the vault)", results=[])
            return ok(f"[[{name}]] is not a note in the vault yet; {len(results)} note(s) link to it",
                      results=results)
        if not results:
            return ok(f"No backlinks found to [[{name}]]", results=[], path=target)
        return ok(results=results, path=target)

    def _indexed_links(self, name: str):
        """The index's links when it has them for ``name``: a note (not an attachment,
        whose file the index does not hold) and a workspace with an index."""
        extension = posixpath.splitext(name)[1].lower()
        if extension and extension not in MARKDOWN_SUFFIXES:
            return None
        links_to = getattr(self.workspace, "links_to", None)
        return links_to(name) if links_to is not None else None

    @tool
    def find_outlinks(self, path: str, limit: int = 100) -> dict[str, Any]:
        note = self._existing_file(path, by_name=True)
        rel = self._rel(note)
        facts = self._facts(rel)
        if facts is None:
            raise ToolError(f"Reading file failed: {rel}")
        resolver = self._link_resolver()
        found: set[str] = set()
        unresolved: set[str] = set()
        for link in facts.links:
            if not link.target:
                continue  # a heading of this same note
            hit = resolver.resolve(link.target, rel)
            if hit is None:
                unresolved.add(link.target)
            if hit != rel:
                found.add(hit or link.target)
        if not found:
            return ok(f"No outlinks found in {rel}", results=[], path=rel)
        results, missing = sorted(found), sorted(unresolved)
        if len(results) > limit or len(missing) > limit:
            return ok(f"Showing {min(limit, len(results))} of {len(results)} outlinks of {rel}; raise limit to see more",
                      results=results[:limit], unresolved=missing[:limit], total=len(results),
                      unresolved_total=len(missing), path=rel)
        return ok(results=results, unresolved=missing, path=rel)

    @tool
    def search_by_folder(self, folder: str, recursive: bool = True, limit: int = 100) -> dict[str, Any]:
        text = normalise_folder(folder)
        target = self._resolve(text, allow_root=True) if text else self.root
        shown = self._rel(target) if target != self.root else "/"
        if not target.is_dir():
            if target.exists():
                raise ToolError(f"Not a folder: {folder}")
            raise ToolError(f"Folder not found: {folder}")
        files = [
            f.rel for f in walk_vault(self.root, target, recursive=recursive)
            if f.rel.lower().endswith(MARKDOWN_SUFFIXES)
        ]
        if not files:
            mode = "" if recursive else "directly "
            return ok(f"No markdown files found {mode}in {shown}", results=[])
        if len(files) > limit:
            return ok(f"Showing {limit} of {len(files)} notes in {shown}; raise limit to see more",
                      results=files[:limit], total=len(files))
        return ok(results=files, total=len(files))


def _bare(target: str) -> str:
    """A link target reduced to how Obsidian compares unresolved names."""
    return posixpath.normpath(normalise_target(target)).lstrip("./").lower()
