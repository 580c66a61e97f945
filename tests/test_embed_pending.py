"""embed_pending over a real index: vectors land in the embedding cache, batch by batch."""

import hashlib

import numpy as np
import pytest

from smartcontext.errors import EmbeddingError
from smartcontext.indexer import embed_pending


class HashEmbedder:
    """Deterministic vectors from the text's sha256 (a real embedder, not a model)."""

    name, dim = "hash-8", 8

    def __init__(self, fail_on_call: int | None = None):
        self.calls = 0
        self.fail_on_call = fail_on_call
        self.seen: list[str] = []

    def embed(self, texts):
        self.calls += 1
        if self.fail_on_call == self.calls:
            raise EmbeddingError("the model went away")
        self.seen.extend(texts)
        rows = [np.frombuffer(hashlib.sha256(t.encode()).digest()[:8], dtype=np.uint8) + 1.0 for t in texts]
        m = np.stack(rows).astype(np.float32)
        return m / np.linalg.norm(m, axis=1, keepdims=True)

    def embed_query(self, text):
        return self.embed([text])[0]


@pytest.fixture
def ws(sample_repo, open_ws):
    w = open_ws(sample_repo)
    w.config.embeddings.model = "none"
    w.index()
    yield w
    w.close()


def test_every_item_gets_a_vector_once(ws):
    store = ws.store
    n = store.item_count()
    emb = HashEmbedder()
    assert embed_pending(store, emb, batch_size=4) == (n, 0)
    assert store.vector_models() == {"hash-8": n} and store.counts()["vectors"] == n
    assert store.items_missing_vectors("hash-8") == []
    assert embed_pending(store, HashEmbedder()) == (0, 0)
    rowids, matrix = store.load_vectors("hash-8")
    assert matrix.shape == (n, 8) and len(set(rowids.tolist())) == n


def test_an_interrupted_run_keeps_finished_batches_and_resumes(ws):
    store = ws.store
    n = store.item_count()
    with pytest.raises(EmbeddingError):
        embed_pending(store, HashEmbedder(fail_on_call=3), batch_size=2)
    assert store.vector_models() == {"hash-8": 4}
    again = HashEmbedder()
    assert embed_pending(store, again, batch_size=2) == (n - 4, 0)
    assert len(again.seen) == n - 4


def test_a_changed_file_only_embeds_its_changed_items(ws, sample_repo):
    store = ws.store
    embed_pending(store, HashEmbedder())
    cart = sample_repo / "shop" / "cart.py"
    cart.write_text(cart.read_text() + "\n\ndef new_helper():\n    return 42\n")
    ws.index()
    emb = HashEmbedder()
    embedded, _ = embed_pending(store, emb)
    # the new function, and the module whose text changed; untouched items keep their vectors
    assert 1 <= embedded <= 3 and any("new_helper" in t for t in emb.seen)
    assert store.items_missing_vectors("hash-8") == []
