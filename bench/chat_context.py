"""Chat history filters on LoCoMo: which past turns reach the model, at what share of the
history's tokens.

Each LoCoMo conversation becomes one chat file, ``.memory/<sample_id>.json`` (message id =
``dia_id``, role = speaker, content = the turn, with ``[shares a photo: <caption>]`` when it
has one, timestamp = the session's date), in one workspace indexed by the engine. Every
question is the pending user message; the history is the whole conversation; its
``evidence`` turns are what the filter must keep. Methods, side by side in one run:

- ``threshold``: the seed's rule with the question as the query: cos >= 0.4 (whole history
  when nothing clears it).
- ``topics``: the seed's topic filter: topics extracted by the local method, the two labels
  closest to the question selected (as a user clicking the matching bubbles), cos >= 0.4
  to a selected label.
- ``auto@10%`` / ``auto@25%``: our automatic filter (BM25 from the workspace index +
  vectors, fused, neighbouring turns, the named speaker, longer turns first at equal
  score, sticky, budget = share of the history's tokens).

The automatic filter's constants were tuned on the first two conversations (conv-26,
conv-30); the table splits categories 1-4 into those (``tune``) and the other three
(``confirm``). The ablation table re-runs the automatic filter on the same rankings with
each of its parts switched off or set as before (``chat.auto``'s module constants).

Tokens are cl100k_base counts of the rendered lines (``[date] speaker: text``). Categories
1-4 (multi-hop, temporal, open-domain, single-hop) and 5 (adversarial) are reported apart.
Speed rows: filtering a 1,000-message chat with a warm cache (median of the questions),
re-embedding after adding one message, local topic extraction for 500 messages.

    python bench/chat_context.py --quick          # one conversation, 60 questions
    python bench/chat_context.py                  # all conversations of dev.json
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import time
from pathlib import Path

import numpy as np

from _vault_common import DATASETS, RESULTS_DIR, BENCH_DIR, clean_env, load_average, machine, median

LOCOMO = DATASETS / "locomo" / "dev.json"
WORK = BENCH_DIR / ".work" / "chat_context"
_SESSION = re.compile(r"session_(\d+)")
_EVIDENCE = re.compile(r"D:?(\d+):(\d+)")
METHODS = ("threshold", "topics", "auto@10%", "auto@25%")
TOPICS_SELECTED = 2
TUNE = ("conv-26", "conv-30")
# name -> (CHAT_RRF_K, FUSION_WEIGHTS, SPEAKER_BOOST, LENGTH_EXPONENT)
ABLATIONS = {
    "issue 9 filter (RRF k 10, semantic x2)": (10, (1.0, 2.0), 0.0, 0.0),
    "RRF k 5, equal weights": (5, (1.0, 1.0), 0.0, 0.0),
    "+ speaker boost": (5, (1.0, 1.0), 2.0, 0.0),
    "+ longer turns first (= auto)": (5, (1.0, 1.0), 2.0, 0.75),
    "auto, speaker boost 3": (5, (1.0, 1.0), 3.0, 0.75),
    "auto, score per token instead": (5, (1.0, 1.0), 2.0, -1.0),
    "auto without speaker boost": (5, (1.0, 1.0), 0.0, 0.75),
}


def turn_text(turn: dict) -> str:
    text = " ".join(str(turn.get("text", "")).split())
    caption = " ".join(str(turn.get("blip_caption") or "").split())
    return text + (f" [shares a photo: {caption}]" if caption else "")


def chat_messages(conv: dict) -> list[dict]:
    c = conv["conversation"]
    out = []
    for key in sorted((k for k in c if _SESSION.fullmatch(k) and isinstance(c[k], list)),
                      key=lambda k: int(k.split("_")[1])):
        date = c.get(f"{key}_date_time")
        for turn in c[key]:
            out.append({"id": turn["dia_id"], "role": turn["speaker"], "content": turn_text(turn),
                        **({"timestamp": date} if date else {})})
    return out


def evidence_ids(qa: dict) -> list[str]:
    ids = []
    for ev in qa.get("evidence") or []:
        for m in _EVIDENCE.finditer(str(ev)):
            ids.append(f"D{int(m.group(1))}:{int(m.group(2))}")
    return list(dict.fromkeys(ids))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="one conversation, 60 questions")
    ap.add_argument("--out", type=Path, default=None, help="results file stem (default bench/results/chat_context[.quick])")
    args = ap.parse_args()
    if not LOCOMO.is_file():
        print(f"skipped: {LOCOMO} is absent (the benchmark needs ../shared/datasets)", file=sys.stderr)
        return 0
    clean_env()
    sys.path.insert(0, str(BENCH_DIR.parent / "src"))
    from smartcontext import Workspace
    from smartcontext.chat import auto
    from smartcontext.chat.auto import render_message
    from smartcontext.chat.vectors import embed_labels
    from smartcontext.tokens import count_many

    convs = json.loads(LOCOMO.read_text())
    if args.quick:
        convs = convs[:1]
    root = WORK / ("quick" if args.quick else "full")
    if root.exists():
        shutil.rmtree(root)
    (root / ".memory").mkdir(parents=True)
    for conv in convs:
        (root / ".memory" / f"{conv['sample_id']}.json").write_text(
            json.dumps({"messages": chat_messages(conv), "topics": []}), encoding="utf-8")
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    ws = Workspace.open(root)
    t0 = time.perf_counter()
    ws.index(embeddings=False)
    index_s = time.perf_counter() - t0
    sc = ws.chats()
    embedder = sc.embedder()  # the chat's own model ([chat] embedding_model)
    rows: dict[tuple[str, str], list[tuple[float, bool, float]]] = {}
    ablation: dict[tuple[str, str], list[float]] = {}
    timings: dict[str, list[float]] = {m: [] for m in METHODS}
    extract_s = embed_s = 0.0
    n_messages = 0
    for conv in convs:
        chat = sc.chat(conv["sample_id"])
        msgs = chat.messages()
        n_messages += len(msgs)
        t0 = time.perf_counter()
        chat.vectors().matrix(msgs)
        embed_s += time.perf_counter() - t0
        topics = chat.extract_topics(method="local")
        extract_s += topics.seconds
        labels = [t["label"] for t in topics.topics if not t.get("sticky")]
        label_vecs = embed_labels(embedder, labels)
        sticky = chat.load().sticky_ids()
        tokens = dict(zip([m.id for m in msgs], count_many([render_message(m) for m in msgs])))
        total = sum(tokens.values())
        qas = [q for q in conv["qa"] if evidence_ids(q) and q.get("question")]
        if args.quick:
            qas = qas[:60]
        for qa in qas:
            ev = set(evidence_ids(qa)) & set(tokens)
            if not ev:
                continue
            group = "1-4" if qa["category"] != 5 else "5"
            q = qa["question"]
            qv = embedder.embed_query(q)
            chosen = [labels[i] for i in np.argsort(-(label_vecs @ qv))[:TOPICS_SELECTED]]
            for method in METHODS:
                t0 = time.perf_counter()
                if method == "threshold":
                    res = chat.history(q, mode="threshold")
                elif method == "topics":
                    sc.active_topics, sc.embedding_search = chosen, True
                    res = chat.history(mode="topics")
                else:
                    res = chat.history(q, mode="auto", share=0.10 if method == "auto@10%" else 0.25)
                timings[method].append(time.perf_counter() - t0)
                kept = set(res.message_ids)
                recall = len(ev & kept) / len(ev)
                share = sum(tokens[i] for i in kept) / total
                rows.setdefault((method, group), []).append((recall, ev <= kept, share))
                if method.startswith("auto") and group == "1-4":
                    part = "tune" if conv["sample_id"] in TUNE else "confirm"
                    rows.setdefault((method, part), []).append((recall, ev <= kept, share))
            ranking = chat.keyword_ranking(q, len(msgs))
            matrix = chat.vectors().matrix(msgs)
            counts = [tokens[m.id] for m in msgs]
            for name, consts in ABLATIONS.items():
                for sh in (0.10, 0.25):
                    with constants(auto, consts):
                        res = auto.auto_filter(conv["sample_id"], msgs, sticky, ranking, matrix, qv, share=sh,
                                               neighbours=sc.config.neighbours, token_counts=counts, pending=q)
                    ablation.setdefault((name, f"{group}|{int(sh * 100)}%"), []).append(
                        len(ev & set(res.message_ids)) / len(ev))
    sc.active_topics = []

    # Speed: a 1,000-message chat (turns of the conversations, in order), warm cache.
    speed = speed_rows(sc, convs, embedder)
    report = {
        "command": "python bench/chat_context.py" + (" --quick" if args.quick else ""),
        "date": started, "machine": machine(), "load_average": load_average(),
        "conversations": len(convs), "messages": n_messages, "embedding_model": embedder.name,
        "index_seconds": round(index_s, 2), "embed_seconds": round(embed_s, 2),
        "topic_extraction_seconds": round(extract_s, 2),
        "results": {f"{m}|{g}": summarise(v) for (m, g), v in sorted(rows.items())},
        "filter_ms_median": {m: round(1000 * median(v), 1) for m, v in timings.items()},
        "speed": speed,
        "ablation": {f"{n}|{b}": round(sum(v) / len(v), 4) for (n, b), v in ablation.items()},
    }
    stem = args.out or RESULTS_DIR / ("chat_context.quick" if args.quick else "chat_context")
    stem.parent.mkdir(parents=True, exist_ok=True)
    Path(f"{stem}.json").write_text(json.dumps(report, indent=2))
    md = render(report)
    Path(f"{stem}.md").write_text(md)
    print(md)
    ws.close()
    return 0


class constants:
    """Set ``chat.auto``'s tuning constants for one block, then put them back."""

    NAMES = ("CHAT_RRF_K", "FUSION_WEIGHTS", "SPEAKER_BOOST", "LENGTH_EXPONENT")

    def __init__(self, module, values):
        self.module, self.values = module, values

    def __enter__(self):
        self.saved = [getattr(self.module, n) for n in self.NAMES]
        for n, v in zip(self.NAMES, self.values):
            setattr(self.module, n, v)

    def __exit__(self, *exc):
        for n, v in zip(self.NAMES, self.saved):
            setattr(self.module, n, v)


def summarise(v: list[tuple[float, bool, float]]) -> dict:
    n = len(v)
    return {"questions": n, "evidence_recall": round(sum(r for r, _, _ in v) / n, 4),
            "all_evidence": round(sum(a for _, a, _ in v) / n, 4),
            "token_share": round(sum(s for _, _, s in v) / n, 4)}


def own_work(chat, pending, query_vector):
    """The automatic filter without embedding the pending message: what ``history``
    does around that call (read the chat, vectors, keyword ranks, token counts, filter)."""
    from smartcontext.chat.auto import auto_filter

    data = chat.load()
    matrix = chat.vectors().matrix(data.messages)
    encoding = chat.workspace.config.context.encoding
    return auto_filter(chat.chat_id, data.messages, data.sticky_ids(), chat.keyword_ranking(pending, len(data.messages)),
                       matrix, query_vector, share=chat.context.config.history_share,
                       neighbours=chat.context.config.neighbours, encoding=encoding,
                       token_counts=chat.token_counts(data.messages, encoding), pending=pending)


def speed_rows(sc, convs, embedder) -> dict:

    all_msgs = []
    for conv in convs:
        all_msgs += chat_messages(conv)
    if len(all_msgs) < 1000:
        all_msgs = (all_msgs * (1000 // max(1, len(all_msgs)) + 1))
    big = [{**m, "id": f"{n}-{m['id']}"} for n, m in enumerate(all_msgs[:1000])]
    mem = sc.memory_dir
    (mem / "speed-1000.json").write_text(json.dumps({"messages": big, "topics": []}))
    (mem / "speed-500.json").write_text(json.dumps({"messages": big[:500], "topics": []}))
    chat = sc.chat("speed-1000")
    msgs = chat.messages()
    chat.vectors().matrix(msgs)  # warm the cache
    questions = [q["question"] for conv in convs for q in conv["qa"]][:30]
    chat.history(questions[0], mode="auto")  # index and token counts warm
    auto_ms, auto_cpu_ms, query_ms, own_ms, topic_ms = [], [], [], [], []
    chat.extract_topics(method="local")
    labels = [t["label"] for t in chat.load().topics if not t.get("sticky")][:2]
    for q in questions:
        t0, c0 = time.perf_counter(), time.process_time()
        chat.history(q, mode="auto")
        auto_ms.append(1000 * (time.perf_counter() - t0))
        auto_cpu_ms.append(1000 * (time.process_time() - c0))
        t0 = time.perf_counter()
        qv = embedder.embed_query(q)
        query_ms.append(1000 * (time.perf_counter() - t0))
        t0 = time.perf_counter()
        own_work(chat, q, qv)
        own_ms.append(1000 * (time.perf_counter() - t0))
    sc.active_topics, sc.embedding_search = labels, True
    for _ in questions:
        t0 = time.perf_counter()
        chat.history(mode="topics")
        topic_ms.append(1000 * (time.perf_counter() - t0))
    sc.active_topics = []
    chat.add_message("user", "One more question about the trip next week.", extract=False)
    vec = chat.vectors()
    vec.matrix(chat.messages())
    re_embedded = vec.embedded_last
    c500 = sc.chat("speed-500")
    c500.vectors().matrix(c500.messages())
    t0 = time.perf_counter()
    res = c500.extract_topics(method="local")
    extract_500 = time.perf_counter() - t0
    return {"auto_filter_1000_ms_median": round(median(auto_ms), 1),
            "auto_filter_1000_cpu_ms_median": round(median(auto_cpu_ms), 1),
            "query_embedding_ms_median": round(median(query_ms), 1),
            "auto_filter_own_ms_median": round(median(own_ms), 1),
            "topic_filter_1000_ms_median": round(median(topic_ms), 1),
            "re_embedded_after_one_message": re_embedded,
            "local_topics_500_seconds": round(extract_500, 3),
            "local_topics_500": [t["label"] for t in res.topics]}


def render(r: dict) -> str:
    lines = [
        "# Chat history filters on LoCoMo",
        "",
        f"`{r['command']}` — {r['date']}, {r['machine']['nproc']} cores ({r['machine']['cpu']}), "
        f"load {r['load_average']}; {r['conversations']} conversations, {r['messages']} turns, "
        f"embeddings {r['embedding_model']}.",
        "",
        "| method | categories | questions | evidence recall | all evidence kept | history tokens kept |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for key, v in r["results"].items():
        m, g = key.split("|")
        lines.append(f"| {m} | {g} | {v['questions']} | {v['evidence_recall']:.3f} | {v['all_evidence']:.3f} | "
                     f"{100 * v['token_share']:.1f}% |")
    s = r["speed"]
    lines += [
        "",
        "| speed | value |",
        "|---|---:|",
        f"| auto filter, 1,000-message chat, warm cache (median) | {s['auto_filter_1000_ms_median']} ms |",
        f"| auto filter, 1,000-message chat, warm cache, CPU time of the process (median) | {s['auto_filter_1000_cpu_ms_median']} ms |",
        f"| of which: embedding the pending message alone (median, measured apart) | {s['query_embedding_ms_median']} ms |",
        f"| auto filter's own work, the pending message's vector given (median) | {s['auto_filter_own_ms_median']} ms |",
        f"| topic filter, 1,000-message chat, warm cache (median) | {s['topic_filter_1000_ms_median']} ms |",
        f"| texts re-embedded after adding one message | {s['re_embedded_after_one_message']} |",
        f"| local topic extraction, 500 messages (vectors cached) | {s['local_topics_500_seconds']} s |",
        f"| embedding all turns (cold) | {r['embed_seconds']} s |",
        "",
        "Median filter time per question: " + ", ".join(f"{m} {v} ms" for m, v in r["filter_ms_median"].items()) + ".",
        "",
        "Ablation, evidence recall (the same rankings, one part changed):",
        "",
        "| automatic filter variant | 1-4 at 10% | 1-4 at 25% | 5 at 10% | 5 at 25% |",
        "|---|---:|---:|---:|---:|",
    ]
    a = r["ablation"]
    for name in ABLATIONS:
        cells = [a.get(f"{name}|{g}|{b}") for g in ("1-4", "5") for b in ("10%", "25%")]
        lines.append(f"| {name} | " + " | ".join("-" if c is None else f"{c:.3f}" for c in cells) + " |")
    lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
