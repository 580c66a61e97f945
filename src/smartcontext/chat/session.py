"""The chat API: ``SmartContext`` (the seed's plugin: filter state, commands, events) and
``Chat`` (one conversation: messages, topics, the history for the next model call).

    sc = workspace.chats()                       # or SmartContext(workspace)
    chat = sc.chat("trip")
    chat.add_message("user", "be concise")
    chat.add_message("assistant", "Sure.")       # topics re-extracted in the background
    sc.subscribe("smart_context.topics_updated", print)
    sc.set_filter(["Ferry Times"])               # the seed's command and return shape
    chat.history("When does the ferry leave?")   # auto: retrieval + budget
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InvalidArgument, LLMError
from ..safeio import is_regular
from .events import FILTER_CHANGED, HIGHLIGHT_APPLIED, TOPICS_UPDATED, EventBus, Listener, read_events
from .files import MEMORY_DIR, ChatData, ChatFile, Message, check_chat_id, write_json_atomic
from .filter import HistoryResult, threshold_filter, topic_filter
from .sticky import sticky_message_ids
from .topics import TopicResult, local_topics, with_sticky
from .vectors import MessageVectors, embed_labels, same_objects

if TYPE_CHECKING:
    from ..workspace import Workspace

STATE_FILE = "chat_state.json"
EVENTS_FILE = "chat_events.jsonl"
HISTORY_MODES = ("auto", "topics", "threshold", "all")
LOCAL_METHOD = "local:kmeans-terms+rules"
COMMANDS = ("smart_context.set_filter", "smart_context.get_topics", "smart_context.set_similarity_mode")


class SmartContext:
    """Chat context for one workspace: the chats in ``<root>/.memory/``, the filter state
    (active topics, current chat, similarity mode; kept in ``.smartcontext/chat_state.json``
    so the CLI and a server share it), the commands and the events."""

    def __init__(self, workspace: "Workspace"):
        self.workspace = workspace
        self.config = workspace.config.chat
        self.memory_dir = workspace.root / MEMORY_DIR
        self.state_path = workspace.index_dir / STATE_FILE
        self.events = EventBus(workspace.index_dir / EVENTS_FILE)
        self.similarity_threshold = float(self.config.similarity_threshold)
        state = self._read_state()
        self.active_topics: list[str] = list(state.get("active_topics", []))
        self.current_chat_id: str = state.get("current_chat_id", "")
        self.embedding_search: bool = bool(state.get("embedding_search", self.config.embedding_search))
        self._chats: dict[str, Chat] = {}
        self._lock = threading.RLock()

    def embedder(self):
        """The model chat messages are compared with: ``[chat] embedding_model``, or the
        workspace's own model when that key is empty or embeddings are off."""
        model = self.config.embedding_model
        if not model or not self.workspace.config.embeddings.active:
            return self.workspace.embedder()
        from ..embeddings import get_embedder

        return get_embedder(model)

    # -- state ------------------------------------------------------------------------

    def _read_state(self) -> dict[str, Any]:
        try:
            data = json.loads(self.state_path.read_text(encoding="utf-8"))
            return data if isinstance(data, dict) else {}
        except (OSError, ValueError):
            return {}

    def state(self) -> dict[str, Any]:
        """The filter state as a page restores it: active topics, current chat, similarity
        mode and threshold."""
        return {"active_topics": list(self.active_topics), "current_chat_id": self.current_chat_id,
                "embedding_search": self.embedding_search, "similarity_threshold": self.similarity_threshold}

    def _save_state(self) -> None:
        write_json_atomic(self.state_path, {"active_topics": self.active_topics,
                                            "current_chat_id": self.current_chat_id,
                                            "embedding_search": self.embedding_search})

    def chat(self, chat_id: str | None = None) -> "Chat":
        """The chat ``chat_id`` (the current one when None); it becomes the current chat."""
        chat_id = chat_id or self.current_chat_id
        if not chat_id:
            raise InvalidArgument("no chat given and no current chat: pass a chat id")
        check_chat_id(chat_id)
        with self._lock:
            if chat_id != self.current_chat_id:
                self.current_chat_id = chat_id
                self._save_state()
            if chat_id not in self._chats:
                self._chats[chat_id] = Chat(self, chat_id)
            return self._chats[chat_id]

    def chat_ids(self) -> list[str]:
        if not self.memory_dir.is_dir():
            return []
        # Regular files only: a FIFO or folder named like a chat is no chat.
        return sorted(p.name[: -len(".json")] for p in self.memory_dir.glob("*.json")
                      if not p.name.endswith(".embeddings.json") and is_regular(p))

    def import_file(self, source: str | Path, chat_id: str | None = None, format: str = "auto"):
        """Import an OpenAI ``messages`` list or a ChatGPT ``conversations.json``
        (``chat.importers``); returns the ``ImportResult``."""
        from .importers import import_chats

        if chat_id:
            check_chat_id(chat_id)
        return import_chats(self.memory_dir, source, chat_id, format)

    def subscribe(self, event: str, listener: Listener):
        """``listener(event, payload)`` on ``event`` (or ``"*"``); returns unsubscribe."""
        return self.events.subscribe(event, listener)

    def recent_events(self, since: float = 0.0, limit: int = 50) -> list[dict[str, Any]]:
        return read_events(self.events.log_path, since, limit) if self.events.log_path is not None else []

    # -- the seed's commands -------------------------------------------------------------

    def set_filter(self, topics: list[str] | None = None, chat_id: str | None = None) -> dict[str, Any]:
        """Set the active topic labels; an empty list clears the filter."""
        topics = list(dict.fromkeys(t for t in (topics or []) if isinstance(t, str) and t.strip()))
        if chat_id:
            self.chat(chat_id)
        self.active_topics = topics
        self._save_state()
        self.events.emit(FILTER_CHANGED, {"active_topics": list(topics), "chat_id": self.current_chat_id})
        if self.current_chat_id and topics and self.embedding_search:
            self.chat().highlight()
        return {"status": "success", "active_topics": list(topics)}

    def get_topics(self, chat_id: str | None = None) -> dict[str, Any]:
        """The topics of the chat and how many messages it has."""
        chat_id = chat_id or self.current_chat_id
        if not chat_id:
            return {"status": "success", "topics": [], "total_messages": 0}
        data = self.chat(chat_id).load()
        return {"status": "success", "topics": data.topics, "total_messages": len(data.messages)}

    def set_similarity_mode(self, enabled: bool = True) -> dict[str, Any]:
        """Turn the embedding filter on or off (off clears the active topics, as in the seed)."""
        self.embedding_search = bool(enabled)
        if not self.embedding_search:
            self.active_topics = []
            self.events.emit(FILTER_CHANGED, {"active_topics": [], "chat_id": self.current_chat_id})
        self._save_state()
        return {"status": "success", "embedding_search": self.embedding_search}

    def execute(self, command: str, **args: Any) -> dict[str, Any]:
        """Run a command by its seed name, e.g. ``execute("smart_context.set_filter", topics=[...])``."""
        handlers: dict[str, Callable[..., dict[str, Any]]] = {
            "smart_context.set_filter": self.set_filter,
            "smart_context.get_topics": self.get_topics,
            "smart_context.set_similarity_mode": self.set_similarity_mode,
        }
        if command not in handlers:
            raise InvalidArgument(f"unknown command {command!r}; commands: {', '.join(COMMANDS)}")
        return handlers[command](**args)


class Chat:
    """One conversation, ``.memory/{chat_id}.json``."""

    def __init__(self, context: SmartContext, chat_id: str):
        self.context = context
        self.chat_id = chat_id
        self.file = ChatFile(context.memory_dir, chat_id)
        self.workspace = context.workspace
        self._extraction: threading.Thread | None = None
        self.last_extraction: TopicResult | None = None
        self._indexed_sig: tuple[int, int] | None = None
        self._token_memo: dict[str, dict[str, int]] = {}
        self._token_list: tuple[str, tuple[Message, ...], list[int]] | None = None
        self._own_rows: tuple[Any, dict[int, str]] | None = None

    @property
    def path(self) -> Path:
        return self.file.path

    @property
    def rel_path(self) -> str:
        return self.file.path.relative_to(self.workspace.root).as_posix()

    def load(self) -> ChatData:
        return self.file.load()

    def messages(self) -> list[Message]:
        return self.load().messages

    # -- writing ---------------------------------------------------------------------------

    def add_message(
        self,
        role: str,
        content: str,
        id: str | None = None,
        timestamp: str | None = None,
        extract: bool | None = None,
        background: bool = True,
    ) -> Message:
        """Append a message. After an assistant reply (``extract`` None) or when
        ``extract`` is True, topics are extracted again, in a background thread unless
        ``background`` is False."""
        if not isinstance(content, str):
            raise InvalidArgument("a message's content must be a string")
        if not isinstance(role, str) or not role:
            raise InvalidArgument("a message needs a role (user, assistant, system...)")
        msg = Message(id or uuid.uuid4().hex[:12], role, content,
                      timestamp or time.strftime("%Y-%m-%dT%H:%M:%S%z"))

        def append(data: ChatData) -> None:
            if msg.id in data.message_ids():
                raise InvalidArgument(f"chat {self.chat_id} already has a message {msg.id!r}")
            data.messages.append(msg)

        self.file.update(append)
        if self.extracts_after(role, extract):
            if background:
                self.extract_topics_in_background()
            else:
                self.extract_topics()
        return msg

    def extracts_after(self, role: str, extract: bool | None = None) -> bool:
        """Whether adding a message of ``role`` extracts topics again: when ``extract`` is
        True, or after an assistant reply (``extract`` None) with chat context enabled."""
        return bool(extract or (extract is None and role == "assistant" and self.context.config.enabled))

    # -- topics ----------------------------------------------------------------------------

    def vectors(self) -> MessageVectors:
        """The chat's message vectors (the chat's own model); with a workspace index, through
        its embedding cache."""
        ws = self.workspace
        return MessageVectors(self.context.memory_dir, self.chat_id, self.context.embedder(),
                              shared_store=lambda: ws.store if ws.has_index else None)

    def extract_topics(self, method: str = "auto", **llm_options: Any) -> TopicResult:
        """Regenerate the chat's topics (3-8 labels plus the sticky entry), write them and
        emit ``smart_context.topics_updated``.

        method: ``auto`` (the configured LLM of ``extraction_category``, else local),
                ``llm`` or ``local``. A failed LLM extraction keeps the previous topics and
                says why in ``error``. ``llm_options`` go to LiteLLM (``mock_response``...).
        """
        from .llm import llm_extract, llm_settings

        if method not in ("auto", "llm", "local"):
            raise InvalidArgument("method must be auto, llm or local")
        t0 = time.perf_counter()
        data = self.load()
        settings = llm_settings(self.workspace.config.llm, self.context.config.extraction_category)
        if method == "llm" and settings is None:
            raise InvalidArgument(
                f"no model for the '{self.context.config.extraction_category}' category: set it in "
                "[llm] of smartcontext.toml, or use the local method"
            )
        if not data.messages:
            result = TopicResult([], "none", error="the chat has no messages")
        elif settings is not None and method != "local":
            name = f"llm:{settings['model']}"
            try:
                topics, sticky = llm_extract(data.messages, settings, **llm_options)
                result = TopicResult(with_sticky(topics, sticky), name, sticky)
            except LLMError as exc:
                result = TopicResult(data.topics, name, data.sticky_ids(), error=str(exc))
        else:
            sticky = sticky_message_ids(data.messages)
            matrix = self.vectors().matrix(data.messages)
            result = TopicResult(with_sticky(local_topics(data.messages, matrix, sticky), sticky),
                                 LOCAL_METHOD, sticky)
        result.seconds = time.perf_counter() - t0
        self.last_extraction = result
        if result.error is None:
            self._save_topics(result.topics)
        return result

    def _save_topics(self, topics: list[dict[str, Any]]) -> None:
        def put(data: ChatData) -> int:
            # Ids of messages deleted meanwhile leave the sticky entry.
            known = data.message_ids()
            fixed = []
            for t in topics:
                if t.get("sticky"):
                    ids = [i for i in t["message_ids"] if i in known]
                    if not ids:
                        continue
                    t = {**t, "message_ids": ids, "count": len(ids)}
                fixed.append(t)
            data.topics = fixed
            return len(data.messages)

        total = self.file.update(put)
        self.context.events.emit(TOPICS_UPDATED, {"chat_id": self.chat_id, "topics": self.load().topics,
                                                  "total_messages": total})

    def extract_topics_in_background(self) -> threading.Thread:
        """Extract topics in a daemon thread (the seed's background task after a reply)."""
        previous = self._extraction

        def run() -> None:
            if previous is not None:
                previous.join()  # one extraction at a time, in order
            try:
                self.extract_topics()
            except Exception as exc:  # reported through last_extraction, never raised in a thread
                self.last_extraction = TopicResult(self.load().topics, "failed", error=f"{type(exc).__name__}: {exc}")

        thread = threading.Thread(target=run, name=f"smartcontext-topics-{self.chat_id}", daemon=True)
        self._extraction = thread
        thread.start()
        return thread

    def wait_for_topics(self, timeout: float | None = None) -> TopicResult | None:
        if self._extraction is not None:
            self._extraction.join(timeout)
        return self.last_extraction

    # -- history ---------------------------------------------------------------------------

    def history(
        self,
        pending: str | None = None,
        mode: str | None = None,
        max_tokens: int | None = None,
        share: float | None = None,
        sync: bool = True,
    ) -> HistoryResult:
        """The messages to send with the next model call.

        mode: ``auto`` (needs ``pending``: keyword + vector retrieval over this chat,
              neighbours, sticky, token budget), ``topics`` (the seed's filter with the
              active topics), ``threshold`` (cosine to ``pending`` >= the similarity
              threshold, the seed's rule with the message as query), ``all``.
              Default: ``topics`` when a topic filter is active, else ``auto`` with a
              pending message, else ``all``.
        sync: bring the index up to date with the chat file first (``sync_index``, a
              write); False when the caller did (a server syncs under its index write
              lock, then reads under the shared read lock).
        """
        ctx = self.context
        mode = self.history_mode(pending, mode)
        if mode not in HISTORY_MODES:
            raise InvalidArgument(f"unknown history mode {mode!r}; modes: {', '.join(HISTORY_MODES)}")
        if mode in ("auto", "threshold") and not (pending and pending.strip()):
            raise InvalidArgument(f"the {mode} history needs the pending message as its query")
        if share is not None and not 0 < share <= 1:
            raise InvalidArgument("share must be a number in (0, 1]")
        if max_tokens is not None and max_tokens < 1:
            raise InvalidArgument("max_tokens must be a positive integer")
        data = self.load()
        sticky = data.sticky_ids()
        if mode == "all" or not data.messages:
            return topic_filter(self.chat_id, data.messages, sticky, [], False, 0.0)
        if mode == "topics":
            if not ctx.active_topics or not ctx.embedding_search:
                return topic_filter(self.chat_id, data.messages, sticky, ctx.active_topics, ctx.embedding_search, 0.0)
            embedder = self.context.embedder()
            return topic_filter(self.chat_id, data.messages, sticky, ctx.active_topics, True,
                                ctx.similarity_threshold, self.vectors().matrix(data.messages),
                                embed_labels(embedder, ctx.active_topics))
        embedder = self.context.embedder()
        matrix = self.vectors().matrix(data.messages)
        query = embedder.embed_query(pending)
        if mode == "threshold":
            return threshold_filter(self.chat_id, data.messages, sticky, matrix, query, ctx.similarity_threshold)
        return self._auto(data, sticky, pending, matrix, query, max_tokens, share, sync)

    def history_mode(self, pending: str | None = None, mode: str | None = None) -> str:
        """The mode ``history`` uses: ``mode``, else ``topics`` with an active topic
        filter, ``auto`` with a pending message, ``all`` otherwise."""
        if mode is not None:
            return mode
        ctx = self.context
        return "topics" if ctx.active_topics and ctx.embedding_search else ("auto" if pending else "all")

    def _auto(self, data, sticky, pending, matrix, query, max_tokens, share, sync=True) -> HistoryResult:
        from .auto import auto_filter

        encoding = self.workspace.config.context.encoding
        return auto_filter(
            self.chat_id, data.messages, sticky, self.keyword_ranking(pending, len(data.messages), sync=sync),
            matrix, query, max_tokens=max_tokens,
            share=share if share is not None else self.context.config.history_share,
            neighbours=self.context.config.neighbours, encoding=encoding,
            token_counts=self.token_counts(data.messages, encoding), pending=pending,
        )

    def token_counts(self, messages: list[Message], encoding: str) -> list[int]:
        """Exact tokens of each message as the model reads it (``render_message``).

        Counted once per rendered text; a chat read again from an unchanged file holds
        the same message objects, so the whole list is reused without rendering."""
        from ..tokens import count_many
        from .auto import render_message

        last = self._token_list
        if last is not None and last[0] == encoding and same_objects(last[1], messages):
            return last[2]
        memo = self._token_memo.setdefault(encoding, {})
        texts = [render_message(m) for m in messages]
        todo = [t for t in dict.fromkeys(texts) if t not in memo]
        if todo:
            memo.update(zip(todo, count_many(todo, encoding)))
        counts = [memo[t] for t in texts]
        if len(memo) > 4 * len(texts) + 1000:
            # Edited and deleted messages leave their counts behind: keep only the live ones.
            self._token_memo[encoding] = {t: memo[t] for t in texts}
        self._token_list = (encoding, tuple(messages), counts)
        return counts

    def sync_index(self) -> None:
        """Bring the workspace index up to date with this chat file (re-indexed only when
        it changed since the last sync)."""
        sig = self._file_sig()
        if sig is None or sig == self._indexed_sig:
            return
        ws = self.workspace
        if ws.has_index:
            ws.update_files([self.rel_path])
        else:
            ws.index(embeddings=False)
        self._indexed_sig = sig

    def _file_sig(self) -> tuple[int, int] | None:
        try:
            st = self.path.stat()
        except FileNotFoundError:
            return None
        return (st.st_mtime_ns, st.st_size)

    def index_stale(self) -> bool:
        """Whether ``sync_index`` has work to do (the chat file changed since the last sync)."""
        sig = self._file_sig()
        return sig is not None and sig != self._indexed_sig

    def keyword_ranking(self, query: str, limit: int, sync: bool = True) -> list[str]:
        """Message ids of this chat, best first, by the index's keyword (BM25) search.

        Ranks only: the retrieval core's keyword searcher, restricted to this chat's rows
        of the catalogue, without the snippets and stored rows a search hit carries."""
        from ..retrieval.keyword import KeywordSearcher

        if sync:
            self.sync_index()
        cat = self.workspace.catalogue()
        if self._own_rows is None or self._own_rows[0] is not cat:
            # This chat's rows, once per catalogue (a catalogue is rebuilt on index changes).
            self._own_rows = (cat, {r: cat.entries[r].qualname for r in cat.by_path.get(self.rel_path, [])
                                    if cat.entries[r].kind == "message"})
        mine = self._own_rows[1]
        if not mine or not query.strip():
            return []
        hits = KeywordSearcher(self.workspace.store).search(query, 1 << 30)
        return [mine[r] for r, _ in hits if r in mine][:limit]

    def highlight(self) -> list[str]:
        """Emit ``smart_context.highlight_applied`` with the ids the active filter keeps."""
        ids = self.history(mode="topics").message_ids
        self.context.events.emit(HIGHLIGHT_APPLIED, {"message_ids": ids})
        return ids
