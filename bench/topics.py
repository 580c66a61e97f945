"""Local chat topics on LoCoMo: what each bubble selects, and whether its label reads as a
person would write it.

Each LoCoMo conversation becomes one chat file (as in ``chat_context.py``); topics are
extracted by the local method with the CLI's defaults (``smartcontext chat topics
--extract`` on a folder with no ``[llm]`` model: the chat's default embedding model) and,
in a second folder, with embeddings off (``[embeddings] model = "none"``: topics from the
messages' words). Then every bubble is clicked alone, through ``set_filter``, and the
history the topic filter keeps is measured against the whole conversation.

Per bubble: the share of the conversation it selects (target 2-60%: under 2% a bubble is
noise, over 60% it filters nothing), whether the count shown equals the messages it
selects (sticky instructions, always in, aside), whether it matched nothing. Per label:
contractions ("It's"), stop words, speaker names (or their short forms), one word twice in
two forms ("Dog Dogs"), and two labels of one chat alike ("X" and "X 2", or the same words
in any order or form).

    python bench/topics.py            # the five dev conversations, both modes
    python bench/topics.py --quick    # one conversation, default mode only
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

from _vault_common import DATASETS, RESULTS_DIR, BENCH_DIR, clean_env, load_average, machine
from chat_context import chat_messages

LOCOMO = DATASETS / "locomo" / "dev.json"
WORK = BENCH_DIR / ".work" / "topics"
LOW, HIGH = 0.02, 0.60
MODES = {"default": "", "embeddings off": '[embeddings]\nmodel = "none"\n'}


def label_problems(label: str, others: list[str], speakers: set[str]) -> list[str]:
    """What a person would not write in ``label`` (empty when it reads fine)."""
    from smartcontext.chat.topics import CHAT_STOPWORDS, word_key

    words = label.split()
    out = []
    if any("'" in w or "\u2019" in w for w in words):
        out.append("contraction")
    if any(w.lower() in CHAT_STOPWORDS for w in words):
        out.append("stop word")
    if any(w.lower() in speakers or any(s.startswith(w.lower()) for s in speakers if len(w) >= 3) for w in words):
        out.append("speaker name")
    keys = [word_key(w) for w in words]
    if len(set(keys)) < len(keys):
        out.append("one word twice")
    if re.search(r" \d+$", label):
        out.append("numbered duplicate")
    if any(frozenset(keys) == frozenset(word_key(w) for w in o.split()) for o in others):
        out.append("alike another label")
    return out


def run_mode(name: str, toml: str, convs: list[dict]) -> dict:
    from smartcontext import Workspace

    root = WORK / re.sub(r"\W+", "-", name)
    mem = root / ".memory"
    mem.mkdir(parents=True, exist_ok=True)
    # The chat files are written anew each run; the embedding caches beside them are kept
    # (keyed by each message's text, so they cannot go stale).
    for conv in convs:
        (mem / f"{conv['sample_id']}.json").write_text(
            json.dumps({"messages": chat_messages(conv), "topics": []}), encoding="utf-8")
    (root / "smartcontext.toml").write_text(toml, encoding="utf-8")
    out: dict = {"conversations": {}}
    with Workspace.open(root) as ws:
        sc = ws.chats()
        for conv in convs:
            cid = conv["sample_id"]
            chat = sc.chat(cid)
            msgs = chat.messages()
            vectors = chat.vectors()
            if vectors is not None:
                vectors.matrix(msgs)  # embedding time is not topic time
            t0 = time.perf_counter()
            result = chat.extract_topics(method="local")
            seconds = time.perf_counter() - t0
            speakers = {w.lower() for m in msgs for w in m.role.split()}
            regular = [t for t in result.topics if not t.get("sticky")]
            sticky = len(chat.load().sticky_ids())
            bubbles = []
            for t in regular:
                answer = sc.set_filter([t["label"]], chat_id=cid)
                hist = chat.history(mode="topics")
                selected = len(hist.messages) - len(hist.sticky_ids)
                others = [o["label"] for o in regular if o is not t]
                bubbles.append({
                    "label": t["label"], "count": t["count"], "selected": selected,
                    "share": round(len(hist.messages) / len(msgs), 4), "mode": hist.mode,
                    "matched_nothing": bool(answer.get("matched_nothing")),
                    "problems": label_problems(t["label"], others, speakers),
                })
            sc.set_filter([], chat_id=cid)
            out["conversations"][cid] = {"messages": len(msgs), "sticky": sticky, "method": result.method,
                                         "seconds": round(seconds, 2), "bubbles": bubbles}
    bubbles = [b for c in out["conversations"].values() for b in c["bubbles"]]
    out["summary"] = {
        "bubbles": len(bubbles),
        "in_range": sum(LOW <= b["share"] <= HIGH for b in bubbles),
        "min_share": min((b["share"] for b in bubbles), default=None),
        "max_share": max((b["share"] for b in bubbles), default=None),
        "count_equals_selected": sum(b["count"] == b["selected"] for b in bubbles),
        "matched_nothing": sum(b["matched_nothing"] for b in bubbles),
        "labels_with_problems": sum(bool(b["problems"]) for b in bubbles),
        "conversations_all_in_range": sum(all(LOW <= b["share"] <= HIGH for b in c["bubbles"]) and bool(c["bubbles"])
                                          for c in out["conversations"].values()),
    }
    return out


def render(r: dict) -> str:
    lines = ["# Local chat topics on LoCoMo", "",
             f"`{r['command']}` — {r['date']}, {r['machine']['nproc']} cores, load {r['load_average']}; "
             f"{len(r['conversations'])} conversations of `{r['dataset']}`. A bubble should select "
             f"{int(LOW * 100)}-{int(HIGH * 100)}% of its conversation (share includes the sticky "
             "instructions, always in).", "",
             "| mode | bubbles | share in 2-60% | conversations all in range | min share | max share | "
             "count = selected | matched nothing | labels with problems |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for mode, m in r["modes"].items():
        s = m["summary"]
        lines.append(f"| {mode} | {s['bubbles']} | {s['in_range']} | {s['conversations_all_in_range']}/"
                     f"{len(m['conversations'])} | {100 * s['min_share']:.1f}% | {100 * s['max_share']:.1f}% | "
                     f"{s['count_equals_selected']} | {s['matched_nothing']} | {s['labels_with_problems']} |")
    for mode, m in r["modes"].items():
        lines += ["", f"## {mode}", ""]
        for cid, c in m["conversations"].items():
            lines.append(f"- **{cid}** ({c['messages']} messages, {c['sticky']} sticky, {c['seconds']} s): " + ", ".join(
                f"{b['label']} ({b['count']}, {100 * b['share']:.1f}%)" + (f" [{'; '.join(b['problems'])}]" if b["problems"] else "")
                for b in c["bubbles"]))
    lines.append("")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="one conversation, default mode only")
    ap.add_argument("--dataset", type=Path, default=LOCOMO, help="LoCoMo conversations (default ../shared/datasets/locomo/dev.json)")
    ap.add_argument("--out", type=Path, default=None, help="results file stem (default bench/results/topics[.quick])")
    args = ap.parse_args()
    if not args.dataset.is_file():
        print(f"error: dataset not found: {args.dataset}", file=sys.stderr)
        return 2
    clean_env()
    sys.path.insert(0, str(BENCH_DIR.parent / "src"))
    convs = json.loads(args.dataset.read_text())
    modes = dict(MODES)
    if args.quick:
        convs, modes = convs[:1], {"default": MODES["default"]}
    report = {"command": "python bench/topics.py" + (" --quick" if args.quick else "")
                         + (f" --dataset {args.dataset}" if args.dataset != LOCOMO else ""),
              "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "machine": machine(),
              "load_average": load_average(),
              "dataset": "locomo/dev.json" if args.dataset == LOCOMO else str(args.dataset),
              "conversations": [c["sample_id"] for c in convs],
              "modes": {name: run_mode(name, toml, convs) for name, toml in modes.items()}}
    stem = args.out or RESULTS_DIR / ("topics.quick" if args.quick else "topics")
    stem.parent.mkdir(parents=True, exist_ok=True)
    Path(f"{stem}.json").write_text(json.dumps(report, indent=2))
    md = render(report)
    Path(f"{stem}.md").write_text(md)
    print(md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
