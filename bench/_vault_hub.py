"""Speed of indexing and searching a real vault: the Obsidian community hub (6,571 notes).

The orchestrator (``vault.py``) unpacks the archive once into a pristine folder and
chooses, with a fixed seed, the embedding sample, the queries and the notes to edit.
Each measurement then runs in a worker process of its own on a fresh copy, so its index
is cold and its peak memory is its own.
"""

from __future__ import annotations

import random
import re
import shutil
import tarfile
from collections import Counter
from pathlib import Path
from typing import Any

from _vault_common import clean_env, median, peak_rss_mb, quantile, timed

ARCHIVE_NAME = "obsidian-hub-vault.tar.gz"
MODES = ("keyword", "semantic", "hybrid")
EDIT_REPEATS = 5
NOOP_REPEATS = 3
WARMUP_QUERIES = 3

_FENCE = re.compile(r"^\s*(```|~~~)")
_HEADING = re.compile(r"^(#{2,4})\s+(.+?)\s*#*\s*$")
_WIKI = re.compile(r"\[\[([^\]|]*\|)?([^\]]*)\]\]")
_MDLINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
_FOOTNOTE = re.compile(r"\[\^[^\]]*\]")


# ---------------------------------------------------------------- preparing (orchestrator)


def unpack(archive: Path, dest: Path) -> None:
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    with tarfile.open(archive) as tar:
        tar.extractall(dest, filter="data")


def list_notes(root: Path) -> list[str]:
    return sorted(
        p.relative_to(root).as_posix()
        for p in root.rglob("*.md")
        if ".smartcontext" not in p.relative_to(root).parts
    )


def _plain(heading: str) -> str:
    text = _WIKI.sub(lambda m: m.group(2), heading)
    text = _MDLINK.sub(lambda m: m.group(1), text)
    text = _FOOTNOTE.sub("", text)
    text = re.sub(r"[*_`]+", "", text)
    return " ".join(text.split())


def note_headings(text: str) -> list[str]:
    out, fenced = [], False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            m = _HEADING.match(line)
            if m:
                plain = _plain(m.group(2))
                if plain:
                    out.append(plain)
    return out


def _words(text: str) -> list[str]:
    return re.findall(r"[^\W\d_]{2,}", text)


def prepare(root: Path, sample_size: int, n_queries: int, seed: int) -> dict[str, Any]:
    """The sample of notes to embed, the queries and the notes to edit, all from ``seed``.

    Queries are the vault's own words: half note titles (file names, as Obsidian shows
    them), half section headings that at most 3 notes share (a heading on thousands of
    author pages, "Follow this author", names no particular note). Both are drawn from
    the sample, so the same queries run on the full and on the embedded sample vault, and
    each query knows the note it came from.
    """
    rnd = random.Random(seed)
    notes = list_notes(root)
    sample = sorted(rnd.sample(notes, min(sample_size, len(notes))))
    texts = {n: (root / n).read_text(encoding="utf-8", errors="replace") for n in notes}
    heads = {n: note_headings(t) for n, t in texts.items()}
    df = Counter(h.lower() for hs in heads.values() for h in set(hs))

    titles = []
    for n in sample:
        stem = Path(n).stem
        if len(_words(stem)) >= 1 and sum(len(w) for w in _words(stem)) >= 4:
            titles.append({"query": stem, "source": n, "kind": "title"})
    headings = []
    for n in sample:
        for h in dict.fromkeys(heads[n]):
            words = _words(h)
            if 2 <= len(words) <= 10 and df[h.lower()] <= 3 and h.lower() != Path(n).stem.lower():
                headings.append({"query": h, "source": n, "kind": "heading"})
    n_head = min(len(headings), n_queries // 2)
    chosen = rnd.sample(headings, n_head) + rnd.sample(titles, min(len(titles), n_queries - n_head))
    rnd.shuffle(chosen)

    # Notes to edit: ones with at least one heading, outside the sample for the full vault
    # and inside it for the sample vault (each must exist where it is edited).
    with_heads = [n for n in notes if heads[n]]
    in_sample = [n for n in sample if heads[n]]
    return {
        "notes": len(notes),
        "sample": sample,
        "queries": chosen,
        "edit_full": rnd.sample(with_heads, 2 * EDIT_REPEATS),
        "edit_sample": rnd.sample(in_sample, min(len(in_sample), 2 * EDIT_REPEATS)),
    }


def copy_tree(src: Path, dest: Path, only: list[str] | None = None) -> None:
    if dest.exists():
        shutil.rmtree(dest)
    if only is None:
        shutil.copytree(src, dest, ignore=shutil.ignore_patterns(".smartcontext"))
        return
    for rel in only:
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src / rel, target)


# ---------------------------------------------------------------- measuring (workers)


def _open(root: Path, embeddings: bool):
    from smartcontext import Workspace

    clean_env()
    ws = Workspace.open(root)
    if not embeddings:
        ws.config.embeddings.model = "none"
    return ws


def _edit(path: Path, n: int) -> None:
    # Appending changes size and mtime, which is what the indexer compares.
    with path.open("a", encoding="utf-8") as f:
        f.write(f"\n\nBenchmark edit {n}: a new paragraph about weekly review templates and tags.\n")


def _reindex_times(ws, root: Path, edits: list[str], embeddings: bool) -> dict[str, Any]:
    """No-change re-index, then one edited note via index() and via update_files()."""
    noop = []
    for _ in range(NOOP_REPEATS):
        st, s = timed(lambda: ws.index(embeddings=embeddings))
        noop.append({"s": s, "files_indexed": st.files_indexed, "embedded": st.embedded})
    half = len(edits) // 2
    via_index, via_update = [], []
    for i, rel in enumerate(edits[:half]):
        _edit(root / rel, i)
        st, s = timed(lambda: ws.index(embeddings=embeddings))
        via_index.append({"path": rel, "s": s, "files_indexed": st.files_indexed, "embedded": st.embedded,
                          "seconds": st.seconds})
    for i, rel in enumerate(edits[half:]):
        _edit(root / rel, 100 + i)
        st, s = timed(lambda rel=rel: ws.update_files([rel]))
        via_update.append({"path": rel, "s": s, "files_indexed": st.files_indexed, "items": st.items})
    return {
        "noop": noop, "noop_s_median": median([x["s"] for x in noop]),
        "edit_index": via_index, "edit_index_s_median": median([x["s"] for x in via_index]),
        "edit_index_s_max": max((x["s"] for x in via_index), default=float("nan")),
        "edit_update": via_update, "edit_update_s_median": median([x["s"] for x in via_update]),
        "edit_update_s_max": max((x["s"] for x in via_update), default=float("nan")),
    }


def _latencies(ws, queries: list[dict], modes: tuple[str, ...]) -> dict[str, Any]:
    """Per mode: the first query (loads the catalogue, vectors, model) apart, a few
    warm-up queries unscored, then every query timed once; plus whether the query's
    own note is among the top 10 (a sanity check of ranking, not a quality benchmark)."""
    out: dict[str, Any] = {}
    for mode in modes:
        first_s = timed(lambda mode=mode: ws.search(queries[0]["query"], limit=10, mode=mode))[1]
        for q in queries[1 : 1 + WARMUP_QUERIES]:
            ws.search(q["query"], limit=10, mode=mode)
        times, found = [], []
        for q in queries:
            hits, s = timed(lambda q=q, mode=mode: ws.search(q["query"], limit=10, mode=mode))
            times.append(s)
            found.append(any(h.path == q["source"] for h in hits))
        out[mode] = {
            "first_s": first_s, "n": len(times),
            "p50_ms": 1000 * quantile(times, 0.5), "p95_ms": 1000 * quantile(times, 0.95),
            "max_ms": 1000 * max(times), "source_in_top10": sum(found) / len(found),
        }
    return out


def _scopes(ws, queries: list[dict]) -> dict[str, list[tuple[dict, dict, int]]]:
    """(query, search filter, items in scope) per kind of scope: the folder of the note the
    query came from, and that note's rarest tag."""
    cat = ws.catalogue()
    folders = []
    for q in queries:
        if "/" in q["source"]:
            folder = q["source"].rsplit("/", 1)[0]
            size = sum(1 for e in cat.entries.values() if e.path.startswith(folder + "/"))
            folders.append((q, {"paths": [folder]}, size))
    tag_items: dict[str, int] = {}
    for _, t in ws.store.tag_rows():
        tag_items[str(t).lower()] = tag_items.get(str(t).lower(), 0) + 1
    tags = []
    for q in queries:
        own = {str(t).lower() for si in ws.store.items_in_paths([q["source"]]) for t in si.item.meta.get("tags") or []}
        if own:
            rarest = min(own, key=lambda t: (tag_items.get(t, 0), t))
            tags.append((q, {"tags": [rarest]}, tag_items.get(rarest, 0)))
    return {"folder": folders, "tag": tags}


def _scoped(ws, queries: list[dict], modes: tuple[str, ...]) -> dict[str, Any]:
    """Search inside a scope, as a user narrowing a search would (the note's own folder
    with ``paths``, or its rarest tag with ``tags``): does ``limit=10`` return the same
    top 10 as a much deeper search (``limit=1000``, a pool 100 times larger)?"""
    out: dict[str, Any] = {}
    for kind, scoped in _scopes(ws, queries).items():
        sizes = [n for _, _, n in scoped]
        res: dict[str, Any] = {"queries": len(scoped), "scope_items_median": median(sizes),
                               "scope_items_min": min(sizes, default=0)}
        for mode in modes:
            short = overlap_sum = overlap_n = src10 = src_deep = 0
            examples = []
            for q, flt, _ in scoped:
                hits = ws.search(q["query"], limit=10, mode=mode, **flt)
                deep = ws.search(q["query"], limit=1000, mode=mode, **flt)[:10]
                ids, deep_ids = [h.id for h in hits], [h.id for h in deep]
                if len(hits) < len(deep):
                    short += 1
                    if len(examples) < 3:
                        examples.append({"query": q["query"], "filter": flt, "hits": len(hits), "deep": len(deep)})
                if deep_ids:
                    overlap_sum += len(set(ids) & set(deep_ids)) / len(deep_ids)
                    overlap_n += 1
                src10 += any(h.path == q["source"] for h in hits)
                src_deep += any(h.path == q["source"] for h in deep)
            res[mode] = {
                "fewer_hits_than_deep": short / max(1, len(scoped)),
                "overlap_with_deep_top10": overlap_sum / max(1, overlap_n),
                "source_in_top10": src10 / max(1, len(scoped)),
                "source_in_deep_top10": src_deep / max(1, len(scoped)),
                "examples": examples,
            }
        out[kind] = res
    return out


def run_full_noembed(job: dict) -> dict:
    root = Path(job["root"])
    copy_tree(Path(job["pristine"]), root)
    ws = _open(root, embeddings=False)
    st, cold_s = timed(lambda: ws.index(embeddings=False))
    res: dict[str, Any] = {
        "cold_s": cold_s, "stats": st.to_dict() | {"warnings": len(st.warnings)},
        "counts": ws.store.counts(), "rss_after_index_mb": peak_rss_mb(),
    }
    res["reindex"] = _reindex_times(ws, root, job["edits"], embeddings=False)
    res["search"] = _latencies(ws, job["queries"], ("keyword",))
    res["scoped"] = _scoped(ws, job["queries"], ("keyword",))
    ws.close()
    res["peak_rss_mb"] = peak_rss_mb()
    return res


def _token_profile(ws) -> dict[str, float]:
    """Mean model tokens per embedded text, and how many of them the path/kind/name head takes."""
    from smartcontext.indexer import embed_text

    emb = ws.embedder()
    if not hasattr(emb, "_load"):
        return {}  # a static model reads whole texts: no window to profile
    tok = emb._load().tokenizer  # the embedder's own tokenizer, truncation included
    rows = ws.store.items_by_rowids([r.rowid for r in ws.store.item_light_rows()])
    items = [si.item for si in rows.values()]
    full = [len(e.ids) for e in tok.encode_batch([embed_text(i) for i in items])]
    body = [len(e.ids) for e in tok.encode_batch([i.text or f"{i.signature}\n{i.docstring}" for i in items])]
    n = max(1, len(items))
    return {
        "texts": len(items),
        "mean_tokens": sum(full) / n,
        "mean_body_tokens": sum(body) / n,
        "truncated_share": sum(1 for x in full if x >= emb.max_length) / n,
    }


def run_embed(job: dict) -> dict:
    """Cold index with embeddings of the full vault or of the sample, then the same
    re-index and latency measurements with vectors present."""
    root = Path(job["root"])
    copy_tree(Path(job["pristine"]), root, only=job.get("only"))
    ws = _open(root, embeddings=True)
    ws.embedder().embed_query("warm up")  # loading the model (about a second) is not per-note work
    st, cold_s = timed(lambda: ws.index(embeddings=True))
    res: dict[str, Any] = {
        "notes": st.files_indexed, "cold_s": cold_s,
        "stats": st.to_dict() | {"warnings": len(st.warnings)},
        "counts": ws.store.counts(), "rss_after_index_mb": peak_rss_mb(),
    }
    res["tokens"] = _token_profile(ws)
    res["reindex"] = _reindex_times(ws, root, job["edits"], embeddings=True)
    res["search"] = _latencies(ws, job["queries"], MODES)
    res["scoped"] = _scoped(ws, job["queries"], MODES)
    ws.close()
    res["peak_rss_mb"] = peak_rss_mb()
    return res
