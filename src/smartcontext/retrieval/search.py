"""Ranked search over items: keyword (BM25), semantic (vectors) or hybrid (both fused).

Hybrid uses reciprocal rank fusion, which needs no calibration between BM25 scores and
cosines, and rewards items that both signals rank well.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..embeddings.base import query_vector
from ..errors import InvalidArgument, did_you_mean
from ..model import KIND_TRAITS, ItemKind
from ..notes.match import PathFilter
from ..notes.tags import normalise_tag, tag_matches
from ..store.base import Store, StoredItem
from ..query.fusion import reciprocal_rank, rrf_ceiling
from ..query.profiles import SEARCH
from .catalogue import Catalogue, is_test_path
from .keyword import KeywordSearcher, question_terms
from .noise import noise_floor, semantic_evidence
from .titles import name_matches

if TYPE_CHECKING:  # numpy: loaded only when the index has vectors
    from .vector import StoreVectorIndex, VectorIndex

MODES = ("hybrid", "keyword", "semantic")
# The search profile's rank constant (query/profiles.py, measured there).
RRF_K = SEARCH.fusion.k
# This module's signal names -> the profile's.
SIGNAL_OF = {"keyword": "keywords", "semantic": "vectors"}
SNIPPET_CHARS = 240


@dataclass
class SearchHit:
    id: str
    path: str
    kind: str
    name: str
    heading: str
    start_line: int
    end_line: int
    score: float
    snippet: str
    signals: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The one JSON shape of a hit (``search --json``, the ``search`` tool, HTTP):
        every key always present; ``lines`` is ``[start, end]`` (1-based, inclusive)."""
        return {
            "id": self.id, "path": self.path, "lines": [self.start_line, self.end_line],
            "kind": self.kind, "name": self.name, "heading": self.heading,
            "score": round(self.score, 4), "snippet": self.snippet,
            "signals": list(self.signals), "tags": list(self.tags),
        }


def _snippet(text: str, terms: list[str], width: int = SNIPPET_CHARS) -> str:
    """A short window of ``text`` around the first query term it contains."""
    flat = " ".join(text.split())
    if not flat:
        return ""
    low = flat.lower()
    pos = -1
    for t in terms:
        m = re.search(r"(?<!\w)" + re.escape(t), low)
        if m:
            pos = m.start()
            break
    if pos < 0 or len(flat) <= width:
        return flat[:width] + ("…" if len(flat) > width else "")
    start = max(0, pos - width // 3)
    end = min(len(flat), start + width)
    return ("…" if start else "") + flat[start:end] + ("…" if end < len(flat) else "")


def _item_tags(si: StoredItem) -> list[str]:
    tags = si.item.meta.get("tags") or []
    return [normalise_tag(t) for t in tags] if isinstance(tags, list) else []


def _check_filters(cat: Catalogue, prefixes: list[str] | None, kinds: set[str] | None) -> None:
    """A misspelt kind or folder is an error with a suggestion, not a silent empty answer."""
    for kind in sorted(kinds or ()):
        if kind not in KIND_TRAITS:
            raise InvalidArgument(
                f"unknown kind {kind!r}{did_you_mean(kind, KIND_TRAITS)}; kinds: {', '.join(KIND_TRAITS)}"
            )
    if not prefixes:
        return
    folders = {"/".join(p.split("/")[:i]) for p in cat.paths for i in range(1, p.count("/") + 1)}
    for prefix in prefixes:
        if not prefix or prefix in folders or prefix in cat.by_path:
            continue
        raise InvalidArgument(
            f"no folder or file {prefix!r} in the index{did_you_mean(prefix, folders | set(cat.by_path))}"
        )


def _keyword_evidence(store: Store, query: str, raw: dict[str, dict[int, float]], allowed: set[int] | None) -> bool:
    """Did the keyword signal match a telling word of the query (``has_evidence``) in
    scope? In semantic mode it did not run: ask it for one hit."""
    searcher = KeywordSearcher(store)
    found = raw["keyword"] if "keyword" in raw else searcher.search(query, 1, within=allowed)
    return bool(found) and searcher.has_evidence(query)


# A query that is one identifier, bare or dotted (``pytest_collect_file``, ``Config.getini``).
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*\Z")
_DEFINITION_KINDS = frozenset({ItemKind.CLASS, ItemKind.FUNCTION, ItemKind.METHOD})


def definitions(query: str, cat: Catalogue, allowed: set[int] | None = None) -> dict[int, int]:
    """Code item row -> precedence, for the functions, methods and classes a query that is
    one identifier names: a name a program defines is asked for its definitions, which
    lead as a note's title leads. By keywords alone a name that many tests and docs
    mention is out-ranked by the long items that repeat it (``pytest_collect_file``: the
    three hook definitions fell behind a test helper and 100 tests). Precedence: the whole
    qualified name, then a dotted suffix of it (``Class.method``), then the bare name;
    source before tests within each."""
    if not _IDENTIFIER.match(query):
        return {}
    low = query.lower()
    dotted = "." in low
    found: dict[int, int] = {}
    for r in cat.by_name.get(low.rsplit(".", 1)[-1], ()):
        e = cat.entries.get(r)
        if e is None or e.kind not in _DEFINITION_KINDS or (allowed is not None and r not in allowed):
            continue
        fq = e.fqname.lower()
        tier = 3 if fq == low else 2 if dotted and fq.endswith("." + low) else 0 if dotted else 1
        if tier:
            found[r] = 2 * tier + (0 if is_test_path(e.path) else 1)
    return found


def _leading(precedence: dict[int, int], fused: dict[int, float]) -> dict[int, int]:
    """Row -> rank of rows that lead by name: higher precedence first, then the order the
    other signals gave."""
    return {r: i for i, r in enumerate(sorted(precedence, key=lambda r: (-precedence[r], -fused.get(r, 0.0))))}


def search(
    store: Store,
    cat: Catalogue,
    query: str,
    *,
    limit: int = 10,
    mode: str = "hybrid",
    vectors: tuple[VectorIndex | StoreVectorIndex, Any] | None = None,
    paths: list[str] | None = None,
    tags: list[str] | None = None,
    kinds: list[str] | None = None,
    min_score: float = 0.0,
    exclude: list[str] | None = None,
) -> tuple[list[SearchHit], dict[str, Any]]:
    """Returns (hits, info); info says which signals answered.

    paths, exclude: folders, files or globs (``notes.match.PathFilter``)."""
    if mode not in MODES:
        raise InvalidArgument(f"unknown search mode {mode!r}; choose one of {', '.join(MODES)}")
    if not isinstance(limit, int) or limit < 1 or limit > 1000:
        raise InvalidArgument("limit must be an integer between 1 and 1000")
    query = (query or "").strip()
    if not query:
        raise InvalidArgument("the query is empty")
    info: dict[str, Any] = {"mode": mode, "signals": []}
    pool = max(limit * SEARCH.constants["pool_factor"], SEARCH.constants["min_pool"])
    where = PathFilter(paths, exclude)
    prefixes = where.folders or None
    kind_set = set(kinds) if kinds else None
    _check_filters(cat, prefixes, kind_set)
    want_tags = {normalise_tag(t) for t in tags} if tags else None
    allowed: set[int] | None = None
    if want_tags:
        # Tags narrow before the pools are cut too, or a rare tag keeps only the few of
        # the global top hits that carry it.
        allowed = cat.tagged(want_tags)
    if where or kind_set:
        # Filter first, then cut each signal's pool: a filtered search must not be left
        # with the few of the global top hits that happen to pass the filter.
        in_scope = {
            r for p, rows in cat.by_path.items()
            if where.allows(p)
            for r in rows
            if not kind_set or cat.entries[r].kind in kind_set
        }
        allowed = in_scope if allowed is None else allowed & in_scope
    ranks: dict[str, dict[int, int]] = {}
    raw: dict[str, dict[int, float]] = {}
    below_noise = ""
    if mode in ("keyword", "hybrid"):
        if allowed is None:
            hits = KeywordSearcher(store).search(query, pool)
        else:
            hits = KeywordSearcher(store).search(query, pool, within=allowed)
        ranks["keyword"] = {r: i for i, (r, _) in enumerate(hits)}
        raw["keyword"] = dict(hits)
        info["signals"].append("keyword")
    if mode in ("semantic", "hybrid"):
        if vectors is None or not len(vectors[0]):
            if mode == "semantic":
                raise InvalidArgument(
                    "semantic search needs embeddings: run `smartcontext index` with an "
                    "embedding model configured"
                )
            info["note"] = "no embeddings yet: hybrid search answered with keywords only"
        else:
            index, embedder = vectors
            hits = index.search(query_vector(embedder, query), pool, allowed=allowed)
            # Keyword evidence first: a real question has it, and never pays for the floor.
            if not _keyword_evidence(store, query, raw, allowed) and not semantic_evidence(hits, index, embedder):
                # Nearest neighbours exist for any text, nonsense too: without a keyword
                # match they count only above this index's noise floor (noise.py), and
                # then the answer is nothing at all.
                best = f"; best {hits[0][1]:.2f}" if hits else ""
                below_noise = (
                    "nothing found: no word of the query is in the index, and no semantic hit is "
                    f"above this index's noise floor (cosine {noise_floor(index, embedder):.2f}{best})"
                )
                hits = []
                ranks.pop("keyword", None)
                raw.pop("keyword", None)
            ranks["semantic"] = {r: i for i, (r, _) in enumerate(hits)}
            raw["semantic"] = dict(hits)
            info["signals"].append("semantic")

    weights = [SEARCH.fusion.weights[SIGNAL_OF[signal]] for signal in ranks]
    fused = reciprocal_rank([list(rk) for rk in ranks.values()], SEARCH.fusion.k, weights)
    if mode == "keyword" and raw.get("keyword"):
        top = max(raw["keyword"].values()) or 1.0
        fused = {r: s / top for r, s in raw["keyword"].items()}
    elif mode == "semantic":
        fused = dict(raw.get("semantic", {}))
    elif fused:
        # Rescale RRF so a top hit in both signals scores 1.0.
        best_possible = rrf_ceiling(SEARCH.fusion.k, weights)
        fused = {r: s / best_possible for r, s in fused.items()}

    named: dict[int, int] = {}
    if mode != "semantic":
        # A query that is a note's whole name (title, alias, file name) asked for that
        # note: it scores the ceiling, 1.0, and leads; a title before an alias, then the
        # order the other signals gave (titles.py).
        named = name_matches(query, cat, store, raw.get("keyword", {}), allowed)
        if named:
            ranks["title"] = _leading(named, fused)
            info["signals"].append("title")
        defined = definitions(query, cat, allowed)
        if defined:
            ranks["name"] = _leading(defined, fused)
            info["signals"].append("name")
            named = {**defined, **named}
    before = fused
    fused = {**fused, **{r: 1.0 for r in named}}
    # Among equals (fastapi's page named "dependencies-with-yield" in thirteen languages, each
    # a whole-name match), a translation follows its English copy (retrieval/translations.py).
    translated = cat.translated_copies()

    def copy_of_english(rowid: int) -> bool:
        e = cat.entries.get(rowid)
        return e is not None and e.path in translated

    ordered = sorted(fused.items(), key=lambda kv: (-kv[1], -named.get(kv[0], 0), copy_of_english(kv[0]),
                                                    -before.get(kv[0], 0.0)))
    candidates = []
    for r, s in ordered:
        if s < min_score:
            break
        e = cat.entries.get(r)
        if e is None:
            continue
        if where and not where.allows(e.path):
            continue
        if kind_set and e.kind not in kind_set:
            continue
        candidates.append((r, s))
        if want_tags is None and len(candidates) >= limit * 3:
            break
    stored = store.items_by_rowids([r for r, _ in candidates])
    terms, _ = question_terms(query)
    out: list[SearchHit] = []
    seen_sections: set[tuple[str, str]] = set()
    for r, s in candidates:
        si = stored.get(r)
        if si is None:
            continue
        item_tags = _item_tags(si)
        if want_tags and not tag_matches(item_tags, want_tags):
            continue
        is_section = si.item.kind == ItemKind.SECTION
        heading = " > ".join(si.item.meta.get("heading_path", [])) if is_section else ""
        key = (si.item.path, heading or si.item.qualname)
        if is_section and key in seen_sections:
            continue  # parts of one long section: show it once
        seen_sections.add(key)
        signals = [sig for sig, rk in ranks.items() if r in rk]
        out.append(
            SearchHit(
                id=si.item.id, path=si.item.path, kind=si.item.kind, name=si.item.qualname,
                heading=heading, start_line=si.item.start_line, end_line=si.item.end_line,
                score=round(float(s), 4), snippet=_snippet(si.item.text or si.item.signature, terms),
                signals=signals, tags=item_tags,
            )
        )
        if len(out) >= limit:
            break
    if below_noise and not out:
        info["note"] = below_noise
    return out, info
