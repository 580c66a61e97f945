"""Topic extraction through LiteLLM: against an OpenAI-compatible server on 127.0.0.1
started here, with LiteLLM's mock_response, and with malformed model output."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from smartcontext.chat import STICKY_LABEL
from smartcontext.chat.llm import TOPIC_EXTRACTION_PROMPT, parse_model_json, topics_from_answer
from smartcontext.errors import InvalidArgument, LLMError
from smartcontext.workspace import Workspace

from test_chat import make_chat

GOOD = {"topics": [{"label": "python async", "count": 4}, {"label": "Greek Ferries", "count": 4},
                   {"label": "Sourdough Starter", "count": 2}],
        "sticky_message_ids": ["u1", "u6", "nope"]}


@pytest.mark.parametrize("text", [
    json.dumps(GOOD),
    "```json\n" + json.dumps(GOOD) + "\n```",
    "Here are the topics:\n```\n" + json.dumps(GOOD, indent=2) + "\n```\nHope this helps!",
    "Sure! " + json.dumps(GOOD) + " Anything else?",
    json.dumps(GOOD)[:-1] + ",}",  # trailing comma
    str(GOOD),  # a Python literal with single quotes
    "```json\n" + json.dumps(GOOD),  # an unclosed fence
])
def test_parse_model_json_reads_what_models_write(text):
    assert parse_model_json(text)["topics"][1]["label"] == "Greek Ferries"


@pytest.mark.parametrize("text", ["", "I cannot help with that.", "{\"topics\": [", "[1, 2]"])
def test_parse_model_json_reports_unusable_answers(text):
    with pytest.raises(LLMError):
        parse_model_json(text)


def test_topics_from_answer_cleans_labels_and_ids():
    topics, sticky = topics_from_answer(GOOD, {"u1", "u6", "a2"})
    assert topics[0] == {"label": "Python Async", "count": 4}
    assert sticky == ["u1", "u6"]
    with pytest.raises(LLMError):
        topics_from_answer({"topics": "x"}, set())


class _Server:
    """An OpenAI-compatible /v1/chat/completions endpoint answering ``reply``."""

    def __init__(self, reply: str):
        self.reply = reply
        self.requests: list[dict] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append({"path": self.path, "body": body})
                data = json.dumps({
                    "id": "c1", "object": "chat.completion", "created": 0, "model": body["model"],
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": outer.reply}}],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20},
                }).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def llm_workspace(tmp_path, api_base: str):
    make_chat(tmp_path)
    (tmp_path / "smartcontext.toml").write_text(
        f'[llm]\nfast = "openai/tiny-test"\napi_base = "{api_base}"\napi_key_env = "SC_TEST_KEY"\n'
    )
    return Workspace.open(tmp_path)


def test_llm_extraction_against_a_local_openai_compatible_server(tmp_path, monkeypatch):
    monkeypatch.setenv("SC_TEST_KEY", "sk-local")
    server = _Server("```json\n" + json.dumps(GOOD) + "\n```")
    try:
        with llm_workspace(tmp_path, server.url) as ws:
            events = []
            ws.chats().subscribe("smart_context.topics_updated", lambda e, p: events.append(p))
            result = ws.chat("c1").extract_topics()
    finally:
        server.close()
    assert result.method == "llm:openai/tiny-test" and result.error is None
    assert [t["label"] for t in result.topics] == ["Python Async", "Greek Ferries", "Sourdough Starter", STICKY_LABEL]
    assert result.topics[-1] == {"label": STICKY_LABEL, "sticky": True, "message_ids": ["u1", "u6"], "count": 2}
    req = server.requests[0]
    assert req["path"].endswith("/chat/completions") and req["body"]["model"] == "tiny-test"
    assert req["body"]["messages"][0]["content"] == TOPIC_EXTRACTION_PROMPT
    assert "[u4] user: Which ferry" in req["body"]["messages"][1]["content"]
    assert events and events[0]["topics"] == result.topics


def test_a_server_without_a_key_extracts_topics(tmp_path, monkeypatch):
    # llama.cpp's server and Ollama's /v1 take no key; the OpenAI client wants one anyway.
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    server = _Server(json.dumps(GOOD))
    try:
        make_chat(tmp_path)
        (tmp_path / "smartcontext.toml").write_text(f'[llm]\nfast = "openai/tiny-test"\napi_base = "{server.url}"\n')
        with Workspace.open(tmp_path) as ws:
            result = ws.chat("c1").extract_topics()
    finally:
        server.close()
    assert result.error is None and result.method == "llm:openai/tiny-test"
    assert "Greek Ferries" in [t["label"] for t in result.topics]


def test_malformed_model_output_keeps_the_previous_topics(tmp_path, monkeypatch):
    monkeypatch.setenv("SC_TEST_KEY", "sk-local")
    with llm_workspace(tmp_path, "http://127.0.0.1:9/v1") as ws:
        chat = ws.chat("c1")
        first = chat.extract_topics(mock_response=json.dumps(GOOD))
        assert first.error is None
        before = chat.path.read_bytes()
        bad = chat.extract_topics(mock_response="Sorry, I can only answer in prose.")
        assert bad.error and "no JSON object" in bad.error and bad.method == "llm:openai/tiny-test"
        assert chat.path.read_bytes() == before
        assert bad.topics == first.topics
        # method="local" ignores the configured model.
        assert chat.extract_topics(method="local").method.startswith("local:")


def test_llm_method_without_a_model_is_an_actionable_error(tmp_path):
    make_chat(tmp_path)
    with Workspace.open(tmp_path) as ws, pytest.raises(InvalidArgument, match=r"\[llm\]"):
        ws.chat("c1").extract_topics(method="llm")
