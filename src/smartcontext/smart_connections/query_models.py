"""Find a model that embeds queries into the same space as the vault's stored vectors.

Only the model that made the vectors will do: two models' vectors are never compared.
Candidates, in order:

1. embedders passed in by the caller (the project's ``embeddings.Embedder``, or anything
   with its ``.name`` and ``embed_query(text) -> np.ndarray``), used only when their name
   names the vault's model;
2. a local copy of the model: in the configured models folders (``<dir>/Org/Name``,
   ``<dir>/Org--Name``, ``<dir>/Name`` or a hub-style ``<dir>/models--Org--Name``) and in
   the user's Hugging Face cache (``$HF_HUB_CACHE``, ``$HF_HOME/hub``,
   ``~/.cache/huggingface/hub``). An ONNX export (``onnx/model.onnx``, ``model.onnx`` or a
   quantized variant) plus ``tokenizer.json`` runs on onnxruntime; a PyTorch-only folder
   runs through sentence-transformers when that package is installed;
3. a model this package ships (all-MiniLM-L6-v2 int8), when the vault used that model.

Nothing is ever downloaded: the Hugging Face libraries are put in offline mode before use.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import EmbeddingError

_ONNX_FILES = (
    "onnx/model.onnx",
    "model.onnx",
    "onnx/model_quantized.onnx",
    "model_quantized.onnx",
    "onnx/model_int8.onnx",
    "onnx/model_uint8.onnx",
)
_TORCH_FILES = ("model.safetensors", "pytorch_model.bin")
_NAME_PREFIXES = ("local:", "onnx:", "st:", "sentence-transformers:", "hf:", "ollama:", "transformers:")
_NAME_SUFFIXES = ("-int8", "-uint8", "-q8", "-quantized", "_quantized", "-onnx", "-fp16", "-fp32")
# Other spellings of the same weights (Ollama publishes all-MiniLM-L6-v2 as all-minilm).
_ALIASES = {"all-minilm": "all-minilm-l6-v2"}
# The all-MiniLM-L6-v2 weights this package ships (see embeddings/local_onnx.py).
_BUNDLED = "all-minilm-l6-v2"
DEFAULT_MAX_TOKENS = 512


@dataclass
class QueryModel:
    """The outcome of the search for a query model.

    embedder is None when nothing fits; ``reason`` then says what was looked at.
    """

    model_key: str | None
    embedder: Any | None
    source: str
    reason: str = ""

    @property
    def available(self) -> bool:
        return self.embedder is not None

    def to_dict(self) -> dict:
        return {
            "model_key": self.model_key,
            "available": self.available,
            "source": self.source,
            "reason": self.reason,
        }


def canonical_model_name(name: str) -> str:
    """A comparable spelling: no org, provider prefix, quantization suffix or tag.

    ``TaylorAI/bge-micro-v2``, ``onnx:bge-micro-v2:ab12:mean:512`` -> ``bge-micro-v2``;
    ``local:all-MiniLM-L6-v2-int8``, ``Xenova/all-MiniLM-L6-v2``, ``all-minilm:latest``
    -> ``all-minilm-l6-v2``.
    """
    n = name.strip().lower()
    changed = True
    while changed:
        changed = False
        for prefix in _NAME_PREFIXES:
            if n.startswith(prefix):
                n = n[len(prefix) :]
                changed = True
    n = n.split("#", 1)[0].split("@", 1)[0]
    n = n.rstrip("/").rsplit("/", 1)[-1]
    n = n.split(":", 1)[0]
    changed = True
    while changed:
        changed = False
        for suffix in _NAME_SUFFIXES:
            if n.endswith(suffix) and len(n) > len(suffix):
                n = n[: -len(suffix)]
                changed = True
    return _ALIASES.get(n, n)


def same_model(a: str, b: str) -> bool:
    return bool(a) and bool(b) and canonical_model_name(a) == canonical_model_name(b)


def hf_cache_dirs() -> list[Path]:
    """Hugging Face hub caches this user may have, in the order the libraries use them."""
    dirs: list[Path] = []
    for var in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if os.environ.get(var):
            dirs.append(Path(os.environ[var]).expanduser())
    if os.environ.get("HF_HOME"):
        dirs.append(Path(os.environ["HF_HOME"]).expanduser() / "hub")
    dirs.append(Path.home() / ".cache" / "huggingface" / "hub")
    out: list[Path] = []
    for d in dirs:
        if d not in out:
            out.append(d)
    return out


def candidate_folders(model_key: str, models_dirs: Iterable[Path], hf_dirs: Iterable[Path]) -> list[Path]:
    """Folders that may hold ``model_key``, most specific first (existing ones only)."""
    org, _, name = model_key.rpartition("/")
    hub_name = "models--" + model_key.replace("/", "--")
    found: list[Path] = []

    def add(p: Path) -> None:
        if p.is_dir() and p not in found:
            found.append(p)

    def add_hub(repo: Path) -> None:
        snapshots = repo / "snapshots"
        if snapshots.is_dir():
            # The ref the cache points at first, then any other snapshot, newest first.
            ref = repo / "refs" / "main"
            if ref.is_file():
                add(snapshots / ref.read_text(encoding="utf-8").strip())
            for snap in sorted(snapshots.iterdir(), key=lambda p: p.lstat().st_mtime, reverse=True):
                add(snap)

    for base in models_dirs:
        base = Path(base).expanduser()
        if org:
            add(base / org / name)
            add(base / f"{org}--{name}")
            add(base / f"{org}_{name}")
        add(base / name)
        add_hub(base / hub_name)
    for base in hf_dirs:
        add_hub(Path(base) / hub_name)
    return found


def find_query_model(
    model_key: str | None,
    *,
    embedders: Iterable[Any] = (),
    models_dirs: Iterable[str | Path] = (),
    use_hf_cache: bool = True,
    use_bundled: bool = True,
    max_tokens: int | None = None,
) -> QueryModel:
    """The best way to embed queries for vectors stored under ``model_key`` (never raises)."""
    if not model_key:
        return QueryModel(None, None, "none", "the vault names no embedding model")
    offered = []
    for emb in embedders:
        name = getattr(emb, "name", None)
        if not isinstance(name, str) or not callable(getattr(emb, "embed_query", None)):
            continue
        if same_model(name, model_key):
            return QueryModel(model_key, emb, f"embedder {name!r}")
        offered.append(name)

    dirs = [Path(d).expanduser() for d in models_dirs]
    hf = hf_cache_dirs() if use_hf_cache else []
    looked = []
    try:
        folders = candidate_folders(model_key, dirs, hf)
    except OSError as exc:
        folders = []
        looked.append(f"model folders unreadable ({exc})")
    for folder in folders:
        try:
            emb, why = _folder_embedder(folder, model_key, max_tokens)
        except (EmbeddingError, OSError) as exc:
            emb, why = None, str(exc)
        if emb is not None:
            return QueryModel(model_key, emb, f"folder {folder}")
        looked.append(f"{folder} ({why})")

    if use_bundled and canonical_model_name(model_key) == _BUNDLED:
        try:
            from ..embeddings.local_onnx import default_embedder

            return QueryModel(model_key, default_embedder(), "bundled all-MiniLM-L6-v2 (int8)")
        except EmbeddingError as exc:
            looked.append(f"bundled model ({exc})")

    parts = [f"no local copy of {model_key}"]
    searched = [str(d) for d in dirs] + [str(d) for d in hf]
    if searched:
        parts.append("searched " + ", ".join(searched))
    if looked:
        parts.append("unusable: " + "; ".join(looked))
    if offered:
        parts.append("embedders offered for other models: " + ", ".join(offered))
    return QueryModel(model_key, None, "none", "; ".join(parts))


def _folder_embedder(folder: Path, model_key: str, max_tokens: int | None) -> tuple[Any | None, str]:
    tokenizer = folder / "tokenizer.json"
    onnx = next((folder / f for f in _ONNX_FILES if (folder / f).is_file()), None)
    limit = _max_tokens(folder, max_tokens)
    if onnx is not None and tokenizer.is_file():
        from ..embeddings.local_onnx import OnnxEmbedder

        # One query at a time: a single thread avoids fighting the server for the cores.
        return (
            OnnxEmbedder(
                onnx, tokenizer, name=model_key, max_length=limit, batch_size=1, threads=1,
                pooling=_pooling(folder),
            ),
            "",
        )
    if any((folder / f).is_file() for f in _TORCH_FILES):
        if find_spec("sentence_transformers") is None:
            return None, "PyTorch weights only and sentence-transformers is not installed"
        return SentenceTransformerQuery(folder, model_key, limit), ""
    if onnx is not None:
        return None, "model.onnx without tokenizer.json"
    return None, "no model.onnx + tokenizer.json and no PyTorch weights"


def _max_tokens(folder: Path, configured: int | None) -> int:
    st = _json(folder / "sentence_bert_config.json").get("max_seq_length")
    limit = configured or (st if isinstance(st, int) else None) or DEFAULT_MAX_TOKENS
    return max(1, min(int(limit), 8192))


def _pooling(folder: Path) -> str:
    from ..embeddings.local_onnx import pooling_from_config

    return pooling_from_config(_json(folder / "1_Pooling" / "config.json"))


def _json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


class SentenceTransformerQuery:
    """Queries through sentence-transformers for a folder that has PyTorch weights only."""

    def __init__(self, folder: Path, name: str, max_tokens: int):
        self.folder = folder
        self._name = name
        self.max_tokens = max_tokens
        self._model: Any = None

    @property
    def name(self) -> str:
        return self._name

    def embed_query(self, text: str) -> np.ndarray:
        if self._model is None:
            # Offline before the import: the hub client reads these when it loads.
            os.environ["HF_HUB_OFFLINE"] = "1"
            os.environ["TRANSFORMERS_OFFLINE"] = "1"
            try:
                from sentence_transformers import SentenceTransformer

                self._model = SentenceTransformer(str(self.folder), device="cpu")
                self._model.max_seq_length = self.max_tokens
            except Exception as exc:  # any load failure means: no query model
                raise EmbeddingError(f"sentence-transformers cannot load {self.folder}: {exc}") from exc
        vec = self._model.encode([text], normalize_embeddings=True, convert_to_numpy=True)[0]
        return np.asarray(vec, dtype=np.float32)
