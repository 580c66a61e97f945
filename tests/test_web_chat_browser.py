"""The chat view with a model, in a real browser: Playwright driving Debian's chromium
against ``smartcontext serve web``, whose ``[llm]`` is the scripted OpenAI-compatible server
(``openai_stub``) started by the test. A message typed in the chat view is answered, the
answer streams in, the model was sent exactly the filtered history and the sticky
instructions, the page shows (and marks) what it was sent; the model's tool calls are
compact and expandable, a code block gets a copy button, Stop keeps what was written; with
no model the page says how to configure one and the transcript editor still works.

Never skipped: without chromium the tests fail and say how to install it."""

from __future__ import annotations

import json
import os
import re
import shutil
import threading
from pathlib import Path

import httpx
import pytest
from conftest import write_tree
from playwright.sync_api import expect

from test_web_api import NOTES
from test_web_chat import MESSAGES, TOPICS
from web_support import MISSING_CHROMIUM, browser_context, chromium_missing, web_server

from smartcontext.agent.loop import SYSTEM_PROMPT

DOCS = Path(__file__).resolve().parent.parent / "docs"
QUESTION = "Which ferry is fastest to Naxos?"
ANSWER = "SeaJets is fastest: about **three hours**.\n\n```sh\nferry --to naxos\n```"


FERRIES = {"notes/Ferries.md": "# Ferries\n\nSeaJets sail from Piraeus to Naxos in three hours.\n"}


def make_folder(root, api_base: str | None):
    write_tree(root, {**NOTES, **FERRIES})
    memory = root / ".memory"
    memory.mkdir()
    (memory / "trip.json").write_text(json.dumps({
        "messages": [{"id": i, "role": r, "content": c} for i, r, c in MESSAGES], "topics": TOPICS}))
    llm = f'[llm]\nagent = "openai/scripted"\napi_base = "{api_base}"\n' if api_base else ""
    # Embeddings off: topics that keep their members select them without a model load.
    (root / "smartcontext.toml").write_text('[embeddings]\nmodel = "none"\n' + llm)
    return root


@pytest.fixture
def browser():
    if chromium_missing():
        pytest.fail(MISSING_CHROMIUM)
    with browser_context() as context:
        context.set_default_timeout(60_000)
        yield context


def body_texts(page) -> list[str]:
    return page.eval_on_selector_all("[data-message-id] .sc-msg-body", "els => els.map(e => e.textContent)")


def test_a_typed_message_gets_a_streamed_answer_from_the_filtered_history(browser, tmp_path, openai_stub):
    hold, stop_hold = threading.Event(), threading.Event()
    model = openai_stub([
        {"tool_calls": [{"id": "c1", "name": "read_file", "arguments": {"path": "notes/Watering.md"}}]},
        {"content": ANSWER, "hold": hold},
        {"content": "A long answer that the user stops before its end.", "hold": stop_hold},
    ])
    folder = make_folder(tmp_path / "ws", model.url)
    with web_server(folder) as url:
        page = browser.new_page()
        page.goto(f"{url}/?chat=trip")
        page.wait_for_selector("html[data-ws=open][data-panel=ready][data-model=yes]")
        assert page.is_hidden("#sc-model-note") and page.text_content("#sc-model-name") == "Answers by openai/scripted"

        # Select a topic: the history the model gets is its messages and the sticky instruction.
        page.locator(".sc-bubble", has_text="Naxos Ferry").click()
        page.wait_for_function("() => document.getElementById('sc-status').textContent === '5 of 7 messages in context'")
        kept = httpx.post(f"{url}/api/chats/trip/history", json={"mode": "topics", "include_messages": False},
                          timeout=30).json()["message_ids"]
        assert kept == ["m0", "m1", "m2", "m5", "m6"]

        page.fill("#sc-input", QUESTION)
        page.click("#sc-send")
        # The answer arrives in pieces: the first is on the page while the rest is held back.
        page.wait_for_function("() => (document.querySelector('.sc-pending .sc-msg-body')?.textContent || '')"
                               ".startsWith('SeaJets')", timeout=180_000)  # LiteLLM's first import: 40 s when busy
        assert page.is_visible("#sc-stop") and page.is_disabled("#sc-send")
        partial = page.text_content(".sc-pending .sc-msg-body")
        assert partial != ANSWER and ANSWER.startswith(partial)
        assert int(page.evaluate("document.documentElement.dataset.firstToken")) >= 0
        hold.set()
        page.wait_for_function("() => !document.querySelector('.sc-pending') && "
                               "document.documentElement.dataset.answering === 'no'")
        page.wait_for_function(f"() => document.querySelectorAll('[data-message-id]').length === {len(MESSAGES) + 4}")

        # What the stub received: the system prompt, the folder's context, exactly the kept
        # history (sticky instruction first), then the question; the same in the tool round.
        by_id = {i: (r, c) for i, r, c in MESSAGES}
        history = [{"role": by_id[i][0], "content": by_id[i][1]} for i in kept]
        for request in model.requests[:2]:
            sent = request["messages"]
            assert sent[0] == {"role": "system", "content": SYSTEM_PROMPT.format(name="ws")}
            assert sent[1]["role"] == "system" and sent[1]["content"].startswith("Context from the folder")
            assert sent[2:2 + len(history)] == history
            assert sent[2 + len(history)] == {"role": "user", "content": QUESTION}
        assert [m["role"] for m in model.requests[1]["messages"][-2:]] == ["assistant", "tool"]

        # The saved chat: the tool call and its result compact and expandable, the answer
        # rendered as Markdown with a copy button on its code block.
        roles = page.eval_on_selector_all("[data-message-id] .sc-msg-role", "els => els.map(e => e.textContent)")
        assert roles[len(MESSAGES):] == ["user", "assistant", "tool", "assistant"]
        call = page.locator("details.sc-msg-tool", has_text="read_file").first
        assert not call.evaluate("d => d.open")
        call.locator("summary").click()
        assert "notes/Watering.md" in call.locator("pre").text_content()
        last = page.locator("[data-message-id]").last
        assert last.locator("strong").text_content() == "three hours"
        assert last.locator(".sc-code code").text_content() == "ferry --to naxos"
        assert last.locator(".sc-copy").text_content() == "Copy"

        # What the answer was sent: the kept messages with their tokens, the context's
        # sections; opening it marks exactly those messages in the chat.
        summary = last.locator(".sc-sent summary").text_content()
        assert re.match(rf"Sent: {len(kept)} of {len(MESSAGES)} earlier messages, \d+ sections? of \d+ files?, "
                        r"[\d,]+ tokens$", summary), summary
        last.locator(".sc-sent summary").click()
        # The marks are set on the details' toggle event, which fires after the click returns.
        expect(page.locator(".sc-was-sent")).to_have_count(len(kept), timeout=10_000)
        marked = page.eval_on_selector_all(".sc-was-sent", "els => els.map(e => e.dataset.messageId)")
        assert marked == kept
        shot = tmp_path / "web-chat.png"
        last.scroll_into_view_if_needed()
        page.screenshot(path=str(shot))
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        if os.environ.get("SMARTCONTEXT_UPDATE_DOCS") == "1":  # regenerates the docs' screenshot
            shutil.copy(shot, DOCS / "web-chat.png")
        rows = last.locator(".sc-sent li").all_text_contents()
        assert any(r.startswith("Context: notes/Ferries.md") for r in rows)
        assert all(r.rstrip().endswith("tokens") for r in rows)
        last.locator(".sc-sent summary").click()
        # Closing it clears the marks (on the details' toggle event, which runs after the click).
        expect(page.locator(".sc-was-sent")).to_have_count(0, timeout=10_000)

        # Stop: the answer ends where it was, and is kept as written.
        page.fill("#sc-input", "Tell me about every ferry")
        page.click("#sc-send")
        page.wait_for_function("() => (document.querySelector('.sc-pending .sc-msg-body')?.textContent || '').length > 0")
        page.click("#sc-stop")
        page.wait_for_timeout(200)  # the stop reaches the server before the rest of the text
        stop_hold.set()
        page.wait_for_function("() => document.documentElement.dataset.answering === 'no' && !document.querySelector('.sc-pending')")
        stored = httpx.get(f"{url}/api/chats/trip", timeout=30).json()["messages"][-1]
        assert stored["stopped"] is True and stored["content"] != "A long answer that the user stops before its end."
        assert body_texts(page)[-1] == stored["content"]
        page.close()


def test_without_a_model_the_page_says_how_to_configure_one(browser, tmp_path):
    folder = make_folder(tmp_path / "ws", None)
    with web_server(folder) as url:
        page = browser.new_page()
        page.goto(f"{url}/?chat=trip")
        page.wait_for_selector("html[data-ws=open][data-panel=ready][data-model=no]")
        assert page.is_visible("#sc-model-note")
        how = page.text_content("#sc-model-how")
        assert "[llm]" in how and 'agent = "' in how and "api_base" in how
        assert page.is_hidden("#sc-add") and page.is_visible("#sc-role")
        # The transcript editor: the message is added with its role, nobody answers.
        page.select_option("#sc-role", "assistant")
        page.fill("#sc-input", "An answer written by hand.")
        page.click("#sc-send")
        page.wait_for_function(f"() => document.querySelectorAll('[data-message-id]').length === {len(MESSAGES) + 1}")
        saved = httpx.get(f"{url}/api/chats/trip", timeout=30).json()["messages"][-1]
        assert saved["role"] == "assistant" and saved["content"] == "An answer written by hand."
        page.close()
