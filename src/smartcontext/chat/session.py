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
import re
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from operator import attrgetter, itemgetter
from pathlib import Path
from typing import Any, Protocol, cast

from ..errors import ChatNotFound, InvalidArgument, LLMError, did_you_mean
from ..safeio import is_regular
from .carry import Carried, carry_selection, fold_label as _fold_label
from .events import FILTER_CHANGED, HIGHLIGHT_APPLIED, TOPICS_UPDATED, EventBus, Listener, read_events
from .files import MEMORY_DIR, ChatData, ChatFile, Message, check_chat_id, write_json_atomic
from .files import extends as _extends
from ..memory import collector_paused
from .filter import HistoryResult, members_end, threshold_filter, topic_filter, topic_members
from ..sources.chat import INDEX_ENCODING
from .rows import ChatRows
from .sticky import sticky_message_ids
from .topics import TopicResult, local_topics, term_vectors, with_sticky
from .vectors import MessageVectors, embed_labels, same_objects

class ChatWorkspace(Protocol):
    """What the chat layer uses of a workspace (``Workspace`` is one): named here so the
    chat package never imports the workspace, which imports it (chat sits above the
    index and below the workspace's facade)."""

    root: Path
    index_dir: Path
    config: Any

    @property
    def store(self) -> Any: ...

    @property
    def has_index(self) -> bool: ...

    def embedder(self) -> Any: ...

    def catalogue(self) -> Any: ...

    def index(self, *args: Any, **kwargs: Any) -> Any: ...

    def update_files(self, paths: list[str], embeddings: bool | None = None) -> Any: ...

STATE_FILE = "chat_state.json"
EVENTS_FILE = "chat_events.jsonl"
HISTORY_MODES = ("auto", "topics", "threshold", "all")
# Keyword ranks asked of the index per history: a rank past this lends under 1/2,000 of the
# best turn's fused score, and asking for all of a 50,000-message chat's matches costs the
# index's search about twice the time (bench/chat_scale.py).
KEYWORD_POOL = 2000
LOCAL_METHOD = "local:kmeans-terms+rules"
COMMANDS = ("smart_context.set_filter", "smart_context.get_topics", "smart_context.set_similarity_mode")


class SmartContext:
    """Chat context for one workspace: the chats in ``<root>/.memory/``, the filter state
    (active topics, current chat, similarity mode; kept in ``.smartcontext/chat_state.json``
    so the CLI and a server share it), the commands and the events."""

    def __init__(self, workspace: ChatWorkspace):
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
        # Per chat, the topics last replaced and their successors (this process's own
        # extractions): a selection sent against the topics just replaced follows them.
        self._replaced: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]] = {}

    def embedder(self):
        """The model chat messages are compared with: ``[chat] embedding_model``, or the
        workspace's own model when that key is empty; None when embeddings are off
        (``model = "none"``, ``enabled = false``): then history is keyword-only and
        topics come from the messages' terms."""
        if not self.workspace.config.embeddings.active:
            return None
        model = self.config.embedding_model
        if not model:
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

    def chat(self, chat_id: str | None = None, must_exist: bool = False) -> "Chat":
        """The chat ``chat_id`` (the current one when None); it becomes the current chat.
        ``must_exist``: ChatNotFound (with the closest ids) when it has no file yet,
        checked before the current chat changes."""
        chat_id = chat_id or self.current_chat_id
        if not chat_id:
            raise InvalidArgument("no chat given and no current chat: pass a chat id")
        check_chat_id(chat_id)
        if must_exist:
            self.require(chat_id)
        with self._lock:
            if chat_id != self.current_chat_id:
                self.current_chat_id = chat_id
                self._save_state()
            return self.chat_object(chat_id)

    def chat_object(self, chat_id: str) -> "Chat":
        """The chat ``chat_id`` as ``chat`` keeps it (its memos of token counts and message
        positions live as long as this context), without making it the current chat."""
        check_chat_id(chat_id)
        with self._lock:
            if chat_id not in self._chats:
                self._chats[chat_id] = Chat(self, chat_id)
            return self._chats[chat_id]

    def chat_ids(self) -> list[str]:
        """The chats in ``.memory/``: regular files, never through a link."""
        if self.memory_dir.is_symlink() or not self.memory_dir.is_dir():
            return []
        # Regular files only: a FIFO or folder named like a chat is no chat.
        return sorted(p.name[: -len(".json")] for p in self.memory_dir.glob("*.json")
                      if not p.name.endswith(".embeddings.json") and not p.is_symlink() and is_regular(p))

    def require(self, chat_id: str) -> None:
        """ChatNotFound unless ``.memory/{chat_id}.json`` exists (names the closest chats)."""
        if not ChatFile(self.memory_dir, chat_id).exists():
            known = self.chat_ids()
            hint = did_you_mean(chat_id, known) or (f"; chats: {', '.join(known[:10])}" if known else
                                                    "; this folder has no chats yet")
            raise ChatNotFound(f"no chat {chat_id!r} in {self.memory_dir}{hint}")

    def check_topics(self, chat_id: str, topics: list[str]) -> list[str]:
        """``topics`` as the chat spells them (case and spacing may differ); ChatNotFound
        for a label the chat has no topic for, with the closest labels."""
        if not topics:
            return topics
        labels = [t["label"] for t in ChatFile(self.memory_dir, chat_id).load().topics
                  if isinstance(t.get("label"), str)]
        folded = {" ".join(label.split()).casefold(): label for label in labels}
        out = []
        for topic in topics:
            label = folded.get(" ".join(topic.split()).casefold())
            if label is None:
                if not labels:
                    raise ChatNotFound(f"chat {chat_id!r} has no topics yet: extract them first "
                                       f"(`smartcontext chat topics {chat_id} --extract`)")
                hint = did_you_mean(topic, labels) or f"; its topics: {', '.join(labels)}"
                raise ChatNotFound(f"chat {chat_id!r} has no topic {topic!r}{hint}")
            out.append(label)
        return list(dict.fromkeys(out))

    def import_file(self, source: str | Path, chat_id: str | None = None, format: str = "auto"):
        """Import an OpenAI or Anthropic ``messages`` list or a ChatGPT or Claude ``conversations.json``
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
        # Names are checked before anything changes: a typo sets no filter.
        target = chat_id or self.current_chat_id
        if chat_id:
            check_chat_id(chat_id)
            self.require(chat_id)
        carried = None
        if topics:
            if not target:
                raise InvalidArgument("no chat given and no current chat: pass the chat id the topics belong to")
            if not chat_id:
                self.require(target)
            topics, carried = self._follow_replaced(target, topics)
            topics = self.check_topics(target, topics)
        if chat_id:
            self.chat(chat_id)
        self.active_topics = topics
        self._save_state()
        event: dict[str, Any] = {"active_topics": list(topics), "chat_id": self.current_chat_id}
        if carried is not None and carried.changed:
            event.update(renamed=carried.renamed, lost=carried.lost)
        self.events.emit(FILTER_CHANGED, event)
        answer: dict[str, Any] = {"status": "success", "active_topics": list(topics)}
        if carried is not None and carried.changed:
            answer.update(renamed=carried.renamed, lost=carried.lost)
        if self.current_chat_id and topics and self.embedding_search:
            result = self.chat().highlight()
            if result.matched_nothing:
                # The seed's answer, plus what a panel must say: these bubbles selected nothing.
                answer.update(matched_nothing=result.matched_nothing, status_line=result.status_line())
        return answer

    def _follow_replaced(self, chat_id: str, topics: list[str]) -> tuple[list[str], Carried | None]:
        """``topics`` with each label of the topics this process just replaced (and not a
        label of the current ones) carried to its successor: a bubble clicked while the
        topics were being extracted again selects what it continues as. Other labels are
        left for ``check_topics``."""
        replaced = self._replaced.get(chat_id)
        if replaced is None:
            return topics, None
        old, new = replaced
        current = {_fold_label(t["label"]) for t in new if isinstance(t.get("label"), str)}
        before = {_fold_label(t["label"]) for t in old if isinstance(t.get("label"), str) and not t.get("sticky")}
        stale = [t for t in topics if _fold_label(t) not in current and _fold_label(t) in before]
        if not stale:
            return topics, None
        carried = carry_selection(stale, old, new)
        out: list[str] = []
        for t in topics:
            if t not in stale:
                out.append(t)
            elif t in carried.renamed:
                out.append(carried.renamed[t])
            elif t not in carried.lost:
                out.append(t)
        return list(dict.fromkeys(out)), carried

    def carry_selection(self, chat_id: str, old_topics: list[dict[str, Any]],
                        new_topics: list[dict[str, Any]]) -> Carried | None:
        """After ``chat_id``'s topics were regenerated, the selected topics follow their new
        labels (``chat.carry``); ``filter_changed`` then says which were renamed and which
        were lost. None when no topic of that chat is selected."""
        with self._lock:
            self._replaced[chat_id] = (old_topics, new_topics)
            if chat_id != self.current_chat_id or not self.active_topics:
                return None
            carried = carry_selection(self.active_topics, old_topics, new_topics)
            if not carried.changed:
                return carried
            self.active_topics = carried.active
            self._save_state()
        self.events.emit(FILTER_CHANGED, {"active_topics": list(carried.active), "chat_id": chat_id,
                                          "renamed": carried.renamed, "lost": carried.lost})
        return carried

    def get_topics(self, chat_id: str | None = None) -> dict[str, Any]:
        """The topics of the chat and how many messages it has."""
        chat_id = chat_id or self.current_chat_id
        if not chat_id:
            return {"status": "success", "topics": [], "total_messages": 0}
        data = self.chat(chat_id, must_exist=True).load()
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
        self._indexed_sig: tuple | None = None
        self._token_memo: dict[str, dict[str, int]] = {}
        self._token_list: tuple[str, tuple[Message, ...], list[int]] | None = None
        self._rows = ChatRows()
        self._position_memo: tuple[tuple[Message, ...], dict[str, int], set[str]] | None = None
        self._synced_paths: set[str] = set()
        self.last_written: str | None = None  # the chat file the last write changed (to re-index)

    @property
    def path(self) -> Path:
        return self.file.path

    @property
    def rel_path(self) -> str:
        return self._rel(self.file.path)

    def _rel(self, path: Path) -> str:
        return path.relative_to(self.workspace.root.resolve()).as_posix()

    def paths(self) -> list[str]:
        """The chat's files relative to the workspace: the JSON file, then its log segments."""
        return [self.rel_path, *(self._rel(p) for p in self.file.segments())]

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

        self.last_written = self._rel(self.file.append(msg))
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

    def vectors(self) -> MessageVectors | None:
        """The chat's message vectors (the chat's own model); with a workspace index, through
        its embedding cache. None when embeddings are off."""
        ws = self.workspace
        embedder = self.context.embedder()
        if embedder is None:
            return None
        return MessageVectors(self.context.memory_dir, self.chat_id, embedder,
                              shared_store=lambda: ws.store if ws.has_index else None)

    def matrix(self, messages: list[Message]):
        """Unit vectors of ``messages`` (None when embeddings are off)."""
        vectors = self.vectors()
        return None if vectors is None else vectors.matrix(messages)

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
            matrix = self.matrix(data.messages)
            result = TopicResult(with_sticky(local_topics(data.messages, matrix, sticky), sticky),
                                 LOCAL_METHOD, sticky)
        result.seconds = time.perf_counter() - t0
        self.last_extraction = result
        if result.error is None:
            self._save_topics(result.topics)
        return result

    def _save_topics(self, topics: list[dict[str, Any]]) -> None:
        # Ids of messages deleted meanwhile leave the sticky entry and the topics that keep
        # their members (whose count stays what they select).
        before = self.load()
        known = before.message_ids()
        fixed = []
        for t in topics:
            if isinstance(t.get("message_ids"), list):
                ids = [i for i in t["message_ids"] if i in known]
                if not ids:
                    continue
                t = {**t, "message_ids": ids, "count": len(ids)}
            fixed.append(t)
        self.last_written = self._rel(self.file.append_topics(fixed))
        data = self.load()
        # The selection first: a page that gets the new topics has the labels to keep.
        self.context.carry_selection(self.chat_id, before.topics, data.topics)
        self.context.events.emit(TOPICS_UPDATED, {"chat_id": self.chat_id, "topics": data.topics,
                                                  "total_messages": len(data.messages)})

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
        sync: bring the workspace index up to date with the chat's files first (the
              keyword ranking and the token counts come from the chat's rows in it);
              False when the caller re-indexes what it writes (the tools do).
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
            members = topic_members(data.topics)
            active = ctx.active_topics
            if all(t in members for t in active) and members_end(data.messages, members) >= len(data.messages):
                # Every selected topic keeps its members and no message came since: no vectors.
                return topic_filter(self.chat_id, data.messages, sticky, active, True, 0.0, members=members)
            embedder = self.context.embedder()
            if embedder is None:
                # Embeddings off: a message is on a topic when it uses one of the label's words.
                mv, lv = term_vectors(data.messages, active)
                return topic_filter(self.chat_id, data.messages, sticky, active, True, 1e-6, mv, lv, members)
            return topic_filter(self.chat_id, data.messages, sticky, active, True,
                                ctx.similarity_threshold, self.matrix(data.messages),
                                embed_labels(embedder, active), members)
        embedder = self.context.embedder()
        if embedder is None and mode == "threshold":
            raise InvalidArgument("the threshold history compares embeddings, and embeddings are off "
                                  "([embeddings] model = \"none\"): use the auto mode (keyword search)")
        matrix = self.matrix(data.messages)
        query = None if embedder is None else embedder.embed_query(pending)
        if mode == "threshold":
            assert matrix is not None and query is not None  # embeddings are on (checked above)
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
        if sync:
            self.sync_index()
        with collector_paused():  # maps of a long chat's 50,000 messages: no garbage in them
            return self._auto_ranked(data, sticky, pending, matrix, query, max_tokens, share)

    def _auto_ranked(self, data, sticky, pending, matrix, query, max_tokens, share) -> HistoryResult:
        from .auto import auto_filter

        encoding = self.workspace.config.context.encoding
        messages = data.messages
        rows = self.index_rows()
        counts = self.token_counts(messages, encoding, rows)
        index_of, speakers = self._positions(messages)
        pool = min(len(messages), KEYWORD_POOL)
        return auto_filter(
            self.chat_id, messages, sticky, self._ranked(pending, pool, rows, speakers),
            matrix, query, max_tokens=max_tokens,
            share=share if share is not None else self.context.config.history_share,
            neighbours=self.context.config.neighbours, encoding=encoding,
            token_counts=counts, pending=pending, index_of=index_of, speakers=speakers,
        )

    def index_rows(self) -> ChatRows | None:
        """This chat's message rows in the workspace index (None when it has no index)."""
        ws = self.workspace
        if not ws.has_index:
            return None
        return self._rows.refresh(ws.store, self.paths())

    def _ranked(self, query: str, limit: int, rows: ChatRows | None, speakers: set[str]) -> list[str]:
        """Message ids, best first: the index's keyword search scoped to this chat's rows.

        The speaker the query names is a signal of its own (``auto_filter``'s boost); as a
        keyword too, the index's statistics (a name rare in the workspace, common in its
        chat) would weigh it twice."""
        from ..retrieval.keyword import KeywordSearcher
        from .auto import named_speaker

        if rows is None or not rows.message_of or not query.strip() or limit < 1:
            return []
        speaker = named_speaker(query, list(speakers))
        if speaker is not None:
            query = re.sub(rf"(?<!\w){re.escape(speaker)}(?!\w)", " ", query, flags=re.IGNORECASE)
        hits = KeywordSearcher(self.workspace.store).search(query, limit, within=rows.message_of)
        return [rows.message_of[r] for r, _ in hits]

    def _positions(self, messages: list[Message]) -> tuple[dict[str, int], set[str]]:
        """Each message's position by id, and the chat's speakers: kept across calls and
        extended by appended messages (a long chat's history must not walk it all again)."""
        last = self._position_memo
        if last is not None and _extends(last[0], messages):
            index_of, speakers = last[1], last[2]
            for i in range(len(last[0]), len(messages)):
                index_of[messages[i].id] = i
                speakers.add(messages[i].role)
        else:
            index_of = dict(zip(map(attrgetter("id"), messages), range(len(messages))))
            speakers = set(map(attrgetter("role"), messages))
        self._position_memo = (tuple(messages), index_of, speakers)
        return index_of, speakers

    def token_counts(self, messages: list[Message], encoding: str, rows: ChatRows | None = None) -> list[int]:
        """Exact tokens of each message as the model reads it (``render_message``).

        ``rows``: the chat's index rows, whose counts (made when the file was indexed, in
        ``INDEX_ENCODING``) are used for the messages they hold; the others are counted
        here, once per rendered text. A chat read again from an unchanged file holds the
        same message objects, so the whole list is reused without rendering."""
        last = self._token_list
        if last is not None and last[0] == encoding and same_objects(last[1], messages):
            return last[2]
        known = rows.by_message if rows is not None and encoding == INDEX_ENCODING else {}
        if last is not None and last[0] == encoding and _extends(last[1], messages):
            # Messages appended to the same chat: count only those.
            counts = last[2] + self._count(messages[len(last[1]):], encoding, known)
        else:
            counts = self._count(messages, encoding, known)
        self._token_list = (encoding, tuple(messages), counts)
        return counts

    def _count(self, messages: Sequence[Message], encoding: str, known: dict[str, tuple[int, int]]) -> list[int]:
        from ..tokens import count_many
        from .auto import render_message

        rows = list(map(known.get, map(attrgetter("id"), messages)))
        if None not in rows:  # a chat the index holds (at C speed: 50,000 messages)
            return list(map(itemgetter(1), cast("list[tuple[int, int]]", rows)))
        out: list[int] = []
        todo: dict[int, str] = {}
        for i, m in enumerate(messages):
            row = known.get(m.id)
            out.append(row[1] if row is not None else 0)
            if row is None:
                todo[i] = render_message(m)
        if todo:
            memo = self._token_memo.setdefault(encoding, {})
            new = [t for t in dict.fromkeys(todo.values()) if t not in memo]
            if new:
                memo.update(zip(new, count_many(new, encoding)))
            for i, text in todo.items():
                out[i] = memo[text]
            if len(memo) > 4 * len(messages) + 1000:
                # Edited and deleted messages leave their counts behind: keep only the live ones.
                self._token_memo[encoding] = {t: memo[t] for t in todo.values()}
        return out

    def sync_index(self) -> None:
        """Bring the workspace index up to date with this chat's files (those that changed
        since the last sync, and segments folded away since)."""
        sig = self._file_sig()
        if sig is None or sig == self._indexed_sig:
            return
        ws = self.workspace
        paths = self.paths()
        if ws.has_index:
            ws.update_files(sorted(set(paths) | self._synced_paths))
        else:
            ws.index(embeddings=False)
        self._synced_paths = set(paths)
        self._indexed_sig = sig

    def _file_sig(self) -> tuple | None:
        sig = []
        for path in (self.path, *self.file.segments()):
            try:
                st = path.stat()
            except FileNotFoundError:
                continue
            sig.append((path.name, st.st_mtime_ns, st.st_size))
        return tuple(sig) or None

    def index_stale(self) -> bool:
        """Whether ``sync_index`` has work to do (the chat's files changed since the last sync)."""
        sig = self._file_sig()
        return sig is not None and sig != self._indexed_sig

    def keyword_ranking(self, query: str, limit: int, sync: bool = True) -> list[str]:
        """Message ids of this chat, best first, as the automatic history ranks them: the
        workspace index's keyword (BM25) search scoped to the chat's rows (``sync``:
        re-index the chat's changed files first)."""
        if sync:
            self.sync_index()
        messages = self.load().messages
        return self._ranked(query, limit, self.index_rows(), self._positions(messages)[1])

    def highlight(self) -> HistoryResult:
        """Emit ``smart_context.highlight_applied`` with the ids the active filter keeps
        (and, when a selected topic matched no message, ``matched_nothing`` and the
        ``status_line`` that says so); returns the filter's result."""
        result = self.history(mode="topics")
        payload: dict[str, Any] = {"message_ids": result.message_ids}
        if result.matched_nothing:
            payload.update(matched_nothing=result.matched_nothing, status_line=result.status_line())
        self.context.events.emit(HIGHLIGHT_APPLIED, payload)
        return result

