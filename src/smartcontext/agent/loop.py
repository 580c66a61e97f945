"""The agent loop: a language model with the workspace and vault tools, for one user turn.

Each round: the history goes through the caller's history filter (the chat context's
``pipeline.context``: sessions pass the topic filter of ``chat/``), the model is called
with the tools' schemas, the tool calls it asks for run through the ``ToolRegistry``, and
the results the model has already read are compacted (``agent.compaction``). The last
allowed round is called without tools, so a turn always ends with an answer.

Whatever the model sends, a tool call is answered: an unknown tool, arguments that are
not JSON or not an object, or arguments the tool's schema refuses come back to the model
as ``{"success": false, "error": "..."}`` saying what to fix. Progress is reported to
``on_event`` as plain dicts (``type``: history, delta, assistant, tool_call, tool_result,
compaction, done, error); a failing listener never stops the turn.

What each answer was sent is kept with it: the final assistant message carries ``sent``
(``sent_record``): the history's mode, the ids and exact tokens of the messages sent, the
tokens of the system prompt, of the context the caller added (``preamble``, with its
sections) and of the tool schemas. A turn can be stopped (``stop``, a threading.Event):
between rounds, between tool calls and while the text streams; the text written so far is
kept as the answer.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..tokens import DEFAULT_ENCODING
from .compaction import compact_tool_messages
from .models import Model, ModelReply, Stopped, ToolCall

if TYPE_CHECKING:
    from ..tools import ToolRegistry

DEFAULT_MAX_ROUNDS = 12
AGENT_PROVIDERS = ("workspace", "vault")
SYSTEM_PROMPT = """\
You are the Smart Context agent for the folder "{name}" (a code repository, a notes vault, \
or both). Use the tools to look things up before you answer, and name the files you used. \
Tool results you have already read appear in the history as short stubs (status, files, \
sizes); call the tool again when you need their content."""
# Keys of a stored message that every provider's API accepts; the rest (id, timestamp,
# _compacted, a tool result's name) are ours.
_API_KEYS = ("role", "content", "tool_calls", "tool_call_id")

Event = dict[str, Any]
EventSink = Callable[[Event], None]
# (messages so far, index where this turn starts) -> ids of earlier messages to send, or
# None for all of them, and a description of the filter for the ``history`` event.
HistoryFilter = Callable[[list[dict[str, Any]], int], tuple[set[str] | None, dict[str, Any]]]


def now_iso() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


def new_message(role: str, content: str, **extra: Any) -> dict[str, Any]:
    """A history message with its own id (chat files need one) and timestamp."""
    return {"id": uuid.uuid4().hex[:12], "role": role, "content": content, "timestamp": now_iso(),
            **{k: v for k, v in extra.items() if v is not None}}


def api_message(m: dict[str, Any]) -> dict[str, Any]:
    out = {k: m[k] for k in _API_KEYS if k in m}
    if out.get("role") == "assistant" and out.get("tool_calls") and not out.get("content"):
        out["content"] = None
    return out


def select_history(messages: list[dict[str, Any]], turn_start: int, kept: set[str] | None) -> list[dict[str, Any]]:
    """The messages to send: the earlier ones the filter kept, and all of this turn's.

    A tool call and its results travel together (the API refuses a result without its
    call, or a call without its results): an assistant message with tool calls and its
    results are kept or dropped as one. A result whose call is missing is never sent."""
    units: list[list[dict[str, Any]]] = []
    open_calls: set[str] = set()
    for m in messages[:turn_start]:
        if m.get("role") == "tool":
            if m.get("tool_call_id") in open_calls:
                units[-1].append(m)
            continue
        units.append([m])
        open_calls = {c.get("id") for c in m.get("tool_calls") or []} if m.get("role") == "assistant" else set()
    out = [m for unit in units if kept is None or any(m.get("id") in kept for m in unit) for m in unit]
    return out + messages[turn_start:]


@dataclass
class TurnResult:
    """What one user turn produced.

    stopped: ``answer`` (the model answered), ``round_limit`` (the last round, called
             without tools, still asked for tools; its text, if any, is the answer) or
             ``user`` (stopped: the text written so far is the answer).
    sent:    what the last model call was sent (``sent_record``).
    tool_calls: every call of the turn with its outcome: {id, name, arguments, success,
             error?}.
    prompt_tokens: per model call, as the provider reported it (None when it did not).
    """

    answer: str
    rounds: int
    tokens_saved: int
    stopped: str = "answer"
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    prompt_tokens: list[int | None] = field(default_factory=list)
    message_id: str | None = None
    sent: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"answer": self.answer, "rounds": self.rounds, "tokens_saved": self.tokens_saved,
                "stopped": self.stopped, "tool_calls": self.tool_calls, "prompt_tokens": self.prompt_tokens,
                "message_id": self.message_id, "sent": self.sent}


def message_tokens(messages: list[dict[str, Any]], encoding: str) -> list[int]:
    """Exact tokens of each message's text as sent: its content and its tool calls'
    names and arguments (the provider's per-message framing is not counted)."""
    from ..tokens import count_many

    def text(m: dict[str, Any]) -> str:
        calls = " ".join(f"{(c.get('function') or {}).get('name', '')} {(c.get('function') or {}).get('arguments', '')}"
                         for c in m.get("tool_calls") or [])
        content = m.get("content")
        content = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False, default=str)
        return f"{content} {calls}" if calls else content

    return count_many([text(m) for m in messages], encoding)


def sent_record(sent: list[dict[str, Any]], turn_start_ids: set[Any], info: dict[str, Any], system: str,
                preamble: list[dict[str, Any]], tools: list[dict[str, Any]] | None, total: int,
                encoding: str, context: dict[str, Any] | None = None) -> dict[str, Any]:
    """What one model call was sent, for people: the history's filter (``info``), each
    earlier message sent (id, role, tokens), this turn's messages, and the tokens of the
    system prompt, the added context and the tool schemas."""
    from ..tokens import count_many

    counts = message_tokens(sent, encoding)
    history: list[dict[str, Any]] = [{"id": m.get("id"), "role": m.get("role"), "tokens": n}
                                     for m, n in zip(sent, counts) if m.get("id") not in turn_start_ids]
    turn = sum(n for m, n in zip(sent, counts) if m.get("id") in turn_start_ids)
    fixed = count_many([system, *(p.get("content") or "" for p in preamble),
                        json.dumps(tools or [], ensure_ascii=False)], encoding)
    record: dict[str, Any] = {
        "mode": info.get("mode", "all"), "status_line": info.get("status_line"),
        "active_topics": info.get("active_topics"),
        "messages": history, "history_tokens": sum(h["tokens"] for h in history), "turn_tokens": turn,
        "total_messages": total, "system_tokens": fixed[0], "context_tokens": sum(fixed[1:-1]),
        "tools_tokens": fixed[-1] if tools else 0,
    }
    if context:
        record["context"] = context
    return {k: v for k, v in record.items() if v is not None}


class AgentLoop:
    """The model, the tools it may call and the loop's limits.

    tools:      names of the registry's tools to offer (default: the workspace and vault
                providers' tools).
    max_rounds: model calls per user turn; the last one is offered no tools.
    compact:    compact tool results once the model has read them (off only to measure
                what compaction saves).
    stream:     stream the model's text as ``delta`` events while it is written.
    """

    def __init__(
        self,
        registry: "ToolRegistry",
        model: Model,
        tools: Iterable[str] | None = None,
        max_rounds: int = DEFAULT_MAX_ROUNDS,
        compact: bool = True,
        system_prompt: str | None = None,
        encoding: str = DEFAULT_ENCODING,
        stream: bool = False,
    ):
        from ..errors import InvalidArgument

        if max_rounds < 1:
            raise InvalidArgument("max_rounds must be at least 1")
        self.registry = registry
        self.model = model
        if tools is None:
            names = [s.name for s in registry.specs() if s.provider in AGENT_PROVIDERS]
        else:
            names = list(dict.fromkeys(tools))
            unknown = [n for n in names if registry.get(n) is None]
            if unknown:
                raise InvalidArgument(f"unknown tool(s) {', '.join(unknown)}; tools: {', '.join(registry.names())}")
        self.tool_names = names
        self.max_rounds = max_rounds
        self.compact = compact
        root = registry.context.root
        self.system_prompt = system_prompt if system_prompt is not None else SYSTEM_PROMPT.format(name=root.name)
        self.encoding = encoding
        self.stream = stream

    def tool_schemas(self) -> list[dict[str, Any]]:
        """The offered tools in the OpenAI ``tools`` format."""
        out = []
        for name in self.tool_names:
            spec = self.registry.get(name)
            assert spec is not None  # __init__ refused unknown names
            out.append({"type": "function", "function": {"name": spec.name, "description": spec.description,
                                                         "parameters": spec.input_schema}})
        return out

    # -- one tool call -------------------------------------------------------------------

    def call_tool(self, call: ToolCall) -> dict[str, Any]:
        """The tool's answer, or an error the model can act on; never raises."""
        if call.name not in self.tool_names:
            shown = call.name if len(call.name) <= 100 else call.name[:100] + "…"
            return {"success": False, "error": f"Unknown tool: {shown!r}. Available tools: {', '.join(self.tool_names)}"}
        text = call.arguments.strip()
        try:
            args = json.loads(text) if text else {}
        except json.JSONDecodeError as exc:
            return {"success": False, "error": (
                f"Invalid arguments for {call.name}: not valid JSON ({exc.msg} at character {exc.pos}). "
                "Call it again with the arguments as one JSON object that matches the tool's schema.")}
        if not isinstance(args, dict):
            return {"success": False, "error": (
                f"Invalid arguments for {call.name}: expected a JSON object of named arguments, "
                f"got {type(args).__name__}. Call it again with one JSON object.")}
        return self.registry.call(call.name, args)

    # -- one user turn -------------------------------------------------------------------

    def run(
        self,
        messages: list[dict[str, Any]],
        turn_start: int,
        on_event: EventSink | None = None,
        history: HistoryFilter | None = None,
        save: Callable[[list[dict[str, Any]]], None] | None = None,
        stop: threading.Event | None = None,
        preamble: list[dict[str, Any]] | None = None,
        context: dict[str, Any] | None = None,
    ) -> TurnResult:
        """Answer the turn that starts at ``messages[turn_start]`` (the user's message).

        ``messages`` is the session's whole history; the turn's messages are appended to
        it and compacted in place. ``save(messages)`` runs after each round, so an
        interrupted turn keeps its finished rounds. Raises LLMError when the model fails
        (after an ``error`` event); what finished before stays in ``messages``.

        stop:     set it to end the turn early (``stopped`` is then ``user``).
        preamble: system messages sent after the system prompt in every round (the context
                  the question needs); ``context`` describes them for ``sent``.
        """
        emit = _safe(on_event)
        schemas = self.tool_schemas()
        preamble = list(preamble or [])
        result = TurnResult(answer="", rounds=0, tokens_saved=0)
        used_ids = {c.get("id") for m in messages for c in m.get("tool_calls") or []}
        for round_no in range(1, self.max_rounds + 1):
            last = round_no == self.max_rounds
            if stop is not None and stop.is_set():
                return self._stopped(messages, result, "", round_no, emit, save)
            kept, info = history(messages, turn_start) if history else (None, {"mode": "all"})
            sent = select_history(messages, turn_start, kept)
            turn_ids = {m.get("id") for m in messages[turn_start:]}
            record = sent_record(sent, turn_ids, info, self.system_prompt, preamble, None if last else schemas,
                                 turn_start, self.encoding, context)
            result.sent = record
            emit({"type": "history", "round": round_no, "sent": len(sent), "total": len(messages), **info,
                  "record": record})
            written: list[str] = []
            on_text = _deltas(emit, round_no, written, stop, self.stream) if self.stream or stop is not None else None
            try:
                reply = self.model.complete([{"role": "system", "content": self.system_prompt}] + preamble
                                            + [api_message(m) for m in sent], None if last else schemas, on_text)
            except Stopped:
                return self._stopped(messages, result, "".join(written), round_no, emit, save)
            except Exception as exc:
                emit({"type": "error", "round": round_no, "error": str(exc)})
                raise
            result.rounds = round_no
            result.prompt_tokens.append(reply.prompt_tokens)
            calls = self._unique_ids(reply, used_ids) if not last else []
            assistant = new_message("assistant", reply.content,
                                    tool_calls=[c.to_message() for c in calls] or None,
                                    sent=None if calls else record)
            messages.append(assistant)
            if reply.content:
                emit({"type": "assistant", "round": round_no, "text": reply.content, "message_id": assistant["id"]})
            if not calls:
                if last and reply.tool_calls:
                    result.stopped = "round_limit"
                    emit({"type": "error", "round": round_no, "error": (
                        f"round limit reached: {self.max_rounds} model calls without an answer; "
                        "ask again to continue, or raise the limit (--max-rounds)")})
                result.tokens_saved += self._compact(messages, (), round_no, emit)
                if save:
                    save(messages)
                result.answer, result.message_id = reply.content, assistant["id"]
                emit({"type": "done", **result.to_dict()})
                return result
            for call in calls:
                if stop is not None and stop.is_set():
                    break
                emit({"type": "tool_call", "round": round_no, "id": call.id, "name": call.name,
                      "arguments": call.arguments})
                answer = self.call_tool(call)
                outcome = {"id": call.id, "name": call.name, "arguments": call.arguments,
                           "success": bool(answer.get("success"))}
                if not outcome["success"]:
                    outcome["error"] = str(answer.get("error", ""))
                result.tool_calls.append(outcome)
                messages.append(new_message("tool", json.dumps(answer, ensure_ascii=False, default=str),
                                            tool_call_id=call.id, name=call.name))
                emit({"type": "tool_result", "round": round_no, **outcome, "result": answer})
            answered = {m.get("tool_call_id") for m in messages if m.get("role") == "tool"}
            for call in calls:  # stopped between calls: the rest are answered as not run
                if call.id not in answered:
                    messages.append(new_message("tool", json.dumps({"success": False, "error": "stopped by the user"}),
                                                tool_call_id=call.id, name=call.name))
            # This round's results stay whole until the model has read them.
            result.tokens_saved += self._compact(messages, {c.id for c in calls}, round_no, emit)
            if save:
                save(messages)
        raise AssertionError("unreachable: the last round has no tools and returns")

    def _stopped(self, messages: list[dict[str, Any]], result: TurnResult, text: str, round_no: int,
                 emit: EventSink, save: Callable[[list[dict[str, Any]]], None] | None) -> TurnResult:
        """End the turn the user stopped: what the model had written is the answer."""
        assistant = new_message("assistant", text, stopped=True, sent=result.sent)
        messages.append(assistant)
        result.tokens_saved += self._compact(messages, (), round_no, emit)
        if save:
            save(messages)
        result.answer, result.message_id, result.stopped = text, assistant["id"], "user"
        emit({"type": "done", **result.to_dict()})
        return result

    def _compact(self, messages: list[dict[str, Any]], keep: Iterable[str], round_no: int, emit: EventSink) -> int:
        if not self.compact:
            return 0
        keep = set(keep)
        count = sum(1 for m in messages if m.get("role") == "tool" and not m.get("_compacted")
                    and m.get("tool_call_id") not in keep)
        if not count:
            return 0
        saved = compact_tool_messages(messages, keep, self.encoding)
        emit({"type": "compaction", "round": round_no, "messages": count, "tokens_saved": saved})
        return saved

    @staticmethod
    def _unique_ids(reply: ModelReply, used: set[Any]) -> list[ToolCall]:
        # Some servers number calls per response (call_0 in every round): ids must be
        # unique in the history, or a result would answer the wrong call.
        out = []
        for call in reply.tool_calls:
            if not call.id or call.id in used:
                call = ToolCall(f"call_{uuid.uuid4().hex[:12]}", call.name, call.arguments)
            used.add(call.id)
            out.append(call)
        return out


def _deltas(emit: EventSink, round_no: int, written: list[str],
            stop: threading.Event | None, show: bool) -> Callable[[str], None]:
    def on_text(piece: str) -> None:
        if stop is not None and stop.is_set():
            raise Stopped()  # ends the model's stream; the loop keeps what was written
        written.append(piece)
        if show:
            emit({"type": "delta", "round": round_no, "text": piece})

    return on_text


def _safe(on_event: EventSink | None) -> EventSink:
    def emit(event: Event) -> None:
        if on_event is None:
            return
        try:
            on_event(event)
        except Exception:  # a closed web socket must not stop the turn
            pass

    return emit
