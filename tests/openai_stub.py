"""A scripted OpenAI-compatible chat server on 127.0.0.1, for tests and benchmarks.

The one allowed stand-in for a paid LLM provider: a real HTTP server that answers
``POST /v1/chat/completions`` from a list of scripted replies, in order, and records every
request it received. Each scripted reply is a dict:

    {"content": "text"}                                        an answer
    {"tool_calls": [{"name": "read_file", "arguments": {...}}]}  tool calls (arguments
        may be a dict, or a string sent as is: malformed JSON on purpose); "id" optional
    {"status": 500, "error": "overloaded"}                      an HTTP error
    any of them with "wait": threading.Event()                  answered once it is set
    {"content": "text", "hold": threading.Event()}              streamed: the first piece at
        once, the rest once the event is set (a reader sees the answer arrive in pieces)

A request with ``"stream": true`` is answered with server-sent events (text in pieces,
each tool call in one chunk, the usage last when ``stream_options.include_usage``).

When the script runs out, the server answers 500 "script exhausted", so a test that makes
one call too many fails loudly. ``usage.prompt_tokens`` is the exact cl100k_base count of
the request's messages and tools as JSON, so callers can measure what a round costs.

    with ScriptedOpenAI([{"content": "hi"}]) as server:
        litellm.completion(model="openai/scripted", api_base=server.url, api_key="x", ...)
        server.requests[0]["messages"]
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL = "openai/scripted"


def prompt_tokens(body: dict[str, Any]) -> int:
    from smartcontext.tokens import count_tokens

    shown = {"messages": body.get("messages", []), "tools": body.get("tools") or []}
    return count_tokens(json.dumps(shown, ensure_ascii=False, sort_keys=True))


def _completion(body: dict[str, Any], reply: dict[str, Any], n: int) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.get("content")}
    calls = reply.get("tool_calls") or []
    if calls:
        message["tool_calls"] = [
            {"id": c.get("id") or f"call_{n}_{i}", "type": "function",
             "function": {"name": c["name"],
                          "arguments": c["arguments"] if isinstance(c.get("arguments"), str)
                          else json.dumps(c.get("arguments") or {})}}
            for i, c in enumerate(calls)
        ]
    prompt = prompt_tokens(body)
    return {
        "id": f"chatcmpl-{n}", "object": "chat.completion", "created": 0, "model": body.get("model", ""),
        "choices": [{"index": 0, "message": message,
                     "finish_reason": "tool_calls" if calls else "stop"}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": 1, "total_tokens": prompt + 1},
    }


def _chunks(completion: dict[str, Any], usage: bool) -> list[dict[str, Any]]:
    base = {k: completion[k] for k in ("id", "created", "model")}
    base["object"] = "chat.completion.chunk"
    message = completion["choices"][0]["message"]

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    out = [chunk({"role": "assistant", "content": ""})]
    text = message.get("content") or ""
    step = max(1, len(text) // 3)
    out += [chunk({"content": text[i:i + step]}) for i in range(0, len(text), step)]
    for i, call in enumerate(message.get("tool_calls") or []):
        out.append(chunk({"tool_calls": [{"index": i, **call}]}))
    out.append(chunk({}, completion["choices"][0]["finish_reason"]))
    if usage:
        out.append({**base, "choices": [], "usage": completion["usage"]})
    return out


class ScriptedOpenAI:
    """The server; ``url`` is the ``api_base`` to give a client (ends with ``/v1``)."""

    def __init__(self, script: list[dict[str, Any]]):
        self.script = list(script)
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    return self._send(400, {"error": {"message": "request body is not JSON"}})
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    return self._send(404, {"error": {"message": f"no route {self.path}"}})
                with outer._lock:
                    outer.requests.append(body)
                    n = len(outer.requests)
                    reply = outer.script.pop(0) if outer.script else {"status": 500, "error": "script exhausted"}
                if reply.get("wait") is not None:
                    reply["wait"].wait(30)
                if "status" in reply:
                    return self._send(reply["status"], {"error": {"message": reply.get("error", "error"),
                                                                  "type": "server_error"}})
                completion = _completion(body, reply, n)
                if body.get("stream"):
                    return self._stream(completion, bool((body.get("stream_options") or {}).get("include_usage")),
                                        reply.get("hold"))
                self._send(200, completion)

            def _stream(self, completion: dict[str, Any], usage: bool, hold: threading.Event | None = None) -> None:
                """The completion as server-sent events, the way OpenAI streams: text in
                pieces, each tool call in a chunk of its own, then the usage."""
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                for i, chunk in enumerate(_chunks(completion, usage)):
                    self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
                    if i == 1 and hold is not None:  # the role chunk and the first piece are out
                        self.wfile.flush()
                        hold.wait(120)
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
                self.close_connection = True

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, name="openai-stub", daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    @property
    def remaining(self) -> int:
        return len(self.script)

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> "ScriptedOpenAI":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
