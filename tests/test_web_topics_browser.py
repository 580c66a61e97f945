"""The topic panel in a real browser when a bubble matches nothing: the status line names the
topic instead of reading "All messages in context" as if the click had worked. Playwright
driving Debian's chromium against ``smartcontext serve web`` over a temp folder whose chat
holds topics as an LLM writes them (label and count, no members).

Never skipped: without chromium the test fails and says how to install it."""

from __future__ import annotations

import json

import httpx
import pytest

from web_support import MISSING_CHROMIUM, browser_context, chromium_missing, web_server

MESSAGES = [
    ("m0", "user", "be concise"),
    ("m1", "user", "Which ferry goes from Piraeus to Naxos?"),
    ("m2", "assistant", "Blue Star ferries sail from Piraeus to Naxos every morning."),
    ("m3", "user", "How do I feed my sourdough starter?"),
    ("m4", "assistant", "Feed the sourdough starter equal weights of flour and water once a day."),
]
TOPICS = [{"label": "Adoption Agencies", "count": 19}, {"label": "Naxos Ferry", "count": 2},
          {"label": "Instructions & Preferences", "sticky": True, "message_ids": ["m0"], "count": 1}]


def test_a_bubble_that_matched_nothing_says_so(tmp_path):
    if chromium_missing():
        pytest.fail(MISSING_CHROMIUM)
    mem = tmp_path / ".memory"
    mem.mkdir()
    (mem / "trip.json").write_text(json.dumps({
        "messages": [{"id": i, "role": r, "content": c} for i, r, c in MESSAGES], "topics": TOPICS}))
    # Embeddings off: an LLM label selects the messages that use its words (no model load).
    (tmp_path / "smartcontext.toml").write_text('[embeddings]\nmodel = "none"\n')
    with web_server(tmp_path) as url, browser_context() as context:
        context.set_default_timeout(60_000)
        page = context.new_page()
        page.goto(f"{url}/?chat=trip")
        page.wait_for_selector("html[data-ws=open][data-panel=ready]")
        page.wait_for_function("() => document.querySelectorAll('.sc-bubble').length === 2")

        page.locator(".sc-bubble", has_text="Adoption Agencies").click()
        line = '"Adoption Agencies" matches no message: all messages in context'
        page.wait_for_function("t => document.getElementById('sc-status').textContent === t", arg=line)
        kept = httpx.post(f"{url}/api/chats/trip/history", json={"mode": "topics", "include_messages": False},
                          timeout=30).json()
        assert kept["matched_nothing"] == ["Adoption Agencies"] and kept["status_line"] == line

        # A second bubble that matches: the filter applies, the first is still named. After a
        # reload the line comes from the history the page reads back.
        page.locator(".sc-bubble", has_text="Naxos Ferry").click()
        both = '3 of 5 messages in context; "Adoption Agencies" matches none'
        page.wait_for_function("t => document.getElementById('sc-status').textContent === t", arg=both)
        page.reload()
        page.wait_for_selector("html[data-ws=open][data-panel=ready]")
        page.wait_for_function("t => document.getElementById('sc-status').textContent === t", arg=both)
