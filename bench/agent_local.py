"""Is a packaged local model good enough to be the agent's default? (issue 21)

Asks the agent a fixed set of questions about the Obsidian hub vault, each a fresh
`smartcontext agent QUESTION VAULT --model MODEL --json` process on its own copy of the
vault (so no question sees an earlier one's session), and records for each: whether the
answer holds what the vault says (one of the expected phrases, case-insensitive), the
model calls, the tool calls and how many of them failed (a tool result with an error),
wall time and the process's peak memory.

    python bench/agent_local.py                          # the packaged model, 5 questions
    python bench/agent_local.py --questions 2 --max-rounds 4
    python bench/agent_local.py --model openai/qwen2.5-7b-instruct --api-base http://127.0.0.1:8080/v1

The default model is the only one a package ships (`local:qwen2.5-coder-0.5b`, the
`local-llm` extra); another model needs its own server. The vault is unpacked from
`shared/datasets` and indexed once (keyword index) under bench/.work/agent_local.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from _vault_common import DATASETS, RESULTS_DIR, BENCH_DIR, load_average, machine
from _vault_hub import ARCHIVE_NAME, unpack

WORK = BENCH_DIR / ".work" / "agent_local"
MODEL = "local:qwen2.5-coder-0.5b"

# (question, phrases one of which a right answer holds): each answer is written in one note
# of the vault, found by its title or its words.
QUESTIONS: list[tuple[str, tuple[str, ...]]] = [
    ("Which guide does the vault's note on Obsidian Publish link to?", ("pfsense",)),
    ("According to this vault, where does its definition of a digital garden come from?",
     ("brief history and ethos",)),
    ("What aliases does the note 'Maps of Content (MOC)' give?", ("mocs",)),
    ("Which plugins and tools does the Obsidian Roundup of 2021-05-08 name in its title?",
     ("syncthing",)),
    ("In which folder of this vault are the Templater templates listed?",
     ("templater templates", "plugin-specific templates")),
]


def _vault(work: Path) -> Path:
    """An indexed copy of the hub vault, made once."""
    base = work / "hub"
    if not (base / ".smartcontext").is_dir():
        unpack(DATASETS / ARCHIVE_NAME, work / "unpacked")
        inner = next(p for p in (work / "unpacked").iterdir() if p.is_dir())
        if base.exists():
            shutil.rmtree(base)
        shutil.move(str(inner), base)
        subprocess.run([sys.executable, "-m", "smartcontext", "index", str(base), "--no-embeddings"],
                       check=True, stdout=subprocess.DEVNULL)
    return base


def _ask(vault: Path, question: str, args) -> dict:
    cmd = [sys.executable, "-m", "smartcontext", "agent", question, str(vault), "--model", args.model,
           "--max-rounds", str(args.max_rounds), "--json"]
    if args.api_base:
        cmd += ["--api-base", args.api_base]
    t = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out_f, tempfile.TemporaryFile("w+") as err_f:
        proc = subprocess.Popen(cmd, stdout=out_f, stderr=err_f, text=True)
        # Reaped here, for the child's own rusage (its peak), not the largest of every
        # child this script ran; a question past --timeout is killed.
        timer = threading.Timer(args.timeout, proc.kill)
        timer.start()
        try:
            _, _, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
        proc.returncode = 0  # reaped: Popen must not wait for it again
        out_f.seek(0)
        err_f.seek(0)
        out, err = out_f.read(), err_f.read()
    wall = time.perf_counter() - t
    peak = usage.ru_maxrss / 1024
    try:
        result = json.loads(out)
    except json.JSONDecodeError:
        return {"error": (err or out).strip()[-300:], "wall_s": wall, "peak_mb": peak}
    return {"result": result, "wall_s": wall, "peak_mb": peak}


def _tool_calls(vault: Path) -> tuple[list[str], int, list[str]]:
    """(the tool calls made, as ``name(arguments)``; how many results report an error; the
    distinct error messages) across the sessions in the vault."""
    calls: list[str] = []
    failed = 0
    errors: list[str] = []
    for f in (vault / ".memory").glob("agent-*.json"):
        for m in json.loads(f.read_text(encoding="utf-8")).get("messages", []):
            for c in m.get("tool_calls") or []:
                fn = c.get("function") or {}
                calls.append(f"{fn.get('name')}({str(fn.get('arguments'))[:80]})")
            if m.get("role") != "tool":
                continue
            content = m.get("content")
            text = content if isinstance(content, str) else json.dumps(content)
            try:
                body = json.loads(text)
            except (json.JSONDecodeError, TypeError):
                body = None
            if isinstance(body, dict) and "error" in body:
                failed += 1
                message = str(body["error"])[:120]
                if message not in errors:
                    errors.append(message)
    return calls, failed, errors


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default=MODEL)
    ap.add_argument("--api-base", default=None)
    ap.add_argument("--questions", type=int, default=len(QUESTIONS))
    ap.add_argument("--max-rounds", type=int, default=6)
    ap.add_argument("--timeout", type=float, default=1800.0, help="seconds per question")
    ap.add_argument("--out", type=Path, default=RESULTS_DIR / "agent_local.md")
    args = ap.parse_args()

    base = _vault(WORK)
    rows = []
    load = [load_average()]
    for n, (question, expected) in enumerate(QUESTIONS[: args.questions], 1):
        copy = WORK / f"q{n}"
        if copy.exists():
            shutil.rmtree(copy)
        shutil.copytree(base, copy)
        got = _ask(copy, question, args)
        calls, failed, errors = _tool_calls(copy)
        res = got.get("result") or {}
        answer = str(res.get("answer") or got.get("error") or "")
        right = any(p in answer.lower() for p in expected)
        rows.append({"question": question, "right": right, "answer": answer[:200], "rounds": res.get("rounds"),
                     "tool_calls": calls, "tool_errors": failed, "errors": errors, "stopped": res.get("stopped"),
                     "wall_s": round(got["wall_s"], 1), "peak_mb": round(got["peak_mb"] or 0)})
        print(json.dumps(rows[-1]), flush=True)
        shutil.rmtree(copy)
    load.append(load_average())

    right = sum(r["right"] for r in rows)
    m = machine()
    lines = [
        "# A local model as the agent (issue 21)", "",
        f"Command: `python bench/agent_local.py --model {args.model} --questions {args.questions} "
        f"--max-rounds {args.max_rounds}`  ",
        f"Machine: {m['nproc']} cores, {m['cpu']}, {m['memory_gb']} GB, Python {m['python']}; load average {load[0][0]:.1f} at the start, {load[-1][0]:.1f} at the end; "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.", "",
        f"**Right answers: {right} / {len(rows)}.**", "",
        "| question | right | model calls | tool calls (failed) | wall s | peak MB | answer (start) |",
        "|---|---|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        answer = r["answer"].replace("|", "\\|").replace("\n", " ")
        lines.append(f"| {r['question']} | {'yes' if r['right'] else 'no'} | {r['rounds']} | "
                     f"{len(r['tool_calls'])} ({r['tool_errors']}) | {r['wall_s']} | "
                     f"{r['peak_mb']} | {answer} |")
    lines += ["", "Tool calls and errors, per question:", ""]
    for n, r in enumerate(rows, 1):
        lines.append(f"{n}. calls: {'; '.join(r['tool_calls']) or 'none'}; errors: {' / '.join(r['errors']) or 'none'}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
