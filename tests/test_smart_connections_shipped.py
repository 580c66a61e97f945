"""Smart Connections without the plugin's model: the shipped model (the bundled MiniLM)
embeds the notes' text into the workspace's own index and answers by meaning, says so,
embeds each section once (by content hash) and only what changed afterwards; a server
never waits for it.

The vault's plugin vectors are stored under TaylorAI/bge-micro-v2, which no package
ships, so no query model exists for them here.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from smartcontext.smart_connections import SmartConnections
from smartcontext.tools import ToolRegistry

pytestmark = pytest.mark.timeout(300)

PLUGIN_MODEL = "TaylorAI/bge-micro-v2"
NOTES = {
    "notes/Watering.md": "# Watering\n\nDrip irrigation saves water for the tomatoes.\n",
    "notes/Taxes.md": "# Taxes\n\nFile the forms before April and keep the receipts.\n",
    "notes/Concerts.md": "# Concerts\n\nThe orchestra plays Brahms on Friday evening.\n",
    "notes/Sailing.md": "# Sailing\n\n## Knots\n\nA bowline makes a fixed loop at the end of a rope.\n",
}
# Plugin vectors with no relation to the texts: a ranking by them would be arbitrary.
PLUGIN_VECTORS = {path: [1.0, float(i), 0.5, 0.0] for i, path in enumerate(NOTES)}
# Shares no word with any note: keywords find nothing, meaning finds Watering.
QUERY = "how should I hydrate my plants"


# Readers made here, closed after each test (with the vault workspaces they opened).
_readers: list[SmartConnections] = []


@pytest.fixture(autouse=True)
def shipped_model_on(monkeypatch):
    monkeypatch.delenv("SMARTCONTEXT_EMBEDDING_MODEL", raising=False)
    yield
    while _readers:
        _readers.pop().close()


def make_vault(root: Path) -> Path:
    for rel, text in NOTES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    env = root / ".smart-env"
    (env / "multi").mkdir(parents=True)
    settings = {"smart_sources": {"embed_model": {"adapter": "transformers",
                                                  "transformers": {"model_key": PLUGIN_MODEL}}}}
    (env / "smart_env.json").write_text(json.dumps(settings), encoding="utf-8")
    for path, vec in PLUGIN_VECTORS.items():
        norm = sum(x * x for x in vec) ** 0.5
        entry = {"path": path, "embeddings": {PLUGIN_MODEL: {"vec": [x / norm for x in vec]}}}
        name = path.replace("/", "_").replace(".", "_") + ".ajson"
        (env / "multi" / name).write_text(f"{json.dumps('smart_sources:' + path)}: {json.dumps(entry)},\n")
    return root


def reader(root: Path, **kw) -> SmartConnections:
    sc = SmartConnections(root, use_hf_cache=False, sweep_interval=0.0, cache_path=None, **kw)
    _readers.append(sc)
    return sc


def test_without_the_plugins_model_the_shipped_model_answers_by_meaning_and_says_so(tmp_path):
    vault = make_vault(tmp_path)
    sc = reader(vault)
    res = sc.semantic_search(QUERY, limit=3, min_score=0.0)
    assert res.mode == "shipped-model"
    assert res.method.startswith("semantic (shipped model local:")
    assert f"the plugin's model {PLUGIN_MODEL} is not installed" in res.method
    assert res.results[0].path == "notes/Watering.md"
    assert res.results[0].kind == "note" and "Drip irrigation" in res.results[0].snippet
    assert any("embedded" in w and "shipped model" in w for w in res.warnings)
    blocks = sc.semantic_search("tying a loop in a rope", scope="blocks", limit=1, min_score=0.0).results
    assert blocks[0].path == "notes/Sailing.md" and blocks[0].heading == "Sailing > Knots"
    assert blocks[0].key == "notes/Sailing.md#Sailing#Knots" and blocks[0].lines
    assert sc.status().search_mode == "shipped-model"


def test_vectors_live_in_the_workspace_index_once_and_only_changes_are_embedded_again(tmp_path):
    vault = make_vault(tmp_path)
    sc = reader(vault)
    sc.semantic_search(QUERY)
    ws = sc.workspace()
    done, total = ws.vector_progress()
    assert done == total > 0  # the workspace's own index holds them: no second store
    again = sc.semantic_search("receipts for the forms", min_score=0.0)
    assert again.mode == "shipped-model" and again.results[0].path == "notes/Taxes.md"
    assert not any("embedded" in w for w in again.warnings)  # nothing embedded twice
    cached = cached_vectors(vault)
    (vault / "notes/Concerts.md").write_text("# Concerts\n\nThe choir sings carols in December.\n")
    edited = sc.semantic_search("christmas singing", min_score=0.0)
    assert edited.results[0].path == "notes/Concerts.md"
    assert cached_vectors(vault) == cached + 1  # the edited section alone was embedded
    assert ws.vector_progress()[0] == ws.vector_progress()[1]


def cached_vectors(vault: Path) -> int:
    con = sqlite3.connect(vault / ".smartcontext" / "index.db")
    try:
        return con.execute("SELECT COUNT(*) FROM embedding_cache").fetchone()[0]
    finally:
        con.close()


def test_filters_and_the_plugins_exclusions_hold_in_shipped_mode(tmp_path):
    vault = make_vault(tmp_path)
    (vault / "notes/Unindexed.md").write_text("# Unindexed\n\nWatering cans and garden hoses.\n")
    sc = reader(vault)
    paths = [h.path for h in sc.semantic_search(QUERY, limit=10, min_score=-1).results]
    assert "notes/Unindexed.md" not in paths  # the plugin never embedded it
    assert set(paths) == set(NOTES)
    only = sc.semantic_search(QUERY, paths=["notes/Taxes.md"], min_score=-1).results
    assert [h.path for h in only] == ["notes/Taxes.md"]


def test_a_one_shot_query_leaves_a_whole_vault_to_index_and_says_so(tmp_path, monkeypatch):
    from smartcontext.smart_connections import shipped

    monkeypatch.setattr(shipped, "SYNC_LIMIT", 2)
    vault = make_vault(tmp_path)
    res = reader(vault).semantic_search(QUERY, min_score=0.0)
    assert res.mode == "keyword-rerank"
    assert any("run `smartcontext index" in w and "0 / 5 sections" in w for w in res.warnings)
    from smartcontext import Workspace

    with Workspace.open(vault) as ws:
        ws.index()  # what the warning asks for
    res = reader(vault).semantic_search(QUERY, min_score=0.0)
    assert res.mode == "shipped-model" and res.results[0].path == "notes/Watering.md"


def test_a_server_answers_at_once_and_uses_the_shipped_model_once_it_has_embedded(tmp_path, static_model):
    vault = make_vault(tmp_path)
    reg = ToolRegistry.open(vault, refresh_interval=-1)
    try:
        first = reg.call("semantic_search", {"query": QUERY, "minScore": 0.0})
        assert first["success"]
        ws = reg.context.workspace
        assert ws.background is not None
        if first["mode"] != "shipped-model":  # the background embedder had not finished yet
            assert first["mode"] == "keyword-rerank"
            assert any("embedding the notes in the background" in w for w in first["warnings"])
        assert ws.background.join(120)
        later = reg.call("semantic_search", {"query": QUERY, "minScore": 0.0})
        assert later["mode"] == "shipped-model" and later["results"][0]["path"] == "notes/Watering.md"
        assert "is not installed" in later["method"]
    finally:
        reg.close()


def test_the_plugins_vectors_are_used_when_its_model_is_present(tmp_path):
    import numpy as np

    vault = make_vault(tmp_path)

    class PluginModel:
        name = PLUGIN_MODEL

        def embed_query(self, text):
            return np.array(PLUGIN_VECTORS["notes/Taxes.md"], dtype=np.float32)

    res = reader(vault, embedders=[PluginModel()]).semantic_search(QUERY, min_score=0.0)
    assert res.mode == "model" and res.results[0].path == "notes/Taxes.md"
    assert PLUGIN_MODEL in res.method
