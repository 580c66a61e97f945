"""The web page with long chats: page load and the time from a click on a topic bubble to
the highlighted messages, in Debian's chromium driven by Playwright.

Chats are LoCoMo turns (``../shared/datasets/locomo/dev.json``, conversations joined in
order, ids prefixed by the conversation) of several sizes, measured side by side in one
run against one ``smartcontext serve web`` process, so the larger chats are compared with
the smallest as ratios. Before the browser opens, each chat's topics are extracted by the
local method (which embeds every message once, as a server does after a reply), so the
clicks measure the filter and the page, not the first embedding.

Per chat size:
- ``load``: ``page.goto`` until the page is ready (every message rendered, the panel's state
  restored from the server);
- ``filter``: click a bubble until the status line reads "N of M messages in context" and
  the highlighted messages are in place (server: set_filter, the topic filter over the
  cached vectors, events over the WebSocket; page: highlight ``N`` of ``M`` elements);
- ``clear``: click it again until "All messages in context" and no highlight;
- ``server``: the same set_filter through the HTTP API alone (no page), to split the time;
- ``highlight JS``: dispatching a ``highlight_applied`` event with the same ids in the page
  (the DOM work alone);
- ``first token``: a question typed in the chat view until the first streamed token is on
  the page (the page's own clock, ``data-first-token``), and until the answer is saved and
  shown again (``answer``). The model is the scripted OpenAI-compatible server of the tests
  (``tests/openai_stub.py``), answering at once: this is the time Smart Context adds (the
  history filter over the chat, the folder's context for the question, the request).

    python bench/web.py --quick      # 200 and 2,000 messages, 3 clicks each
    python bench/web.py              # 200, 2,000 and 5,000 messages, 7 clicks each
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import time
from pathlib import Path

import httpx

from _vault_common import BENCH_DIR, DATASETS, RESULTS_DIR, clean_env, load_average, machine
from chat_context import chat_messages

sys.path.insert(0, str(BENCH_DIR.parent / "tests"))
from openai_stub import ScriptedOpenAI  # noqa: E402
from web_support import MISSING_CHROMIUM, browser_context, chromium_missing, web_server  # noqa: E402

LOCOMO = DATASETS / "locomo" / "dev.json"
WORK = BENCH_DIR / ".work" / "web"


def long_chat(convs: list[dict], size: int) -> list[dict]:
    """``size`` LoCoMo turns, conversations joined (and repeated when one pass is short)."""
    out: list[dict] = []
    rounds = 0
    while len(out) < size:
        for conv in convs:
            for m in chat_messages(conv):
                out.append({**m, "id": f"r{rounds}-{conv['sample_id']}-{m['id']}"})
                if len(out) == size:
                    return out
        rounds += 1
    return out


def prepare(root: Path, sizes: list[int], dataset: Path, api_base: str) -> None:
    """Write the chats and extract their topics (embedding every message once)."""
    sys.path.insert(0, str(BENCH_DIR.parent / "src"))
    from smartcontext import Workspace

    convs = json.loads(dataset.read_text())
    (root / ".memory").mkdir(parents=True)
    (root / "smartcontext.toml").write_text(f'[llm]\nagent = "openai/scripted"\napi_base = "{api_base}"\n')
    (root / "README.md").write_text("# Web benchmark\n\nLoCoMo chats in .memory/.\n")
    ws = Workspace.open(root)
    for size in sizes:
        (root / ".memory" / f"chat{size}.json").write_text(
            json.dumps({"messages": long_chat(convs, size), "topics": []}), encoding="utf-8")
        t0 = time.perf_counter()
        result = ws.chats().chat(f"chat{size}").extract_topics(method="local")
        print(f"chat{size}: {len([t for t in result.topics if not t.get('sticky')])} topics "
              f"in {time.perf_counter() - t0:.1f}s (with embedding)", file=sys.stderr)
    ws.close()


def wait_ready(page) -> None:
    page.wait_for_selector("html[data-ws=open][data-panel=ready]")


FILTERED = ("() => /^\\d+ of \\d+ messages in context$/.test(document.getElementById('sc-status').textContent)"
            " && document.querySelector('.sc-highlight') !== null")
CLEARED = ("() => document.getElementById('sc-status').textContent === 'All messages in context'"
           " && document.querySelector('.sc-highlight') === null")


def click_until(page, target, condition: str) -> float:
    """Seconds from a click on ``target`` until ``condition`` holds in the page."""
    t0 = time.perf_counter()
    target.click()
    page.wait_for_function(condition)
    return time.perf_counter() - t0


def measure(page, url: str, size: int, repeats: int) -> dict:
    chat = f"chat{size}"
    loads = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        page.goto(f"{url}/?chat={chat}")
        wait_ready(page)
        page.wait_for_function("n => document.querySelectorAll('[data-message-id]').length === n", arg=size)
        loads.append(time.perf_counter() - t0)
    topics = httpx.get(f"{url}/api/chats/{chat}/topics", timeout=120).json()["topics"]
    label = max((t for t in topics if not t.get("sticky")), key=lambda t: t["count"])["label"]
    bubble = page.locator(".sc-bubble", has_text=label).first
    filters, clears, servers, js = [], [], [], []
    included = 0
    for _ in range(repeats):
        filters.append(click_until(page, bubble, FILTERED))
        included = page.locator(".sc-highlight").count()
        ids = page.eval_on_selector_all(".sc-highlight", "els => els.map(e => e.dataset.messageId)")
        js.append(page.evaluate(
            """ids => { const t0 = performance.now();
                 window.dispatchEvent(new CustomEvent('smart_context.highlight_applied', {detail: {message_ids: ids}}));
                 return performance.now() - t0; }""", ids) / 1000)
        clears.append(click_until(page, bubble, CLEARED))
        t0 = time.perf_counter()
        answer = httpx.post(f"{url}/api/execute_command", timeout=120, json={
            "command": "smart_context.set_filter", "args": {"topics": [label], "chat_id": chat}}).json()
        servers.append(time.perf_counter() - t0)
        assert answer["success"], answer
        httpx.post(f"{url}/api/execute_command", timeout=120,
                   json={"command": "smart_context.set_filter", "args": {"topics": [], "chat_id": chat}})
    firsts, answers = [], []
    for n in range(repeats):  # last: each answer adds two messages to the chat
        shown = page.locator("[data-message-id]").count()
        page.fill("#sc-input", f"What did they say about their plans for the weekend? ({n})")
        t0 = time.perf_counter()
        page.click("#sc-send")
        page.wait_for_function("n => document.documentElement.dataset.answering === 'no' && "
                               "document.querySelectorAll('[data-message-id]').length === n", arg=shown + 2)
        answers.append(time.perf_counter() - t0)
        firsts.append(int(page.evaluate("document.documentElement.dataset.firstToken")) / 1000)
    med = statistics.median
    return {"messages": size, "highlighted": included, "label": label, "load_s": med(loads),
            "filter_s": med(filters), "clear_s": med(clears), "server_s": med(servers), "highlight_js_s": med(js),
            "first_token_s": med(firsts), "answer_s": med(answers),
            "raw": {"load": loads, "filter": filters, "clear": clears, "server": servers, "highlight_js": js,
                    "first_token": firsts, "answer": answers}}


def render(report: dict) -> str:
    rows = report["rows"]
    base = rows[0]
    lines = [
        f"Command: `{report['command']}`, {report['date']}; {report['machine']['nproc']} cores "
        f"({report['machine']['cpu']}), shared with other work (load average {report['load_average']} at the start). "
        f"Medians of {report['repeats']} runs per size; ratios are against the {base['messages']:,}-message chat "
        "of the same run.",
        "",
        "| messages | highlighted | page load | click -> highlighted | click -> cleared | set_filter (API only) "
        "| highlight (page JS) | first token | answer shown | load ratio | filter ratio |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['messages']:,} | {r['highlighted']:,} | {r['load_s'] * 1000:,.0f} ms | {r['filter_s'] * 1000:,.0f} ms "
            f"| {r['clear_s'] * 1000:,.0f} ms | {r['server_s'] * 1000:,.0f} ms | {r['highlight_js_s'] * 1000:,.1f} ms "
            f"| {r['first_token_s'] * 1000:,.0f} ms | {r['answer_s'] * 1000:,.0f} ms "
            f"| {r['load_s'] / base['load_s']:.2f}x | {r['filter_s'] / base['filter_s']:.2f}x |")
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="200 and 2,000 messages, 3 runs each")
    ap.add_argument("--out", type=Path, default=None, help="results file stem (default bench/results/web[.quick])")
    ap.add_argument("--dataset", type=Path, default=LOCOMO, help="LoCoMo dev.json (default ../shared/datasets/locomo)")
    args = ap.parse_args()
    if not args.dataset.is_file():
        print(f"error: dataset not found: {args.dataset}", file=sys.stderr)
        return 2
    if chromium_missing():
        print(f"error: {MISSING_CHROMIUM}", file=sys.stderr)
        return 2
    clean_env()
    sizes, repeats = ([200, 2000], 3) if args.quick else ([200, 2000, 5000], 7)
    root = WORK / ("quick" if args.quick else "full")
    if root.exists():
        shutil.rmtree(root)
    report = {"command": "python bench/web.py" + (" --quick" if args.quick else ""),
              "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "machine": machine(),
              "load_average": load_average(), "repeats": repeats, "rows": []}
    model = ScriptedOpenAI([{"content": "They plan to go hiking on Saturday."}] * (repeats * len(sizes)))
    prepare(root, sizes, args.dataset, model.url)
    with model, web_server(root, timeout=300) as url, browser_context() as context:
        context.set_default_timeout(300_000)
        page = context.new_page()
        for size in sizes:
            row = measure(page, url, size, repeats)
            print(f"{size} messages: load {row['load_s']:.2f}s, filter {row['filter_s']:.2f}s "
                  f"(server {row['server_s']:.2f}s), clear {row['clear_s']:.2f}s, "
                  f"first token {row['first_token_s']:.2f}s", file=sys.stderr)
            report["rows"].append(row)
    stem = args.out or RESULTS_DIR / ("web.quick" if args.quick else "web")
    Path(f"{stem}.json").write_text(json.dumps(report, indent=2))
    md = render(report)
    Path(f"{stem}.md").write_text(md)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
