"""Persisted agent sessions: the library behind the CLI agent and the HTTP chat sessions.

A session is a chat file, ``.memory/agent-{id}.json``, whose ``agent`` key holds the
session's title, times and totals. Being a chat, it gets everything the chat layer gives:
locked read-modify-writes through a temp file and a rename (a restart, or a kill in the
middle of a turn, keeps every finished round), the topic filter before each model call
(the seed's ``pipeline.context``), topics and highlighting in the web panel, and indexing
by the chat source. Tool calls and results are messages with the OpenAI keys
(``tool_calls``, ``tool_call_id``), which chat files keep.

    sessions = AgentSessions("~/vault", model="openai/gpt-4o-mini")
    s = sessions.create("Ferries")
    sessions.send(s["id"], "Which notes mention Naxos?", on_event=print)

Any chat is answered the same way (``reply``: the web page's chat view): a chat the user
wrote or imported gets the ``agent`` key on its first answer, so there is one kind of
conversation. What the model is sent: the history filtered by the chat's topics (when
they are selected for it) or else by the automatic filter with the question as query
(``history_tokens``; sticky instructions always), the context the question needs from
the folder (``context_tokens``), then the question. Each answer keeps what it was sent
(``sent`` on the assistant message).
"""

from __future__ import annotations

import builtins
import fcntl
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from ..chat.files import EMBEDDINGS_SUFFIX, MEMORY_DIR, ChatData, ChatFile, Message, check_chat_id
from ..chat.vectors import LOG_SUFFIX
from ..errors import InvalidArgument, SessionBusy, SessionNotFound, SmartContextError
from ..tokens import DEFAULT_ENCODING
from .loop import DEFAULT_MAX_ROUNDS, AgentLoop, Event, new_message
from .models import Model, model_settings, open_model

SESSION_PREFIX = "agent-"
META_KEY = "agent"
TITLE_CHARS = 60
MAX_MESSAGE_CHARS = 200_000
CONFIGURE_MODEL = """\
[llm]
agent = "openai/gpt-4o-mini"          # any LiteLLM model name: ollama/qwen2.5, anthropic/...
api_base = "http://127.0.0.1:8080/v1"  # optional: any OpenAI-compatible server
api_key_env = "OPENAI_API_KEY"         # optional: the variable that holds the key"""


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


def _to_message(d: dict[str, Any]) -> Message:
    extra = {k: v for k, v in d.items() if k not in ("id", "role", "content", "timestamp")}
    return Message(d["id"], d["role"], d.get("content") or "", d.get("timestamp"), extra)


class AgentSessions:
    """The agent sessions of one workspace.

    root:         the workspace folder; or pass ``registry`` (a server's ``ToolRegistry``,
                  so the agent shares its index and locks).
    model, api_base, api_key: the model (default: ``[llm] agent``, else ``[llm] fast``);
                  resolved on the first ``send``, so sessions can be listed without one.
    max_rounds:   model calls per message (the last is offered no tools).
    compact:      compact tool results once read (``agent.compaction``).
    tools:        names of the tools to offer (default: workspace and vault tools).
    history_filter: send the history through the chat topic filter before each model
                  call (when this session is the current chat and topics are selected).
    extract_topics: re-extract the session's topics after each answer (in the background).
    stream:       stream the model's text as ``delta`` events ({round, text}) as it is
                  written, before the round's ``assistant`` event with the whole text.
    history_tokens: without selected topics, the earlier messages go through the automatic
                  filter (the question is its query) within this many tokens; 0 sends them all.
    context_tokens: the context the question needs from the folder (``context``), sent as a
                  system message of at most this many tokens; 0 sends none.
    """

    def __init__(
        self,
        root: str | Path | None = None,
        *,
        registry: Any = None,
        model: str | Model | None = None,
        api_base: str | None = None,
        api_key: str | None = None,
        max_rounds: int = DEFAULT_MAX_ROUNDS,
        compact: bool = True,
        tools: Iterable[str] | None = None,
        history_filter: bool = True,
        extract_topics: bool = False,
        stream: bool = False,
        history_tokens: int = 0,
        context_tokens: int = 0,
    ):
        from ..tools import ToolRegistry

        if registry is None:
            if root is None:
                raise InvalidArgument("AgentSessions needs a workspace folder or a tool registry")
            registry = ToolRegistry.open(root)
            self._owns_registry = True
        else:
            self._owns_registry = False
        self.registry = registry
        self.workspace = registry.context.workspace
        self.memory_dir = self.workspace.root / MEMORY_DIR
        self._model_spec = model
        self._api_base, self._api_key = api_base, api_key
        self._model: Model | None = None
        self.max_rounds = max_rounds
        self.compact = compact
        self.tools = None if tools is None else list(tools)
        self.history_filter = history_filter
        self.extract_topics = extract_topics
        self.stream = stream
        self.history_tokens = history_tokens
        self.context_tokens = context_tokens
        self._warmed = False
        self._stops: dict[str, threading.Event] = {}
        self._stops_lock = threading.Lock()
        if max_rounds < 1:
            raise InvalidArgument("max_rounds must be at least 1")

    # -- the model -----------------------------------------------------------------------

    def model(self) -> Model:
        """The model (LLMError when none is configured)."""
        if self._model is None:
            if self._model_spec is not None and not isinstance(self._model_spec, str):
                self._model = self._model_spec
            else:
                self._model = open_model(model_settings(self.workspace.config.llm, self._model_spec,
                                                        self._api_base, self._api_key))
        return self._model

    def model_info(self) -> dict[str, Any]:
        """Whether a model answers the chats: ``{configured: true, model}``, or
        ``{configured: false, how}`` saying how to configure one; both with ``budgets``
        (``history_tokens``, ``context_tokens``: what each answer may be sent)."""
        from ..errors import LLMError

        budgets = {"history_tokens": self.history_tokens, "context_tokens": self.context_tokens}
        try:
            model = self.model()
        except LLMError as exc:
            return {"configured": False, "error": str(exc), "how": CONFIGURE_MODEL, "budgets": budgets}
        warm = getattr(model, "warm", None)
        if warm is not None and not self._warmed:  # the page asks on load: the first answer is sooner
            self._warmed = True
            warm()
        return {"configured": True, "model": model.name, "budgets": budgets}

    # -- sessions ------------------------------------------------------------------------

    def _file(self, session_id: Any) -> ChatFile:
        if not isinstance(session_id, str) or not session_id.startswith(SESSION_PREFIX):
            raise SessionNotFound(f"no agent session {str(session_id)[:80]!r}: session ids start with {SESSION_PREFIX!r}")
        try:
            check_chat_id(session_id)
        except InvalidArgument:
            raise SessionNotFound(f"no agent session {session_id[:80]!r}") from None
        return ChatFile(self.memory_dir, session_id)

    def _load(self, session_id: Any) -> tuple[ChatFile, ChatData]:
        file = self._file(session_id)
        data = file.load()
        if not isinstance(data.extra.get(META_KEY), dict):
            raise SessionNotFound(f"no agent session {session_id!r} in {self.memory_dir}")
        return file, data

    @staticmethod
    def _summary(session_id: str, data: ChatData) -> dict[str, Any]:
        meta = data.extra.get(META_KEY) or {}
        return {
            "id": session_id, "title": meta.get("title") or "", "created": meta.get("created"),
            "updated": meta.get("updated"), "model": meta.get("model"), "turns": meta.get("turns", 0),
            "rounds": meta.get("rounds", 0), "tokens_saved": meta.get("tokens_saved", 0),
            "message_count": len(data.messages),
        }

    def create(self, title: str | None = None) -> dict[str, Any]:
        """A new, empty session: its summary with ``messages`` (empty)."""
        if title is not None and not isinstance(title, str):
            raise InvalidArgument("a session title must be a string")
        session_id = f"{SESSION_PREFIX}{uuid.uuid4().hex[:12]}"
        now = _now()
        meta = {"title": (title or "").strip()[:200], "created": now, "updated": now,
                "turns": 0, "rounds": 0, "tokens_saved": 0}

        def put(data: ChatData) -> None:
            data.extra[META_KEY] = meta

        self.memory_dir.mkdir(parents=True, exist_ok=True)
        ChatFile(self.memory_dir, session_id).update(put)
        return self.get(session_id)

    def list(self) -> list[dict[str, Any]]:
        """Summaries of every session, most recently updated first (no messages)."""
        out = []
        if self.memory_dir.is_dir():
            for path in self.memory_dir.glob(f"{SESSION_PREFIX}*.json"):
                sid = path.name[: -len(".json")]
                if path.name.endswith(EMBEDDINGS_SUFFIX):
                    continue
                try:
                    _, data = self._load(sid)
                except SmartContextError:  # a damaged or foreign file is not a session
                    continue
                out.append(self._summary(sid, data))
        return sorted(out, key=lambda s: (s["updated"] or "", s["id"]), reverse=True)

    def get(self, session_id: str) -> dict[str, Any]:
        """A session's summary and its ``messages`` (tool calls and compacted results
        included, as the model sees them)."""
        _, data = self._load(session_id)
        return {**self._summary(session_id, data), "messages": [m.to_dict() for m in data.messages]}

    def delete(self, session_id: str) -> None:
        """Remove a session (not while it is answering: SessionBusy)."""
        file, _ = self._load(session_id)
        with self._busy(session_id), file.locked():
            for path in (file.path, *file.segments()):
                with suppress(FileNotFoundError):
                    path.unlink()
            for suffix in (EMBEDDINGS_SUFFIX, LOG_SUFFIX):
                with suppress(FileNotFoundError):
                    (self.memory_dir / f"{session_id}{suffix}").unlink()
        with suppress(FileNotFoundError):
            file.lock_path.unlink()
        with suppress(FileNotFoundError):
            self._busy_path(session_id).unlink()

    # -- a message -----------------------------------------------------------------------

    def send(self, session_id: str, text: str, on_event: Callable[[dict], None] | None = None,
             stop: threading.Event | None = None) -> dict[str, Any]:
        """Add the user's message and run the agent until it answers.

        Returns ``{session_id, answer, rounds, tokens_saved, stopped, tool_calls,
        prompt_tokens, message_id, sent}``; ``on_event`` receives each event as it happens
        (each with ``session_id``). Raises SessionNotFound, SessionBusy (another message of
        this session is being answered), InvalidArgument (empty text) or LLMError (no
        model configured, or the model failed: the rounds that finished are kept).
        """
        self._check_text(text)
        self._load(session_id)
        return self._turn(session_id, text, on_event, stop)

    def reply(self, chat_id: str, text: str, on_event: Callable[[dict], None] | None = None) -> dict[str, Any]:
        """``send`` for any chat (the web page's chat view): a chat without a file yet is
        created, one the user wrote becomes a session on its first answer. ``stop(chat_id)``
        from another thread ends the answer early, keeping what was written."""
        self._check_text(text)
        check_chat_id(chat_id)
        return self._turn(chat_id, text, on_event, None)

    def stop(self, chat_id: str) -> bool:
        """Stop the answer being written in ``chat_id``; False when none is."""
        with self._stops_lock:
            event = self._stops.get(chat_id)
        if event is None:
            return False
        event.set()
        return True

    @staticmethod
    def _check_text(text: Any) -> None:
        if not isinstance(text, str) or not text.strip():
            raise InvalidArgument("the message is empty: send the text to answer")
        if len(text) > MAX_MESSAGE_CHARS:
            raise InvalidArgument(f"the message is {len(text):,} characters; the limit is {MAX_MESSAGE_CHARS:,}")

    def _turn(self, chat_id: str, text: str, on_event: Callable[[dict], None] | None,
              stop: threading.Event | None) -> dict[str, Any]:
        model = self.model()
        encoding = self.workspace.config.context.encoding or DEFAULT_ENCODING
        loop = AgentLoop(self.registry, model, self.tools, self.max_rounds, self.compact,
                         encoding=encoding, stream=self.stream)

        def emit(event: Event) -> None:
            if on_event is not None:
                on_event({**event, "session_id": chat_id})

        stop = stop or threading.Event()
        with self._busy(chat_id):
            with self._stops_lock:
                self._stops[chat_id] = stop
            try:
                file = ChatFile(self.memory_dir, chat_id)
                data = file.load()  # as it is now that we hold the session
                messages = [m.to_dict() for m in data.messages]
                turn_start = len(messages)
                messages.append(new_message("user", text))
                meta = dict(data.extra.get(META_KEY) or {"created": _now(), "turns": 0, "rounds": 0,
                                                          "tokens_saved": 0})
                if not meta.get("title"):
                    meta["title"] = " ".join(text.split())[:TITLE_CHARS]
                meta["model"] = model.name

                # What the file holds of ``messages``, by id: the very dicts written (or
                # read), so a message compaction replaced is told from one left alone.
                written = {m["id"]: m for m in messages[:turn_start]}

                def save(msgs: list[dict[str, Any]]) -> None:
                    self._save(file, msgs, meta, written)

                self.memory_dir.mkdir(parents=True, exist_ok=True)
                save(messages)
                preamble, context = self._context(text, encoding)
                result = loop.run(messages, turn_start, emit, self._history(chat_id, text), save,
                                  stop=stop, preamble=preamble, context=context)
                meta["turns"] = meta.get("turns", 0) + 1
                meta["rounds"] = meta.get("rounds", 0) + result.rounds
                meta["tokens_saved"] = meta.get("tokens_saved", 0) + result.tokens_saved
                save(messages)
            finally:
                with self._stops_lock:
                    self._stops.pop(chat_id, None)
        if self.extract_topics:
            from ..chat.session import Chat

            Chat(self.workspace.chats(), chat_id).extract_topics_in_background()
        return {"session_id": chat_id, **result.to_dict()}

    def _context(self, question: str, encoding: str) -> tuple[builtins.list[dict[str, Any]], dict[str, Any] | None]:
        """The folder's context for the question as one system message, and what it holds
        (each section's path, name and tokens); nothing when ``context_tokens`` is 0 or
        nothing matched."""
        if not self.context_tokens:
            return [], None
        from ..query import Query
        from ..tokens import count_many

        ctx = self.registry.context
        ws = ctx.ready_workspace()
        # The folder's files, not its chats: the history is the filter's to choose.
        query = Query.build("code-context", question, defaults=ws.config.context, max_tokens=self.context_tokens,
                            exclude=[f"{MEMORY_DIR}/"])
        with ctx.reading():
            result = ws.answer_context(query)
        if not result.items or not result.text.strip():
            return [], None
        texts = [s.item.text if s.mode == "full" else (s.item.signature or s.item.name or "") for s in result.items]
        sections = [{"path": s.item.path, "name": s.item.qualname or s.item.name, "kind": s.item.kind,
                     "mode": s.mode, "tokens": n} for s, n in zip(result.items, count_many(texts, encoding))]
        content = f"Context from the folder for the question (Smart Context):\n\n{result.text}"
        return ([{"role": "system", "content": content}],
                {"tokens": result.token_count, "max_tokens": self.context_tokens, "files": result.files,
                 "sections": sections})

    def _save(self, file: ChatFile, messages: builtins.list[dict[str, Any]], meta: dict[str, Any],
              written: dict[str, dict[str, Any]]) -> None:
        """Write the session's messages: new ones appended (lines at the end of a long
        chat, which is not rewritten: an answer's first token does not wait for 50,000
        messages to be written); when compaction replaced some already in the file, the
        chat is rewritten with those replaced by id. Messages someone else added are kept.
        ``written`` (id -> the dict in the file) is brought up to date."""
        keys = {META_KEY: {**meta, "updated": _now()}}
        if all(written.get(m["id"], m) is m for m in messages):
            file.append_turn([_to_message(m) for m in messages if m["id"] not in written], keys)
            written.update((m["id"], m) for m in messages)
            return
        by_id = {m["id"]: m for m in messages}

        def put(data: ChatData) -> None:
            seen: set[str] = set()
            merged = []
            for m in data.messages:
                if m.id in by_id:
                    merged.append(_to_message(by_id[m.id]))
                    seen.add(m.id)
                else:
                    merged.append(m)
            merged.extend(_to_message(m) for m in messages if m["id"] not in seen)
            data.messages = merged
            data.extra.update(keys)

        file.update(put)
        written.update((m["id"], m) for m in messages)

    def _history(self, chat_id: str, pending: str):
        """The chat context's filter for this chat (the seed's ``pipeline.context``): with
        topics selected for this chat, the messages the topic filter keeps; otherwise the
        automatic filter with the question as query, within ``history_tokens``; sticky
        messages always. Computed once per turn: the earlier messages do not change."""
        memo: dict[int, tuple[set[str] | None, dict[str, Any]]] = {}

        def kept(messages: list[dict[str, Any]], turn_start: int) -> tuple[set[str] | None, dict[str, Any]]:
            if turn_start not in memo:
                memo[turn_start] = self._filter(chat_id, pending, turn_start)
            return memo[turn_start]

        return kept

    def _filter(self, chat_id: str, pending: str, earlier: int) -> tuple[set[str] | None, dict[str, Any]]:
        if not self.history_filter or not earlier:
            return None, {"mode": "all"}
        sc = self.workspace.chats()
        topics = sc.current_chat_id == chat_id and sc.active_topics and sc.embedding_search
        if not topics and not self.history_tokens:
            return None, {"mode": "all"}
        ctx = self.registry.context
        try:
            # Not sc.chat(): that would make this the current chat. The kept object's token
            # counts are reused: a long chat's earlier messages are not counted every answer.
            chat = sc.chat_object(chat_id)
            if topics:
                result = chat.history(mode="topics", sync=False)
            else:
                ctx.ready_workspace()
                with ctx.reading():
                    result = chat.history(pending, mode="auto", max_tokens=self.history_tokens, sync=False)
        except SmartContextError as exc:  # e.g. no embedding model: the whole history
            return None, {"mode": "all", "error": str(exc)}
        info: dict[str, Any] = {"mode": result.mode, "status_line": result.status_line(),
                                "sticky_ids": result.sticky_ids}
        if result.active_topics:
            info["active_topics"] = result.active_topics
        return set(result.message_ids), info

    def _busy_path(self, session_id: str) -> Path:
        return self.workspace.index_dir / "agent" / f"{session_id}.lock"

    @contextmanager
    def _busy(self, session_id: str) -> Iterator[None]:
        """One message at a time per session, across threads and processes."""
        path = self._busy_path(session_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise SessionBusy(f"session {session_id} is answering another message; "
                                  "send this one when it has finished") from None
            try:
                yield
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def close(self) -> None:
        if self._owns_registry:
            self.registry.close()

    def __enter__(self) -> "AgentSessions":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
