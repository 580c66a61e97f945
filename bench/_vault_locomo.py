"""Retrieval quality on LoCoMo: does search find the turns that answer a question?

The vault: one folder per conversation, one note per session, one ``## D<s>:<t>``
heading per turn, so every turn is exactly one ``section`` item whose id is
``<conv>/session_NN.md#D<s>:<t>`` and maps back to the turn's ``dia_id``:

    conv-26/session_01.md
        ---
        conversation: "conv-26"
        session: 1
        date: "1:56 pm on 8 May, 2023"
        speakers: ["Caroline", "Melanie"]
        ---

        ## D1:3

        Caroline: I went to a LGBTQ support group yesterday and it was so powerful.

A turn that shares an image ends with ``[shares a photo: <blip_caption>]``, as LoCoMo's
own retrieval baselines render it. A turn's text is put on one line (whitespace runs
collapsed), so no text of the dataset can open a heading or a code fence. The
frontmatter becomes metadata, not an item: the note has no text before its first
heading, so it has no intro section. The worker checks the index holds exactly one item
per turn and nothing else before it measures anything.

Each question is searched within its own conversation (``paths=[conv folder]``); its
relevant items are its ``evidence`` turns.
"""

from __future__ import annotations

import json
import math
import re
import shutil
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from _vault_common import clean_env, median, peak_rss_mb, quantile, timed

MODES = ("keyword", "semantic", "hybrid")
K_VALUES = (5, 10)
CATEGORY_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
_SESSION = re.compile(r"session_(\d+)")
_EVIDENCE = re.compile(r"D:?(\d+):(\d+)")


# ---------------------------------------------------------------- the vault


def _turn_text(turn: dict) -> str:
    text = " ".join(str(turn.get("text", "")).split())
    caption = " ".join(str(turn.get("blip_caption") or "").split())
    if caption:
        text += f" [shares a photo: {caption}]"
    return f"{turn['speaker']}: {text}"


def build_vault(conversations: list[dict], root: Path) -> dict[str, Any]:
    """Write the vault; returns, per conversation, its folder and dia_id -> item id."""
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    layout: dict[str, Any] = {}
    for conv in conversations:
        cid = conv["sample_id"]
        c = conv["conversation"]
        folder = root / cid
        folder.mkdir()
        turns: dict[str, str] = {}
        for key in sorted((k for k in c if _SESSION.fullmatch(k) and isinstance(c[k], list)),
                          key=lambda k: int(k.split("_")[1])):
            n = int(key.split("_")[1])
            rel = f"{cid}/session_{n:02d}.md"
            lines = [
                "---",
                f"conversation: {json.dumps(cid)}",
                f"session: {n}",
                f"date: {json.dumps(str(c.get(f'{key}_date_time', '')))}",
                f"speakers: {json.dumps([c.get('speaker_a', ''), c.get('speaker_b', '')])}",
                "---",
                "",
            ]
            for turn in c[key]:
                dia = turn["dia_id"]
                if dia in turns:
                    raise ValueError(f"{cid}: dia_id {dia} appears twice; the item ids would not be unique")
                turns[dia] = f"{rel}#{dia}"
                lines += [f"## {dia}", "", _turn_text(turn), ""]
            (root / rel).write_text("\n".join(lines), encoding="utf-8")
        layout[cid] = {"folder": cid, "turns": turns}
    return layout


def normalise_evidence(raw: list, known: set[str]) -> tuple[list[str], int, int]:
    """(evidence dia_ids present in the conversation, references repaired, references dropped).

    The dataset has a few malformed references ("D8:6; D9:17", "D:11:26", "D") and some
    to turns that do not exist; the first two are repaired, the rest dropped.
    """
    out: list[str] = []
    repaired = dropped = 0
    for ref in raw or []:
        ref = str(ref)
        parts = [p for p in re.split(r"[;,\s]+", ref) if p]
        found = [f"D{m.group(1)}:{m.group(2)}" for p in parts for m in [_EVIDENCE.fullmatch(p)] if m]
        if found and found != [ref]:
            repaired += 1
        for f in found:
            if f in known and f not in out:
                out.append(f)
            elif f not in known:
                dropped += 1
        if not found:
            dropped += 1
    return out, repaired, dropped


# ---------------------------------------------------------------- metrics


def recall_at(ranked: list[str], relevant: list[str], k: int) -> float:
    return len(set(ranked[:k]) & set(relevant)) / len(relevant)


def ndcg_at(ranked: list[str], relevant: list[str], k: int = 10) -> float:
    rel = set(relevant)
    dcg = sum(1.0 / math.log2(i + 2) for i, d in enumerate(ranked[:k]) if d in rel)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(len(rel), k)))
    return dcg / ideal


def score(ranked: list[str], relevant: list[str]) -> dict[str, float]:
    return {
        "r5": recall_at(ranked, relevant, 5),
        "r10": recall_at(ranked, relevant, 10),
        "ndcg10": ndcg_at(ranked, relevant, 10),
        "all10": float(set(relevant) <= set(ranked[:10])),
    }


def aggregate(rows: list[dict[str, float]]) -> dict[str, float]:
    if not rows:
        return {"n": 0}
    keys = rows[0].keys()
    return {"n": len(rows), **{k: sum(r[k] for r in rows) / len(rows) for k in keys}}


# ---------------------------------------------------------------- fusion diagnostics


def _rrf(lists: list[list[int]], k: int) -> list[int]:
    fused: dict[int, float] = defaultdict(float)
    for lst in lists:
        for i, r in enumerate(lst):
            fused[r] += 1.0 / (k + i + 1)
    return sorted(fused, key=lambda r: -fused[r])


def _weighted(kw: list[tuple[int, float]], sem: list[tuple[int, float]], w_sem: float) -> list[int]:
    """Min-max normalised scores, summed with weight ``w_sem`` on the semantic side."""
    def norm(xs: list[tuple[int, float]]) -> dict[int, float]:
        if not xs:
            return {}
        lo, hi = min(s for _, s in xs), max(s for _, s in xs)
        return {r: (s - lo) / (hi - lo) if hi > lo else 1.0 for r, s in xs}

    a, b = norm(kw), norm(sem)
    fused = {r: (1 - w_sem) * a.get(r, 0.0) + w_sem * b.get(r, 0.0) for r in set(a) | set(b)}
    return sorted(fused, key=lambda r: -fused[r])


OLD_ENGINE = "before 520abb0: global pool 100, RRF k=60, then the filter"


def hybrid_name(k: int, pool: int) -> str:
    return f"filter first: hybrid RRF k={k}, pool {pool}"


def fusion_variants(kw_all: list[tuple[int, float]], sem_all: list[tuple[int, float]],
                    own: set[int], pool: int, engine_k: int,
                    kw_scoped: list[tuple[int, float]] | None = None) -> dict[str, list[int]]:
    """Top-10 rowids of several ways to combine the same two signal lists.

    ``kw_all`` / ``sem_all`` are each signal's ranking over the whole index. "filter
    first" keeps the question's conversation before cutting each signal's pool (what
    the engine does since commit 520abb0); the old engine cut a pool over the whole index
    and filtered afterwards.
    """
    kw_ids = [r for r, _ in kw_all]
    sem_ids = [r for r, _ in sem_all]
    kw_own = [r for r in kw_ids if r in own]
    sem_own = [r for r in sem_ids if r in own]
    kw_own_s = [(r, s) for r, s in kw_all if r in own]
    sem_own_s = [(r, s) for r, s in sem_all if r in own]

    def top(xs: list[int]) -> list[int]:
        return xs[:10]

    v: dict[str, list[int]] = {}
    v[OLD_ENGINE] = top([r for r in _rrf([kw_ids[:pool], sem_ids[:pool]], 60) if r in own])
    v["filter first: keyword"] = top(kw_own)
    v["filter first: semantic"] = top(sem_own)
    for k in sorted({60, 20, 10, 5, 1, engine_k}, reverse=True):
        v[hybrid_name(k, pool)] = top(_rrf([kw_own[:pool], sem_own[:pool]], k))
    for p in (20, 50):
        v[f"filter first: hybrid RRF k=60, pool {p}"] = top(_rrf([kw_own[:p], sem_own[:p]], 60))
    v["filter first: hybrid RRF k=60, whole conversation"] = top(_rrf([kw_own, sem_own], 60))
    if kw_scoped is not None:
        kws = [r for r, _ in kw_scoped if r in own]
        v["scope df: keyword"] = top(kws)
        for k in sorted({60, engine_k}, reverse=True):
            v[f"scope df: hybrid RRF k={k}, pool {pool}"] = top(_rrf([kws[:pool], sem_own[:pool]], k))
    for w in (0.3, 0.5, 0.7):
        v[f"filter first: weighted min-max, semantic {w:.1f}, pool {pool}"] = top(
            _weighted(kw_own_s[:pool], sem_own_s[:pool], w))
    return v


class ScopedTerms:
    """Keyword search with the engine's "drop terms in half the items or more" rule
    applied to the question's conversation instead of the whole index.

    The engine decides which question terms to keep (and BM25 weighs them) by document
    frequencies over the whole index, so a speaker's name, present in most turns of its
    own conversation but in few of the index, is kept as a telling term once other
    conversations share the index. This re-asks the engine's own keyword search without
    the terms that are common inside the scope.
    """

    def __init__(self, searcher, own_rows: dict[str, set[int]]):
        self.searcher = searcher
        self.own_rows = own_rows
        self._df: dict[tuple[str, str], int] = {}

    def scope_df(self, cid: str, term: str) -> int:
        key = (cid, term)
        if key not in self._df:
            from smartcontext.store import KeywordTerm

            rows = self.searcher.store.keyword_search([KeywordTerm(term)], 1_000_000)
            self._df[key] = sum(1 for r, _ in rows if r in self.own_rows[cid])
        return self._df[key]

    def search(self, cid: str, question: str, limit: int) -> tuple[list[tuple[int, float]], list[str]]:
        _, terms = self.searcher.build_match(question)
        half = 0.5 * len(self.own_rows[cid])
        common = [t for t in terms if self.scope_df(cid, t) >= half]
        if not common or len(common) == len(terms):
            return self.searcher.search(question, limit), []
        text = question
        for t in common:
            text = re.sub(r"(?<!\w)" + re.escape(t) + r"(?!\w)", " ", text, flags=re.IGNORECASE)
        return self.searcher.search(text, limit), common


# ---------------------------------------------------------------- the worker


def run(job: dict) -> dict:
    from smartcontext import Workspace
    from smartcontext.retrieval import search as engine_search
    from smartcontext.retrieval.keyword import KeywordSearcher

    clean_env()
    if job.get("model"):  # bench/embeddings.py compares models on the same questions
        import os

        os.environ["SMARTCONTEXT_EMBEDDING_MODEL"] = job["model"]
    data = json.loads(Path(job["dataset"]).read_text(encoding="utf-8"))
    if job.get("conversations"):
        data = data[: job["conversations"]]
    root = Path(job["root"])
    layout, build_s = timed(lambda: build_vault(data, root))

    ws = Workspace.open(root)
    ws.embedder().embed_query("warm up")  # loading the model is not per-turn work
    st, index_s = timed(lambda: ws.index(embeddings=True))
    res: dict[str, Any] = {
        "build_s": build_s, "index_s": index_s, "stats": st.to_dict() | {"warnings": len(st.warnings)},
        "counts": ws.store.counts(),
    }

    # Every turn must be exactly one item, and every item a turn.
    item_ids = {r.id for r in ws.store.item_light_rows()}
    expected = {iid for conv in layout.values() for iid in conv["turns"].values()}
    if item_ids != expected:
        extra, missing = sorted(item_ids - expected)[:5], sorted(expected - item_ids)[:5]
        raise RuntimeError(f"the index does not hold one item per turn: extra {extra}, missing {missing}")
    res["turns"] = len(expected)
    res["one_item_per_turn"] = True

    id_to_dia = {iid: dia for conv in layout.values() for dia, iid in conv["turns"].items()}
    cat = ws.catalogue()
    own_rows: dict[str, set[int]] = defaultdict(set)
    for r, e in cat.entries.items():
        own_rows[e.path.split("/", 1)[0]].add(r)
    row_to_dia = {r: id_to_dia[e.id] for r, e in cat.entries.items()}
    vectors = ws.vectors()
    if vectors is None:
        raise RuntimeError("no vectors after index(embeddings=True): semantic search cannot be measured")
    vindex, embedder = vectors
    searcher = KeywordSearcher(ws.store)
    n_items = len(cat.entries)
    engine_k = int(getattr(engine_search, "RRF_K", 60))
    res["engine"] = {"rrf_k": engine_k}
    scoped_terms = ScopedTerms(searcher, own_rows)
    pruned_questions = 0

    questions, repaired, dropped, no_evidence = [], 0, 0, 0
    latency: dict[str, list[float]] = {m: [] for m in MODES}
    agreement = {m: 0 for m in MODES}
    t_eval = time.perf_counter()
    for conv in data:
        cid = conv["sample_id"]
        known = set(layout[cid]["turns"])
        for qi, qa in enumerate(conv["qa"]):
            evidence, rep, drop = normalise_evidence(qa.get("evidence", []), known)
            repaired += rep
            dropped += drop
            if not evidence:
                no_evidence += 1
                continue
            q = str(qa["question"])
            row: dict[str, Any] = {"conv": cid, "i": qi, "category": int(qa["category"]),
                                   "evidence": evidence, "ranked": {}, "scores": {}}
            for mode in MODES:
                hits, s = timed(lambda q=q, mode=mode, cid=cid: ws.search(q, limit=10, mode=mode, paths=[layout[cid]["folder"]]))
                latency[mode].append(s)
                ranked = [id_to_dia[h.id] for h in hits]
                row["ranked"][mode] = ranked
                row["scores"][mode] = score(ranked, evidence)
            # The same two signals over the whole index, fused other ways (bench-side only).
            kw_all = searcher.search(q, n_items)
            sem_all = vindex.search(embedder.embed_query(q), n_items)
            kw_scoped, pruned = scoped_terms.search(cid, q, n_items)
            pruned_questions += bool(pruned)
            variants = fusion_variants(kw_all, sem_all, own_rows[cid], pool=100, engine_k=engine_k,
                                       kw_scoped=kw_scoped)
            # Which bench-side variant the engine's own answers match (a check that the
            # diagnostics describe the engine that was measured).
            replica = {"keyword": "filter first: keyword", "semantic": "filter first: semantic",
                       "hybrid": hybrid_name(engine_k, 100)}
            for mode, name in replica.items():
                agreement[mode] += [row_to_dia[r] for r in variants[name]] == row["ranked"][mode]
            row["variants"] = {name: score([row_to_dia[r] for r in rows], evidence)
                               for name, rows in variants.items()}
            row["own_keyword_matches"] = sum(1 for r, _ in kw_all if r in own_rows[cid])
            row["own_in_global_pool"] = {
                "keyword": sum(1 for r, _ in kw_all[:100] if r in own_rows[cid]),
                "semantic": sum(1 for r, _ in sem_all[:100] if r in own_rows[cid]),
            }
            questions.append(row)
    res["eval_s"] = time.perf_counter() - t_eval
    res["evidence"] = {"questions_used": len(questions), "questions_without_evidence": no_evidence,
                       "references_repaired": repaired, "references_dropped": dropped}
    res["latency_ms"] = {m: {"p50": 1000 * quantile(t, 0.5), "p95": 1000 * quantile(t, 0.95), "n": len(t)}
                         for m, t in latency.items()}
    res["replica_agreement"] = {m: agreement[m] / max(1, len(questions)) for m in MODES}
    res["questions_with_scope_common_terms"] = pruned_questions
    res["conversation_items"] = {cid: len(rows) for cid, rows in sorted(own_rows.items())}
    res["results"] = summarise(questions)
    res["questions"] = [{k: v for k, v in row.items() if k != "variants"} for row in questions]
    ws.close()
    res["peak_rss_mb"] = peak_rss_mb()
    return res


def summarise(questions: list[dict]) -> dict[str, Any]:
    """Means per mode (and per fusion variant) for categories 1-4, each category, and 5."""
    main = [q for q in questions if q["category"] in (1, 2, 3, 4)]
    groups: dict[str, list[dict]] = {
        "cat 1-4": main,
        **{f"cat {c}": [q for q in questions if q["category"] == c] for c in (1, 2, 3, 4, 5)},
        # Each conversation is an independent corpus: a fusion change that only wins on
        # the pooled mean but loses in most conversations is not a robust win.
        **{f"conv {cid} cat 1-4": [q for q in main if q["conv"] == cid]
           for cid in dict.fromkeys(q["conv"] for q in questions)},
    }
    out: dict[str, Any] = {}
    for g, qs in groups.items():
        out[g] = {
            "modes": {m: aggregate([q["scores"][m] for q in qs]) for m in MODES},
            "variants": {name: aggregate([q["variants"][name] for q in qs])
                         for name in (qs[0]["variants"] if qs else {})},
            "own_in_global_pool": {
                s: sum(q["own_in_global_pool"][s] for q in qs) / max(1, len(qs)) for s in ("keyword", "semantic")
            },
            "own_keyword_matches_median": median([q["own_keyword_matches"] for q in qs]),
        }
    return out
