"""The embedding cache of one chat: ``.memory/{chat_id}.embeddings.json``.

Keys are ``{message_id}:{content_hash}``, so an edited message is a miss and only new or
edited messages reach the model. A role that is a speaker's name (not user, assistant...)
is embedded with the text (``Caroline: ...``): in a group chat or transcript, who said it
is part of what it is about. The file also records the model (``"_model"``): vectors
of another model are dropped, never compared. Parsed files are memoised by (mtime, size),
so filtering a long chat again costs no JSON parsing.

A message's text is the one the index embeds for its item (``sources.chat.
message_embed_text``), and when the workspace has an index the vectors go through the
index's embedding cache (by model and text hash): a message embedded by the index is a
cache hit here and the other way round, so each text reaches the model once.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..safeio import read_regular
from ..sources.chat import GENERIC_ROLES, MAX_EMBED_CHARS, message_embed_text  # noqa: F401 (re-exported)
from ..vault.paths import atomic_write
from .files import EMBEDDINGS_SUFFIX, Message, memory_path, recheck

if TYPE_CHECKING:  # numpy is imported where vectors are used: a keyword-only history never needs it
    import numpy as np

MODEL_KEY = "_model"

_memo: dict[str, tuple[tuple[int, int], dict[str, Any]]] = {}
_stacked_memo: dict[str, tuple[tuple[Message, ...], list[str], dict[str, Any], np.ndarray]] = {}
_label_memo: dict[tuple[str, str], np.ndarray] = {}
_memo_lock = threading.Lock()


def embed_text(m: Message) -> str:
    return message_embed_text(m.role, m.content)


def same_objects(a: Sequence[Any], b: Sequence[Any]) -> bool:
    """Whether two sequences hold the very same objects, in order (a chat read again
    from an unchanged file shares its message objects with the previous read)."""
    return len(a) == len(b) and all(x is y for x, y in zip(a, b))


def content_hash(content: str) -> str:
    return hashlib.sha256(content.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def cache_key(message_id: str, content: str) -> str:
    return f"{message_id}:{content_hash(content)}"


class MessageVectors:
    """Vectors of a chat's messages for one embedder, cached in the sidecar file."""

    def __init__(self, memory_dir: Path, chat_id: str, embedder: Any,
                 shared_store: Callable[[], Any] | None = None):
        """shared_store: returns the workspace's index store (or None when it has no
        index); misses are looked up in, and new vectors added to, its embedding cache."""
        self.path = memory_path(memory_dir, f"{chat_id}{EMBEDDINGS_SUFFIX}")
        self.embedder = embedder
        self.shared_store = shared_store
        self.embedded_last = 0  # texts sent to the model by the last ``matrix`` call

    def _load(self) -> dict[str, Any]:
        import numpy as np

        recheck(self.path)
        try:
            st = self.path.stat()
        except FileNotFoundError:
            return {}
        sig = (st.st_mtime_ns, st.st_size)
        with _memo_lock:
            hit = _memo.get(str(self.path))
            if hit and hit[0] == sig:
                return hit[1]
        try:
            data = json.loads(read_regular(self.path, follow_symlinks=False))
        except (OSError, ValueError):
            return {}  # a damaged cache is rebuilt, never trusted
        if not isinstance(data, dict) or data.get(MODEL_KEY) != self.embedder.name:
            return {}
        # Arrays once, at load: converting JSON lists on every filter call is the slow part.
        data = {k: (v if k == MODEL_KEY else np.asarray(v, dtype=np.float32)) for k, v in data.items()}
        with _memo_lock:
            _memo[str(self.path)] = (sig, data)
        return data

    def get(self, message: Message) -> np.ndarray | None:
        return self._load().get(cache_key(message.id, embed_text(message)))

    def matrix(self, messages: list[Message]) -> np.ndarray:
        """Unit vectors of ``messages`` in order (float32, one row each); embeds the
        messages the cache lacks and saves them."""
        import numpy as np

        data = self._load()
        stacked = _stacked_memo.get(str(self.path))
        if stacked is not None and stacked[2] is data and same_objects(stacked[0], messages):
            self.embedded_last = 0
            return stacked[3]
        keys = [cache_key(m.id, embed_text(m)) for m in messages]
        if stacked is not None and stacked[1] == keys and stacked[2] is data:
            self.embedded_last = 0
            _stacked_memo[str(self.path)] = (tuple(messages), keys, data, stacked[3])
            return stacked[3]
        missing = [i for i, k in enumerate(keys) if k not in data]
        self.embedded_last = 0
        if missing:
            vecs = self._embed([embed_text(messages[i]) for i in missing])
            fresh = {keys[i]: v for i, v in zip(missing, vecs)}
            self._save(fresh, keep={m.id for m in messages})
            data = {**data, **fresh}
        out = np.zeros((len(messages), self.embedder.dim), dtype=np.float32)
        for i, k in enumerate(keys):
            out[i] = data[k]
        # The stacked matrix, for the next call on the same messages and cache file.
        _stacked_memo[str(self.path)] = (tuple(messages), keys, self._load(), out)
        return out

    def _embed(self, texts: list[str]) -> np.ndarray:
        import numpy as np

        store = self.shared_store() if self.shared_store is not None else None
        if store is None:
            self.embedded_last = len(texts)
            return np.asarray(self.embedder.embed(texts), dtype=np.float32)
        from ..embeddings.cache import EmbeddingCache

        cache = EmbeddingCache(store)
        vecs = cache.embed_cached(self.embedder, texts)
        self.embedded_last = cache.stats.embedded
        return vecs

    def _save(self, fresh: dict[str, list[float]], keep: set[str]) -> None:
        import numpy as np

        # Merge with what is on disk now (another process may have added vectors) and
        # drop vectors of messages that no longer exist or were edited.
        current = self._load()
        merged: dict[str, Any] = {MODEL_KEY: self.embedder.name}
        fresh_ids = {k.split(":", 1)[0] for k in fresh}
        for k, v in current.items():
            if k == MODEL_KEY:
                continue
            mid = k.split(":", 1)[0]
            if mid in keep and mid not in fresh_ids:
                merged[k] = v
        merged.update(fresh)
        recheck(self.path)
        # Compact, rounded by numpy, encoded by json's C encoder: an indented file put every
        # float on its own line through the pure-Python encoder, 10-14 s per answer in a
        # 5,000-message chat (bench/web.py); this is under a second.
        text = json.dumps({k: v if k == MODEL_KEY else np.round(np.asarray(v, dtype=np.float64), 6).tolist()
                           for k, v in merged.items()}, separators=(",", ":"))
        atomic_write(self.path, text.encode("utf-8"), overwrite=True)
        with _memo_lock:
            _memo.pop(str(self.path), None)


def embed_labels(embedder: Any, labels: list[str]) -> np.ndarray:
    """Unit vectors of topic labels (memoised per model: a filter reuses few labels)."""
    import numpy as np

    if not labels:
        return np.zeros((0, embedder.dim), dtype=np.float32)
    missing = [lab for lab in dict.fromkeys(labels) if (embedder.name, lab) not in _label_memo]
    if missing:
        if len(_label_memo) > 10_000:
            _label_memo.clear()
        for lab, v in zip(missing, np.asarray(embedder.embed(missing), dtype=np.float32)):
            _label_memo[(embedder.name, lab)] = v
    return np.stack([_label_memo[(embedder.name, lab)] for lab in labels])
