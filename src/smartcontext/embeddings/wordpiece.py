"""BERT's WordPiece split of plain ASCII text, as the ``tokenizers`` library splits it.

A process that embeds one question with the static model read ten rows of its table, but
loaded the ``tokenizers`` library and parsed a 700 kB ``tokenizer.json`` first (about a
tenth of a second and 14 MB). For ASCII text the BERT pipeline is short, and done here:

- the normaliser (``BertNormalizer``, lower-casing) deletes control characters other
  than tab and line breaks, makes those spaces, and lower-cases; on ASCII there are no
  accents to strip and no CJK characters to isolate;
- the pre-tokeniser (``BertPreTokenizer``) splits on whitespace and makes every ASCII
  punctuation character a word of its own;
- ``WordPiece`` matches each word greedily, longest vocabulary entry first, later pieces
  with the ``##`` prefix; a word with an unmatched rest, or longer than
  ``max_input_chars_per_word``, is the unknown token.

Text with other characters, or holding an added token's text (``[MASK]``: the library
matches those before normalising), is left to the library (``ids`` returns None). Tests
hold the ids equal to the library's.
"""

from __future__ import annotations

import marshal
import re
import zlib
from typing import Any

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_WORD = re.compile(r"[a-z0-9]+|[^a-z0-9\s]")


# Tokens per bucket of a saved vocabulary (``Buckets``), on average.
_PER_BUCKET = 8


class Buckets:
    """A vocabulary saved as marshalled buckets, by the CRC-32 of each token: a question
    looks up some twenty strings of 30,000, and decoding all of them (a dict of 30,000
    strings) was most of the time its query vector took."""

    __slots__ = ("blobs", "_read")

    def __init__(self, blobs: list[bytes]):
        self.blobs = blobs
        self._read: dict[int, dict[str, int]] = {}

    @staticmethod
    def pack(vocab: dict[str, int]) -> list[bytes]:
        buckets: list[dict[str, int]] = [{} for _ in range(max(1, len(vocab) // _PER_BUCKET))]
        for token, index in vocab.items():
            buckets[_bucket(token, len(buckets))][token] = index
        return [marshal.dumps(b) for b in buckets]

    def get(self, token: str, default: int | None = None) -> int | None:
        i = _bucket(token, len(self.blobs))
        bucket = self._read.get(i)
        if bucket is None:
            bucket = self._read[i] = marshal.loads(self.blobs[i])
        return bucket.get(token, default)

    def items(self):
        for blob in self.blobs:
            yield from marshal.loads(blob).items()


def _bucket(token: str, n: int) -> int:
    return zlib.crc32(token.encode("utf-8", "surrogatepass")) % n


class WordPiece:
    """The vocabulary and settings of a BERT tokenizer, for ``ids``."""

    def __init__(self, vocab: dict[str, int] | Buckets, unk: int, prefix: str, max_chars: int, added: list[str]):
        self.vocab, self.unk, self.prefix, self.max_chars, self.added = vocab, unk, prefix, max_chars, added

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> "WordPiece | None":
        """From a parsed ``tokenizer.json``; None unless it is the lower-casing BERT
        pipeline described above."""
        norm, pre, model = config.get("normalizer") or {}, config.get("pre_tokenizer") or {}, config.get("model") or {}
        if (norm.get("type") != "BertNormalizer" or not norm.get("lowercase") or not norm.get("clean_text")
                or norm.get("strip_accents") is False or pre.get("type") != "BertPreTokenizer"
                or model.get("type") != "WordPiece" or not isinstance(model.get("vocab"), dict)):
            return None
        vocab = {str(k): int(v) for k, v in model["vocab"].items()}
        # The static model drops "[UNK]" by that name: the unknown token must be it.
        unk = vocab.get("[UNK]") if model.get("unk_token") == "[UNK]" else None
        if unk is None:
            return None
        added = [str(t["content"]) for t in config.get("added_tokens") or [] if t.get("content")]
        return cls(vocab, unk, str(model.get("continuing_subword_prefix") or "##"),
                   int(model.get("max_input_chars_per_word") or 100), added)

    def state(self) -> dict[str, Any]:
        """What ``from_state`` takes (plain values, for marshal; the vocabulary in buckets)."""
        buckets = self.vocab.blobs if isinstance(self.vocab, Buckets) else Buckets.pack(self.vocab)
        return {"buckets": buckets, "unk": self.unk, "prefix": self.prefix, "max_chars": self.max_chars,
                "added": self.added}

    @classmethod
    def from_state(cls, state: Any) -> "WordPiece | None":
        try:
            blobs = state["buckets"]
            if not isinstance(blobs, list) or not blobs or not all(isinstance(b, bytes) for b in blobs):
                return None
            return cls(Buckets(blobs), int(state["unk"]), str(state["prefix"]), int(state["max_chars"]),
                       list(state["added"]))
        except (TypeError, KeyError, ValueError):
            return None

    def ids(self, text: str) -> list[int] | None:
        """The token ids of ``text`` (no special tokens added), or None when the library
        must split it (see the module's docstring)."""
        if not text.isascii() or any(token in text for token in self.added):
            return None
        vocab, unk, prefix, max_chars = self.vocab, self.unk, self.prefix, self.max_chars
        out: list[int] = []
        for word in _WORD.findall(_CONTROL.sub("", text).lower()):
            if len(word) > max_chars:
                out.append(unk)
                continue
            token = vocab.get(word)
            if token is not None:  # most words are whole entries
                out.append(token)
                continue
            pieces: list[int] = []
            start = 0
            while start < len(word):
                end = len(word)
                found = None
                while end > start:
                    found = vocab.get(word[start:end] if start == 0 else prefix + word[start:end])
                    if found is not None:
                        break
                    end -= 1
                if found is None:
                    pieces = [unk]
                    break
                pieces.append(found)
                start = end
            out.extend(pieces)
        return out
