"""Agent compaction (issue 10): prompt tokens per round of a 20-round agent session on a
real vault, with and without the compaction of tool results.

The model is the scripted OpenAI-compatible server of the tests (``tests/openai_stub.py``)
on 127.0.0.1: it asks, round after round, for real tool calls on the Obsidian hub vault
(search_vault, read_file, find_backlinks, find_outlinks, search_by_folder on notes chosen
with a fixed seed), then answers in the last round. The tools run for real, through the
same ``AgentSessions.send`` as the CLI agent and the HTTP sessions; the server reports the
exact cl100k_base count of each request (messages and tool schemas as JSON), so the
figures are deterministic: the same script gives the same tokens on any machine.

    python bench/agent.py --quick     # a 1,000-note sample of the vault
    python bench/agent.py             # the whole vault (6,571 notes)
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import time
from pathlib import Path

from _vault_common import BENCH_DIR, DATASETS, RESULTS_DIR, load_average, machine
from _vault_hub import ARCHIVE_NAME, copy_tree, list_notes, unpack

sys.path.insert(0, str(BENCH_DIR.parent / "tests"))
from openai_stub import ScriptedOpenAI, prompt_tokens  # noqa: E402

WORK = BENCH_DIR / ".work" / "agent"
ROUNDS = 20
SEED = 10


def script_for(root: Path, notes: list[str], rounds: int, seed: int) -> list[dict]:
    """Tool calls an agent exploring the vault would make, one or two per round, on
    notes drawn with ``seed``; the last round answers."""
    rng = random.Random(seed)
    picks = rng.sample(notes, rounds * 2)
    script = []
    for r in range(rounds - 1):
        note = picks[r]
        stem = Path(note).stem
        kind = r % 4
        if kind == 0:
            calls = [{"name": "search_vault", "arguments": {"query": stem.replace("-", " "), "limit": 5}}]
        elif kind == 1:
            calls = [{"name": "read_file", "arguments": {"path": note}},
                     {"name": "find_outlinks", "arguments": {"path": note}}]
        elif kind == 2:
            calls = [{"name": "find_backlinks", "arguments": {"note_name": stem}},
                     {"name": "read_file", "arguments": {"path": picks[rounds + r]}}]
        else:
            folder = str(Path(note).parent)
            calls = [{"name": "search_by_folder", "arguments": {"folder": "" if folder == "." else folder}}]
        script.append({"tool_calls": [{"id": f"r{r + 1}c{i}", **c} for i, c in enumerate(calls)]})
    script.append({"content": "Summary of what the notes say, with their paths."})
    return script


def run(root: Path, script: list[dict], compact: bool) -> dict:
    from smartcontext.agent import AgentSessions
    from smartcontext.tools import ToolRegistry

    # Never re-check the folder during the run: the session's own chat file must not be
    # indexed midway, so both runs see the same index and the same tool results.
    registry = ToolRegistry.open(root, refresh_interval=-1)
    with ScriptedOpenAI(script) as server:
        sessions = AgentSessions(registry=registry, model="openai/scripted", api_base=server.url,
                                 max_rounds=len(script), compact=compact)
        sid = sessions.create("bench")["id"]
        result = sessions.send(sid, "Explore the vault's notes about plugins and summarise them.")
        sessions.delete(sid)
        requests = server.requests
    registry.close()
    messages_only = [prompt_tokens({"messages": b["messages"]}) for b in requests]
    return {"compact": compact, "rounds": result["rounds"], "tokens_saved": result["tokens_saved"],
            "prompt_tokens": result["prompt_tokens"], "message_tokens": messages_only,
            "tool_calls": len(result["tool_calls"]),
            "failed_calls": sum(not c["success"] for c in result["tool_calls"])}


def table(off: dict, on: dict) -> str:
    rows = ["| round | prompt tokens, no compaction | with compaction | saved |", "|---:|---:|---:|---:|"]
    n = len(on["prompt_tokens"])
    for i in sorted({0, 1, 2, 4, 9, 14, n - 1}):
        a, b = off["prompt_tokens"][i], on["prompt_tokens"][i]
        rows.append(f"| {i + 1} | {a:,} | {b:,} | {(a - b) / a:.0%} |")
    a, b = sum(off["prompt_tokens"]), sum(on["prompt_tokens"])
    rows.append(f"| **all {n} calls** | **{a:,}** | **{b:,}** | **{(a - b) / a:.0%}** |")
    ma, mb = sum(off["message_tokens"]), sum(on["message_tokens"])
    rows.append(f"| messages only (no tool schemas), all calls | {ma:,} | {mb:,} | {(ma - mb) / ma:.0%} |")
    return "\n".join(rows)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="a 1,000-note sample of the vault")
    ap.add_argument("--datasets", type=Path, default=DATASETS)
    ap.add_argument("--rounds", type=int, default=ROUNDS)
    args = ap.parse_args()
    archive = args.datasets / ARCHIVE_NAME
    if not archive.is_file():
        print(f"error: dataset not found: {archive}", file=sys.stderr)
        return 2
    pristine = WORK / "hub"
    if not (pristine / ".done").is_file():
        unpack(archive, pristine)
        (pristine / ".done").write_text("")
    notes = list_notes(pristine)
    root = WORK / ("quick" if args.quick else "full")
    if root.exists():
        shutil.rmtree(root)
    if args.quick:
        notes = random.Random(SEED).sample(notes, 1000)
    copy_tree(pristine, root, notes if args.quick else None)
    notes = [n for n in list_notes(root)]

    from smartcontext import Workspace

    t0 = time.perf_counter()
    with Workspace.open(root) as ws:
        ws.index(embeddings=False)
    index_s = time.perf_counter() - t0
    script = script_for(root, notes, args.rounds, SEED)
    off = run(root, [dict(s) for s in script], compact=False)
    on = run(root, [dict(s) for s in script], compact=True)
    assert off["rounds"] == on["rounds"] == args.rounds

    label = "quick" if args.quick else "full"
    report = {"command": "python bench/agent.py" + (" --quick" if args.quick else ""),
              "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "machine": machine(),
              "load_average": load_average(), "notes": len(notes), "index_s": round(index_s, 1),
              "without": off, "with": on}
    RESULTS_DIR.mkdir(exist_ok=True)
    (RESULTS_DIR / f"agent.{label}.json").write_text(json.dumps(report, indent=2) + "\n")
    md = (f"{report['command']} ({report['date']}; {len(notes):,} notes; {on['tool_calls']} tool calls of which "
          f"{on['failed_calls']} failed; tokens are exact cl100k_base counts of each request, deterministic)\n\n"
          + table(off, on) + "\n")
    (RESULTS_DIR / f"agent.{label}.md").write_text(md)
    print(md)
    print(f"tokens saved by compaction (each result's stub counted once, as the session reports it): "
          f"{on['tokens_saved']:,}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
