"""The language model behind the agent: any LiteLLM model with native tool calling, or
the optional local GGUF of ``chat.local_llm`` with tool calls held to a JSON schema.

Which model: ``model`` given by the caller (``--model``), else the ``agent`` category of
``[llm]`` in smartcontext.toml, else its ``fast`` category. ``api_base`` (the caller's,
else ``[llm] api_base``) reaches any OpenAI-compatible server; ``[llm] api_key_env`` names
the variable holding the key.
"""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import dataclass, field
from collections.abc import Callable
from typing import Any, Protocol

from ..errors import LLMError

AGENT_CATEGORIES = ("agent", "fast")
# An OpenAI-compatible server of one's own (llama.cpp, vLLM) rarely wants a key, but the
# OpenAI client refuses to start without one.
PLACEHOLDER_KEY = "no-key"
REQUEST_TIMEOUT = 120


class Stopped(Exception):
    """Raised by a streaming listener to end the model's reply early (the user stopped it)."""


@dataclass
class ToolCall:
    """One call the model asked for; ``arguments`` is the text it sent, as is (it may
    not be JSON at all: the loop answers that with a tool error)."""

    id: str
    name: str
    arguments: str

    def to_message(self) -> dict[str, Any]:
        return {"id": self.id, "type": "function", "function": {"name": self.name, "arguments": self.arguments}}


@dataclass
class ModelReply:
    content: str
    tool_calls: list[ToolCall] = field(default_factory=list)
    prompt_tokens: int | None = None


class Model(Protocol):
    name: str

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
                 on_text: Callable[[str], None] | None = None) -> ModelReply:
        """The model's reply; with ``on_text``, its text is streamed there piece by piece
        as it arrives (models that cannot stream call it once with the whole text)."""


def model_settings(llm_config: dict[str, str], model: str | None = None, api_base: str | None = None,
                   api_key: str | None = None) -> dict[str, Any]:
    """LiteLLM keyword arguments for the agent's model; LLMError when none is configured."""
    from ..chat.llm import llm_settings

    config = dict(llm_config)
    if api_base:
        config["api_base"] = api_base
    settings = None
    if model:
        settings = llm_settings({**config, "agent": model}, "agent")
    else:
        for category in AGENT_CATEGORIES:
            settings = llm_settings(config, category)
            if settings:
                break
    if settings is None:
        raise LLMError(
            "the agent needs a language model: pass --model (e.g. openai/gpt-4o-mini, "
            "ollama/qwen2.5, or local:qwen2.5-coder-0.5b) or set `agent = \"...\"` under [llm] "
            "in smartcontext.toml (api_base there reaches an OpenAI-compatible server)"
        )
    if api_key:
        settings["api_key"] = api_key
    if (settings.get("api_base") and "api_key" not in settings and settings["model"].startswith("openai/")
            and not os.environ.get("OPENAI_API_KEY")):
        settings["api_key"] = PLACEHOLDER_KEY
    return settings


def open_model(settings: dict[str, Any]) -> Model:
    if settings["model"].startswith("local:"):
        return LocalModel(settings["model"])
    return LiteLLMModel(settings)


class LiteLLMModel:
    """Native tool calling through LiteLLM (OpenAI, Anthropic, Ollama, any OpenAI-compatible
    server...)."""

    def __init__(self, settings: dict[str, Any]):
        self.settings = dict(settings)
        self.name = self.settings["model"]

    @staticmethod
    def warm() -> None:
        """Import LiteLLM in a background thread: it takes seconds (39 s measured on a busy
        2-core machine), which the first answer would otherwise wait for."""
        import threading

        def load() -> None:
            os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
            try:
                import litellm  # noqa: F401
            except ImportError:  # said when the model is called
                pass

        threading.Thread(target=load, name="smartcontext-litellm-import", daemon=True).start()

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
                 on_text: Callable[[str], None] | None = None) -> ModelReply:
        # No network at import: LiteLLM otherwise fetches its model price list.
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        try:
            import litellm
        except ImportError:
            raise LLMError("the agent needs LiteLLM: pip install 'smartcontext[remote]'") from None
        litellm.suppress_debug_info = True  # its help banner would land in our stdout
        options: dict[str, Any] = {"timeout": REQUEST_TIMEOUT, **self.settings}
        if tools:
            options["tools"] = tools
        try:
            if on_text is None:
                response = litellm.completion(messages=messages, **options)
            else:
                response = self._streamed(litellm, messages, options, on_text)
        except Stopped:
            raise
        except Exception as exc:  # LiteLLM raises its providers' own exception types
            raise LLMError(f"the model {self.name} failed: {type(exc).__name__}: {exc}") from exc
        try:
            message = response.choices[0].message
        except (AttributeError, IndexError) as exc:
            raise LLMError(f"the model {self.name} answered no message") from exc
        calls = []
        for tc in getattr(message, "tool_calls", None) or []:
            fn = getattr(tc, "function", None)
            name = getattr(fn, "name", None) or ""
            args = getattr(fn, "arguments", None)
            if not isinstance(args, str):
                args = "" if args is None else json.dumps(args)
            calls.append(ToolCall(getattr(tc, "id", None) or f"call_{uuid.uuid4().hex[:12]}", name, args))
        usage = getattr(response, "usage", None)
        return ModelReply(message.content or "", calls, getattr(usage, "prompt_tokens", None))

    @staticmethod
    def _streamed(litellm: Any, messages: list[dict[str, Any]], options: dict[str, Any],
                  on_text: Callable[[str], None]) -> Any:
        """Stream the reply, passing text pieces on, and rebuild the whole response
        (tool calls arrive in pieces too) with LiteLLM's own chunk builder."""
        chunks = []
        stream = litellm.completion(messages=messages, stream=True, stream_options={"include_usage": True}, **options)
        for chunk in stream:
            chunks.append(chunk)
            choices = getattr(chunk, "choices", None) or []
            piece = getattr(getattr(choices[0], "delta", None), "content", None) if choices else None
            if piece:
                on_text(piece)
        response = litellm.stream_chunk_builder(chunks, messages=messages)
        if response is None:
            raise LLMError("the model's stream held no reply")
        return response


# -- the local GGUF: tool calls as JSON held to a schema --------------------------------

LOCAL_INSTRUCTIONS = """\
You can call these tools:
{tools}

Answer with one JSON object only:
- to call a tool: {{"tool": "<name>", "arguments": {{...}}}}
- to answer the user: {{"tool": "none", "answer": "<your answer>"}}"""


def local_schema(tool_names: list[str]) -> dict[str, Any]:
    """Either one tool call (any tool, arguments an object the registry checks) or the
    answer: an ``anyOf`` of the two shapes (measured here to hold the 0.5B model)."""
    call = {"type": "object", "properties": {"tool": {"enum": tool_names}, "arguments": {"type": "object"}},
            "required": ["tool", "arguments"]}
    answer = {"type": "object", "properties": {"tool": {"const": "none"}, "answer": {"type": "string"}},
              "required": ["tool", "answer"]}
    return {"anyOf": [call, answer] if tool_names else [answer]}


def local_messages(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> list[dict[str, str]]:
    """The conversation in plain roles: a small model's chat template has no tool turns,
    so a call becomes the JSON the model would write and a result a user turn."""
    listed = "\n".join(
        f"- {t['function']['name']}: {t['function'].get('description', '')} "
        f"Arguments: {json.dumps(t['function'].get('parameters', {}).get('properties', {}))}"
        for t in tools or []
    )
    out: list[dict[str, str]] = []
    names: dict[str, str] = {}
    for m in messages:
        role, content = m.get("role"), m.get("content") or ""
        if role == "system":
            out.append({"role": "system", "content": content})
        elif role == "assistant" and m.get("tool_calls"):
            for tc in m["tool_calls"]:
                names[tc["id"]] = tc["function"]["name"]
                out.append({"role": "assistant", "content": json.dumps(
                    {"tool": tc["function"]["name"], "arguments": tc["function"]["arguments"]})})
        elif role == "tool":
            out.append({"role": "user", "content": f"Result of {names.get(m.get('tool_call_id') or '', 'the tool')}: {content}"})
        else:
            out.append({"role": "assistant" if role == "assistant" else "user", "content": content})
    if tools:
        note = LOCAL_INSTRUCTIONS.format(tools=listed)
        if out and out[0]["role"] == "system":
            out[0] = {"role": "system", "content": out[0]["content"] + "\n\n" + note}
        else:
            out.insert(0, {"role": "system", "content": note})
    return out


def local_reply(text: str) -> ModelReply:
    """The local model's JSON as a reply: a tool call or the answer."""
    from ..chat.llm import parse_model_json

    data = parse_model_json(text)
    tool = data.get("tool")
    if tool and tool != "none":
        return ModelReply("", [ToolCall(f"call_{uuid.uuid4().hex[:12]}", str(tool),
                                        json.dumps(data.get("arguments") or {}))])
    return ModelReply(str(data.get("answer") or ""))


class LocalModel:
    """Qwen2.5-Coder-0.5B (opt-in, ``chat.local_llm``) in this process."""

    def __init__(self, name: str):
        from ..chat import local_llm

        if name != local_llm.MODEL_SPEC:
            raise LLMError(f"unknown local model {name!r}; the local model is {local_llm.MODEL_SPEC!r}")
        self.name = name

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
                 on_text: Callable[[str], None] | None = None) -> ModelReply:
        from ..chat import local_llm

        names = [t["function"]["name"] for t in tools or []]
        reply = local_reply(local_llm.complete(local_messages(messages, tools), local_schema(names)))
        if on_text is not None and reply.content:
            on_text(reply.content)  # the schema-held JSON cannot be shown as it grows
        return reply
