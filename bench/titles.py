"""Does a query that names a note find that note first? Every note of the hub vault.

The Obsidian community hub vault (6,571 notes, ../shared/datasets) is indexed whole, then
each note is searched for by each of its names, as a user types them:

  file name  the note's file name without ``.md`` (what Obsidian shows as its title)
  title      its frontmatter ``title`` or first level-1 heading, when that differs
  alias      each of its frontmatter ``aliases``
  slug       the file name's words joined by ``-`` (``Obsidian Publish`` -> ``obsidian-publish``),
             for file names with spaces

A query is answered right when the note is the first hit. Several notes can share a name
(the same file name in two folders, one alias on many notes): such a query has no single
right answer, so it is counted apart as *shared*, right when the note is among the first
``n`` hits where ``n`` notes share that name (normalised as ``retrieval.titles``), and its
strict rank-1 figure is shown too.

    python bench/titles.py                   # keyword and hybrid (default static model)
    python bench/titles.py --no-embeddings   # keyword only, no vectors
    python bench/titles.py --quick           # queries of 600 notes (the index is still whole)

Results: bench/results/titles.md and .json (titles.quick.* with --quick; --out to choose).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import re
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _vault_hub as hub
from _vault_common import DATASETS, PROJECT, RESULTS_DIR, WORK_DIR, clean_env, load_average, machine

KINDS = ("file name", "title", "alias", "slug")
_WIKI = re.compile(r"!?\[\[([^\[\]|\n]*)(?:\|([^\[\]\n]*))?\]\]")


def _norm(text: str) -> str:
    # The benchmark's own copy of the comparison (NFKC, casefold, runs of non-alphanumerics
    # as one space), so a change to the engine's cannot move the benchmark's answer key.
    import unicodedata

    text = _WIKI.sub(lambda m: m.group(2) if m.group(2) is not None else m.group(1), text)
    text = unicodedata.normalize("NFKC", text).casefold()
    return " ".join(re.split(r"[\W_]+", text)).strip()


def _shown(text: str) -> str:
    """A title as a user would type it: link syntax reduced to its shown text."""
    return " ".join(_WIKI.sub(lambda m: m.group(2) if m.group(2) is not None else m.group(1), text).split())


def note_queries(root: Path) -> tuple[list[dict[str, str]], dict[str, set[str]]]:
    """Every (query, kind, note) of the vault, and normalised name -> notes it names."""
    from smartcontext.notes.frontmatter import frontmatter_aliases
    from smartcontext.notes.scan import scan_note

    queries: list[dict[str, str]] = []
    owners: dict[str, set[str]] = defaultdict(set)
    for rel in hub.list_notes(root):
        scan = scan_note((root / rel).read_text(encoding="utf-8", errors="replace"))
        stem = Path(rel).stem
        names: dict[str, str] = {stem: "file name"}
        title = _shown(scan.title(rel))
        if title and _norm(title) != _norm(stem):
            names.setdefault(title, "title")
        for alias in frontmatter_aliases(scan.frontmatter):
            alias = " ".join(str(alias).split())
            if alias and _norm(alias):
                names.setdefault(alias, "alias")
        if " " in stem.strip():
            names.setdefault("-".join(stem.lower().split()), "slug")
        for name, kind in names.items():
            if not _norm(name):
                continue  # a name of emoji or punctuation only: nothing to type
            owners[_norm(name)].add(rel)
            queries.append({"query": name, "kind": kind, "note": rel})
    return queries, owners


def measure(ws, queries: list[dict[str, str]], owners: dict[str, set[str]], mode: str) -> dict[str, Any]:
    per_kind: dict[str, Counter] = defaultdict(Counter)
    misses: list[dict[str, Any]] = []
    note_ok: dict[str, bool] = {}
    times = []
    for q in queries:
        t0 = time.perf_counter()
        hits = ws.search(q["query"], limit=10, mode=mode)
        times.append(time.perf_counter() - t0)
        # A note is one result however many of its sections match: rank notes, not sections.
        notes = list(dict.fromkeys(h.path for h in hits))
        sharing = len(owners[_norm(q["query"])])
        c = per_kind[q["kind"]]
        c["n"] += 1
        first = bool(notes) and notes[0] == q["note"]
        c["first"] += first
        if sharing > 1:
            c["shared"] += 1
            owners_of = owners[_norm(q["query"])]
            # More notes share the name than 10 hits hold: right when the hits are all theirs.
            ok = q["note"] in notes[:sharing] if sharing <= 10 else (
                len(notes) == 10 and all(n in owners_of for n in notes))
            c["shared_ok"] += ok
            c["shared_first"] += first
            note_ok[q["note"]] = note_ok.get(q["note"], True) and ok
        else:
            c["unique"] += 1
            c["unique_first"] += first
            note_ok[q["note"]] = note_ok.get(q["note"], True) and first
            if not first and len(misses) < 40:
                misses.append({"query": q["query"], "kind": q["kind"], "note": q["note"],
                               "rank": notes.index(q["note"]) + 1 if q["note"] in notes else None,
                               "top": notes[:3]})
    total = Counter()
    for c in per_kind.values():
        total.update(c)
    times.sort()
    return {
        "per_kind": {k: dict(v) for k, v in per_kind.items()}, "total": dict(total), "misses": misses,
        "notes": len(note_ok), "notes_all_right": sum(note_ok.values()),
        "p50_ms": 1000 * times[len(times) // 2], "p95_ms": 1000 * times[int(len(times) * 0.95)],
    }


def share(a: int, b: int) -> str:
    return f"{100 * a / b:.1f}%" if b else "–"


def report(res: dict[str, Any]) -> str:
    lines = [
        "# Note names: does a query naming a note rank it first? (hub vault)",
        "",
        f"{res['date']}, engine {res['commit']}, load {res['load']}, {res['notes']:,} notes, "
        f"{res['queries']:,} queries; `{res['command']}`.",
        "",
        "Unique: names only one note has (right = that note is the first hit). Shared: names "
        "several notes have (right = the note is among the first n hits, n = notes sharing it).",
        "",
        "| mode | kind | queries | first (all) | unique names | unique: first | shared names | shared: in first n |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for mode, m in res["modes"].items():
        for kind in (*KINDS, "all"):
            c = m["total"] if kind == "all" else m["per_kind"].get(kind)
            if not c:
                continue
            label = f"**{kind}**" if kind == "all" else kind
            lines.append(
                f"| {mode} | {label} | {c['n']:,} | {share(c.get('first', 0), c['n'])} | {c.get('unique', 0):,} | "
                f"{share(c.get('unique_first', 0), c.get('unique', 0))} | {c.get('shared', 0):,} | "
                f"{share(c.get('shared_ok', 0), c.get('shared', 0))} |"
            )
    lines.append("")
    for mode, m in res["modes"].items():
        lines.append(f"{mode}: notes every name of which is answered right (unique names first, shared names "
                     f"among the first n): {m['notes_all_right']:,} of {m['notes']:,} "
                     f"({share(m['notes_all_right'], m['notes'])}).")
    lines.append("")
    for mode, m in res["modes"].items():
        lines.append(f"{mode}: search p50 {m['p50_ms']:.1f} ms, p95 {m['p95_ms']:.1f} ms. "
                     f"Unique-name misses (first {len(m['misses'])}):")
        lines.append("")
        for x in m["misses"][:15]:
            lines.append(f"- `{x['query']}` ({x['kind']}) -> rank {x['rank']}, top {x['top'][:2]}")
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="queries of a fixed sample of 600 notes")
    p.add_argument("--no-embeddings", action="store_true", help="keyword search only, no vectors")
    p.add_argument("--datasets", type=Path, default=DATASETS)
    p.add_argument("--work", type=Path, default=WORK_DIR.parent / "titles")
    p.add_argument("--out", type=Path, default=None, help="output path without suffix")
    p.add_argument("--seed", type=int, default=13)
    args = p.parse_args(argv)

    from smartcontext import Workspace

    clean_env()
    root = args.work / "hub"
    hub.unpack(args.datasets / hub.ARCHIVE_NAME, root)
    queries, owners = note_queries(root)
    notes = len({q["note"] for q in queries})
    if args.quick:
        keep = set(random.Random(args.seed).sample(sorted({q["note"] for q in queries}), 600))
        queries = [q for q in queries if q["note"] in keep]
    ws = Workspace.open(root)
    if args.no_embeddings:
        ws.config.embeddings.model = "none"
    t0 = time.perf_counter()
    ws.index(embeddings=not args.no_embeddings)
    index_s = time.perf_counter() - t0
    modes = ("keyword",) if args.no_embeddings else ("keyword", "hybrid")
    commit = subprocess.run(["git", "-C", str(PROJECT), "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    res: dict[str, Any] = {
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), "commit": commit,
        "load": load_average(), "machine": machine(), "notes": notes, "queries": len(queries),
        "index_s": index_s, "command": "python bench/titles.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "modes": {mode: measure(ws, queries, owners, mode) for mode in modes},
    }
    ws.close()
    out = args.out or RESULTS_DIR / ("titles.quick" if args.quick else "titles")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(res, indent=1, default=float))
    text = report(res)
    out.with_suffix(".md").write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
