"""The static embedding model distilled from the shipped MiniLM: vectors, its cache file, the registry."""

from __future__ import annotations

import json
import zipfile

import numpy as np
import pytest

from smartcontext import Workspace
from smartcontext.embeddings import Embedder, get_embedder
from smartcontext.embeddings.local_onnx import default_model_files
from smartcontext.embeddings.static import (
    STATIC_DIM,
    StaticEmbedder,
    cache_dir,
    load_or_build,
)
from smartcontext.errors import EmbeddingError


@pytest.fixture(scope="module")
def static(embedding_model_cache) -> StaticEmbedder:
    emb = get_embedder("local:static")
    emb.prepare()  # built once per test session, in the session's cache folder
    return emb


def test_vectors_have_shape_unit_norm_and_zero_for_no_known_token(static):
    texts = ["The cat sits on the mat.", "def add(a, b): return a + b", "", "🙂🙂"]
    vecs = static.embed(texts)
    assert vecs.shape == (4, STATIC_DIM) and vecs.dtype == np.float32
    assert np.allclose(np.linalg.norm(vecs[:2], axis=1), 1.0, atol=1e-5)
    # Nothing to average: a zero vector, equally far from everything.
    assert not vecs[2].any() and not vecs[3].any()
    assert static.dim == STATIC_DIM and isinstance(static, Embedder)
    assert static.embed([]).shape == (0, STATIC_DIM)
    assert static.embed_query("The cat sits on the mat.").shape == (STATIC_DIM,)
    with pytest.raises(EmbeddingError, match="list of texts"):
        static.embed("one string")


def test_similar_sentences_are_closer(static):
    a, b, c = static.embed([
        "How do I reset my password?",
        "I forgot my password and need to change it.",
        "The quarterly revenue grew by eight percent.",
    ])
    assert a @ b > a @ c + 0.2 and a @ b > b @ c + 0.2


def test_deterministic_and_batching_keeps_order(static):
    rng = np.random.default_rng(3)
    vocab = "river mountain index vector budget parser function token search graph note".split()
    texts = [" ".join(rng.choice(vocab, size=n)) for n in (300, 2, 40, 1, 120, 7)] + ["", "x"]
    batched = static.embed(texts)
    assert np.array_equal(batched, static.embed(texts))
    one_by_one = np.stack([static.embed_query(t) for t in texts])
    # A static model has no batch effects: each row is exactly its text's vector.
    assert np.array_equal(batched, one_by_one)
    assert np.array_equal(static.embed(texts[::-1]), batched[::-1])


def test_the_cached_table_is_read_back_identically(static, embedding_model_cache):
    assert static.cache_path.is_file() and static.cache_path.is_relative_to(embedding_model_cache)
    again = StaticEmbedder(*default_model_files(), cache=embedding_model_cache)
    assert again.name == static.name and again.cache_path == static.cache_path
    texts = ["a cache hit gives the same vectors", "second text"]
    assert np.array_equal(again.embed(texts), static.embed(texts))


def test_names_keep_models_apart(static):
    minilm = get_embedder("local:minilm")
    assert static.name.startswith("local:static-minilm-v1-d256-") and static.name != minilm.name
    assert get_embedder("local:static") is static
    shorter = get_embedder("local:static", max_tokens=16)
    assert shorter.name == static.name + "@16"
    long_text = " ".join(["river"] * 20 + ["mountain"] * 20)
    assert not np.allclose(shorter.embed_query(long_text), static.embed_query(long_text))


def test_cache_dir_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("SMARTCONTEXT_CACHE_DIR", str(tmp_path / "explicit"))
    assert cache_dir() == tmp_path / "explicit"
    monkeypatch.delenv("SMARTCONTEXT_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "smartcontext"


# -- the cache file (load_or_build is what StaticEmbedder.prepare uses) -------------------


def _table(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((50, 8)).astype(np.float32)


def test_cache_file_is_rebuilt_when_damaged_or_stale(tmp_path):
    path = tmp_path / "c" / "table.npz"
    meta = {"recipe": 1, "dim": 8}
    built: list[int] = []

    def build(seed: int):
        def make() -> np.ndarray:
            built.append(seed)
            return _table(seed)
        return make

    first = load_or_build(path, build(1), meta)
    assert path.is_file() and built == [1] and np.array_equal(first, _table(1))
    assert np.array_equal(load_or_build(path, build(2), meta), _table(1)) and built == [1]  # a hit
    assert not [p for p in path.parent.iterdir() if p != path]  # no temp file left behind

    # Truncated (an interrupted copy, a full disk): rebuilt and rewritten whole.
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    assert np.array_equal(load_or_build(path, build(3), meta), _table(3)) and built == [1, 3]
    assert np.array_equal(load_or_build(path, build(4), meta), _table(3))

    # Valid zip, wrong numbers: the checksum catches it.
    with np.load(path) as z:
        parts = {k: z[k] for k in z.files}
    parts["table"] = parts["table"] + 1
    np.savez(path, **parts)
    assert np.array_equal(load_or_build(path, build(5), meta), _table(5)) and built == [1, 3, 5]

    # Built by other settings or another recipe: rebuilt.
    assert np.array_equal(load_or_build(path, build(6), {"recipe": 2, "dim": 8}), _table(6))

    # Not a zip at all.
    path.write_text("garbage")
    assert np.array_equal(load_or_build(path, build(7), meta), _table(7))
    assert zipfile.is_zipfile(path)
    with np.load(path) as z:
        assert json.loads(str(z["meta"])) == meta


def test_an_unwritable_cache_still_gives_a_model(tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder should be")
    table = load_or_build(blocker / "static" / "t.npz", lambda: _table(9), {"dim": 8})
    assert np.array_equal(table, _table(9)) and blocker.is_file()


def test_settings_are_checked():
    with pytest.raises(EmbeddingError, match="dim"):
        StaticEmbedder(*default_model_files(), dim=4)
    with pytest.raises(EmbeddingError, match="max_tokens"):
        StaticEmbedder(*default_model_files(), max_tokens=0)
    with pytest.raises(EmbeddingError, match="does not exist"):
        StaticEmbedder("/nowhere/model.onnx", default_model_files()[1])


# -- through a workspace ----------------------------------------------------------------


def test_a_workspace_indexes_and_searches_with_the_static_model(tmp_path, static, monkeypatch):
    (tmp_path / "vault").mkdir()
    notes = {
        "garden.md": "# Garden\n\n## Tomatoes\n\nWater the tomato plants every morning in summer.\n",
        "money.md": "# Money\n\n## Taxes\n\nFile the income tax return before the April deadline.\n",
    }
    for name, text in notes.items():
        (tmp_path / "vault" / name).write_text(text)
    (tmp_path / "vault" / "smartcontext.toml").write_text('[embeddings]\nmodel = "local:static"\n')
    ws = Workspace.open(tmp_path / "vault")
    stats = ws.index(embeddings=True)
    assert stats.embedding_model == static.name and stats.embedded >= 2
    assert static.name in ws.store.vector_models()
    hits = ws.search("vegetables need watering", mode="semantic", limit=1)
    assert hits and hits[0].path == "garden.md"
    ws.close()
    # Another model never reads these vectors.
    monkeypatch.setenv("SMARTCONTEXT_EMBEDDING_MODEL", "local:minilm")
    other = Workspace.open(tmp_path / "vault")
    assert other.vectors() is None
    other.close()


def test_a_damaged_cache_file_is_rebuilt_identically_with_progress(static, tmp_path):
    """The one full rebuild in the suite: a corrupted copy of the session's table makes a
    workspace distil the model again from MiniLM, reporting it as the "model" phase, and the
    rebuilt table is the same as the first (the build is reproducible)."""
    cache = tmp_path / "cache"
    fresh = StaticEmbedder(*default_model_files(), cache=cache)
    fresh.cache_path.parent.mkdir(parents=True)
    damaged = bytearray(static.cache_path.read_bytes())
    damaged[len(damaged) // 2] ^= 0xFF
    fresh.cache_path.write_bytes(bytes(damaged))

    (tmp_path / "vault").mkdir()
    (tmp_path / "vault" / "note.md").write_text("# Note\n\n## Plans\n\nBuild the garden shed in spring.\n")
    ws = Workspace.open(tmp_path / "vault")
    ws._embedder = fresh  # this test's own cache folder instead of the session's
    seen: list[tuple[str, int, int]] = []
    ws.index(embeddings=True, progress=lambda phase, done, total: seen.append((phase, done, total)))
    ws.close()
    model = [(d, t) for p, d, t in seen if p == "model"]
    assert model[0][0] == 0 and model[-1][0] == model[-1][1] > 30_000
    assert [p for p, _, _ in seen].index("model") < [p for p, _, _ in seen].index("embed")

    texts = ["a rebuilt model gives the same vectors", "garden shed"]
    assert np.array_equal(fresh.embed(texts), static.embed(texts))
    assert fresh.cache_path.read_bytes() != bytes(damaged)
    assert np.array_equal(StaticEmbedder(*default_model_files(), cache=cache).embed(texts), static.embed(texts))


def test_the_mapped_table_is_read_in_place_and_a_damaged_row_is_made_again(static, tmp_path):
    """A process reads the table through a mapped copy beside the .npz, checking each row it
    uses; a damaged row is found when used, and the copy is made again from the .npz."""
    import shutil

    from smartcontext.embeddings.static import read_mapped

    assert static.mapped_path.is_file()
    cache = tmp_path / "cache"
    (cache / "static").mkdir(parents=True)
    shutil.copy(static.cache_path, cache / "static" / static.cache_path.name)
    shutil.copy(static.mapped_path, cache / "static" / static.mapped_path.name)
    copy = StaticEmbedder(*default_model_files(), cache=cache)
    texts = ["the garden shed", "tokens read one row each"]
    want = static.embed(texts)
    row = static._library_tokenizer().token_to_id("garden")
    table = read_mapped(copy.mapped_path, copy._meta())
    assert table is not None and not table.rows.flags.writeable
    at = copy.mapped_path.stat().st_size - table.rows.nbytes + row * table.rows.strides[0] + 8
    data = bytearray(copy.mapped_path.read_bytes())
    data[at] ^= 0x10
    copy.mapped_path.write_bytes(bytes(data))
    assert np.array_equal(copy.embed(texts[1:]), want[1:])  # a row not damaged: no rebuild needed
    assert np.array_equal(copy.embed(texts), want)  # the damaged row: made again, same vectors
    # A query vector (summed in Python) reads its rows through the same checks.
    copy.mapped_path.write_bytes(bytes(data))
    query = StaticEmbedder(*default_model_files(), cache=cache)
    assert np.array_equal(np.frombuffer(query.query_vector(texts[1]), dtype=np.float32), want[1])
    assert np.array_equal(np.frombuffer(query.query_vector(texts[0]), dtype=np.float32), want[0])
    again, good = read_mapped(copy.mapped_path, copy._meta()), read_mapped(static.mapped_path, static._meta())
    assert again is not None and good is not None and np.array_equal(again.rows, good.rows)
    assert again.wordpiece is not None and good.wordpiece is not None
    assert again.wordpiece.state() == good.wordpiece.state()


def test_making_the_mapped_table_removes_an_earlier_versions_copy(static, tmp_path):
    """An upgrade makes the table's mapped copy in its new format; the old format's copy
    (as large, read by no one now) goes."""
    import shutil

    cache = tmp_path / "cache"
    (cache / "static").mkdir(parents=True)
    shutil.copy(static.cache_path, cache / "static" / static.cache_path.name)
    fresh = StaticEmbedder(*default_model_files(), cache=cache)
    old = fresh.cache_path.with_suffix(".table")
    old.write_bytes(b"smartcontext static table 2\n" + bytes(64))
    assert not fresh.mapped_path.exists()
    assert np.array_equal(fresh.embed(["a garden shed"]), static.embed(["a garden shed"]))
    assert fresh.mapped_path.is_file() and not old.exists()


def test_questions_are_split_as_the_tokenizers_library_splits_them(static):
    """The WordPiece split a question takes without loading the library gives the
    library's ids on ASCII text, and leaves other text to the library."""
    import random
    from pathlib import Path

    from smartcontext.embeddings.wordpiece import Buckets, WordPiece

    library = static._library_tokenizer()
    wordpiece = WordPiece.from_config(json.loads(library.to_str()))
    assert wordpiece is not None and static._table.wordpiece is not None
    # The mapped table's copy reads its vocabulary a bucket at a time: the same entries.
    saved = static._table.wordpiece
    assert isinstance(saved.vocab, Buckets) and dict(saved.vocab.items()) == wordpiece.vocab
    wordpiece = saved
    rng = random.Random(4)
    alphabet = "abcXYZ019 \t\n\r\x00\x01\x0b\x0c\x1c\x7f'-_.,;:!?()[]{}<>@#$%^&*+=/\\|~`\"" + " " * 8
    words = ["unbelievable", "tokenization", "xqzvk", "GraphQL", "re-index", "[MASK]", "[mask]", "##ing",
             "a" * 99, "b" * 101, "Obsidian", "SmartConnections", "don't", "vault"]
    texts = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 80))) for _ in range(2000)]
    texts += [" ".join(rng.choice(words) for _ in range(rng.randint(1, 12))) for _ in range(500)]
    src = Path(__file__).resolve().parents[1] / "src" / "smartcontext"
    texts += [p.read_text(encoding="utf-8") for p in sorted(src.rglob("*.py"))[:40]]
    split = 0
    for text in texts:
        ids = wordpiece.ids(text)
        want = library.encode(text, add_special_tokens=False).ids
        if ids is None:  # only text holding an added token's text (or not ASCII)
            assert any(t in text for t in wordpiece.added) or not text.isascii()
            continue
        assert ids == want, repr(text[:120])
        split += 1
    assert split > 2300
    assert wordpiece.ids("café") is None and wordpiece.ids("fill the [MASK] in") is None
    # The embedder gives the same vectors either way (a long batch goes to the library).
    for text in ("How do I sync my vault across devices?", "naïve café", "a [MASK] here"):
        assert np.array_equal(static.embed_query(text), static.embed([text, "long " * 5_000])[0])


def test_a_query_vector_made_without_numpy_equals_the_batch_one(static):
    """``query_vector`` sums a short text's rows in Python (embeddings/f32.py) and a long
    one's with numpy: either way the bits of ``embed``'s vector for the same text."""
    import random

    from smartcontext.embeddings.static import _SUM_HERE_TOKENS

    static.prepare()
    assert static._table.mapped
    rnd = random.Random(5)
    words = "the vault sync obsidian plugin theme note graph link markdown css folder daily x".split()
    texts = ["", "zzzzqqq", "How do I sync my vault across devices?", "naïve café"]
    texts += [" ".join(rnd.choice(words) for _ in range(rnd.randint(1, 2 * _SUM_HERE_TOKENS))) for _ in range(150)]
    batch = static.embed(texts)
    for text, want in zip(texts, batch):
        got = static.query_vector(text)
        assert np.array_equal(np.frombuffer(got, dtype=np.float32), want), text
        assert np.array_equal(static.embed_query(text), want)
