"""The embedding cache of one chat: ``.memory/{chat_id}.embeddings.json``.

Keys are ``{message_id}:{content_hash}``, so an edited message is a miss and only new or
edited messages reach the model. A role that is a speaker's name (not user, assistant...)
is embedded with the text (``Caroline: ...``): in a group chat or transcript, who said it
is part of what it is about. The file also records the model (``"_model"``): vectors
of another model are dropped, never compared. Parsed files are memoised by (mtime, size),
so filtering a long chat again costs no JSON parsing.

Once the file holds ``APPEND_FROM`` vectors, new ones are appended to a log beside it,
``{chat_id}.embeddings.jsonl`` (a line per save, with its model), instead of rewriting
it: after each answer in a 5,000-message chat that rewrite was 18 MB, on the way to the
next answer's first token. The log is folded into the file (a rewrite, which also drops
the vectors of edited or deleted messages) once it holds a quarter as many vectors.
A line torn by a crash is ignored: the vectors it held are embedded again when needed.

A message's text is the one the index embeds for its item (``sources.chat.
message_embed_text``), and when the workspace has an index the vectors go through the
index's embedding cache (by model and text hash): a message embedded by the index is a
cache hit here and the other way round, so each text reaches the model once.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Callable, Sequence
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..safeio import read_regular
from ..sources.chat import GENERIC_ROLES, MAX_EMBED_CHARS, message_embed_text  # noqa: F401 (re-exported)
from ..vault.paths import NEW_FILE_MODE, atomic_write
from .files import EMBEDDINGS_SUFFIX, Message, memory_path, recheck

if TYPE_CHECKING:  # numpy is imported where vectors are used: a keyword-only history never needs it
    import numpy as np

MODEL_KEY = "_model"
LOG_SUFFIX = ".embeddings.jsonl"
APPEND_FROM = 200

# path -> (signature of the file and its log, the vectors, how many came from the log)
_memo: dict[str, tuple[tuple[Any, ...], dict[str, Any], int]] = {}
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
        self.log_path = memory_path(memory_dir, f"{chat_id}{LOG_SUFFIX}")
        self.embedder = embedder
        self.shared_store = shared_store
        self.embedded_last = 0  # texts sent to the model by the last ``matrix`` call

    def _sig(self) -> tuple[Any, ...] | None:
        recheck(self.path)
        try:
            st = self.path.stat()
        except FileNotFoundError:
            return None
        try:
            lst = self.log_path.stat()
            log = (lst.st_ino, lst.st_mtime_ns, lst.st_size)
        except FileNotFoundError:
            log = None
        return (st.st_mtime_ns, st.st_size, log)

    def _load(self) -> dict[str, Any]:
        return self._read()[0]

    def _read(self) -> tuple[dict[str, Any], int]:
        """The vectors (with the model's name) and how many of them the log holds."""
        import numpy as np

        sig = self._sig()
        if sig is None:
            return {}, 0
        with _memo_lock:
            hit = _memo.get(str(self.path))
            if hit and hit[0] == sig:
                return hit[1], hit[2]
        try:
            data = json.loads(read_regular(self.path, follow_symlinks=False))
        except (OSError, ValueError):
            return {}, 0  # a damaged cache is rebuilt, never trusted
        if not isinstance(data, dict) or data.get(MODEL_KEY) != self.embedder.name:
            return {}, 0
        logged = self._read_log(data) if sig[2] is not None else 0
        # Arrays once, at load: converting JSON lists on every filter call is the slow part.
        data = {k: (v if k == MODEL_KEY else np.asarray(v, dtype=np.float32)) for k, v in data.items()}
        with _memo_lock:
            _memo[str(self.path)] = (sig, data, logged)
        return data, logged

    def _read_log(self, data: dict[str, Any]) -> int:
        """Add the log's vectors of this model to ``data``; how many there were."""
        try:
            text = read_regular(self.log_path, follow_symlinks=False).decode("utf-8")
        except (OSError, UnicodeDecodeError):
            return 0
        n = 0
        for line in text.split("\n"):
            try:
                rec = json.loads(line) if line.strip() else None
            except ValueError:
                continue  # torn by a crash: those vectors are embedded again
            if isinstance(rec, dict) and rec.pop(MODEL_KEY, None) == self.embedder.name:
                data.update(rec)
                n += len(rec)
        return n

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

    def _save(self, fresh: dict[str, Any], keep: set[str]) -> None:
        import numpy as np

        current, logged = self._read()
        stored = len(current) - 1 - logged
        if stored >= APPEND_FROM and logged + len(fresh) <= stored // 4:
            self._append(current, logged, fresh)
            return
        # Merge with what is on disk now (another process may have added vectors) and
        # drop vectors of messages that no longer exist or were edited.
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
        with suppress(FileNotFoundError):
            self.log_path.unlink()  # folded in (a crash before this leaves vectors twice: harmless)
        with _memo_lock:
            _memo.pop(str(self.path), None)

    def _append(self, current: dict[str, Any], logged: int, fresh: dict[str, Any]) -> None:
        """``fresh`` as one line of the log (one write, fsynced); the memo follows, so the
        file is not parsed again."""
        import numpy as np

        arrays = {k: np.asarray(v, dtype=np.float32) for k, v in fresh.items()}
        line = json.dumps({MODEL_KEY: self.embedder.name,
                           **{k: np.round(v.astype(np.float64), 6).tolist() for k, v in arrays.items()}},
                          separators=(",", ":")) + "\n"
        recheck(self.log_path)
        fd = os.open(self.log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), NEW_FILE_MODE)
        try:
            os.write(fd, line.encode("utf-8"))
            os.fsync(fd)
        finally:
            os.close(fd)
        sig = self._sig()
        if sig is not None:
            with _memo_lock:
                _memo[str(self.path)] = (sig, {**current, **arrays}, logged + len(arrays))


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
