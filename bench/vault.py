"""Vault benchmark: indexing and search speed on a real Obsidian vault, and retrieval
quality on LoCoMo conversations written as a vault.

Part 1, the Obsidian community hub vault (6,571 notes, ../shared/datasets):
  cold index without embeddings; cold index with embeddings (on a fixed random sample of
  notes, extrapolated to the whole vault unless the whole vault fits the time budget);
  no-change re-index; one edited note through index() and through update_files();
  search latency p50/p95 per mode over queries taken from the vault's own titles and
  headings; peak memory of each worker process.
Part 2, LoCoMo (5 conversations, 999 questions): every turn is one note section; each
  question is searched within its own conversation; Recall@5, Recall@10 and nDCG@10 of
  its evidence turns for keyword, semantic and hybrid search, plus a side-by-side of
  other ways to fuse the same two signals.

    python bench/vault.py --quick              # sample of 150 notes, 20 queries, 1 conversation
    python bench/vault.py                      # the full run (sample of 800 notes for embeddings)
    python bench/vault.py --parts locomo       # one part only
    python bench/vault.py --full-embed yes     # embed the whole hub vault too (about an hour here)

Results: bench/results/vault.md and .json (vault.quick.* with --quick; --out to choose).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _vault_hub as hub
import _vault_locomo as locomo
from _vault_common import (
    DATASETS,
    PROJECT,
    RESULTS_DIR,
    WORK_DIR,
    fmt,
    load_average,
    machine,
)
from _vault_common import run_worker as run_in_worker

PARTS = ("hub", "locomo")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true",
                   help="small sample (150 notes), 20 queries, one LoCoMo conversation; no full-vault embedding")
    p.add_argument("--parts", default=",".join(PARTS), help="comma-separated: hub,locomo")
    p.add_argument("--datasets", type=Path, default=DATASETS)
    p.add_argument("--work", type=Path, default=WORK_DIR, help="scratch folder (vault copies, indexes, jobs)")
    p.add_argument("--sample", type=int, default=None, help="notes embedded in the sample vault (default 800; quick 150)")
    p.add_argument("--queries", type=int, default=None, help="search queries (default 50; quick 20)")
    p.add_argument("--seed", type=int, default=13)
    p.add_argument("--full-embed", choices=("auto", "yes", "no"), default="auto",
                   help="embed the whole hub vault as well: auto = when the extrapolated time "
                        "fits --embed-budget (never with --quick)")
    p.add_argument("--embed-budget", type=float, default=600.0, help="seconds allowed for --full-embed auto")
    p.add_argument("--conversations", type=int, default=None, help="LoCoMo conversations (default all 5; quick 1)")
    p.add_argument("--out", type=Path, default=None, help="output path without suffix")
    p.add_argument("--store", default=None, metavar="URL",
                   help="index into this store (postgresql://...) instead of SQLite files; keep results apart with --out")
    p.add_argument("--timeout", type=int, default=7200, help="seconds per worker")
    # Internal: run one measurement in this process.
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--job", type=Path, help=argparse.SUPPRESS)
    p.add_argument("--result", type=Path, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.sample is None:
        args.sample = 150 if args.quick else 800
    if args.queries is None:
        args.queries = 20 if args.quick else 50
    if args.conversations is None:
        args.conversations = 1 if args.quick else 0
    return args


# ---------------------------------------------------------------- workers

WORKERS = {
    "hub-full-noembed": hub.run_full_noembed,
    "hub-embed": hub.run_embed,
    "locomo": locomo.run,
}


def worker_main(args: argparse.Namespace) -> int:
    job = json.loads(args.job.read_text())
    result = WORKERS[args.worker](job)
    args.result.write_text(json.dumps(result, default=float))
    return 0


def run_worker(name: str, job: dict, args: argparse.Namespace, label: str) -> dict:
    return run_in_worker(__file__, name, job, label, args.work, args.timeout, "vault")


# ---------------------------------------------------------------- part 1: hub vault


def run_hub(args: argparse.Namespace) -> dict[str, Any]:
    archive = args.datasets / hub.ARCHIVE_NAME
    if not archive.exists():
        raise SystemExit(f"error: dataset not found: {archive} (pass --datasets DIR)")
    pristine = args.work / "hub-src"
    hub.unpack(archive, pristine)
    prep = hub.prepare(pristine, args.sample, args.queries, args.seed)
    out: dict[str, Any] = {"notes": prep["notes"], "sample_notes": len(prep["sample"]),
                           "queries": prep["queries"]}
    out["full"] = run_worker("hub-full-noembed", {
        "pristine": str(pristine), "root": str(args.work / "hub-full"),
        "edits": prep["edit_full"], "queries": prep["queries"],
    }, args, "hub-full-noembed")
    out["sample"] = run_worker("hub-embed", {
        "pristine": str(pristine), "root": str(args.work / "hub-sample"), "only": prep["sample"],
        "edits": prep["edit_sample"], "queries": prep["queries"],
    }, args, "hub-sample-embed")

    s = out["sample"]["stats"]
    embed_s = s["seconds"].get("embed", math.nan)
    per_item = embed_s / max(1, s["embedded"])
    full_items = out["full"]["counts"]["items"]
    est = {
        "embed_s_per_item": per_item,
        "items_per_s": 1 / per_item if per_item else math.nan,
        "notes_per_s": out["sample"]["notes"] / embed_s if embed_s else math.nan,
        "full_items": full_items,
        "full_embed_s": per_item * full_items,
        "full_cold_s": out["full"]["cold_s"] + per_item * full_items,
        "full_embed_s_by_notes": embed_s / max(1, out["sample"]["notes"]) * out["notes"],
    }
    out["extrapolation"] = est
    want_full = args.full_embed == "yes" or (
        args.full_embed == "auto" and not args.quick and est["full_cold_s"] <= args.embed_budget
    )
    if want_full:
        out["full_embed"] = run_worker("hub-embed", {
            "pristine": str(pristine), "root": str(args.work / "hub-full-embed"), "only": None,
            "edits": prep["edit_full"], "queries": prep["queries"],
        }, args, "hub-full-embed")
    else:
        out["full_embed_skipped"] = (
            f"extrapolated {est['full_cold_s']:.0f} s > budget {args.embed_budget:.0f} s"
            if args.full_embed == "auto" and not args.quick else f"--full-embed {args.full_embed}"
            + (" (--quick)" if args.quick else "")
        )
    return out


# ---------------------------------------------------------------- part 2: LoCoMo


def run_locomo(args: argparse.Namespace) -> dict[str, Any]:
    dataset = args.datasets / "locomo" / "dev.json"
    if not dataset.exists():
        raise SystemExit(f"error: dataset not found: {dataset} (pass --datasets DIR)")
    return run_worker("locomo", {
        "dataset": str(dataset), "root": str(args.work / "locomo"), "conversations": args.conversations,
    }, args, "locomo")


# ---------------------------------------------------------------- report


def pct(x: float | None) -> str:
    return fmt(None if x is None else 100 * x, 1)


def ms(x: float | None) -> str:
    return fmt(x, 1)


def hub_report(h: dict[str, Any]) -> list[str]:
    if "skipped" in h:
        return ["## Hub vault", "", f"Skipped: {h['skipped']}", ""]
    full, sample, est = h["full"], h["sample"], h["extrapolation"]
    fe = h.get("full_embed")
    fr, sr = full["reindex"], sample["reindex"]
    sst = sample["stats"]
    noop_ok = "meets" if fr["noop_s_median"] < 1.0 else "MISSES"
    lines = [
        "## Hub vault: indexing",
        "",
        (f"{h['notes']:,} notes ({full['counts']['items']:,} section items, {full['counts']['edges']:,} edges, "
        f"{full['stats']['warnings']} parse warnings). Embedding sample: {h['sample_notes']} notes drawn with "
        f"the fixed seed ({sample['counts']['items']:,} items), copied with their folders into a vault of their own."),
        "",
        "| measurement | seconds | detail |",
        "|---|---|---|",
        (f"| cold index, no embeddings, whole vault | {fmt(full['cold_s'], 2)} | "
        f"{h['notes'] / full['cold_s']:,.0f} notes/s; discover {fmt(full['stats']['seconds'].get('discover'), 2)} s, "
        f"parse+store {fmt(full['stats']['seconds'].get('parse_and_store'), 2)} s; peak RSS {fmt(full['rss_after_index_mb'], 0)} MB |"),
        (f"| no-change re-index, whole vault (median of {len(fr['noop'])}) | {fmt(fr['noop_s_median'], 3)} | "
        f"target < 1 s: {noop_ok} |"),
        (f"| one note edited, `ws.index()` (median / max of {len(fr['edit_index'])}) | "
        f"{fmt(fr['edit_index_s_median'], 3)} / {fmt(fr['edit_index_s_max'], 3)} | whole-vault scan + 1 file parsed |"),
        (f"| one note edited, `ws.update_files([path])` (median / max of {len(fr['edit_update'])}) | "
        f"{fmt(fr['edit_update_s_median'], 3)} / {fmt(fr['edit_update_s_max'], 3)} | no scan |"),
        (f"| cold index with embeddings, **sample** of {sample['notes']} notes | {fmt(sample['cold_s'], 1)} | "
        f"parse+store {fmt(sst['seconds'].get('parse_and_store'), 2)} s, embed {fmt(sst['seconds'].get('embed'), 1)} s "
        f"for {sst['embedded']:,} texts: **{fmt(est['notes_per_s'], 2)} notes/s, {fmt(est['items_per_s'], 1)} items/s** |"),
    ]
    if fe:
        lines.append(
            f"| cold index with embeddings, whole vault (measured) | {fmt(fe['cold_s'], 1)} | "
            f"embed {fmt(fe['stats']['seconds'].get('embed'), 1)} s for {fe['stats']['embedded']:,} texts |")
    lines.append(
        f"| cold index with embeddings, whole vault (**extrapolated**, not measured) | "
        f"{fmt(est['full_cold_s'], 0)} (≈ {est['full_cold_s'] / 60:.0f} min) | measured no-embedding cold index "
        f"+ {est['full_items']:,} items × {fmt(1000 * est['embed_s_per_item'], 1)} ms/item from the sample "
        f"(by notes instead: {fmt(est['full_embed_s_by_notes'] / 60, 0)} min of embedding) |")
    tok = sample.get("tokens", {})
    lines += [
        (f"| no-change re-index, sample with vectors (median of {len(sr['noop'])}) | {fmt(sr['noop_s_median'], 3)} | "
        f"nothing embedded: {all(x['embedded'] == 0 for x in sr['noop'])} |"),
        (f"| one note edited, `ws.index()`, sample with vectors (median / max) | "
        f"{fmt(sr['edit_index_s_median'], 3)} / {fmt(sr['edit_index_s_max'], 3)} | texts re-embedded per edit: "
        f"{', '.join(str(x['embedded']) for x in sr['edit_index'])} (the rest are cache hits by content hash) |"),
        (f"| one note edited, `ws.update_files([path])`, sample with vectors (median / max) | "
        f"{fmt(sr['edit_update_s_median'], 3)} / {fmt(sr['edit_update_s_max'], 3)} | re-embeds the changed sections |"),
        "",
        f"Peak RSS (`ru_maxrss`, each worker process): whole vault without embeddings {fmt(full['peak_rss_mb'], 0)} MB; "
        f"sample with embeddings {fmt(sample['peak_rss_mb'], 0)} MB"
        + (f"; whole vault with embeddings {fmt(fe['peak_rss_mb'], 0)} MB" if fe else "") + ".",
        "",
    ]
    if tok:
        lines += [
            (f"Embedded texts in the sample: {tok['texts']:,}, mean {tok['mean_tokens']:.0f} model tokens each "
            f"(the section text alone: {tok['mean_body_tokens']:.0f}; the rest is the `path kind qualname` head "
            f"that `indexer.embed_text` prepends), {100 * tok['truncated_share']:.1f}% cut at 256 tokens. "
            "Throughput on these sections is far below the ~200 texts/s of short sentences: cost grows with "
            "length, and the machine is shared."),
            "",
        ]
    if h.get("full_embed_skipped"):
        lines += [(f"The whole vault was not embedded ({h['full_embed_skipped']}); its embedding time above is "
                  "extrapolated from the sample, and semantic/hybrid latencies are measured on the sample vault."), ""]
    lines += [
        "## Hub vault: search latency",
        "",
        (f"{len(h['queries'])} queries from the vault itself (fixed seed): "
        f"{sum(q['kind'] == 'title' for q in h['queries'])} note titles and "
        f"{sum(q['kind'] == 'heading' for q in h['queries'])} section headings that at most 3 notes share, "
        "all from sampled notes. `limit=10`. The first query of each mode (loading the catalogue, vectors, "
        f"model) is shown apart; then {hub.WARMUP_QUERIES} warm-up queries, then every query once. "
        "*source in top 10*: the note the query came from is among the hits (a sanity check, not a quality benchmark)."),
        "",
        "| vault | items | mode | first query ms | p50 ms | p95 ms | max ms | source in top 10 |",
        "|---|---|---|---|---|---|---|---|",
    ]
    rows = [("whole vault, no vectors", full)] + [("sample, with vectors", sample)]
    if fe:
        rows.append(("whole vault, with vectors", fe))
    for label, res in rows:
        for mode, r in res["search"].items():
            lines.append(
                f"| {label} | {res['counts']['items']:,} | {mode} | {ms(1000 * r['first_s'])} | {ms(r['p50_ms'])} | "
                f"{ms(r['p95_ms'])} | {ms(r['max_ms'])} | {pct(r['source_in_top10'])}% |")
    lines += [
        "",
        "### Scoped search",
        "",
        ("Each query searched inside a scope, as a user narrowing a search would: the folder of the note it came "
        "from (`paths=[folder]`), and that note's rarest tag (`tags=[tag]`, for queries whose note has tags). "
        "Once with `limit=10`, once with `limit=1000` (a 100 times larger candidate pool); *short* = share of "
        "queries where `limit=10` returned fewer hits than the deep search found in the scope. A search that "
        "narrows after cutting its candidate pool comes up short."),
        "",
        "| vault | scope | mode | queries | items in scope (median / min) | short | top-10 overlap with deep | source in top 10 (deep) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    examples = []
    for label, res in rows:
        for kind, sc in (res.get("scoped") or {}).items():
            for mode in res["search"]:
                r = sc[mode]
                lines.append(
                    f"| {label} | {kind} | {mode} | {sc['queries']} | {fmt(sc['scope_items_median'], 0)} / "
                    f"{sc['scope_items_min']} | {pct(r['fewer_hits_than_deep'])}% | "
                    f"{pct(r['overlap_with_deep_top10'])}% | {pct(r['source_in_top10'])}% ({pct(r['source_in_deep_top10'])}%) |")
                examples += [(label, mode, e) for e in r["examples"]]
    if examples:
        lines += ["", "Examples: " + "; ".join(
            f"\"{e['query']}\" with `{json.dumps(e['filter'], ensure_ascii=False)}` ({label}, {mode}): "
            f"{e['hits']} hits with limit=10, {e['deep']} with limit=1000"
            for label, mode, e in examples[:4]) + "."]
    lines.append("")
    return lines


def locomo_report(r: dict[str, Any]) -> list[str]:
    if "skipped" in r:
        return ["## LoCoMo retrieval", "", f"Skipped: {r['skipped']}", ""]
    res, ev = r["results"], r["evidence"]
    lines = [
        "## LoCoMo retrieval quality",
        "",
        (f"- vault: one folder per conversation, one note per session, one `## D<s>:<t>` heading per turn "
        f"(turn text on one line, `Speaker: text`, plus `[shares a photo: caption]` for image turns); "
        f"{r['turns']:,} turns = {r['counts']['items']:,} items, checked one item per turn before measuring"),
        (f"- index with embeddings ({r['stats'].get('embedding_model')}): {fmt(r['index_s'], 1)} s "
        f"(embed {fmt(r['stats']['seconds'].get('embed'), 1)} s); peak RSS {fmt(r['peak_rss_mb'], 0)} MB"),
        (f"- questions scored: {ev['questions_used']} ({ev['questions_without_evidence']} without any usable evidence "
        f"left out; {ev['references_repaired']} malformed evidence references repaired, "
        f"{ev['references_dropped']} references to missing turns dropped)"),
        ("- each question: `ws.search(question, limit=10, mode=..., paths=[its conversation's folder])`; "
        "relevant = its `evidence` turns; Recall@k = share of evidence turns in the top k, averaged over "
        "questions; nDCG@10 binary; *all@10* = share of questions with every evidence turn in the top 10"),
        "",
        "### Categories 1-4",
        "",
        "| mode | n | Recall@5 | Recall@10 | nDCG@10 | all@10 |",
        "|---|---|---|---|---|---|",
    ]
    for mode in locomo.MODES:
        a = res["cat 1-4"]["modes"][mode]
        lines.append(f"| {mode} | {a['n']} | {pct(a['r5'])} | {pct(a['r10'])} | {pct(a['ndcg10'])} | {pct(a['all10'])} |")
    m = res["cat 1-4"]["modes"]
    beats = m["hybrid"]["r10"] > m["keyword"]["r10"] and m["hybrid"]["r10"] > m["semantic"]["r10"]
    lines += [
        "",
        (f"Target (hybrid Recall@10 above both keyword and semantic): **{'met' if beats else 'NOT met'}** "
        f"(hybrid {pct(m['hybrid']['r10'])}, keyword {pct(m['keyword']['r10'])}, semantic {pct(m['semantic']['r10'])}; "
        f"hybrid − keyword {100 * (m['hybrid']['r10'] - m['keyword']['r10']):+.2f} points, "
        f"hybrid − semantic {100 * (m['hybrid']['r10'] - m['semantic']['r10']):+.2f}). On Recall@5 and nDCG@10: "
        f"hybrid − keyword {100 * (m['hybrid']['r5'] - m['keyword']['r5']):+.2f} and "
        f"{100 * (m['hybrid']['ndcg10'] - m['keyword']['ndcg10']):+.2f} points."),
        "",
        "### By category (Recall@10 / nDCG@10)",
        "",
        "| category | n | keyword | semantic | hybrid |",
        "|---|---|---|---|---|",
    ]
    for c in (1, 2, 3, 4, 5):
        g = res[f"cat {c}"]["modes"]
        if not g["keyword"].get("n"):
            continue
        cells = " | ".join(f"{pct(g[mo]['r10'])} / {pct(g[mo]['ndcg10'])}" for mo in locomo.MODES)
        lines.append(f"| {c} {locomo.CATEGORY_NAMES[c]} | {g['keyword']['n']} | {cells} |")
    five = res["cat 5"]["modes"]
    if five["keyword"].get("n"):
        lines += [
            "",
            "### Category 5 (adversarial), reported apart",
            "",
            "| mode | n | Recall@5 | Recall@10 | nDCG@10 | all@10 |",
            "|---|---|---|---|---|---|",
        ]
        for mode in locomo.MODES:
            a = five[mode]
            lines.append(f"| {mode} | {a['n']} | {pct(a['r5'])} | {pct(a['r10'])} | {pct(a['ndcg10'])} | {pct(a['all10'])} |")
    lat = r["latency_ms"]
    lines += [
        "",
        ("Category names follow the usual reading of LoCoMo's numbers (1 multi-hop, 2 temporal, 3 open-domain, "
        "4 single-hop, 5 adversarial)."),
        "",
        "Search latency on this vault, all questions (ms, p50 / p95): "
        + ", ".join(f"{mo} {ms(lat[mo]['p50'])} / {ms(lat[mo]['p95'])}" for mo in locomo.MODES) + ".",
        "",
        "### Fusion diagnostics (categories 1-4)",
        "",
        "The same two rankings (FTS5 BM25 over the engine's chosen terms; cosine to the query vector), computed "
        "over the whole index and combined in the benchmark in other ways, to see what limits hybrid search. "
        f"The engine measured here fuses with RRF k={r.get('engine', {}).get('rrf_k', '?')} after filtering; "
        "the engine's own top 10 equal the bench-side *filter first* keyword / semantic / "
        f"`hybrid RRF k={r.get('engine', {}).get('rrf_k', '?')}, pool 100` rows in "
        + ", ".join(f"{mo} {pct(r['replica_agreement'][mo])}%" for mo in locomo.MODES)
        + " of questions. The first row is the engine before commit 520abb0 (each signal's top 100 over the "
        "whole index, RRF k=60, `paths` applied afterwards).",
        "",
        (f"Own-conversation items in a global pool of 100 (mean per question): keyword "
        f"{res['cat 1-4']['own_in_global_pool']['keyword']:.1f}, semantic {res['cat 1-4']['own_in_global_pool']['semantic']:.1f}. "
        f"Items per conversation: {', '.join(f'{c} {n}' for c, n in r.get('conversation_items', {}).items())}. "
        f"Keyword matches inside the question's conversation: median {fmt(res['cat 1-4'].get('own_keyword_matches_median'), 0)}. "
        f"*scope df* rows drop the question terms found in half or more of the conversation's items (the engine "
        f"applies that rule over the whole index); {r.get('questions_with_scope_common_terms', 0)} of "
        f"{ev['questions_used']} questions had such a term (mostly a speaker's name)."),
        "",
        ("*conv + / −*: in how many of the conversations (each its own corpus) the variant's Recall@10 on "
        "categories 1-4 is above / below the engine's hybrid."),
        "",
        "| variant | Recall@5 | Recall@10 | nDCG@10 | all@10 | cat 5 Recall@10 | cat 5 nDCG@10 | conv + / − |",
        "|---|---|---|---|---|---|---|---|",
    ]
    convs = [g for g in res if g.startswith("conv ")]
    a = res["cat 1-4"]["modes"]["hybrid"]
    c5 = res["cat 5"]["modes"]["hybrid"]
    lines.append(f"| **engine hybrid (as measured above)** | {pct(a['r5'])} | {pct(a['r10'])} | {pct(a['ndcg10'])} | "
                 f"{pct(a['all10'])} | {pct(c5.get('r10'))} | {pct(c5.get('ndcg10'))} | – |")
    for name, a in res["cat 1-4"]["variants"].items():
        c5 = res["cat 5"]["variants"].get(name, {})
        up = sum(res[g]["variants"][name]["r10"] > res[g]["modes"]["hybrid"]["r10"] + 1e-9 for g in convs)
        down = sum(res[g]["variants"][name]["r10"] < res[g]["modes"]["hybrid"]["r10"] - 1e-9 for g in convs)
        lines.append(f"| {name} | {pct(a['r5'])} | {pct(a['r10'])} | {pct(a['ndcg10'])} | {pct(a['all10'])} | "
                     f"{pct(c5.get('r10'))} | {pct(c5.get('ndcg10'))} | {up} / {down} |")
    lines.append("")
    return lines


def _with(out: Path, suffix: str) -> Path:
    # Not Path.with_suffix: "vault.quick" would become "vault.md".
    return out.parent / (out.name + suffix)


def git_state() -> dict[str, Any]:
    """The engine's commit and which of its source files differ from it (read-only git)."""
    def git(*a: str) -> str:
        try:
            return subprocess.run(["git", "-C", str(PROJECT), *a], capture_output=True, text=True,
                                  timeout=30, check=False).stdout
        except (OSError, subprocess.SubprocessError):
            return ""
    # Porcelain lines are "XY path": the leading status column may be a space.
    dirty = [line[3:] for line in git("status", "--porcelain", "--", "src").splitlines() if line.strip()]
    return {"head": git("rev-parse", "--short", "HEAD").strip() or None, "dirty": dirty}


def write_report(report: dict[str, Any], out: Path) -> None:
    mach = report["machine"]
    lines = [
        "# Vault benchmark" + (" (quick)" if report["quick"] else ""),
        "",
        f"- command: `{report['command']}`",
        f"- date: {report['date']}",
        (f"- machine: {mach['nproc']} cores, {mach['cpu']}, {mach['memory_gb']} GB RAM, Python {mach['python']}; "
        f"load average at start {report['load_start']}, at end {report['load_end']} (the machine is shared: "
        "compare ratios within this run, not absolute times across runs)"),
        f"- engine: commit {report['git'].get('head', '?')}"
        + (f", with uncommitted changes in {', '.join(report['git']['dirty'])}" if report["git"].get("dirty") else "")
        + " (read when the run started; each worker imports the package when it starts)",
        f"- total run time: {report['seconds'] / 60:.1f} min; seed {report['seed']}",
        ("- datasets: `../shared/datasets/obsidian-hub-vault.tar.gz` (obsidian-community/obsidian-hub), "
        "`../shared/datasets/locomo/dev.json` (LoCoMo, Maharana et al. 2024, CC BY-NC 4.0, evaluation only)"),
        "",
    ]
    if "hub" in report:
        lines += hub_report(report["hub"])
    if "locomo" in report:
        lines += locomo_report(report["locomo"])
    _with(out, ".md").write_text("\n".join(lines))
    _with(out, ".json").write_text(json.dumps(report, indent=1, default=float))


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.worker:
        return worker_main(args)
    try:
        import smartcontext  # noqa: F401
    except ImportError as exc:
        raise SystemExit(f"smartcontext is not importable ({exc}); run `pip install -e .` in {PROJECT}")
    parts = [p.strip() for p in args.parts.split(",") if p.strip()]
    unknown = set(parts) - set(PARTS)
    if unknown:
        raise SystemExit(f"unknown parts {sorted(unknown)}; choose from {', '.join(PARTS)}")
    # Every dataset a chosen part needs, checked before hours of work start.
    needed = {"hub": args.datasets / hub.ARCHIVE_NAME, "locomo": args.datasets / "locomo" / "dev.json"}
    missing = [str(needed[part]) for part in parts if not needed[part].exists()]
    if missing:
        raise SystemExit(f"error: dataset not found: {', '.join(missing)} (pass --datasets DIR, or --parts)")
    args.work.mkdir(parents=True, exist_ok=True)
    # The workers' Workspace.open() reads it: the same benchmark on another store.
    os.environ.pop("SMARTCONTEXT_STORE_URL", None)
    if args.store:
        os.environ["SMARTCONTEXT_STORE_URL"] = args.store
    t0 = time.perf_counter()
    report: dict[str, Any] = {
        "command": "python bench/vault.py" + (" " + shlex.join(sys.argv[1:]) if sys.argv[1:] else ""),
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": machine(), "load_start": load_average(), "quick": args.quick, "seed": args.seed,
        "sample": args.sample, "git": git_state(),
        "store": args.store.split("@")[-1] if args.store else "sqlite",
    }
    if "hub" in parts:
        report["hub"] = run_hub(args)
    if "locomo" in parts:
        report["locomo"] = run_locomo(args)
    report["load_end"] = load_average()
    report["seconds"] = time.perf_counter() - t0
    out = args.out or RESULTS_DIR / ("vault.quick" if args.quick else "vault")
    out.parent.mkdir(parents=True, exist_ok=True)
    write_report(report, out)
    print(_with(out, ".md").read_text())
    print(f"[vault] wrote {_with(out, '.md')} and {_with(out, '.json')}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
