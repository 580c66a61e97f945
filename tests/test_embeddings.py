"""Embedders (real local model, LiteLLM against a local OpenAI-compatible server), registry, cache."""

from __future__ import annotations

import base64
import hashlib
import json
import sqlite3
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from smartcontext.embeddings import (
    DEFAULT_MODEL_NAME,
    Embedder,
    EmbeddingCache,
    LiteLLMEmbedder,
    OnnxEmbedder,
    get_embedder,
    known_specs,
    register_scheme,
    registry,
    text_hash,
)
from smartcontext.embeddings.local_onnx import default_model_files
from smartcontext.errors import EmbeddingError
from smartcontext.plugins import hookimpl, plugin_manager
from smartcontext.store import open_store


@pytest.fixture(scope="module")
def local() -> OnnxEmbedder:
    return get_embedder("local:minilm")


def words(n: int, seed: int = 0) -> str:
    rng = np.random.default_rng(seed)
    vocab = (
        "river mountain index vector budget parser function token search graph note "
        "section topic context model query answer window cache table"
    ).split()
    return " ".join(rng.choice(vocab, size=n))


def cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b)


# -- local model ------------------------------------------------------------------------


def test_local_vectors_have_shape_and_unit_norm(local):
    texts = ["The cat sits on the mat.", "", "def add(a, b): return a + b", "東京は日本の首都です。"]
    vecs = local.embed(texts)
    assert vecs.shape == (4, 384) and vecs.dtype == np.float32
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    assert local.dim == 384 and local.name == DEFAULT_MODEL_NAME
    assert isinstance(local, Embedder)
    query = local.embed_query("The cat sits on the mat.")
    assert query.shape == (384,) and cos(query, vecs[0]) > 0.999
    assert local.embed([]).shape == (0, 384)


def test_local_similar_sentences_are_closer(local):
    a, b, c = local.embed(
        [
            "How do I reset my password?",
            "I forgot my password and need to change it.",
            "The quarterly revenue grew by eight percent.",
        ]
    )
    assert cos(a, b) > cos(a, c) + 0.3
    assert cos(a, b) > cos(b, c) + 0.3


def test_local_batch_keeps_input_order_across_mixed_lengths(local):
    texts = [words(n, seed=n) for n in (280, 2, 40, 1, 120, 7, 15, 3)]
    batched = OnnxEmbedder(*default_model_files(), name="t", batch_size=3).embed(texts)
    one_by_one = np.stack([local.embed_query(t) for t in texts])
    sims = batched @ one_by_one.T
    # int8 activations are quantised per batch, so rows match closely rather than bit for bit.
    assert np.all(np.diag(sims) > 0.995)
    assert np.array_equal(sims.argmax(axis=1), np.arange(len(texts)))


def test_local_truncates_long_input_at_256_tokens(local):
    long_text = words(5000, seed=1)
    vec = local.embed([long_text])
    assert vec.shape == (1, 384) and np.isfinite(vec).all()
    # Everything past the 256-token window is ignored...
    head = " ".join(long_text.split()[:400])
    assert cos(vec[0], local.embed_query(head)) > 0.999
    # ...but tokens 128-256 still count (the shipped tokenizer.json would cut at 128).
    base = words(150, seed=2)
    assert cos(local.embed_query(base + " " + words(60, 3)), local.embed_query(base + " " + words(60, 4))) < 0.999


def test_folder_model_uses_its_configuration(tmp_path, local):
    model, tokenizer = default_model_files()
    folder = tmp_path / "my-model"
    folder.mkdir()
    (folder / "model.onnx").symlink_to(model)
    (folder / "tokenizer.json").symlink_to(tokenizer)
    (folder / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 256}))
    emb = get_embedder(f"onnx:{folder}")
    assert emb.name.startswith("onnx:my-model:") and emb.name.endswith(":mean:256")
    texts = ["a short sentence", words(400, seed=5)]
    assert np.allclose(emb.embed(texts), local.embed(texts), atol=1e-5)
    assert emb.dim == 384

    cls_folder = tmp_path / "cls-model"
    (cls_folder / "1_Pooling").mkdir(parents=True)
    (cls_folder / "model.onnx").symlink_to(model)
    (cls_folder / "tokenizer.json").symlink_to(tokenizer)
    (cls_folder / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode_cls_token": True}))
    cls_emb = get_embedder(f"onnx:{cls_folder}")
    assert ":cls:" in cls_emb.name
    v = cls_emb.embed(["a short sentence"])
    assert np.isclose(np.linalg.norm(v), 1.0, atol=1e-5)
    assert cos(v[0], local.embed_query("a short sentence")) < 0.99


def test_folder_model_errors_are_actionable(tmp_path):
    with pytest.raises(EmbeddingError, match="does not exist"):
        get_embedder(f"onnx:{tmp_path / 'nowhere'}")
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "model.onnx").write_bytes(b"not an onnx graph")
    with pytest.raises(EmbeddingError, match="tokenizer.json"):
        get_embedder(f"onnx:{tmp_path / 'm'}")
    (tmp_path / "m" / "tokenizer.json").symlink_to(default_model_files()[1])
    with pytest.raises(EmbeddingError, match="onnxruntime cannot load"):
        get_embedder(f"onnx:{tmp_path / 'm'}").embed(["x"])


# -- registry ---------------------------------------------------------------------------


def test_registry_resolves_specs(local):
    default = get_embedder("local:static")  # the default since issue 8 (docs/benchmarks.md)
    assert get_embedder(None) is default and get_embedder("default") is default
    assert get_embedder("local:minilm") is local and local is not default
    remote = get_embedder("openai/text-embedding-3-small", api_key="k")
    assert isinstance(remote, LiteLLMEmbedder) and remote.name == "litellm:openai/text-embedding-3-small"
    assert get_embedder("litellm:ollama/nomic-embed-text:latest").model == "ollama/nomic-embed-text:latest"
    with pytest.raises(EmbeddingError, match="unknown embedding model 'bogus'"):
        get_embedder("bogus")
    with pytest.raises(EmbeddingError, match="does not take options"):
        get_embedder("default", api_key="x")
    with pytest.raises(EmbeddingError, match="names no model"):
        get_embedder("litellm:")


def test_registry_accepts_new_schemes(local):
    made = []

    def factory(arg, **options):
        made.append((arg, options))
        return local

    register_scheme("testscheme", factory)
    try:
        assert get_embedder("testscheme:abc", batch_size=4) is local
        assert made == [("abc", {"batch_size": 4})]
    finally:
        registry._schemes.pop("testscheme")


class ToyPlugin:
    """An installed plugin adding a scheme and replacing the built-in default."""

    def __init__(self, embedder):
        self.embedder = embedder
        self.made: list[tuple[str, dict]] = []

    @hookimpl
    def register_embedders(self, register):
        def toy(arg, **options):
            self.made.append((arg, options))
            return self.embedder

        register("toy", toy, scheme=True)
        register("default", lambda: self.embedder)


def test_a_plugin_on_the_plugin_manager_registers_embedders(local, monkeypatch):
    monkeypatch.setattr(registry, "_named", {})
    monkeypatch.setattr(registry, "_schemes", {})
    monkeypatch.setattr(registry._hook, "loaded", False)  # ask the hook again, with the plugin
    pm = plugin_manager()
    plugin = ToyPlugin(local)
    pm.register(plugin, name="toy-embedders-test")
    try:
        assert get_embedder("toy:small", batch_size=8) is local
        assert plugin.made == [("small", {"batch_size": 8})]
        assert "toy:..." in known_specs() and "onnx:..." in known_specs()  # built-ins are there too
        # the plugin's "default" replaced the built-in one, which registered first
        assert registry._named["default"] is not registry._named["local:static"]
        assert isinstance(get_embedder("litellm:openai/x"), LiteLLMEmbedder)
    finally:
        pm.unregister(plugin)


# -- cache ------------------------------------------------------------------------------


class Counting:
    """Delegates to a real embedder and records what it was asked to embed."""

    def __init__(self, inner, fail_on_call: int | None = None):
        self.inner = inner
        self.calls: list[list[str]] = []
        self.fail_on_call = fail_on_call

    @property
    def name(self):
        return self.inner.name

    @property
    def dim(self):
        return self.inner.dim

    def embed(self, texts):
        self.calls.append(list(texts))
        if self.fail_on_call is not None and len(self.calls) == self.fail_on_call:
            raise EmbeddingError("model went away")
        return self.inner.embed(texts)

    def embed_query(self, text):
        return self.embed([text])[0]

    @property
    def embedded(self) -> list[str]:
        return [t for call in self.calls for t in call]


def test_cache_embeds_each_text_once(tmp_path, local):
    store = open_store(tmp_path / "cache.db")
    counting = Counting(local)
    cache = EmbeddingCache(store)
    texts = ["alpha text", "beta text", "alpha text", "gamma text", "beta text"]
    progress = []
    first = cache.embed_cached(counting, texts, batch_size=2, progress=lambda d, t: progress.append((d, t)))
    assert sorted(counting.embedded) == ["alpha text", "beta text", "gamma text"]
    assert progress[-1] == (3, 3)
    assert cache.stats.hits == 0 and cache.stats.misses == 5 and cache.stats.embedded == 3
    assert np.allclose(first, local.embed(texts), atol=1e-5)

    counting.calls.clear()
    store.close()
    reopened = EmbeddingCache(open_store(tmp_path / "cache.db"))
    second = reopened.embed_cached(counting, texts)
    assert counting.calls == []
    assert reopened.stats.hits == 5 and reopened.stats.embedded == 0
    assert np.array_equal(first, second)

    third = reopened.embed_cached(counting, ["delta text", "alpha text"])
    assert counting.embedded == ["delta text"]
    assert np.array_equal(third[1], first[0])
    rows = sqlite3.connect(tmp_path / "cache.db").execute(
        "SELECT model, hash, dim, length(vec) FROM embedding_cache WHERE hash = ?", (text_hash("delta text"),)
    ).fetchall()
    assert rows == [(local.name, hashlib.sha256(b"delta text").hexdigest(), 384, 384 * 4)]


def test_cache_keeps_finished_batches_when_the_model_fails(tmp_path, local):
    store = open_store(tmp_path / "cache.db")
    conn = sqlite3.connect(tmp_path / "cache.db", isolation_level=None)
    cache = EmbeddingCache(store)
    failing = Counting(local, fail_on_call=2)
    with pytest.raises(EmbeddingError):
        cache.embed_cached(failing, ["one", "two", "three", "four"], batch_size=2)
    assert conn.execute("SELECT count(*) FROM embedding_cache").fetchone() == (2,)
    assert not store.db.in_transaction
    retry = Counting(local)
    cache.embed_cached(retry, ["one", "two", "three", "four"], batch_size=2)
    assert retry.embedded == ["three", "four"]


def test_cache_separates_models_and_ignores_corrupt_rows(tmp_path, local):
    conn = sqlite3.connect(tmp_path / "cache.db", isolation_level=None)
    cache = EmbeddingCache(open_store(tmp_path / "cache.db"))
    cache.embed_cached(local, ["shared text"])
    conn.execute("UPDATE embedding_cache SET vec = x'0000'")  # truncated blob
    counting = Counting(local)
    vec = cache.embed_cached(counting, ["shared text"])
    assert counting.embedded == ["shared text"] and np.isclose(np.linalg.norm(vec), 1.0, atol=1e-5)

    class Renamed(Counting):
        name = "another-model"

    other = Renamed(local)
    cache.embed_cached(other, ["shared text"])
    assert other.embedded == ["shared text"]
    assert cache.clear("another-model") == 1
    assert cache.embed_cached(local, []).shape == (0, 384)


class HashEmbedder:
    """A tiny deterministic embedder whose size can change under one name."""

    def __init__(self, dim: int):
        self.name, self.dim, self.seen = "resizable", dim, []

    def embed(self, texts):
        self.seen.extend(texts)
        rows = [np.frombuffer(hashlib.sha256(t.encode()).digest(), dtype=np.uint8)[: self.dim] + 1.0 for t in texts]
        return np.stack(rows).astype(np.float32)

    def embed_query(self, text):
        return self.embed([text])[0]


def test_cache_refreshes_vectors_when_a_model_changes_size(tmp_path):
    cache = EmbeddingCache(open_store(tmp_path / "cache.db"))
    cache.embed_cached(HashEmbedder(4), ["old one", "old two"])
    wider = HashEmbedder(8)
    out = cache.embed_cached(wider, ["old one", "new", "old two"])
    assert out.shape == (3, 8)
    assert sorted(wider.seen) == ["new", "old one", "old two"]
    again = HashEmbedder(8)
    assert np.array_equal(cache.embed_cached(again, ["old two", "old one"]), out[[2, 0]])
    assert again.seen == []


# -- remote (LiteLLM against a local OpenAI-compatible server) --------------------------


def fake_vector(text: str, dim: int = 8) -> list[float]:
    digest = hashlib.sha256(text.encode()).digest()
    return [float(b) + 1.0 for b in digest[:dim]]  # deliberately not unit length


class OpenAIStub(BaseHTTPRequestHandler):
    mode = "ok"
    received: list[dict] = []

    def do_POST(self):  # noqa: N802 - http.server's naming
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).received.append({"path": self.path, "auth": self.headers.get("Authorization"), **body})
        if self.mode == "500":
            return self._send(500, b'{"error": {"message": "boom", "type": "server_error"}}')
        if self.mode == "malformed":
            return self._send(200, b'{"data": [ this is not json')
        inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
        data = []
        for i, text in enumerate(inputs):
            vec = fake_vector(text)
            if body.get("encoding_format") == "base64":  # what the OpenAI SDK asks for by default
                vec = base64.b64encode(np.asarray(vec, dtype=np.float32).tobytes()).decode()
            data.append({"object": "embedding", "index": i, "embedding": vec})
        answer = {
            "object": "list",
            "data": data,
            "model": body["model"],
            "usage": {"prompt_tokens": len(inputs), "total_tokens": len(inputs)},
        }
        self._send(200, json.dumps(answer).encode())

    def _send(self, status: int, payload: bytes):
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args):
        pass


@pytest.fixture()
def server():
    OpenAIStub.mode = "ok"
    OpenAIStub.received = []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), OpenAIStub)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()
    httpd.server_close()


def remote(base: str, **options) -> LiteLLMEmbedder:
    return get_embedder(
        "openai/text-embedding-3-small", api_base=base, api_key="test", max_retries=0, timeout=10, **options
    )


def test_remote_embeds_through_litellm(server):
    emb = remote(server, batch_size=2)
    texts = ["first text", "second text", "", "fourth text", "fifth text"]
    vecs = emb.embed(texts)
    sent = [t for req in OpenAIStub.received for t in req["input"]]
    assert sent == ["first text", "second text", " ", "fourth text", "fifth text"]
    assert len(OpenAIStub.received) == 3
    assert all(r["path"] == "/v1/embeddings" and r["auth"] == "Bearer test" for r in OpenAIStub.received)
    assert OpenAIStub.received[0]["model"] == "text-embedding-3-small"
    assert vecs.shape == (5, 8) and vecs.dtype == np.float32 and emb.dim == 8
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-6)
    expected = np.asarray(fake_vector("fourth text"))
    assert np.allclose(vecs[3], expected / np.linalg.norm(expected), atol=1e-6)
    assert np.allclose(emb.embed_query("first text"), vecs[0])


def test_remote_cuts_over_long_inputs(server):
    emb = remote(server, max_input_tokens=5)
    emb.embed(["one two three four five six seven eight"])
    assert OpenAIStub.received[-1]["input"] == ["one two three four five"]


def test_remote_dim_is_discovered_and_cached(server, tmp_path):
    emb = remote(server)
    assert emb.dim == 8
    cache = EmbeddingCache(open_store(tmp_path / "c.db"))
    first = cache.embed_cached(emb, ["x", "y"])
    calls = len(OpenAIStub.received)
    assert np.array_equal(cache.embed_cached(emb, ["y", "x"]), first[::-1])
    assert len(OpenAIStub.received) == calls


@pytest.mark.parametrize("mode", ["500", "malformed"])
def test_remote_failures_raise_embedding_error(server, mode):
    OpenAIStub.mode = mode
    with pytest.raises(EmbeddingError) as info:
        remote(server).embed(["hello"])
    message = str(info.value)
    assert "openai/text-embedding-3-small" in message and server in message


def test_remote_without_litellm_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "litellm", None)  # makes `import litellm` fail
    with pytest.raises(EmbeddingError, match=r"pip install 'smartcontext\[remote\]'"):
        LiteLLMEmbedder("openai/text-embedding-3-small").embed(["x"])
