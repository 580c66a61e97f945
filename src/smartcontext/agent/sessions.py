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
"""

from __future__ import annotations

import builtins
import fcntl
import os
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from ..chat.files import EMBEDDINGS_SUFFIX, MEMORY_DIR, ChatData, ChatFile, Message, check_chat_id
from ..errors import InvalidArgument, SessionBusy, SessionNotFound, SmartContextError
from ..tokens import DEFAULT_ENCODING
from .loop import DEFAULT_MAX_ROUNDS, AgentLoop, Event, new_message
from .models import Model, model_settings, open_model

SESSION_PREFIX = "agent-"
META_KEY = "agent"
TITLE_CHARS = 60
MAX_MESSAGE_CHARS = 200_000


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
            with suppress(FileNotFoundError):
                (self.memory_dir / f"{session_id}{EMBEDDINGS_SUFFIX}").unlink()
        with suppress(FileNotFoundError):
            file.lock_path.unlink()
        with suppress(FileNotFoundError):
            self._busy_path(session_id).unlink()

    # -- a message -----------------------------------------------------------------------

    def send(self, session_id: str, text: str, on_event: Callable[[dict], None] | None = None) -> dict[str, Any]:
        """Add the user's message and run the agent until it answers.

        Returns ``{session_id, answer, rounds, tokens_saved, stopped, tool_calls,
        prompt_tokens, message_id}``; ``on_event`` receives each event as it happens
        (each with ``session_id``). Raises SessionNotFound, SessionBusy (another message of
        this session is being answered), InvalidArgument (empty text) or LLMError (no
        model configured, or the model failed: the rounds that finished are kept).
        """
        if not isinstance(text, str) or not text.strip():
            raise InvalidArgument("the message is empty: send the text to answer")
        if len(text) > MAX_MESSAGE_CHARS:
            raise InvalidArgument(f"the message is {len(text):,} characters; the limit is {MAX_MESSAGE_CHARS:,}")
        file, data = self._load(session_id)
        model = self.model()
        loop = AgentLoop(self.registry, model, self.tools, self.max_rounds, self.compact,
                         encoding=self.workspace.config.context.encoding or DEFAULT_ENCODING, stream=self.stream)

        def emit(event: Event) -> None:
            if on_event is not None:
                on_event({**event, "session_id": session_id})

        with self._busy(session_id):
            file, data = self._load(session_id)  # as it is now that we hold the session
            messages = [m.to_dict() for m in data.messages]
            turn_start = len(messages)
            messages.append(new_message("user", text))
            meta = dict(data.extra[META_KEY])
            if not meta.get("title"):
                meta["title"] = " ".join(text.split())[:TITLE_CHARS]
            meta["model"] = model.name

            def save(msgs: list[dict[str, Any]]) -> None:
                self._save(file, msgs, meta)

            save(messages)
            result = loop.run(messages, turn_start, emit, self._history(session_id), save)
            meta["turns"] = meta.get("turns", 0) + 1
            meta["rounds"] = meta.get("rounds", 0) + result.rounds
            meta["tokens_saved"] = meta.get("tokens_saved", 0) + result.tokens_saved
            save(messages)
        if self.extract_topics:
            from ..chat.session import Chat

            Chat(self.workspace.chats(), session_id).extract_topics_in_background()
        return {"session_id": session_id, **result.to_dict()}

    def _save(self, file: ChatFile, messages: builtins.list[dict[str, Any]], meta: dict[str, Any]) -> None:
        """Write the session's messages: those already in the file are replaced by id
        (compaction), new ones appended; messages someone else added are kept."""
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
            data.extra[META_KEY] = {**meta, "updated": _now()}

        file.update(put)

    def _history(self, session_id: str):
        """The chat context's filter for this session (the seed's ``pipeline.context``):
        with topics selected for this chat, the messages the topic filter keeps (sticky
        ones always); otherwise everything."""

        def kept(messages: list[dict[str, Any]], turn_start: int) -> tuple[set[str] | None, dict[str, Any]]:
            if not self.history_filter:
                return None, {"mode": "all"}
            sc = self.workspace.chats()
            if sc.current_chat_id != session_id or not sc.active_topics or not sc.embedding_search:
                return None, {"mode": "all"}
            from ..chat.session import Chat

            try:
                # Chat(...) rather than sc.chat(): that would make this the current chat.
                result = Chat(sc, session_id).history(mode="topics", sync=False)
            except SmartContextError as exc:  # e.g. no embedding model: the whole history
                return None, {"mode": "all", "error": str(exc)}
            return set(result.message_ids), {"mode": result.mode, "status_line": result.status_line()}

        return kept

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
