"""The chat view's context tools in a real browser (Playwright driving Debian's chromium
against ``smartcontext serve web``), on a desktop and on a phone: the bubble cloud explains
itself (help open on first use, each bubble described, empty states that say why); "Show
only what is in context" and the jumps to the next message in or out of context, by
keyboard, each said in a live status line; the budgets of ``[chat]`` shown in the panel;
a selected topic kept when the topics are extracted again after an answer, and the page
saying which selected topic is gone.

Never skipped: without chromium the tests fail and say how to install it."""

from __future__ import annotations

import json

import httpx
import pytest
from playwright.sync_api import expect

from test_web_chat_browser import make_folder
from web_support import MISSING_CHROMIUM, browser_context, chromium_missing, web_server

VIEWPORTS = {"desktop": {"width": 1280, "height": 800}, "phone": {"width": 390, "height": 844}}
STATUS = "() => document.getElementById('sc-status').textContent === '5 of 7 messages in context'"


@pytest.fixture(params=sorted(VIEWPORTS))
def viewport(request):
    return VIEWPORTS[request.param]


def open_chat(context, url: str, chat: str = "trip"):
    page = context.new_page()
    page.goto(f"{url}/?chat={chat}")
    page.wait_for_selector("html[data-ws=open][data-panel=ready]")
    return page


def view_status(page) -> str:
    return page.text_content("#sc-view-status")


def focused_id(page) -> str | None:
    return page.evaluate("document.activeElement.dataset.messageId || null")


def test_only_what_is_in_context_and_the_jumps_by_keyboard(tmp_path, viewport):
    if chromium_missing():
        pytest.fail(MISSING_CHROMIUM)
    folder = make_folder(tmp_path / "ws", None)
    with web_server(folder) as url, browser_context(viewport) as context:
        context.set_default_timeout(60_000)
        page = open_chat(context, url)

        # First use: the bubbles say what they are, what a click does and what size means.
        assert page.locator("#sc-bubbles-help").evaluate("d => d.open")
        assert "bigger it is, the more messages" in page.text_content("#sc-bubbles-help")
        bubble = page.locator(".sc-bubble", has_text="Naxos Ferry")
        assert bubble.get_attribute("aria-describedby") == "sc-bubble-hint"
        assert "send only its messages" in page.text_content("#sc-bubble-hint")
        assert bubble.get_attribute("title").startswith("Naxos Ferry: 4 messages. Click to send only its messages")

        # No topic selected: every message is in context, and the jump says so.
        page.click("#sc-next-out")
        assert view_status(page) == "Every message is in context: no topic is selected."

        bubble.focus()
        page.keyboard.press("Enter")
        page.wait_for_function(STATUS)
        page.wait_for_selector(".sc-highlight")

        # The toggle, by keyboard: only the five messages in context stay shown, and it is said.
        page.focus("#sc-only-context")
        page.keyboard.press("Space")
        expect(page.locator("[data-message-id]:visible")).to_have_count(5)
        assert view_status(page) == "Showing the 5 of 7 messages in context."
        assert page.is_disabled("#sc-next-out")

        # Next in context, from the keyboard: the focus goes to the message, the line reads it.
        page.focus("#sc-next-in")
        page.keyboard.press("Enter")
        assert focused_id(page) == "m0"
        assert view_status(page) == "Message 1 of 5 in context, from user: be concise"
        page.click("#sc-next-in")
        assert focused_id(page) == "m1"
        assert view_status(page).startswith("Message 2 of 5 in context, from user: Which ferry goes")

        # Everything again: the next message not in context, after the one we are on; the
        # last one wraps to the first.
        page.focus("#sc-only-context")
        page.keyboard.press("Space")
        expect(page.locator("[data-message-id]:visible")).to_have_count(7)
        assert view_status(page) == "Showing all 7 messages; 5 in context (marked)."
        page.click("#sc-next-out")
        assert focused_id(page) == "m3"
        page.click("#sc-next-out")
        assert focused_id(page) == "m4"
        page.click("#sc-next-out")
        assert focused_id(page) == "m3" and view_status(page).startswith("Back to the first. Message 1 of 2 not in context")
        box = page.locator('[data-message-id="m3"]').bounding_box()
        assert box["width"] <= viewport["width"] and box["x"] >= 0  # on the screen, not beside it

        # Cleared: the toggle shows everything, and the help stays closed once used.
        bubble.click()
        page.wait_for_function("() => !document.querySelector('.sc-highlight')")
        page.check("#sc-only-context")
        expect(page.locator("[data-message-id]:visible")).to_have_count(7)
        assert view_status(page).startswith("Every message is in context (no topic selected)")
        page.reload()
        page.wait_for_selector("html[data-ws=open][data-panel=ready]")
        assert not page.locator("#sc-bubbles-help").evaluate("d => d.open")

        # Empty states say why there are no bubbles and what makes them appear.
        empty = open_chat(context, url, "brand-new")
        expect(empty.locator("#sc-bubbles")).to_have_text(
            "No topics yet: this chat has no messages. Topics appear once it has some, after the first answer.")
        (folder / ".memory" / "plain.json").write_text(json.dumps({"messages": [
            {"id": "p1", "role": "user", "content": "hello"}], "topics": []}))
        plain = open_chat(context, url, "plain")
        expect(plain.locator("#sc-bubbles")).to_contain_text("they are extracted after each answer")


def test_a_selected_topic_is_kept_when_the_topics_come_back_renamed(tmp_path, openai_stub):
    """On a phone: the answer's topics are extracted by the scripted model, with one of
    the two selected topics renamed and the other gone."""
    if chromium_missing():
        pytest.fail(MISSING_CHROMIUM)
    extracted = {"topics": [{"label": "Ferries To Naxos", "count": 5}, {"label": "Greek Islands", "count": 2}],
                 "sticky_message_ids": ["m0"]}
    model = openai_stub([{"content": "SeaJets: about three hours."}, {"content": json.dumps(extracted)}])
    folder = make_folder(tmp_path / "ws", model.url)
    config = folder / "smartcontext.toml"
    config.write_text(config.read_text().replace('agent = "openai/scripted"',
                                                  'agent = "openai/scripted"\nfast = "openai/scripted"\n'
                                                  'api_key_env = "SC_TEST_KEY"')
                      + "\n[chat]\nhistory_tokens = 2500\ncontext_tokens = 0\n")
    with web_server(folder, env={"SC_TEST_KEY": "x"}) as url, browser_context(VIEWPORTS["phone"]) as context:
        context.set_default_timeout(60_000)
        page = open_chat(context, url)
        page.wait_for_selector("html[data-model=yes]")
        # The budgets of [chat], as configured, are shown.
        budgets = page.text_content("#sc-budgets")
        assert "within 2,500 tokens" in budgets and "no context from the folder" in budgets
        assert "[chat] history_tokens, context_tokens" in budgets

        page.locator(".sc-bubble", has_text="Naxos Ferry").click()
        page.wait_for_function(STATUS)
        page.locator(".sc-bubble", has_text="Sourdough Starter").click()
        page.wait_for_function("() => document.getElementById('sc-status').textContent === 'All messages in context'"
                               " || /^7 of 7/.test(document.getElementById('sc-status').textContent)")
        page.fill("#sc-input", "Which ferry is fastest to Naxos?")
        page.click("#sc-send")

        note = page.locator("#sc-topic-note-text")
        expect(note).to_have_text(
            "The topics were extracted again after the answer. “Naxos Ferry” is now “Ferries To Naxos”, still "
            "selected. The selected topic “Sourdough Starter” is gone: its messages are no longer selected.",
            timeout=180_000)  # LiteLLM's first import when the machine is busy
        renamed = page.locator(".sc-bubble", has_text="Ferries To Naxos")
        expect(renamed).to_have_attribute("aria-pressed", "true")
        expect(page.locator(".sc-bubble", has_text="Greek Islands")).to_have_attribute("aria-pressed", "false")
        state = httpx.get(f"{url}/api/state", timeout=30).json()
        assert state["active_topics"] == ["Ferries To Naxos"]
        page.wait_for_function("() => /^\\d+ of 9 messages in context$/.test(document.getElementById('sc-status').textContent)")
        assert page.locator(".sc-highlight").count() > 0
        # The topic extraction got the conversation; the answer got no folder context (0 tokens).
        assert all("Context from the folder" not in (m.get("content") or "") for m in model.requests[0]["messages"])
        assert "Which ferry is fastest to Naxos?" in model.requests[1]["messages"][-1]["content"]

        page.click("#sc-topic-note-close")
        expect(note).to_have_text("")
        assert page.is_hidden("#sc-topic-note-close")
