"""Graph neighbours of the direct matches: callers, callees, bases, subclasses, imports.

Expansion is breadth-first with a visited set (cycle-safe), a depth limit, a cap per
node and a cap in total, so a hub function called from everywhere cannot flood the
candidates.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from ..model import kind_traits
from ..store.base import Store
from .catalogue import Catalogue

# How strongly each relation ties two items together (out = src->dst, in = dst<-src).
EDGE_WEIGHT = {
    ("calls", "out"): 0.8,
    ("calls", "in"): 0.6,
    ("inherits", "out"): 0.9,
    ("inherits", "in"): 0.5,
    ("imports", "out"): 0.3,
    ("imports", "in"): 0.2,
    ("links_to", "out"): 0.7,
    ("links_to", "in"): 0.6,
}


@dataclass
class Neighbour:
    rowid: int
    distance: int
    via: int  # the seed it was reached from
    relation: str
    strength: float  # product of edge weights along the path


def _names_for(entry) -> list[str]:
    names = {entry.fqname, entry.qualname, entry.name}
    return [n for n in names if n]


def expand(
    store: Store,
    cat: Catalogue,
    seeds: list[int],
    depth: int = 1,
    per_node: int = 12,
    total: int = 150,
) -> dict[int, Neighbour]:
    out: dict[int, Neighbour] = {}
    if depth <= 0 or not seeds:
        return out
    visited = set(seeds)
    queue = deque((s, 0, s, 1.0) for s in seeds)
    while queue and len(out) < total:
        level_items = []
        current_depth = queue[0][1]
        while queue and queue[0][1] == current_depth:
            level_items.append(queue.popleft())
        if current_depth >= depth:
            break
        entries = {r: cat.entries[r] for r, *_ in level_items if r in cat.entries}
        outgoing = store.edges_from([e.id for e in entries.values()])
        names = [n for e in entries.values() if not kind_traits(e.kind).whole_file for n in _names_for(e)]
        names += [n for e in entries.values() for n in cat.link_names(e)]
        incoming = store.edges_to([e.id for e in entries.values()], names)
        by_src: dict[str, list[tuple[str, int]]] = {}
        for src, kind, dst, dst_name in outgoing:
            if kind == "contains":
                continue
            src_entry_row = cat.by_id.get(src)
            from_path = cat.entries[src_entry_row].path if src_entry_row else None
            if dst and dst in cat.by_id:
                targets = [cat.by_id[dst]]
            elif kind == "links_to" and dst_name and from_path:
                targets = cat.resolve_link(dst_name, from_path)
            else:
                targets = cat.resolve_name(dst_name, from_path) if dst_name else []
            for t in targets:
                by_src.setdefault(src, []).append((f"{kind}:out", t))
        name_to_rows: dict[str, list[int]] = {}
        for r, e in entries.items():
            for n in [e.id, *_names_for(e), *cat.link_names(e)]:
                name_to_rows.setdefault(n, []).append(r)
        incoming_by_row: dict[int, list[tuple[str, int]]] = {}
        for src, kind, dst, dst_name in incoming:
            if kind == "contains":
                continue
            src_row = cat.by_id.get(src)
            if src_row is None:
                continue
            for target in name_to_rows.get(dst or "", []) + name_to_rows.get(dst_name or "", []):
                incoming_by_row.setdefault(target, []).append((f"{kind}:in", src_row))
        for rowid, d, via, strength in level_items:
            entry = entries.get(rowid)
            if entry is None:
                continue
            links = by_src.get(entry.id, [])[:per_node] + incoming_by_row.get(rowid, [])[:per_node]
            for relation, nb in links:
                if nb in visited:
                    continue
                kind, direction = relation.split(":")
                w = strength * EDGE_WEIGHT.get((kind, direction), 0.3)
                visited.add(nb)
                out[nb] = Neighbour(nb, d + 1, via, relation, w)
                queue.append((nb, d + 1, via, w))
                if len(out) >= total:
                    break
            if len(out) >= total:
                break
    return out
