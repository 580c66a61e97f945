"""Smart Connections as a server serves it: one reader per server, kept fresh between calls.

In process through the tool registry (the handlers the MCP and HTTP servers call), where
the reader and its parse store can be looked at, and over MCP with the SDK's own client.
"""

from __future__ import annotations

import time

import anyio
import numpy as np
import pytest
from test_mcp_server import make_folder, payload, run, stdio_session
from test_smart_connections import TOPIC, data_file_name, line, source_value, standard_vault, unit

from smartcontext.smart_connections.ajson import BLOCK, SOURCE
from smartcontext.smart_connections.cache import VectorCache
from smartcontext.tools import ToolRegistry
from smartcontext.tools.smart_connections import READER_KEY

GPU = "Projects/GPU Scheduling.md"
COOKING = "Projects/Cooking.md"
INFERENCE = "Areas/Inference.md"


@pytest.fixture(autouse=True)
def _no_workspace_embeddings(monkeypatch):
    monkeypatch.setenv("SMARTCONTEXT_EMBEDDING_MODEL", "none")


def similar(registry: ToolRegistry, path: str) -> dict:
    answer = registry.call("similar_notes", {"path": path, "minScore": -1, "limit": 10})
    assert answer["success"], answer
    return answer


def until(check, seconds: float = 3.0):
    """``check()`` until it returns something true; without an inotify watch the reader
    sees an append at its next stat sweep (one second apart), so allow for a few."""
    deadline = time.monotonic() + seconds
    while True:
        found = check()
        if found or time.monotonic() > deadline:
            return found
        time.sleep(0.1)


def test_the_server_keeps_one_reader_and_sees_edits_made_between_calls(tmp_path):
    vault = standard_vault(tmp_path)
    registry = ToolRegistry.open(tmp_path)
    try:
        first = similar(registry, GPU)
        reader = registry.context.shared(READER_KEY, lambda: pytest.fail("the first call kept no reader"))
        assert reader.store is not None and reader.store.loads == 1
        assert COOKING not in [r["path"] for r in first["results"][:2]]

        second = similar(registry, GPU)
        searched = registry.call("semantic_search", {"query": "slurm partitions", "minScore": -1})
        assert searched["success"], searched
        assert registry.context.shared(READER_KEY, lambda: None) is reader
        assert reader.store.loads == 1  # neither call reloaded the vectors
        assert second["results"] == first["results"]

        # The plugin re-embeds Cooking close to the GPU note (an append, as it saves),
        # and the user edits the Inference note's text.
        vault.append(COOKING, [line(f"smart_sources:{COOKING}", source_value(COOKING, unit(TOPIC["gpu"])))])
        (tmp_path / INFERENCE).write_text("# Inference\n\nContinuous batching with paged attention.\n")

        def edited():
            answer = similar(registry, GPU)
            snippets = {r["path"]: r["snippet"] for r in answer["results"]}
            return answer if answer["results"][0]["path"] == COOKING and "paged attention" in snippets[INFERENCE] else None

        assert until(edited), similar(registry, GPU)
        assert registry.context.shared(READER_KEY, lambda: None) is reader and reader.store.loads == 1
    finally:
        registry.close()
    assert not reader._cache.watching  # the server's end closed the reader's folder watch


def test_note_rows_are_ranked_from_a_copy_that_follows_changes(tmp_path):
    vault = standard_vault(tmp_path)
    cache = VectorCache(vault.multi, preferred_keys=[vault.model])
    cache.refresh()
    q = np.asarray(unit(TOPIC["gpu"] + TOPIC["llm"]), dtype=np.float32)

    def check() -> None:
        full = cache.dot(q)
        for kind in (SOURCE, BLOCK):
            scoped = cache.dot(q, kind)
            rows = cache.alive() & (cache.kinds() == kind)
            assert np.allclose(scoped[rows], full[rows]) and np.isneginf(scoped[~rows]).all()

    check()
    notes, blocks = cache.counts()
    vault.append(COOKING, [line(f"smart_sources:{COOKING}", source_value(COOKING, unit(TOPIC["gpu"])))])
    (vault.multi / data_file_name("Daily/2024-01-01.md")).unlink()
    cache.refresh(force=True)
    check()
    assert cache.counts() == (notes - 1, blocks)
    cooking = cache.row_of(COOKING)
    assert cache.dot(q, SOURCE)[cooking] == pytest.approx(float(q @ np.asarray(unit(TOPIC["gpu"]))), abs=1e-5)
    cache.close()


def test_similar_notes_over_mcp_sees_a_re_embedded_note_on_the_next_call(tmp_path):
    folder = make_folder(tmp_path / "vault", smart_connections=True)
    taxes = folder / ".smart-env" / "multi" / "notes_Taxes_md.ajson"
    assert taxes.is_file()

    async def scenario() -> None:
        async with stdio_session(folder) as session:
            async def similar_paths() -> list[str]:
                data = payload(await session.call_tool("similar_notes", {"path": "notes/Gardening.md"}))
                assert data["success"], data
                return [r["path"] for r in data["results"]]

            assert await similar_paths() == ["notes/Watering.md"]
            assert await similar_paths() == ["notes/Watering.md"]
            # The plugin saves Taxes again, now next to Gardening.
            vec = [1.0, 0.1, 0.0, 0.0]
            norm = sum(x * x for x in vec) ** 0.5
            with taxes.open("a", encoding="utf-8") as fh:
                fh.write(line("smart_sources:notes/Taxes.md",
                              {"path": "notes/Taxes.md",
                               "embeddings": {"TaylorAI/bge-micro-v2": {"vec": [x / norm for x in vec]}}}) + "\n")
            deadline = time.monotonic() + 3
            paths = await similar_paths()
            while paths[0] != "notes/Taxes.md" and time.monotonic() < deadline:
                await anyio.sleep(0.1)
                paths = await similar_paths()
            assert paths == ["notes/Taxes.md", "notes/Watering.md"]

    run(scenario)


def test_the_tools_and_the_library_accept_and_refuse_the_same_arguments(tmp_path):
    # One declaration (the vault-semantic options) makes the tools' schemas and checks the
    # library's arguments, which `smartcontext sc search/similar` pass on as given.
    from smartcontext.errors import InvalidArgument
    from smartcontext.smart_connections import SmartConnections

    standard_vault(tmp_path)
    registry = ToolRegistry.open(tmp_path)
    sc = SmartConnections(tmp_path, use_hf_cache=False, cache_path=None)
    cases = [
        ({"limit": 500}, True), ({"limit": 1001}, False), ({"limit": 0}, False), ({"minScore": -1}, True),
        ({"minScore": 1.5}, False), ({"scope": "both"}, True), ({"scope": "all"}, False),
        ({"paths": ["Projects"]}, True), ({"tags": ["t"] * 101}, False), ({"paths": ["p" * 1001]}, False),
    ]
    try:
        for tool, first, call in (
            ("semantic_search", {"query": "slurm partitions"}, sc.semantic_search),
            ("similar_notes", {"path": GPU}, sc.similar_notes),
        ):
            for args, accepted in cases:
                if tool == "similar_notes" and ("tags" in args or "paths" in args):
                    continue  # not arguments of similar_notes
                answer = registry.call(tool, {**first, **args})
                assert answer["success"] is accepted, (tool, args, answer)
                kwargs = {("min_score" if k == "minScore" else k): v for k, v in args.items()}
                try:
                    call(*first.values(), **kwargs)
                    took = True
                except InvalidArgument:
                    took = False
                assert took is accepted, (tool, args)
        long_query = "slurm partitions " * 1000  # a pasted page is a normal question
        assert registry.call("semantic_search", {"query": long_query, "minScore": -1})["success"]
        assert sc.semantic_search(long_query, min_score=-1).results
    finally:
        sc.close()
        registry.close()
