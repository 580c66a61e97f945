"""The web page in a real browser: Playwright for Python driving Debian's chromium against
``smartcontext serve web`` on a free port, over a temp folder with a chat.

Never skipped: without chromium the tests fail and say how to install it."""

from __future__ import annotations

import json
import os
import re
import shutil
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from conftest import SAMPLE_REPO, write_tree

from web_support import MISSING_CHROMIUM, browser_context, chromium_missing, eventually, web_server

from smartcontext.config import DEFAULT_REFRESH_INTERVAL

DOCS = Path(__file__).resolve().parent.parent / "docs"
TIMEOUT_MS = 60_000
CHAT = [
    ("user", "be concise"),
    ("user", "Which ferry goes from Piraeus to Naxos?"),
    ("assistant", "Blue Star ferries sail from Piraeus to Naxos every morning; the crossing takes five hours."),
    ("user", "Is there a faster ferry to Naxos in summer?"),
    ("assistant", "SeaJets high-speed ferries reach Naxos from Piraeus in about three hours."),
    ("user", "How do I feed my sourdough starter?"),
    ("assistant", "Feed the sourdough starter equal weights of flour and water once a day."),
    ("user", "Why is my sourdough bread so dense?"),
    ("assistant", "Dense sourdough bread usually means a weak starter or under-proofed dough."),
    ("user", "How does asyncio run coroutines in Python?"),
    ("assistant", "The asyncio event loop schedules Python coroutines and resumes them when awaited futures finish."),
    ("user", "Can asyncio run blocking Python code?"),
    ("assistant", "Run blocking Python code in asyncio.to_thread so the event loop keeps serving coroutines."),
]


# Real code has names wider than a phone: a hit's heading must wrap, not widen the page.
LONG_NAMES = {"shop/clearance.py": '''
    class SeasonalClearanceMarkdownScheduler:
        def apply_the_seasonal_clearance_markdown_to_every_remaining_line_item(self, cart):
            """Seasonal clearance markdown for what is left in the cart."""
            return [item.price * 0.7 for item in cart.items]
    '''}


@pytest.fixture(scope="module")
def site(tmp_path_factory, static_model):
    if chromium_missing():
        pytest.fail(MISSING_CHROMIUM)
    folder = write_tree(tmp_path_factory.mktemp("web") / "ws", {**SAMPLE_REPO, **LONG_NAMES})
    with web_server(folder) as url:
        yield url, folder


@pytest.fixture(scope="module")
def browser(site):
    with browser_context() as context:
        context.set_default_timeout(TIMEOUT_MS)
        yield context


def open_chat(page, url: str, chat_id: str) -> None:
    page.goto(f"{url}/?chat={chat_id}")
    page.wait_for_selector("html[data-ws=open][data-panel=ready]")


def highlighted(page) -> set[str]:
    return set(page.eval_on_selector_all(".sc-highlight[data-message-id]", "els => els.map(e => e.dataset.messageId)"))


def status(page) -> str:
    return page.text_content("#sc-status")


def test_chat_topics_filter_highlight_toggle_and_reload(site, browser, tmp_path):
    url, folder = site
    page = browser.new_page()
    open_chat(page, url, "trip")
    assert page.locator("[data-message-id]").count() == 0
    assert status(page) == "All messages in context"

    # The first turns through the composer, the rest through the API (they arrive as events).
    for role, content in CHAT[:3]:
        page.select_option("#sc-role", role)
        page.fill("#sc-input", content)
        page.click("#sc-send")
        page.wait_for_function("n => document.querySelectorAll('[data-message-id]').length >= n", arg=CHAT.index((role, content)) + 1)
    for n, (role, content) in enumerate(CHAT[3:], start=3):
        answer = httpx.post(f"{url}/api/chats/trip/messages", json={"role": role, "content": content, "id": f"m{n:02d}"},
                            timeout=60).json()
        assert answer["success"], answer
    page.wait_for_function(f"() => document.querySelectorAll('[data-message-id]').length === {len(CHAT)}")
    texts = page.eval_on_selector_all("[data-message-id] .sc-msg-body", "els => els.map(e => e.textContent)")
    assert texts == [c for _, c in CHAT]

    # Topics extracted by the local method after the last assistant reply appear as bubbles.
    topics = httpx.get(f"{url}/api/chats/trip/topics", timeout=30).json()["topics"]
    regular = [t for t in topics if not t.get("sticky")]
    sticky = [t for t in topics if t.get("sticky")]
    assert len(regular) >= 3 and sticky
    page.wait_for_function(f"() => document.querySelectorAll('.sc-bubble').length === {len(regular)}")
    assert page.text_content("#sc-sticky-count") == str(sticky[0]["count"])
    labels = page.eval_on_selector_all(".sc-bubble", "els => els.map(e => e.textContent)")
    assert labels == [t["label"] for t in regular]
    sizes = page.eval_on_selector_all(".sc-bubble", "els => els.map(e => parseFloat(getComputedStyle(e).fontSize))")
    biggest = max(regular, key=lambda t: t["count"])
    smallest = min(regular, key=lambda t: t["count"])
    if biggest["count"] > smallest["count"]:
        assert sizes[regular.index(biggest)] > sizes[regular.index(smallest)]

    # Click the ferry topic: exactly the messages the filter keeps are highlighted.
    ferry = next(t["label"] for t in regular if re.search(r"ferr|naxos|piraeus", t["label"], re.I))
    page.locator(".sc-bubble", has_text=ferry).click()
    page.wait_for_function("() => /^\\d+ of \\d+ messages in context$/.test(document.getElementById('sc-status').textContent)")
    kept = httpx.post(f"{url}/api/chats/trip/history", json={"mode": "topics", "include_messages": False},
                      timeout=30).json()
    assert kept["active_topics"] == [ferry] and kept["mode"] == "topics"
    assert highlighted(page) == set(kept["message_ids"])
    assert status(page) == kept["status_line"] == f"{len(kept['message_ids'])} of {len(CHAT)} messages in context"
    ids = page.eval_on_selector_all("[data-message-id]", "els => els.map(e => e.dataset.messageId)")
    ferry_ids = {ids[i] for i, (_, c) in enumerate(CHAT) if "ferr" in c.lower()}
    assert ferry_ids <= highlighted(page)
    assert ids[0] in highlighted(page)  # "be concise": sticky, always in context
    assert not any("sourdough" in CHAT[ids.index(i)][1] for i in highlighted(page))
    active = page.locator(".sc-bubble.sc-active")
    assert active.count() == 1 and active.text_content() == ferry
    assert page.locator(".sc-bubble.sc-dim").count() == len(regular) - 1
    # Dimmed by a muted colour and a dashed border, not by opacity: still 4.5:1 (axe checks it).
    dim = page.eval_on_selector(".sc-bubble.sc-dim", "e => [getComputedStyle(e).opacity, getComputedStyle(e).borderStyle]")
    assert dim == ["1", "dashed"]
    assert "rgba(99, 179, 237" in page.eval_on_selector(".sc-bubble.sc-active", "e => getComputedStyle(e).boxShadow")

    shot = tmp_path / "web-panel.png"
    page.screenshot(path=str(shot))
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    if os.environ.get("SMARTCONTEXT_UPDATE_DOCS") == "1":  # regenerates the docs' screenshot
        shutil.copy(shot, DOCS / "web-panel.png")

    # The state is the server's: a reload finds the same filter, highlights and status line.
    page.reload()
    page.wait_for_selector("html[data-ws=open][data-panel=ready]")
    page.wait_for_function("() => /^\\d+ of \\d+/.test(document.getElementById('sc-status').textContent)")
    assert highlighted(page) == set(kept["message_ids"]) and status(page) == kept["status_line"]
    assert page.locator(".sc-bubble.sc-active").text_content() == ferry

    # Similarity off: the filter is cleared, highlights go, bubbles are inert.
    page.uncheck("#sc-toggle")
    page.wait_for_function("() => document.querySelectorAll('.sc-highlight').length === 0")
    assert status(page) == "All messages in context"
    eventually(page, "() => fetch('/api/state').then(r => r.json()).then(s => !s.embedding_search)")
    assert page.locator(".sc-bubble.sc-inert").count() == len(regular)
    page.locator(".sc-bubble").first.click(force=True)  # aria-disabled: Playwright would wait
    page.wait_for_timeout(300)  # a click must change nothing: give a wrong request time to land
    assert highlighted(page) == set() and page.locator(".sc-bubble.sc-active").count() == 0
    assert httpx.get(f"{url}/api/state").json()["active_topics"] == []

    page.reload()
    page.wait_for_selector("html[data-ws=open][data-panel=ready]")
    assert not page.is_checked("#sc-toggle") and status(page) == "All messages in context"
    assert page.locator(".sc-bubble.sc-inert").count() == len(regular)

    # On again and select: messages added meanwhile are weighed against the filter too.
    page.check("#sc-toggle")
    eventually(page, "() => fetch('/api/state').then(r => r.json()).then(s => s.embedding_search)")
    page.locator(".sc-bubble", has_text=ferry).click()
    page.wait_for_function("() => document.querySelectorAll('.sc-highlight').length > 0")
    page.fill("#sc-input", "Do ferries to Naxos take cars?")
    page.select_option("#sc-role", "user")
    page.click("#sc-send")
    page.wait_for_function("() => document.querySelector('.sc-msg:last-child')?.classList.contains('sc-highlight')")
    kept = httpx.post(f"{url}/api/chats/trip/history", json={"mode": "topics", "include_messages": False},
                      timeout=30).json()
    assert highlighted(page) == set(kept["message_ids"]) and status(page) == kept["status_line"]
    assert status(page) == f"{len(kept['message_ids'])} of {len(CHAT) + 1} messages in context"

    # Clicking the selected bubble clears the filter.
    page.locator(".sc-bubble", has_text=ferry).click()
    page.wait_for_function("() => document.querySelectorAll('.sc-highlight').length === 0")
    assert status(page) == "All messages in context"
    page.close()


def test_labels_and_messages_render_as_text(site, browser):
    url, folder = site
    evil = '<img src=x onerror="window.pwned=1">'
    memory = folder / ".memory"
    memory.mkdir(exist_ok=True)
    (memory / "evil.json").write_text(json.dumps({"messages": [{"id": "a", "role": "user", "content": evil}],
                                                  "topics": [{"label": evil, "count": 1}]}))
    page = browser.new_page()
    open_chat(page, url, "evil")
    page.wait_for_selector(".sc-bubble")
    assert page.text_content(".sc-bubble") == evil
    assert page.text_content("[data-message-id=a] .sc-msg-body") == evil
    assert page.locator("img").count() == 0
    assert page.evaluate("window.pwned") is None
    page.close()


def wait_until_embedded(url: str, timeout: float = 120) -> None:
    """Until the server's background embedder has given every item its vector: answers
    compared across two requests must rank over the same vectors."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        st = httpx.get(f"{url}/api/status", timeout=60).json()
        if st["embedding"]["embedded"] == st["embedding"]["total"] and st["embedding"]["state"] != "running":
            return
        time.sleep(0.2)
    pytest.fail(f"the server's background embedding did not finish: {st['embedding']}")


@pytest.mark.parametrize("page_path", ["/", "/search"])
def test_a_page_loads_without_a_failed_request_or_console_error(site, browser, page_path):
    # A browser asks every page for /favicon.ico unless the page names an icon: a 404 and a
    # console error on each visit to the search page.
    url, _ = site
    page = browser.new_page()
    errors, failed = [], []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("response", lambda r: failed.append(r.url) if r.status >= 400 else None)
    page.goto(f"{url}{page_path}")
    page.wait_for_load_state("networkidle")
    page.close()
    assert errors == [] and failed == []


def test_search_page_gives_a_context_with_its_token_count(site, browser):
    url, _ = site
    question = "How does the cart apply discounts?"
    # The page's answer and the API's are compared, so both must see one index: files the
    # chat tests wrote are taken in by the first refresh that falls due (every
    # DEFAULT_REFRESH_INTERVAL seconds), and their vectors land in the background after it.
    httpx.post(f"{url}/api/search", json={"query": "cart"}, timeout=60)  # a question: a refresh when due
    wait_until_embedded(url)
    time.sleep(DEFAULT_REFRESH_INTERVAL + 0.5)
    httpx.post(f"{url}/api/search", json={"query": "cart"}, timeout=60)  # now one is due
    wait_until_embedded(url)
    page = browser.new_page()
    page.goto(f"{url}/search")
    page.fill("#sc-question", question)
    page.fill("#sc-budget", "1500")
    page.click("#sc-get-context")
    page.wait_for_selector("#sc-token-count[data-tokens]")
    expected = httpx.post(f"{url}/api/context", json={"question": question, "max_tokens": 1500}, timeout=60).json()
    assert page.get_attribute("#sc-token-count", "data-tokens") == str(expected["token_count"])
    assert page.text_content("#sc-token-count").startswith(f"{expected['token_count']} tokens of 1500")
    # The files the text holds, in its order, each with its place in the ranking; the other
    # ranked files under a fold.
    listed = page.eval_on_selector_all("#sc-files li", "els => els.map(e => e.firstChild.textContent)")
    assert listed == expected["context_files"] and "shop/pricing.py" in listed
    ranks = page.eval_on_selector_all("#sc-files li .sc-rank", "els => els.map(e => e.textContent)")
    assert ranks == [f" ranked {expected['files'].index(f) + 1}" for f in listed]
    outside = [f for f in expected["files"] if f not in listed]
    assert page.is_hidden("#sc-more-files-box") == (not outside)
    more = page.eval_on_selector_all("#sc-more-files li", "els => els.map(e => e.textContent)")
    assert more == [f"{f} (ranked {expected['files'].index(f) + 1})" for f in outside]
    assert page.text_content("#sc-context-text") == expected["text"]
    # What was left out, and what the budget went to.
    rows = page.eval_on_selector_all("#sc-omitted tbody tr", "els => els.map(e => e.cells[1].textContent + ' ' + e.cells[2].textContent)")
    assert rows == [f"{o['path']} {o['name']}" for o in expected["omitted"]]
    left = sum(expected["omitted_counts"].values())
    assert page.text_content("#sc-omitted-summary").startswith(f"Left out: {left} candidate" if left else "Left out: nothing")
    assert page.text_content("#sc-spend").endswith(f"; {expected['spend']['free']} free")
    page.click("#sc-copy")
    page.wait_for_function("() => document.getElementById('sc-copied').textContent === 'Copied'")
    # JSON: the page says that the budget holds the content, and how large the JSON text is
    page.select_option("#sc-format", "json")
    page.click("#sc-get-context")
    page.wait_for_function("() => document.getElementById('sc-token-count').textContent.includes('JSON text')")
    as_json = httpx.post(f"{url}/api/context", json={"question": question, "max_tokens": 1500, "format": "json"},
                         timeout=60).json()
    shown = page.text_content("#sc-token-count")
    assert as_json["json_tokens"] > as_json["token_count"]
    assert shown.startswith(f"{as_json['token_count']} tokens of 1500 counted on the content; "
                            f"the JSON text is {as_json['json_tokens']} tokens")

    page.click("#sc-run-search")
    page.wait_for_selector("#sc-hits li")
    assert "shop/" in page.text_content("#sc-hits li")
    page.close()


# A page on another port of this computer, as any site the user visits could serve it or
# run it through a local dev server: it tries what the attacker did.
HOSTILE_PAGE = b"""<!doctype html><html><head><title>hostile</title></head><body><img id="img" alt="">
<script>
const T = new URLSearchParams(location.search).get('target');
window.wsGot = [];
const plain = (path, body) => fetch(T + path, {method: 'POST', mode: 'no-cors', headers: {'Content-Type': 'text/plain'},
  body: JSON.stringify(body)}).then(() => 'sent', e => 'error: ' + e);
const asJson = (path, body) => fetch(T + path, {method: 'POST', headers: {'Content-Type': 'application/json'},
  body: JSON.stringify(body)}).then(r => 'status ' + r.status, e => 'error: ' + e);
window.attempts = Promise.all([
  plain('/api/tools/create_file', {path: 'pwned-plain.md', content: 'pwned'}),
  plain('/api/chats/trip/messages', {role: 'user', content: 'injected by another page'}),
  plain('/api/execute_command', {command: 'smart_context.set_similarity_mode', args: {enabled: false}}),
  asJson('/api/tools/create_file', {path: 'pwned-json.md', content: 'pwned'}),
  new Promise(done => { const img = document.getElementById('img');
    img.onload = () => done('img loaded'); img.onerror = () => done('img refused');
    img.src = T + '/api/chats/bank/topics'; }),
  new Promise(done => { const ws = new WebSocket(T.replace('http:', 'ws:') + '/ws'); window.hostileWs = ws;
    ws.onmessage = m => window.wsGot.push(m.data);
    ws.onopen = () => done('ws open'); ws.onclose = () => done('ws closed'); }),
]);
</script></body></html>"""


@contextmanager
def hostile_site():
    """The page above, served on a free port of 127.0.0.1 by a thread."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(HOSTILE_PAGE)))
            self.end_headers()
            self.wfile.write(HOSTILE_PAGE)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def user_files(root: Path) -> dict[str, bytes]:
    """The folder as its user sees it (not the index, not the chat vectors cache)."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and ".smartcontext" not in p.relative_to(root).parts
            and not p.name.endswith(".embeddings.json")}


def test_a_page_on_another_port_changes_nothing_and_hears_nothing(browser, tmp_path):
    folder = write_tree(tmp_path / "ws", {"notes/Bank.md": "# Bank\n\nThe branch opens at nine.\n"})
    with web_server(folder) as url, hostile_site() as hostile:
        for chat, content in (("trip", "Which ferry goes to Naxos?"), ("bank", "When does the branch open?")):
            added = httpx.post(f"{url}/api/chats/{chat}/messages", json={"role": "user", "content": content}, timeout=60)
            assert added.json()["success"], added.text
        httpx.post(f"{url}/api/execute_command", timeout=60,
                   json={"command": "smart_context.set_filter", "args": {"topics": [], "chat_id": "trip"}})
        mine = browser.new_page()
        open_chat(mine, url, "bank")
        files, state = user_files(folder), httpx.get(f"{url}/api/state", timeout=30).json()
        assert state["current_chat_id"] == "trip" and state["embedding_search"] is True

        theirs = browser.new_page()
        theirs.goto(f"{hostile}/?target={url}")
        outcomes = theirs.evaluate("window.attempts")
        # The simple POSTs left the browser (it needs no one's leave for text/plain): the
        # server refused them. The JSON one died at its preflight; the WebSocket at its handshake.
        assert outcomes[:3] == ["sent", "sent", "sent"]
        assert outcomes[3].startswith("error: TypeError")
        assert outcomes[4] == "img refused" and outcomes[5] == "ws closed"
        assert httpx.get(f"{url}/api/state", timeout=30).json() == state  # the filter, the current chat

        # The user's own tab goes on: a message reaches it over its WebSocket, not theirs.
        secret = "SECRET: my bank PIN is 4321"
        assert httpx.post(f"{url}/api/chats/bank/messages", json={"role": "user", "content": secret},
                          timeout=60).json()["success"]
        mine.wait_for_function("s => [...document.querySelectorAll('.sc-msg-body')].some(e => e.textContent === s)",
                               arg=secret)
        theirs.wait_for_timeout(300)  # time for a message that should not come
        assert theirs.evaluate("window.wsGot") == []
        assert theirs.evaluate("window.hostileWs.readyState") == 3  # CLOSED

        after = user_files(folder)
        bank = ".memory/bank.json"
        assert {k: v for k, v in after.items() if k != bank} == {k: v for k, v in files.items() if k != bank}
        assert [m["content"] for m in json.loads(after[bank])["messages"]] == ["When does the branch open?", secret]
        assert not (folder / "pwned-plain.md").exists() and not (folder / "pwned-json.md").exists()
        mine.close()
        theirs.close()


def accessible_names_missing(page) -> list[str]:
    """The visible form fields with no label, aria-label or aria-labelledby."""
    return page.evaluate("""() => [...document.querySelectorAll('input, select, textarea')]
        .filter(e => e.offsetParent !== null && !e.labels.length && !e.getAttribute('aria-label')
                     && !e.getAttribute('aria-labelledby'))
        .map(e => e.id || e.outerHTML.slice(0, 60))""")


def test_phone_and_desktop_in_light_and_dark_with_keyboard_and_screen_reader_use(site, browser, tmp_path):
    url, _ = site
    httpx.post(f"{url}/api/execute_command", json={"command": "smart_context.set_similarity_mode",
                                                  "args": {"enabled": True}}, timeout=60)
    for n, (role, content) in enumerate(CHAT):
        assert httpx.post(f"{url}/api/chats/layout/messages", json={"role": role, "content": content, "id": f"l{n:02d}"},
                          timeout=60).json()["success"]
    page = browser.new_page()
    shots = {}

    def shoot(name: str) -> None:
        path = tmp_path / f"web-{name}.png"
        page.screenshot(path=str(path))
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        shots[name] = path

    # A phone: one column, every message about as wide as the screen, nothing wider.
    page.set_viewport_size({"width": 390, "height": 844})
    page.emulate_media(color_scheme="light")
    open_chat(page, url, "layout")
    page.wait_for_function(f"() => document.querySelectorAll('[data-message-id]').length === {len(CHAT)}")
    page.wait_for_selector(".sc-bubble")
    widths = page.eval_on_selector_all(".sc-msg", "els => els.map(e => e.getBoundingClientRect().width)")
    assert len(widths) == len(CHAT) and min(widths) >= 330, widths
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    panel, chat = (page.eval_on_selector(sel, "e => e.getBoundingClientRect().toJSON()") for sel in (".sc-side", ".sc-chat"))
    assert panel["top"] >= chat["bottom"] - 1 and panel["width"] >= 380  # the panel under the chat
    light_bg = page.evaluate("getComputedStyle(document.body).backgroundColor")
    shoot("phone-light")
    page.emulate_media(color_scheme="dark")
    dark_bg = page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert light_bg == "rgb(245, 246, 248)" and dark_bg == "rgb(22, 24, 29)"
    shoot("phone-dark")

    # Labelled fields and a status line that is announced, on both pages.
    assert accessible_names_missing(page) == []
    assert page.get_attribute("#sc-status", "role") == "status"
    assert page.get_attribute("#sc-status", "aria-live") == "polite"

    # The keyboard: Enter on a bubble selects it and the focus stays on it, twice.
    bubble = page.locator(".sc-bubble").first
    label = bubble.text_content()
    bubble.focus()
    page.keyboard.press("Enter")
    page.wait_for_function("() => document.querySelector('.sc-bubble.sc-active') !== null")
    page.wait_for_function("() => /messages in context$/.test(document.getElementById('sc-status').textContent)")
    assert page.evaluate("document.activeElement.dataset.label") == label
    assert page.evaluate("document.activeElement.getAttribute('aria-pressed')") == "true"
    page.wait_for_selector(".sc-highlight")

    # Forced colours (Windows high contrast): the in-context messages keep a visible mark.
    page.emulate_media(forced_colors="active")
    kept, other = (page.eval_on_selector(sel, "e => getComputedStyle(e).borderLeftColor")
                   for sel in (".sc-msg.sc-highlight", ".sc-msg:not(.sc-highlight)"))
    assert kept != other
    page.emulate_media(forced_colors="none")

    page.keyboard.press("Enter")
    page.wait_for_function("() => document.querySelector('.sc-bubble.sc-active') === null")
    assert page.evaluate("document.activeElement.dataset.label") == label

    # The desktop: the panel beside the chat, in both schemes.
    page.set_viewport_size({"width": 1024, "height": 640})
    panel, chat = (page.eval_on_selector(sel, "e => e.getBoundingClientRect().toJSON()") for sel in (".sc-side", ".sc-chat"))
    assert panel["left"] >= chat["right"] - 1 and panel["top"] < chat["bottom"]
    shoot("desktop-dark")
    page.emulate_media(color_scheme="light")
    shoot("desktop-light")

    # The search page on a phone: the question and the results as wide as the screen.
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"{url}/search")
    assert accessible_names_missing(page) == []
    page.fill("#sc-question", "cart discounts")
    page.click("#sc-run-search")
    page.wait_for_selector("#sc-hits li")
    where = page.eval_on_selector_all(".sc-hit-where", "els => els.map(e => e.textContent)")
    assert where and all(re.match(r"\S+:\d+  ", w) for w in where), where  # path:line, never :undefined
    assert page.eval_on_selector("#sc-question", "e => e.getBoundingClientRect().width") >= 330
    assert min(page.eval_on_selector_all("#sc-hits li", "els => els.map(e => e.getBoundingClientRect().width)")) >= 300
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    page.fill("#sc-question", "seasonal clearance markdown")
    page.click("#sc-run-search")
    page.wait_for_selector("#sc-hits li .sc-hit-where:has-text('SeasonalClearanceMarkdownScheduler.')")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    page.close()
    if os.environ.get("SMARTCONTEXT_UPDATE_DOCS") == "1":  # regenerates the docs' screenshots
        for name, path in shots.items():
            shutil.copy(path, DOCS / f"web-{name}.png")
