"""Accessibility of the web page: axe-core (vendored from npm, ``tests/data/axe-core``)
injected into the chat page and the search page in Debian's chromium, on a desktop and a
phone, in light and dark, with the states a user sees (a selected topic and dimmed bubbles,
an answer with its tool call, code block and "Sent" record open, only the messages in
context shown with one jumped to, the note about renamed and lost topics, the bubbles'
help, the model's note). No
serious or critical violation may remain.

Never skipped: without chromium the test fails and says how to install it."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from test_web_chat_browser import make_folder
from web_support import MISSING_CHROMIUM, browser_context, chromium_missing, eventually, web_server

AXE = Path(__file__).resolve().parent / "data" / "axe-core" / "axe.min.js"
AXE_SHA256 = "29348999450cdf2849a8e70b7912fc2da85a849da39c0d0d5394f51d4a9ed95c"
ANSWER = "SeaJets: about **three hours**.\n\n- Blue Star: five hours\n\n```sh\nferry --to naxos\n```"
VIEWPORTS = {"desktop": {"width": 1280, "height": 800}, "phone": {"width": 390, "height": 844}}


def axe_source() -> str:
    data = AXE.read_bytes()
    assert hashlib.sha256(data).hexdigest() == AXE_SHA256, f"{AXE} is not the pinned axe-core 4.14.1"
    return data.decode("utf-8")


def serious(page, source: str) -> list[str]:
    """The serious and critical violations axe finds on the page, one line each."""
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.evaluate(source)  # evaluated by the browser's DevTools protocol: the page's CSP allows it
    found = page.evaluate("""() => axe.run(document, {resultTypes: ['violations']}).then(r => r.violations
        .filter(v => v.impact === 'serious' || v.impact === 'critical')
        .map(v => v.id + ' (' + v.impact + '): ' + v.nodes.slice(0, 3).map(n => n.target.join(' ')
             + ' ' + (n.any.concat(n.all)[0] || {}).message).join(' | ')))""")
    return found


def test_no_serious_or_critical_violation(tmp_path, openai_stub):
    if chromium_missing():
        pytest.fail(MISSING_CHROMIUM)
    source = axe_source()
    model = openai_stub([
        {"tool_calls": [{"id": "c1", "name": "read_file", "arguments": {"path": "notes/Ferries.md"}}]},
        {"content": ANSWER},
    ])
    folder = make_folder(tmp_path / "ws", model.url)
    bare = make_folder(tmp_path / "bare", None)
    with web_server(folder) as url, web_server(bare) as bare_url, browser_context() as context:
        context.set_default_timeout(60_000)
        page = context.new_page()
        page.goto(f"{url}/?chat=trip")
        page.wait_for_selector("html[data-ws=open][data-panel=ready][data-model=yes]")
        page.fill("#sc-input", "Which ferry is fastest to Naxos?")
        page.click("#sc-send")
        page.wait_for_function("() => document.documentElement.dataset.answering === 'no' && "
                               "document.querySelector('.sc-sent') !== null")
        # The topics are extracted again after the answer (they then hold its messages) and
        # reach the page: only then is a selection kept.
        eventually(page, """() => fetch('/api/chats/trip/topics').then(r => r.json()).then(t => {
            const regular = t.topics.filter(x => !x.sticky);
            const shown = [...document.querySelectorAll('.sc-bubble')].map(b => b.dataset.label);
            return regular.some(x => (x.message_ids || []).some(i => !/^m\\d$/.test(i)))
                && JSON.stringify(regular.map(x => x.label)) === JSON.stringify(shown); })""")
        page.locator(".sc-bubble").first.click()  # a selected topic, the others dimmed
        page.wait_for_selector(".sc-bubble.sc-dim")
        page.wait_for_selector(".sc-highlight")
        page.locator(".sc-sent summary").last.click()
        page.locator("details.sc-msg-tool summary").first.click()
        # Only what is in context, a jump to a message, and the note about topics that
        # came back renamed or did not come back (as the server's filter_changed says it).
        page.check("#sc-only-context")
        page.click("#sc-next-in")
        page.evaluate("""() => { const l = document.querySelector('.sc-bubble.sc-active').dataset.label;
            window.dispatchEvent(new CustomEvent('smart_context.filter_changed', {detail: {chat_id: 'trip',
              active_topics: [l], renamed: {'Ferry Times': l}, lost: ['Budget']}})); }""")
        page.wait_for_selector("#sc-topic-note-close:not([hidden])")

        other = context.new_page()
        other.goto(f"{bare_url}/?chat=trip")
        other.wait_for_selector("html[data-ws=open][data-panel=ready][data-model=no]")

        found = {}
        for name, viewport in VIEWPORTS.items():
            for scheme in ("light", "dark"):
                for label, p in (("chat", page), ("no model", other)):
                    p.set_viewport_size(viewport)
                    p.emulate_media(color_scheme=scheme)
                    p.wait_for_timeout(400)  # the bubbles' colour transitions (0.15 s) have ended
                    found[f"{label}, {name}, {scheme}"] = serious(p, source)
        search = context.new_page()
        search.goto(f"{url}/search")
        search.fill("#sc-question", "ferry")
        search.click("#sc-run-search")
        search.wait_for_selector("#sc-hits li")
        for scheme in ("light", "dark"):
            search.emulate_media(color_scheme=scheme)
            search.wait_for_timeout(400)
            found[f"search, {scheme}"] = serious(search, source)
        bad = {k: v for k, v in found.items() if v}
        assert not bad, "\n".join(f"{k}: {line}" for k, lines in bad.items() for line in lines)
