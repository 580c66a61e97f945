"""A static embedding model distilled from the shipped MiniLM (the model2vec method).

A static model keeps one vector per vocabulary token; a text's vector is the mean of its
tokens' vectors. There is no network to run per text, so it embeds thousands of texts a
second on one core where MiniLM manages about ten sections. The table is made from the
shipped all-MiniLM-L6-v2 int8 model itself, as model2vec distils a sentence transformer:

1. every token of the model's WordPiece vocabulary goes through the ONNX model once, as
   ``[CLS] token [SEP]``, and the output is mean-pooled (what MiniLM does for a text);
2. the 30,522 x 384 table is centred and reduced by PCA to 256 dimensions (the signs of
   the components are fixed, so the result does not depend on the LAPACK build);
3. each row is weighted by ``sif / (sif + p(token))`` with ``sif = 1e-4`` and ``p`` a
   Zipf law over the vocabulary's order (BERT's WordPiece ids after the special and
   ``[unused]`` tokens run roughly from frequent to rare), so words like "the" weigh
   little and rare words much, like IDF.

These are model2vec's published defaults, not settings tuned on our benchmarks. The table
is built once on first use (about 30 CPU seconds) and cached on disk, keyed by the digest
of the source model and tokenizer, so vectors of a different source never mix.
"""

from __future__ import annotations

import functools
import json
import marshal
import os
import struct
import sys
import threading
import zlib
from array import array
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..cachedir import cache_dir
from ..errors import EmbeddingError
from ..hashes import sha256
from ..lazy import LazyModule, Logger
from ..sealed import map_read_only
from . import f32
from .base import EmbedderBase, l2_normalise
from .wordpiece import WordPiece

if TYPE_CHECKING:
    import numpy as np
else:  # a question's query embedding needs none of it
    np = LazyModule("numpy")

log = Logger(__name__)

BuildProgress = Callable[[int, int], None]

STATIC_DIM = 256
SIF_COEFFICIENT = 1e-4
# Bumped whenever the recipe changes: the cache file name and the vectors' name change too.
RECIPE_VERSION = 1
# Sections are cut at 2,000 characters before embedding (indexer.embed_text); a static
# model has no window, so it reads all of them (about 500 tokens).
DEFAULT_MAX_TOKENS = 1024
# Tokens per model call while distilling: small enough that a stop (``progress`` raising
# between calls) ends a build within a fraction of a CPU second.
_DISTIL_BATCH = 256
# Texts split in Python rather than by the tokenizers library, in characters per call: a
# question's worth, where loading the library would cost more than splitting.
_SPLIT_HERE_CHARS = 20_000
# Tokens of one text summed in Python (embeddings/f32.py, the same bits as numpy) rather
# than by numpy: a question's worth, where importing numpy would cost more.
_SUM_HERE_TOKENS = 64
# -- distillation -----------------------------------------------------------------------


def distil_table(
    model_path: Path,
    tokenizer_path: Path,
    *,
    dim: int = STATIC_DIM,
    sif: float = SIF_COEFFICIENT,
    threads: int | None = None,
    progress: BuildProgress | None = None,
) -> np.ndarray:
    """The static table (vocabulary size x ``dim``, float32) distilled from an ONNX encoder."""
    from .local_onnx import OnnxEmbedder

    # One thread: three-token inputs leave a second thread mostly waiting (measured: about
    # 40% less CPU for the same table), and the build then leaves a core to other work.
    encoder = OnnxEmbedder(model_path, tokenizer_path, name="distil-source", threads=threads or 1)
    runtime = encoder._load()
    tokenizer = runtime.tokenizer
    vocab = tokenizer.get_vocab()
    size = tokenizer.get_vocab_size()
    cls_id, sep_id = _required_id(tokenizer, "[CLS]"), _required_id(tokenizer, "[SEP]")
    raw = np.zeros((size, encoder.dim), dtype=np.float32)
    if progress:
        progress(0, size)
    for start in range(0, size, _DISTIL_BATCH):
        ids = np.arange(start, min(size, start + _DISTIL_BATCH), dtype=np.int64)
        batch = np.stack([np.full_like(ids, cls_id), ids, np.full_like(ids, sep_id)], axis=1)
        hidden = runtime.hidden(
            {"input_ids": batch, "attention_mask": np.ones_like(batch), "token_type_ids": np.zeros_like(batch)},
            f"distilling the static model at token {start}",
        )
        raw[ids] = hidden.mean(axis=1) if hidden.ndim == 3 else hidden
        if progress:
            progress(int(ids[-1]) + 1, size)
    if dim > raw.shape[1]:
        raise EmbeddingError(f"a static model of {dim} dimensions cannot come from a {raw.shape[1]}-dimension model")
    table = _pca(raw, dim)
    table *= _zipf_weights(vocab, size, sif)[:, None]
    return np.ascontiguousarray(table, dtype=np.float32)


def _required_id(tokenizer: Any, token: str) -> int:
    token_id = tokenizer.token_to_id(token)
    if token_id is None:
        raise EmbeddingError(f"the tokenizer has no {token} token; the static model needs a BERT-style vocabulary")
    return int(token_id)


def _pca(matrix: np.ndarray, k: int) -> np.ndarray:
    centred = matrix.astype(np.float64) - matrix.mean(axis=0, dtype=np.float64)
    _, _, vt = np.linalg.svd(centred, full_matrices=False)
    components = vt[:k]
    # An SVD may return any component negated; fixing the sign of each component's
    # largest entry makes the table the same on every machine.
    signs = np.sign(components[np.arange(k), np.abs(components).argmax(axis=1)])
    return (centred @ (components * signs[:, None]).T).astype(np.float32)


def _zipf_weights(vocab: dict[str, int], size: int, sif: float) -> np.ndarray:
    """SIF weights with token probabilities from a Zipf law over the vocabulary order.

    Special and ``[unused]`` tokens never occur in tokenised text, so they are left out
    of the ranking (counting them shifts every real token's rank by a thousand).
    """
    special = np.zeros(size, dtype=bool)
    for token, index in vocab.items():
        if index < size and token.startswith("[") and token.endswith("]"):
            special[index] = True
    ranked = np.flatnonzero(~special)
    inverse_rank = 1.0 / np.arange(2, len(ranked) + 2, dtype=np.float64)
    probability = inverse_rank / inverse_rank.sum()
    weights = np.ones(size, dtype=np.float64)
    weights[ranked] = sif / (sif + probability)
    return weights.astype(np.float32)


# -- the cache file ---------------------------------------------------------------------


def load_or_build(path: Path, build: Callable[[], np.ndarray], meta: dict[str, Any]) -> np.ndarray:
    """The array cached at ``path``; built (and written atomically) when the file is
    missing, unreadable, of other settings (``meta``) or fails its checksum."""
    cached = _read_cached(path, meta)
    if cached is not None:
        return cached
    table = np.ascontiguousarray(build(), dtype=np.float32)
    try:
        _write_cached(path, table, meta)
    except OSError as exc:
        # A read-only home still gets a working model; it is rebuilt next time.
        log.warning("cannot cache the static embedding model at %s (%s); it will be rebuilt next time", path, exc)
    return table


def _checksum(table: np.ndarray) -> str:
    import hashlib  # only a model build or the first read of its cache hashes

    return hashlib.sha256(np.ascontiguousarray(table).tobytes()).hexdigest()


def _read_cached(path: Path, meta: dict[str, Any]) -> np.ndarray | None:
    if not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as data:
            stored_meta = json.loads(str(data["meta"]))
            table = np.asarray(data["table"], dtype=np.float32)
            checksum = str(data["checksum"])
    except Exception as exc:  # truncated, not a zip, missing keys: rebuild
        log.warning("the cached static embedding model %s is unreadable (%s); rebuilding it", path, exc)
        return None
    if stored_meta != meta or table.ndim != 2 or _checksum(table) != checksum:
        log.warning("the cached static embedding model %s is damaged or stale; rebuilding it", path)
        return None
    return table


def _write_cached(path: Path, table: np.ndarray, meta: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    import tempfile  # only a process that writes the table loads it

    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            np.savez(fh, table=table, checksum=np.array(_checksum(table)), meta=np.array(json.dumps(meta, sort_keys=True)))
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# -- the mapped copy a process reads ------------------------------------------------------
#
# Reading the .npz and checking its sha256 took a tenth of a second and two copies of the
# 31 MB table in every process that embeds a query (which reads some ten rows). The
# table is therefore also kept as a raw file the process maps, each row with its CRC-32,
# checked when the row is first read: a damaged row is found when it would be used, and
# the copy is made again from the .npz (itself checked whole, rebuilt when damaged).

_TABLE_MAGIC = b"smartcontext static table 3\n"  # 3: the vocabulary in buckets
# CRC-32 of the JSON, the tokenizer and the row CRCs; the JSON's length; the tokenizer's
# (the marshalled ``WordPiece`` state, or nothing when the tokenizer is not BERT's).
_TABLE_HEAD = struct.Struct("<III")
_ALIGN = 64


class DamagedTable(Exception):
    """A row of the mapped table does not match its CRC."""


class Table:
    """The static model's rows, read through ``gather`` (a batch, as a numpy array) or
    ``row`` (one row's values, no numpy); a mapped file's rows are each checked against
    their CRC once, when first read."""

    def __init__(self, rows: np.ndarray | None, wordpiece: WordPiece | None = None, *, mapping: Any = None,
                 shape: tuple[int, int] = (0, 0), rows_at: int = 0, crc_at: int = 0):
        self._rows = rows
        self.shape: tuple[int, int] = (int(rows.shape[0]), int(rows.shape[1])) if rows is not None else shape
        self.wordpiece = wordpiece  # the tokenizer's split of ASCII text, saved with the table
        # A mapped file: rows and CRCs are read from ``mapping`` at these offsets.
        self._mapping, self._rows_at, self._crc_at = mapping, rows_at, crc_at
        self._row = struct.Struct(f"<{self.shape[1]}f")
        self._checked = bytearray(self.shape[0]) if mapping is not None else None

    @property
    def mapped(self) -> bool:
        return self._mapping is not None

    @property
    def rows(self) -> np.ndarray:
        """All rows as one (read-only, for a mapped file) float32 array."""
        if self._rows is None:
            n, dim = self.shape
            self._rows = np.frombuffer(self._mapping, dtype="<f4", count=n * dim, offset=self._rows_at).reshape(n, dim)
        return self._rows

    def _check(self, ids) -> None:
        checked = self._checked
        if checked is None:
            return
        size = self._row.size
        for i in sorted({i for i in ids if not checked[i]}):
            at = self._rows_at + i * size
            if zlib.crc32(self._mapping[at : at + size]) != _CRC.unpack_from(self._mapping, self._crc_at + 4 * i)[0]:
                raise DamagedTable(f"row {i}")
            checked[i] = 1

    def gather(self, ids: np.ndarray) -> np.ndarray:
        self._check(ids.tolist())
        return self.rows[ids]

    def row(self, i: int) -> tuple[float, ...]:
        """Row ``i``'s values (checked, as ``gather`` checks them)."""
        self._check((i,))
        if self._mapping is None:
            return tuple(self.rows[i].tolist())
        return self._row.unpack_from(self._mapping, self._rows_at + i * self._row.size)


_CRC = struct.Struct("<I")


def _aligned(offset: int) -> int:
    return -(-offset // _ALIGN) * _ALIGN


def write_mapped(path: Path, table: np.ndarray, meta: dict[str, Any], wordpiece: WordPiece | None = None) -> None:
    """Save ``table`` (and the tokenizer's ``wordpiece``) as the mapped file at ``path``
    atomically; raises OSError."""
    table = np.ascontiguousarray(table, dtype="<f4")
    crcs = np.fromiter((zlib.crc32(row) for row in table), dtype="<u4", count=table.shape[0])
    head = json.dumps({"meta": meta, "shape": list(table.shape)}, sort_keys=True).encode()
    words = marshal.dumps(wordpiece.state()) if wordpiece is not None else b""
    start = len(_TABLE_MAGIC) + _TABLE_HEAD.size
    crc_at = _aligned(start + len(head) + len(words))
    rows_at = _aligned(crc_at + crcs.nbytes)
    checked = zlib.crc32(crcs.tobytes(), zlib.crc32(words, zlib.crc32(head)))
    path.parent.mkdir(parents=True, exist_ok=True)
    import tempfile  # only a process that writes the table loads it

    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(_TABLE_MAGIC + _TABLE_HEAD.pack(checked, len(head), len(words)) + head + words)
            fh.write(b"\0" * (crc_at - start - len(head) - len(words)))
            fh.write(crcs.tobytes())
            fh.write(b"\0" * (rows_at - crc_at - crcs.nbytes))
            fh.write(table.tobytes())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_mapped(path: Path, meta: dict[str, Any]) -> Table | None:
    """The mapped table at ``path`` when it was made with these settings and its header
    is whole; None otherwise (rows are checked as they are read)."""
    mapping = map_read_only(path, len(_TABLE_MAGIC) + _TABLE_HEAD.size)
    if mapping is None:
        return None
    try:
        if mapping[: len(_TABLE_MAGIC)] != _TABLE_MAGIC:
            return None
        start = len(_TABLE_MAGIC) + _TABLE_HEAD.size
        checked, length, words_length = _TABLE_HEAD.unpack_from(mapping, len(_TABLE_MAGIC))
        head_bytes = mapping[start : start + length]
        words = mapping[start + length : start + length + words_length]
        head = json.loads(head_bytes)
        rows, dim = (int(x) for x in head["shape"])
        crc_at = _aligned(start + length + words_length)
        rows_at = _aligned(crc_at + 4 * rows)
        if head["meta"] != meta or len(mapping) != rows_at + 4 * rows * dim:
            return None
        crcs = mapping[crc_at : crc_at + 4 * rows]
        if zlib.crc32(crcs, zlib.crc32(words, zlib.crc32(head_bytes))) != checked:
            return None
        wordpiece = WordPiece.from_state(marshal.loads(words)) if words else None
    except (ValueError, KeyError, TypeError, EOFError, struct.error):
        return None
    return Table(None, wordpiece=wordpiece, mapping=mapping, shape=(rows, dim), rows_at=rows_at, crc_at=crc_at)


# -- the embedder -----------------------------------------------------------------------


class StaticEmbedder(EmbedderBase):
    """Mean of static token vectors, L2-normalised.

    Parameters:
        model_path, tokenizer_path: the ONNX encoder the table is distilled from, and its
            ``tokenizer.json`` (also used to split texts into tokens).
        dim: PCA dimensions kept (at most the encoder's: 384 for MiniLM).
        max_tokens: tokens read per text; the rest is ignored.
        cache: the folder the table is cached in (default :func:`cache_dir`, read when
            the table is first needed).

    A text with no known token (empty, or only characters the vocabulary lacks) gets a
    zero vector, which is equally far from everything.
    """

    def __init__(
        self,
        model_path: str | Path,
        tokenizer_path: str | Path,
        *,
        dim: int = STATIC_DIM,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        cache: str | Path | None = None,
    ):
        if not 8 <= int(dim) <= 4096:
            raise EmbeddingError(f"static model dim must be between 8 and 4096, got {dim}")
        if int(max_tokens) < 1:
            raise EmbeddingError(f"max_tokens must be at least 1, got {max_tokens}")
        self.model_path = Path(model_path)
        self.tokenizer_path = Path(tokenizer_path)
        self._dim = int(dim)
        self.max_tokens = int(max_tokens)
        self._cache = Path(cache) if cache is not None else None
        self._lock = threading.RLock()  # re-entered: prepare loads the tokenizer
        self._table: Table | None = None
        self._tokenizer: Any = None
        self._unk: int | None = None
        suffix = "" if self.max_tokens == DEFAULT_MAX_TOKENS else f"@{self.max_tokens}"
        self._name = f"local:static-minilm-v{RECIPE_VERSION}-d{self._dim}-{self._source_digest()[:10]}{suffix}"

    @property
    def dim(self) -> int:
        return self._dim

    @property
    def cache_path(self) -> Path:
        folder = self._cache if self._cache is not None else cache_dir()
        return folder / "static" / f"minilm-{self._source_digest()[:16]}-d{self._dim}-v{RECIPE_VERSION}.npz"

    @property
    def mapped_path(self) -> Path:
        """The mapped copy of the table that processes read (made from ``cache_path``),
        named by its format: two versions sharing a cache folder would otherwise remake it
        for each other."""
        return self.cache_path.with_suffix(".table3")

    def prepare(self, progress: BuildProgress | None = None) -> None:
        """Load the table, distilling it first when no valid cached copy exists.
        ``progress(done, total)`` counts vocabulary tokens while it is built."""
        if self._table is not None:
            return
        with self._lock:
            if self._table is not None:
                return
            table = read_mapped(self.mapped_path, self._meta())
            if table is not None and table.wordpiece is not None:
                # A process that embeds ASCII questions loads no tokenizer library.
                self._table, self._unk = table, table.wordpiece.unk
                return
            tokenizer = self._library_tokenizer()

            def build() -> np.ndarray:
                log.info("building the static embedding model from %s (once; cached at %s)",
                         self.model_path.name, self.cache_path)
                return distil_table(self.model_path, self.tokenizer_path, dim=self._dim, progress=progress)

            shape = (tokenizer.get_vocab_size(), self._dim)
            if table is None or table.shape != shape:
                built = load_or_build(self.cache_path, build, self._meta())
                if built.shape != shape:
                    raise EmbeddingError(
                        f"the static model table has shape {built.shape}, expected "
                        f"{shape}; delete {self.cache_path} to rebuild it"
                    )
                try:
                    wordpiece = WordPiece.from_config(json.loads(tokenizer.to_str()))
                    write_mapped(self.mapped_path, built, self._meta(), wordpiece)
                    table = read_mapped(self.mapped_path, self._meta())
                    # The copy an earlier version mapped (31 MB) is made again from the
                    # .npz in a moment should that version still run; left, it stays forever.
                    self.cache_path.with_suffix(".table").unlink(missing_ok=True)
                except OSError as exc:
                    log.warning("cannot save the mapped static model at %s (%s)", self.mapped_path, exc)
                    table = None
                if table is None or table.shape != shape:
                    table = Table(built)  # in memory, checked whole already
            unk = tokenizer.token_to_id("[UNK]")
            self._unk = -1 if unk is None else int(unk)
            self._table = table

    def _library_tokenizer(self) -> Any:
        """The ``tokenizers`` split of ``tokenizer.json``, loaded when first needed."""
        if self._tokenizer is None:
            with self._lock:
                if self._tokenizer is None:
                    from tokenizers import Tokenizer

                    tokenizer = Tokenizer.from_file(str(self.tokenizer_path))
                    tokenizer.no_padding()
                    tokenizer.no_truncation()
                    self._tokenizer = tokenizer
        return self._tokenizer

    def _token_ids(self, texts: list[str]) -> list[list[int]]:
        """Each text's token ids: a few short texts (a question) split here when the
        table carries the tokenizer's WordPiece; otherwise, and for batches, which the
        library splits faster on all cores, by the library."""
        assert self._table is not None
        wordpiece = self._table.wordpiece
        if wordpiece is not None and sum(map(len, texts)) <= _SPLIT_HERE_CHARS:
            split = [wordpiece.ids(t) for t in texts]
            if all(ids is not None for ids in split):
                return split  # type: ignore[return-value]
        encodings = self._library_tokenizer().encode_batch(texts, add_special_tokens=False)
        return [e.ids for e in encodings]

    def _gather(self, ids: np.ndarray) -> np.ndarray:
        assert self._table is not None
        try:
            return self._table.gather(ids)
        except DamagedTable as exc:
            self._remake(exc)
            assert self._table is not None
            return self._table.gather(ids)

    def _remake(self, exc: DamagedTable) -> None:
        log.warning("the mapped static embedding model %s is damaged (%s); making it again", self.mapped_path, exc)
        with self._lock:
            self._table = None
            self.mapped_path.unlink(missing_ok=True)
        self.prepare()

    def query_vector(self, text: str) -> array:
        """One text's vector as ``embed`` gives it, bit for bit, without numpy when the
        table is mapped (embeddings/f32.py): a question's vector search then loads none."""
        self.prepare()
        assert self._table is not None
        ids = [i for i in self._token_ids([text if isinstance(text, str) else str(text)])[0][: self.max_tokens]
               if i != self._unk]
        if not self._table.mapped or len(ids) > _SUM_HERE_TOKENS or "numpy" in sys.modules:
            # numpy's sums are faster once it is loaded (a server), and give the same bits.
            return array("f", self.embed([text])[0].tobytes())
        try:
            rows = [self._table.row(i) for i in ids]
        except DamagedTable as exc:
            self._remake(exc)
            assert self._table is not None
            rows = [self._table.row(i) for i in ids]  # a table made just now
        return f32.unit(f32.add_rows(rows, self._dim))

    def embed_query(self, text: str) -> np.ndarray:
        return np.frombuffer(self.query_vector(text), dtype=np.float32).copy()

    def _embed(self, texts: list[str]) -> np.ndarray:
        self.prepare()
        assert self._table is not None
        split = self._token_ids([t if isinstance(t, str) else str(t) for t in texts])
        ids_per_text = [np.asarray(ids[: self.max_tokens], dtype=np.int64) for ids in split]
        ids_per_text = [ids[ids != self._unk] for ids in ids_per_text]
        counts = np.fromiter((len(ids) for ids in ids_per_text), dtype=np.int64, count=len(texts))
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        nonempty = np.flatnonzero(counts)
        if len(nonempty):
            flat = np.concatenate([ids_per_text[i] for i in nonempty])
            starts = np.concatenate([[0], np.cumsum(counts[nonempty])[:-1]])
            # One gather and one segmented sum for the whole batch; the mean's divisor
            # does not matter once rows are normalised.
            out[nonempty] = np.add.reduceat(self._gather(flat), starts, axis=0)
        return l2_normalise(out)

    # -- internals ------------------------------------------------------------------

    def _meta(self) -> dict[str, Any]:
        return {"recipe": RECIPE_VERSION, "source": self._source_digest(), "dim": self._dim, "sif": SIF_COEFFICIENT}

    def _source_digest(self) -> str:
        return _source_digest(str(self.model_path), str(self.tokenizer_path))


@functools.lru_cache(maxsize=8)
def _source_digest(model_path: str, tokenizer_path: str) -> str:
    from .local_onnx import _file_digest

    for path in (model_path, tokenizer_path):
        if not Path(path).is_file():
            raise EmbeddingError(f"the static embedding model is distilled from {path}, which does not exist")
    return sha256((_file_digest(Path(model_path)) + _file_digest(Path(tokenizer_path))).encode()).hexdigest()


@functools.lru_cache(maxsize=8)
def static_embedder(*, dim: int = STATIC_DIM, max_tokens: int = DEFAULT_MAX_TOKENS) -> StaticEmbedder:
    """The static model distilled from the bundled MiniLM; one shared instance per settings.
    Its table is loaded (or built and cached) on the first ``embed``."""
    from .local_onnx import default_model_files

    model, tokenizer = default_model_files()
    return StaticEmbedder(model, tokenizer, dim=dim, max_tokens=max_tokens)
