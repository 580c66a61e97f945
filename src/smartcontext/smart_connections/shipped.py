"""Semantic search with the shipped model when the plugin's model is not on disk.

The vault's vectors were made by the plugin's model (bge-micro-v2 by default), which no
package ships; a query can only be compared with them by that same model. Instead of
falling back to keywords, the notes' own text is embedded by the workspace's model (the
static model distilled from MiniLM unless configured otherwise) and ranked by cosine to the query. Those
vectors are the workspace index's own: one store, cached by content hash, so only new
or edited sections are ever embedded again, and a server's background embedder fills
them in without blocking anyone.

A server (which embeds in the background) never waits: until every section has its
vector this mode declines, saying how far embedding has come, and the reader answers by
keyword-rerank meanwhile. A one-shot caller (CLI, library) embeds what is missing first
when that is a few seconds' work (edits since the last run); a whole vault is left to
``smartcontext index``, which prints an estimate and a progress bar, and the answer says
so.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..indexer import embed_pending
from ..notes import path_matches, tag_matches

MODE_SHIPPED = "shipped-model"
# A one-shot query embeds at most this many missing sections itself (seconds, even on a
# slow machine); more is a job for `smartcontext index`.
SYNC_LIMIT = 256
# Sections are ranked on the whole vault; only this many notes/blocks are resolved to
# text (a few past the limit, as results whose note is gone are skipped).
EXTRA_CANDIDATES = 8


@dataclass
class ShippedHit:
    """A note or one of its heading sections, by the shipped model's cosine."""

    path: str
    score: float
    kind: str  # "note" or "block"
    rowid: int


@dataclass
class ShippedAnswer:
    hits: list[ShippedHit]
    candidates: int
    model: str
    embedded_now: int


def usable(ws: Any) -> str | None:
    """None when the workspace can answer with its model, else why not."""
    if not ws.config.embeddings.active:
        return "embeddings are switched off for this vault ([embeddings] in its configuration)"
    return None


def prepare(ws: Any, wait: bool) -> tuple[int, str | None]:
    """Make sure every item of the vault's index has a vector of the workspace's model.

    wait: embed what is missing now when it is at most ``SYNC_LIMIT`` sections (a
          one-shot caller); otherwise (a server) wake the background embedder and
          decline while it works.
    Returns (items embedded now, why the mode cannot answer yet or None).
    """
    done, total = ws.vector_progress()
    if done >= total:
        return 0, None
    if not wait:
        ws.embed_in_background()
        return 0, (
            f"the shipped model is embedding the notes in the background ({done:,} / {total:,} sections)"
        )
    if total - done > SYNC_LIMIT:
        return 0, (
            f"{done:,} / {total:,} sections have a vector of the shipped model; run "
            f"`smartcontext index {ws.root}` once to embed the rest (it prints an estimate)"
        )
    embedded, _ = embed_pending(ws.store, ws.embedder(), batch_size=max(8, ws.config.embeddings.batch_size))
    return embedded, None


def search(
    ws: Any,
    query_vector: np.ndarray,
    scope: str,
    tags: list[str],
    paths: list[str],
    limit: int,
    min_score: float,
    facts: Callable[[str], Any],
    known: Callable[[str], bool],
) -> ShippedAnswer | None:
    """Notes (best section's cosine) and/or heading sections most similar to the query,
    filtered by ``tags`` and ``paths`` like the plugin's vectors are. ``known(path)``
    keeps the notes the plugin has indexed (its exclusions hold in every mode). None
    when the index has no vectors to rank."""
    vectors = ws.vectors()
    if vectors is None:
        return None
    index, embedder = vectors
    catalogue = ws.catalogue()
    ranked = index.search(query_vector, len(index))
    allowed: dict[str, bool] = {}

    def keep(path: str) -> bool:
        if path not in allowed:
            ok = path.lower().endswith(".md") and known(path) and (not paths or path_matches(path, paths))
            if ok and tags:
                f = facts(path)
                ok = f is not None and tag_matches(f.tags, tags)
            allowed[path] = ok
        return allowed[path]

    want = limit + EXTRA_CANDIDATES
    notes: dict[str, ShippedHit] = {}
    blocks: list[ShippedHit] = []
    for rowid, score in ranked:
        if score < min_score:
            break
        entry = catalogue.entries.get(rowid)
        if entry is None or not keep(entry.path):
            continue
        if scope in ("notes", "both") and entry.path not in notes and len(notes) < want:
            notes[entry.path] = ShippedHit(entry.path, score, "note", rowid)
        if scope in ("blocks", "both") and len(blocks) < want:
            blocks.append(ShippedHit(entry.path, score, "block", rowid))
        if (scope == "notes" or len(blocks) >= want) and (scope == "blocks" or len(notes) >= want):
            break
    hits = sorted([*notes.values(), *blocks], key=lambda h: -h.score)
    candidates = sum(1 for p in catalogue.by_path if keep(p))
    return ShippedAnswer(hits=hits, candidates=candidates, model=embedder.name, embedded_now=0)
