"""Topic extraction with a language model (LiteLLM), and robust reading of its JSON.

The model is the one configured for the ``extraction_category`` (``fast`` by default) in
``[llm]`` (``local:qwen2.5-coder-0.5b`` runs the optional in-process model of
``chat.local_llm``); ``api_base`` and ``api_key_env`` in ``[llm]`` reach a self-hosted or
OpenAI-compatible server. Models wrap JSON in code fences, add prose around it, leave
trailing commas or write Python literals; ``parse_model_json`` reads all of those and
raises ``LLMError`` (with the start of the answer) for anything else.
"""

from __future__ import annotations

import ast
import json
import os
import re
from typing import Any

from ..errors import LLMError
from .files import Message

# The seed's prompt (chat-topics-implementation-plan.md, Task 3), word for word.
TOPIC_EXTRACTION_PROMPT = """\
Analyze this conversation and extract the main topics discussed.
Return JSON only — no markdown, no prose.

Format:
{
  "topics": [{"label": "Topic Name", "count": N}],
  "sticky_message_ids": ["id1", "id2"]
}

Rules:
- 3-8 topics max, 2-4 words each, Title Case
- count = approximate number of messages related to this topic
- sticky_message_ids: IDs of SHORT instructional/preference messages
  (e.g. "be concise", "respond in French", "use Python 3")
- Return ONLY valid JSON"""

MESSAGE_CHARS = 200  # per message in the prompt, as the seed does
MAX_TOPICS = 8
_FENCE = re.compile(r"```[A-Za-z0-9_-]*\s*\n?(.*?)```", re.DOTALL)
_TRAILING_COMMA = re.compile(r",\s*([}\]])")


def conversation_text(messages: list[Message]) -> str:
    return "\n".join(f"[{m.id}] {m.role}: {m.content[:MESSAGE_CHARS]}" for m in messages)


def _candidates(text: str) -> list[str]:
    out = [text]
    out += [m.group(1) for m in _FENCE.finditer(text)]
    # An unclosed fence (the answer was cut off after the JSON).
    if text.lstrip().startswith("```"):
        out.append(text.lstrip().split("\n", 1)[-1].rstrip("`"))
    return out


def parse_model_json(text: str) -> dict[str, Any]:
    """The JSON object in a model's answer: bare, fenced, inside prose, with trailing
    commas, or as a Python literal. Raises LLMError when there is none."""
    if not isinstance(text, str) or not text.strip():
        raise LLMError("the model answered nothing")
    decoder = json.JSONDecoder()
    for cand in _candidates(text.strip()):
        for variant in (cand, _TRAILING_COMMA.sub(r"\1", cand)):
            start = variant.find("{")
            while start >= 0:
                try:
                    obj, _ = decoder.raw_decode(variant, start)
                    if isinstance(obj, dict):
                        return obj
                except json.JSONDecodeError:
                    pass
                # Python-style literals: single quotes, True/False/None.
                end = variant.rfind("}")
                if end > start:
                    try:
                        obj = ast.literal_eval(variant[start : end + 1])
                        if isinstance(obj, dict):
                            return obj
                    except (ValueError, SyntaxError, MemoryError, RecursionError):
                        pass
                start = variant.find("{", start + 1)
    shown = " ".join(text.split())[:200]
    raise LLMError(f"the model's answer holds no JSON object: {shown!r}")


def _title(label: str) -> str:
    # Title Case without lowering acronyms the model kept (``API Design``).
    return " ".join(w[:1].upper() + w[1:] for w in label.split())


def topics_from_answer(data: dict[str, Any], known_ids: set[str]) -> tuple[list[dict[str, Any]], list[str]]:
    """(topics, sticky ids) from the model's JSON; ids the chat does not hold are dropped.
    Raises LLMError when the shape is wrong."""
    raw_topics = data.get("topics")
    if not isinstance(raw_topics, list):
        raise LLMError("the model's JSON has no 'topics' list")
    topics: list[dict[str, Any]] = []
    seen: set[str] = set()
    for t in raw_topics:
        label = t.get("label") if isinstance(t, dict) else t if isinstance(t, str) else None
        if not isinstance(label, str) or not label.strip():
            continue
        label = _title(" ".join(label.split()))
        if label.lower() in seen:
            continue
        seen.add(label.lower())
        count = t.get("count", 1) if isinstance(t, dict) else 1
        try:
            count = max(1, int(count))
        except (TypeError, ValueError):
            count = 1
        topics.append({"label": label, "count": count})
    if not topics:
        raise LLMError("the model's JSON lists no usable topic")
    raw_sticky = data.get("sticky_message_ids") or []
    if not isinstance(raw_sticky, list):
        raw_sticky = []
    sticky = [str(i) for i in dict.fromkeys(str(i) for i in raw_sticky) if str(i) in known_ids]
    return topics[:MAX_TOPICS], sticky


def llm_settings(llm_config: dict[str, str], category: str) -> dict[str, Any] | None:
    """LiteLLM keyword arguments for ``category``, or None when no model is configured."""
    model = (llm_config.get(category) or "").strip()
    if not model:
        return None
    kwargs: dict[str, Any] = {"model": model}
    if llm_config.get("api_base"):
        kwargs["api_base"] = llm_config["api_base"]
    key_env = llm_config.get("api_key_env")
    if key_env and os.environ.get(key_env):
        kwargs["api_key"] = os.environ[key_env]
    # A server of one's own (llama.cpp, Ollama's /v1) rarely wants a key, but the OpenAI
    # client refuses to start without one: the agent's placeholder (agent.models).
    if (kwargs.get("api_base") and "api_key" not in kwargs and model.startswith("openai/")
            and not os.environ.get("OPENAI_API_KEY")):
        kwargs["api_key"] = "no-key"
    return kwargs


def llm_extract(messages: list[Message], settings: dict[str, Any], **extra: Any) -> tuple[list[dict[str, Any]], list[str]]:
    """(topics, sticky ids) from the model; ``extra`` goes to ``litellm.completion``
    (``mock_response`` in tests, ``timeout``...). Raises LLMError."""
    prompt = [
        {"role": "system", "content": TOPIC_EXTRACTION_PROMPT},
        {"role": "user", "content": conversation_text(messages)},
    ]
    if settings["model"].startswith("local:"):
        from . import local_llm

        if settings["model"] != local_llm.MODEL_SPEC:
            raise LLMError(f"unknown local model {settings['model']!r}; the local model is {local_llm.MODEL_SPEC!r}")
        content = local_llm.complete(prompt, local_llm.TOPIC_SCHEMA)
        topics, sticky = _read_answer(content, messages)
        # The 0.5B model misses most instructions (measured: 6 of 10): the local
        # classifier's are added to the ones it flags.
        from .sticky import sticky_message_ids

        return topics, list(dict.fromkeys(sticky + sticky_message_ids(messages)))
    # No network at import: LiteLLM otherwise fetches its model price list (3 tries).
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    try:
        import litellm
    except ImportError:
        raise LLMError("LLM topic extraction needs LiteLLM: pip install 'smartcontext[remote]'") from None
    try:
        response = litellm.completion(messages=prompt, max_tokens=512, temperature=0.2,
                                      timeout=extra.pop("timeout", 60), **settings, **extra)
        content = response.choices[0].message.content or ""
    except Exception as exc:  # LiteLLM raises its own (provider) exception types
        raise LLMError(f"topic extraction with {settings.get('model')} failed: {type(exc).__name__}: {exc}") from exc
    return _read_answer(content, messages)


def _read_answer(content: str, messages: list[Message]) -> tuple[list[dict[str, Any]], list[str]]:
    try:
        return topics_from_answer(parse_model_json(content), {m.id for m in messages})
    except LLMError as exc:
        shown = " ".join(content.split())
        shown = shown[:120] + (" … " + shown[-80:] if len(shown) > 200 else shown[120:])
        raise LLMError(f"{exc} (the model answered: {shown!r})") from None
