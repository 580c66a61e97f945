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

With ``--compare`` the same measurements run in the same run against another version of
Smart Context: another checkout (``--compare /work/wt-base``), its ``src`` folder, or a git
ref of this repository (``--compare main``: its ``src`` is exported with ``git archive``).
Each version gets its own server on its own copy of the same chats; the two are measured
in turn, repeat by repeat (ABAB, then BABA), so a busy moment of the machine falls on both.
A version without the chat view's model loop has no first-token time ("-").

    python bench/web.py --quick      # 200 and 2,000 messages, 3 clicks each
    python bench/web.py              # 200, 2,000 and 5,000 messages, 7 clicks each
    python bench/web.py --quick --compare /work/wt-base
    python bench/web.py --profile --sizes 200,5000   # no browser: where an answer's time goes
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import time
from contextlib import ExitStack
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


def label_of(url: str, chat: str) -> str:
    """The chat's biggest topic: the bubble every click measures."""
    topics = httpx.get(f"{url}/api/chats/{chat}/topics", timeout=120).json()["topics"]
    return max((t for t in topics if not t.get("sticky")), key=lambda t: t["count"])["label"]


def answers(url: str) -> bool:
    """Whether this version's chat view has the model loop (and a model configured)."""
    r = httpx.get(f"{url}/api/model", timeout=120)
    return r.status_code == 200 and bool(r.json().get("configured"))


def warm_up(side: dict) -> None:
    """Before any measurement: the server's index built and its vectors in, and (with a
    model) one answer in a scratch chat, so LiteLLM's first import (8 s of CPU, started in
    the background when the page asks for the model) falls on no measured click."""
    url = side["url"]
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        st = httpx.get(f"{url}/api/status", timeout=120).json()
        emb = st.get("embedding") or {}
        if st.get("indexed") and emb.get("state") in (None, "complete", "idle", "off", "failed"):
            break
        time.sleep(1)
    if side["answers"]:
        done = httpx.post(f"{url}/api/chats/warm-up/reply", json={"text": "Hello", "stream": False}, timeout=600).json()
        assert done.get("success"), done


def measure_view(page, url: str, size: int, label: str, raw: dict) -> None:
    """One page load, one click to the highlight and back, one set_filter through the API,
    appended to ``raw``'s lists."""
    chat = f"chat{size}"
    # Two sides, two tabs: a tab in the background gets no animation frames, which is when
    # Playwright checks its conditions (2.5 s more per click, measured).
    page.bring_to_front()
    t0 = time.perf_counter()
    page.goto(f"{url}/?chat={chat}")
    wait_ready(page)
    # At least: each answer measured before adds two messages.
    page.wait_for_function("n => document.querySelectorAll('[data-message-id]').length >= n", arg=size)
    raw["load"].append(time.perf_counter() - t0)
    bubble = page.locator(".sc-bubble", has_text=label).first
    raw["filter"].append(click_until(page, bubble, FILTERED))
    raw["highlighted"] = page.locator(".sc-highlight").count()
    ids = page.eval_on_selector_all(".sc-highlight", "els => els.map(e => e.dataset.messageId)")
    raw["highlight_js"].append(page.evaluate(
        """ids => { const t0 = performance.now();
             window.dispatchEvent(new CustomEvent('smart_context.highlight_applied', {detail: {message_ids: ids}}));
             return performance.now() - t0; }""", ids) / 1000)
    raw["clear"].append(click_until(page, bubble, CLEARED))
    t0 = time.perf_counter()
    answer = httpx.post(f"{url}/api/execute_command", timeout=120, json={
        "command": "smart_context.set_filter", "args": {"topics": [label], "chat_id": chat}}).json()
    raw["server"].append(time.perf_counter() - t0)
    assert answer["success"], answer
    httpx.post(f"{url}/api/execute_command", timeout=120,
               json={"command": "smart_context.set_filter", "args": {"topics": [], "chat_id": chat}})


def measure_answer(page, n: int, raw: dict) -> None:
    """A question typed in the chat view: until the first streamed token, and until the
    answer is saved and shown again."""
    page.bring_to_front()
    shown = page.locator("[data-message-id]").count()
    page.fill("#sc-input", f"What did they say about their plans for the weekend? ({n})")
    t0 = time.perf_counter()
    page.click("#sc-send")
    page.wait_for_function("n => (document.documentElement.dataset.answering === 'no' && "
                           "document.querySelectorAll('[data-message-id]').length === n) || "
                           "document.getElementById('sc-chat-error').textContent !== ''", arg=shown + 2)
    error = page.text_content("#sc-chat-error")
    if error:
        raise SystemExit(f"error: the answer failed: {error}")
    raw["answer"].append(time.perf_counter() - t0)
    raw["first_token"].append(int(page.evaluate("document.documentElement.dataset.firstToken")) / 1000)


def summary(size: int, raw: dict, label: str) -> dict:
    med = statistics.median
    row = {"messages": size, "highlighted": raw["highlighted"], "label": label,
           "raw": {k: v for k, v in raw.items() if isinstance(v, list)}}
    for key in ("load", "filter", "clear", "server", "highlight_js", "first_token", "answer"):
        row[f"{key}_s"] = med(raw[key]) if raw[key] else None
    return row


def measure(sides: list[dict], size: int, repeats: int) -> list[dict]:
    """Every side at ``size``: the views first (loads and clicks, the sides in turn), then
    the answers (each answer makes the server extract topics again in the background:
    waited for, so the next measurement does not share the CPU with it)."""
    chat = f"chat{size}"
    raws = [{k: [] for k in ("load", "filter", "clear", "server", "highlight_js", "first_token", "answer")}
            for _ in sides]
    labels = [label_of(side["url"], chat) for side in sides]
    for r in range(repeats):
        order = list(range(len(sides)))[::(-1 if r % 2 else 1)]
        for i in order:
            measure_view(sides[i]["page"], sides[i]["url"], size, labels[i], raws[i])
    for i, side in enumerate(sides):
        if side["answers"]:
            side["page"].evaluate("""() => { window.__topics = 0;
                addEventListener('smart_context.topics_updated', () => { window.__topics += 1; }); }""")
    for r in range(repeats):
        order = list(range(len(sides)))[::(-1 if r % 2 else 1)]
        for i in order:
            if sides[i]["answers"]:
                measure_answer(sides[i]["page"], r, raws[i])
    for side in sides:
        if side["answers"]:
            side["page"].wait_for_function(f"() => window.__topics >= {repeats}")
    return [summary(size, raw, label) for raw, label in zip(raws, labels)]


def whole_chats(root: Path, twin: Path) -> None:
    """The twin's chats as one JSON file each, messages and topics: an older version reads
    no appended segments (``.00001.jsonl``)."""
    from smartcontext.chat.files import ChatFile

    for path in (root / ".memory").glob("chat*.json"):
        if path.name.endswith(".embeddings.json"):
            continue
        data = ChatFile(root / ".memory", path.stem).load()
        (twin / ".memory" / path.name).write_text(json.dumps(
            {"messages": [m.to_dict() for m in data.messages], "topics": data.topics}), encoding="utf-8")


def profile_replies(root: Path, sizes: list[int], repeats: int) -> str:
    """Where an answer's time goes before its first token, server side: ``AgentSessions.reply``
    in this process (the scripted model answering at once), each size ``repeats`` times, the
    last under cProfile; returns the times and the profile's top entries."""
    import cProfile
    import io
    import pstats

    from smartcontext.agent import AgentSessions
    from smartcontext.config import ChatConfig

    out = io.StringIO()
    with AgentSessions(root, stream=True, history_tokens=ChatConfig.history_tokens,
                       context_tokens=ChatConfig.context_tokens) as sessions:
        sessions.model_info()  # LiteLLM imported, as the page's first request does
        sessions.reply("warm-up", "Hello")
        for size in sizes:
            firsts = []
            for n in range(repeats):
                t0 = time.perf_counter()
                first: list[float] = []

                def on_event(event: dict, t0: float = t0, first: list[float] = first) -> None:
                    if event["type"] == "delta" and not first:
                        first.append(time.perf_counter() - t0)

                prof = cProfile.Profile() if n == repeats - 1 else None
                if prof:
                    prof.enable()
                sessions.reply(f"chat{size}", f"What did they say about their plans for the weekend? ({n})", on_event)
                if prof:
                    prof.disable()
                firsts.append(first[0])
            print(f"chat{size}: first token {', '.join(f'{f:.2f}s' for f in firsts)}", file=out)
            stats = pstats.Stats(prof, stream=out).sort_stats("cumulative")
            stats.print_stats(r"smartcontext|json/encoder|litellm/main", 25)
    return out.getvalue()


def code_tree(spec: str) -> tuple[Path, str]:
    """(the ``src`` folder of the version to compare with, how to name it): a checkout,
    its src folder, or a git ref of this repository (exported once with ``git archive``)."""
    project = BENCH_DIR.parent
    path = Path(spec)
    if path.is_dir():
        src = path / "src" if (path / "src" / "smartcontext").is_dir() else path
        if not (src / "smartcontext").is_dir():
            raise SystemExit(f"error: {spec} holds no smartcontext package (nor src/smartcontext)")
        rev = subprocess.run(["git", "-C", str(path), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True).stdout.strip()
        return src.resolve(), f"{path} ({rev})" if rev else str(path)
    done = subprocess.run(["git", "-C", str(project), "rev-parse", "--short", spec], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"error: --compare {spec}: neither a folder nor a git ref of {project}")
    sha = done.stdout.strip()
    out = WORK / f"src-{sha}"
    if not (out / "src" / "smartcontext").is_dir():
        tmp = WORK / f"src-{sha}.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        archive = subprocess.run(["git", "-C", str(project), "archive", sha, "src"], capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", str(tmp)], input=archive.stdout, check=True)
        tmp.rename(out)
    return (out / "src").resolve(), f"{spec} ({sha})"


def render(report: dict) -> str:
    rows = report["rows"]
    base = rows[0]

    def fmt(v: float | None) -> str:
        return "-" if v is None else f"{v * 1000:,.0f} ms"

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
            f"| {fmt(r['first_token_s'])} | {fmt(r['answer_s'])} "
            f"| {r['load_s'] / base['load_s']:.2f}x | {r['filter_s'] / base['filter_s']:.2f}x |")
    other = report.get("compare")
    if other:
        def ms(v: float | None) -> str:
            return "-" if v is None else f"{v * 1000:,.0f} ms"

        def ratio(a: float | None, b: float | None) -> str:
            return "-" if a is None or b is None else f"{a / b:.2f}x"

        lines += [
            "",
            f"The same chats in the same run, this checkout against {other['name']} (medians; ratio: this / that, "
            "under 1 is faster):",
            "",
            "| messages | page load | that | ratio | click -> highlighted | that | ratio | click -> cleared | that "
            "| ratio | first token | that |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for r, o in zip(rows, other["rows"]):
            lines.append(
                f"| {r['messages']:,} | {ms(r['load_s'])} | {ms(o['load_s'])} | {ratio(r['load_s'], o['load_s'])} "
                f"| {ms(r['filter_s'])} | {ms(o['filter_s'])} | {ratio(r['filter_s'], o['filter_s'])} "
                f"| {ms(r['clear_s'])} | {ms(o['clear_s'])} | {ratio(r['clear_s'], o['clear_s'])} "
                f"| {ms(r['first_token_s'])} | {ms(o['first_token_s'])} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="200 and 2,000 messages, 3 runs each")
    ap.add_argument("--out", type=Path, default=None, help="results file stem (default bench/results/web[.quick])")
    ap.add_argument("--dataset", type=Path, default=LOCOMO, help="LoCoMo dev.json (default ../shared/datasets/locomo)")
    ap.add_argument("--compare", metavar="CHECKOUT|SRC|REF", default=None,
                    help="also measure another version in the same run: a checkout, its src folder or a git ref")
    ap.add_argument("--sizes", default=None, help="chat sizes, comma-separated (default: 200,2000[,5000])")
    ap.add_argument("--profile", action="store_true",
                    help="no browser: profile the answers in this process (where the first token's time goes)")
    args = ap.parse_args()
    if not args.dataset.is_file():
        print(f"error: dataset not found: {args.dataset}", file=sys.stderr)
        return 2
    if chromium_missing():
        print(f"error: {MISSING_CHROMIUM}", file=sys.stderr)
        return 2
    clean_env()
    sizes, repeats = ([200, 2000], 3) if args.quick else ([200, 2000, 5000], 7)
    if args.sizes:
        sizes = [int(x) for x in args.sizes.split(",")]
    other = code_tree(args.compare) if args.compare else None
    root = WORK / ("profile" if args.profile else "quick" if args.quick else "full")
    if root.exists():
        shutil.rmtree(root)
    command = "python bench/web.py" + (" --quick" if args.quick else "") + (
        f" --sizes {args.sizes}" if args.sizes else "") + (f" --compare {args.compare}" if args.compare else "")
    report = {"command": command, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "machine": machine(),
              "load_average": load_average(), "repeats": repeats, "rows": []}
    model = ScriptedOpenAI([{"content": "They plan to go hiking on Saturday."}] * (2 * repeats * len(sizes) + 2))
    prepare(root, sizes, args.dataset, model.url)
    if args.profile:
        with model:
            print(profile_replies(root, sizes, repeats))
        return 0
    roots = [root]
    if other is not None:
        # The same chats, topics and embedding caches; each server builds its own index.
        twin = root.with_name(root.name + "-compare")
        shutil.rmtree(twin, ignore_errors=True)
        shutil.copytree(root, twin, ignore=shutil.ignore_patterns(".smartcontext", "*.jsonl", "*.lock"))
        whole_chats(root, twin)
        roots.append(twin)
    with ExitStack() as stack:
        stack.enter_context(model)
        context = stack.enter_context(browser_context())
        context.set_default_timeout(300_000)
        sides = []
        for folder, src in zip(roots, [None, other[0] if other else None]):
            url = stack.enter_context(web_server(folder, timeout=300, src=src))
            sides.append({"url": url, "page": context.new_page(), "answers": answers(url)})
        for side in sides:
            warm_up(side)
        if not sides[0]["answers"]:
            raise SystemExit("error: this checkout's server has no model loop (GET /api/model)")
        compared = []
        for size in sizes:
            rows = measure(sides, size, repeats)
            for name, row in zip(["this", "that"], rows):
                first = "-" if row["first_token_s"] is None else f"{row['first_token_s']:.2f}s"
                print(f"{name}: {size} messages: load {row['load_s']:.2f}s, filter {row['filter_s']:.2f}s "
                      f"(server {row['server_s']:.2f}s), clear {row['clear_s']:.2f}s, first token {first}",
                      file=sys.stderr)
            report["rows"].append(rows[0])
            compared += rows[1:]
        if other is not None:
            report["compare"] = {"name": other[1], "src": str(other[0]), "rows": compared}
    stem = args.out or RESULTS_DIR / ("web.quick" if args.quick else "web")
    if other is not None and args.out is None:
        stem = Path(f"{stem}.compare")
    Path(f"{stem}.json").write_text(json.dumps(report, indent=2))
    md = render(report)
    Path(f"{stem}.md").write_text(md)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
