"""Smart Connections reader: format, validation, incremental cache, search modes, tools.

Fixtures are real vaults written into tmp_path with `.smart-env/` files in the plugin's
format (small vectors whose geometry the tests choose). The tests at the end use the
real plugin output in ../shared/datasets and skip when it is absent.
"""

from __future__ import annotations

import json
import os
import re
import tarfile
import time
import zlib
from pathlib import Path

import numpy as np
import pytest

from smartcontext.errors import EmbeddingError, InvalidArgument, PathOutsideWorkspace, WorkspaceNotFound
from smartcontext.smart_connections import (
    DIFFERENT_MODEL,
    NO_EMBEDDINGS,
    NOT_CONFIGURED,
    NoteNotFound,
    SmartConnections,
    SmartConnectionsModelMismatch,
    SmartConnectionsNoEmbeddings,
    SmartConnectionsNotConfigured,
    render_search,
    render_similar,
    render_status,
    sc_search,
    sc_similar,
    sc_status,
    semantic_search_tool,
    similar_notes_tool,
)
from smartcontext.smart_connections.ajson import BLOCK, parse_ajson
from smartcontext.smart_connections.cache import VectorCache
from smartcontext.smart_connections.config import read_config
from smartcontext.notes import extract_tags
from smartcontext.smart_connections.notes import VaultNotes
from smartcontext.smart_connections.query_models import canonical_model_name, find_query_model, same_model
from smartcontext.smart_connections.store import ParseStore
from smartcontext.smart_connections.tools import forget_readers

MODEL = "TaylorAI/bge-micro-v2"
DIM = 16
DATASET = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "smart-connections-vault.tar.gz"


# -- building vaults ------------------------------------------------------------------


def unit(v) -> list[float]:
    v = np.asarray(v, dtype=np.float64)
    return [round(float(x), 8) for x in v / np.linalg.norm(v)]


rng = np.random.default_rng(7)
TOPIC = {name: rng.normal(size=DIM) for name in ("gpu", "food", "llm", "daily", "music")}
TOPIC = {k: v / np.linalg.norm(v) for k, v in TOPIC.items()}


def data_file_name(path: str) -> str:
    """The file the plugin keeps a note's entries in."""
    return re.sub(r"[\s/.]", "_", path) + ".ajson"


def line(full_key: str, value) -> str:
    return f"{json.dumps(full_key, ensure_ascii=False)}: {json.dumps(value, ensure_ascii=False)},"


def source_value(path: str, vec=None, model: str = MODEL, blocks: dict | None = None) -> dict:
    value = {
        "path": path,
        "embeddings": {model: {"vec": vec, "last_embed": {"hash": "h"}}} if vec is not None else {},
        "class_name": "SmartSource",
    }
    if blocks is not None:
        value["blocks"] = blocks
    return value


def block_value(key: str, lines: list[int], vec=None, model: str = MODEL) -> dict:
    return {
        "path": None,
        "key": key,
        "lines": lines,
        "embeddings": {model: {"vec": vec}} if vec is not None else {},
        "class_name": "SmartBlock",
    }


class VaultBuilder:
    def __init__(self, root: Path, model: str = MODEL, settings: bool = True):
        self.root = root
        self.env = root / ".smart-env"
        self.multi = self.env / "multi"
        self.multi.mkdir(parents=True)
        self.model = model
        if settings:
            (self.env / "smart_env.json").write_text(
                json.dumps({"smart_sources": {"embed_model": {"adapter": "transformers", "transformers": {"model_key": model}}}}),
                encoding="utf-8",
            )

    def note(self, path: str, text: str) -> None:
        p = self.root / path
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")

    def write(self, path: str, lines: list[str], *, crlf: bool = False) -> Path:
        f = self.multi / data_file_name(path)
        f.write_bytes(("\r\n" if crlf else "\n").join(lines).encode("utf-8"))
        return f

    def append(self, path: str, lines: list[str]) -> Path:
        f = self.multi / data_file_name(path)
        with f.open("a", encoding="utf-8") as fh:
            fh.write("\n" + "\n".join(lines))
        return f

    def standard_note(self, path: str, text: str, vec, blocks: list[tuple[str, list[int], object]] = ()) -> None:
        """A note, its source entry and its block entries (heading key, lines, vector)."""
        self.note(path, text)
        lines = [line(f"smart_sources:{path}", source_value(path, vec, self.model, {b[0]: b[1] for b in blocks}))]
        for sub, span, bvec in blocks:
            lines.append(line(f"smart_blocks:{path}{sub}", block_value(f"{path}{sub}", span, bvec, self.model)))
        self.write(path, lines)


GPU_NOTE = """---
tags: [ai, infra/gpu]
---
# GPU Scheduling

How GPUs are shared between jobs on a cluster.

## Kubernetes
The device plugin exposes GPUs to pods; DRA claims them.

## Slurm
Gres and partitions hand GPUs to batch jobs.
"""

COOKING_NOTE = """---
tags: food
---
# Cooking

## Pasta
Boil water, add salt, cook the spaghetti with tomato sauce.
"""

INFERENCE_NOTE = """# Inference

Serving large language models with batching. #ai/llm

```
#not-a-tag inside code
```
"""


def standard_vault(root: Path, **kw) -> VaultBuilder:
    b = VaultBuilder(root, **kw)
    gpu, food, llm, daily = TOPIC["gpu"], TOPIC["food"], TOPIC["llm"], TOPIC["daily"]
    b.standard_note(
        "Projects/GPU Scheduling.md", GPU_NOTE, unit(gpu),
        [("#GPU Scheduling", [4, 12], unit(gpu + 0.2 * llm)),
         ("#GPU Scheduling#Kubernetes", [8, 9], unit(gpu + 0.3 * daily)),
         ("#GPU Scheduling#Slurm", [11, 12], unit(gpu - 0.3 * daily))],
    )
    b.standard_note("Projects/Cooking.md", COOKING_NOTE, unit(food), [("#Cooking#Pasta", [6, 7], unit(food))])
    b.standard_note("Areas/Inference.md", INFERENCE_NOTE, unit(0.8 * gpu + 0.6 * llm))
    b.standard_note("Projects2/Other.md", "# Other\n\nGPU cluster budget notes.\n", unit(0.6 * gpu + daily))
    b.standard_note("Daily/2024-01-01.md", "# Monday\n\nWalked the dog. Wrote notes.\n", unit(daily))
    return b


# Readers made by ``reader`` below, closed after each test with the vault workspaces
# they opened for keyword search.
_made: list[SmartConnections] = []


@pytest.fixture(autouse=True)
def _fresh_readers():
    forget_readers()
    yield
    forget_readers()
    while _made:
        _made.pop().close()


# The one test here that needs the vault's own embeddings on.
NEEDS_EMBEDDINGS = {"test_keyword_fallback_refresh_keeps_an_index_with_vectors_embedded"}


@pytest.fixture(autouse=True)
def keyword_fallback(request, monkeypatch):
    """Without the plugin's model these tests pin the keyword-rerank fallback, which
    answers when the vault's own embeddings are off; with them on, the shipped model
    answers instead (tests/test_smart_connections_shipped.py)."""
    if request.node.name not in NEEDS_EMBEDDINGS:
        monkeypatch.setenv("SMARTCONTEXT_EMBEDDING_MODEL", "none")


def reader(root: Path, **kw) -> SmartConnections:
    kw.setdefault("use_hf_cache", False)
    kw.setdefault("sweep_interval", 0.0)
    kw.setdefault("cache_path", None)  # each reader starts cold unless a test says otherwise
    sc = SmartConnections(root, **kw)
    _made.append(sc)
    return sc


# -- the AJSON format -----------------------------------------------------------------


def test_parse_last_entry_wins_null_deletes_and_legacy_prefixes():
    v1, v2 = unit(TOPIC["gpu"]), unit(TOPIC["food"])
    text = "\n".join([
        line("smart_sources:a.md", source_value("a.md", v1)),
        line("smart_sources:b.md", source_value("b.md", v1)),
        line("smart_sources:a.md", source_value("a.md", v2)),  # replaces the first
        line("smart_sources:b.md", None),  # deletes b
        line("SmartSource:old.md", source_value("old.md", v1)),  # legacy collection name
        line("SmartBlock:old.md#H", block_value("old.md#H", [1, 3], v2)),
        line("smart_directories:dir", {"x": 1}),  # another collection: ignored
        "",
    ])
    p = parse_ajson(text, MODEL)
    keys = {r.key: r for r in p.records}
    assert set(keys) == {"a.md", "old.md", "old.md#H"}
    assert keys["old.md#H"].kind == BLOCK and keys["old.md#H"].lines == (1, 3) and keys["old.md#H"].path == "old.md"
    row = [r.key for r in p.records].index("a.md")
    assert np.allclose(p.vectors[row], v2, atol=1e-6)
    assert p.tombstones == ["b.md"]
    assert p.vectors.dtype == np.float32 and p.vectors.shape == (3, DIM)
    assert p.other_collections == 1 and p.bad_lines == 0


def test_parse_tolerates_crlf_blank_lines_missing_final_comma_and_several_entries_per_line():
    v = unit(TOPIC["gpu"])
    a = line("smart_sources:a.md", source_value("a.md", v))
    b = line("smart_blocks:a.md#H", block_value("a.md#H", [2, 4], v))
    c = line("smart_sources:c.md", source_value("c.md", v))[:-1]  # no trailing comma
    text = "\r\n\r\n" + a + b + "\r\n\r\n" + c + "\r\n"  # two entries on one line, as the plugin writes
    p = parse_ajson(text, MODEL)
    assert sorted(r.key for r in p.records) == ["a.md", "a.md#H", "c.md"]
    assert p.bad_lines == 0


def test_parse_counts_corrupt_lines_and_keeps_the_rest():
    v1, v2 = unit(TOPIC["gpu"]), unit(TOPIC["food"])
    good = line("smart_sources:a.md", source_value("a.md", v1))
    newer = line("smart_sources:a.md", source_value("a.md", v2))
    torn = newer[: len(newer) // 2]  # an append cut short: a.md keeps its previous state
    text = "\n".join([
        good,
        "this line is not json at all,",
        line("smart_sources:b.md", source_value("b.md", v2)) + ",",  # doubled comma
        torn,
        line("smart_sources:c.md", source_value("c.md", [1.0, "x"] + [0.0] * (DIM - 2))),  # bad numbers
    ])
    p = parse_ajson(text, MODEL)
    assert p.bad_lines == 2
    assert p.bad_vectors == 1
    keys = [r.key for r in p.records]
    assert sorted(keys) == ["a.md", "b.md"]
    assert np.allclose(p.vectors[keys.index("a.md")], v1, atol=1e-6)


def test_parse_skips_a_key_without_its_colon():
    # A key followed by something other than ":" failed with AttributeError (a regex
    # miss read as a match) instead of counting the line as bad.
    v = unit(TOPIC["gpu"])
    broken = line("smart_sources:a.md", source_value("a.md", v)).replace(": ", " ", 1)
    text = "\n".join([broken, "", line("smart_sources:b.md", source_value("b.md", v))])
    p = parse_ajson(text, MODEL)
    assert p.bad_lines == 1
    assert [r.key for r in p.records] == ["b.md"]


def test_parse_keeps_only_the_active_model_and_counts_every_model():
    value = source_value("a.md", unit(TOPIC["gpu"]))
    value["embeddings"]["other/model"] = {"vec": unit(np.ones(8))}
    p = parse_ajson(line("smart_sources:a.md", value) + "\n" + line("smart_sources:z.md", source_value("z.md")), MODEL)
    assert p.model_counts == {MODEL: 1, "other/model": 1}
    assert p.vectors.shape == (1, DIM)
    assert p.no_vector == 1  # z.md has no vector yet
    q = parse_ajson(line("smart_sources:a.md", value), "other/model")
    assert q.vectors.shape == (1, 8)


def test_parse_drops_blocks_the_note_no_longer_lists():
    v = unit(TOPIC["gpu"])
    text = "\n".join([
        line("smart_blocks:a.md#Old", block_value("a.md#Old", [1, 2], v)),
        line("smart_blocks:a.md#New", block_value("a.md#New", [1, 2], v)),
        line("smart_sources:a.md", source_value("a.md", v, blocks={"#New": [1, 2]})),
    ])
    p = parse_ajson(text, MODEL)
    assert sorted(r.key for r in p.records) == ["a.md", "a.md#New"]
    assert p.stale_blocks == 1


# -- validation -----------------------------------------------------------------------


def test_not_installed_gives_the_seed_message(tmp_path):
    (tmp_path / "note.md").write_text("# A\n")
    with pytest.raises(SmartConnectionsNotConfigured) as exc:
        reader(tmp_path).semantic_search("anything")
    assert str(exc.value) == NOT_CONFIGURED
    (tmp_path / ".smart-env").mkdir()  # a folder without settings or data is not enough
    with pytest.raises(SmartConnectionsNotConfigured):
        reader(tmp_path).similar_notes("note.md")
    with pytest.raises(SmartConnectionsNotConfigured) as exc:  # the registry answers its message
        semantic_search_tool(tmp_path, "anything")
    assert str(exc.value) == NOT_CONFIGURED
    st = reader(tmp_path).status()
    assert st.configured is False and st.error == NOT_CONFIGURED


def test_missing_vault_folder(tmp_path):
    with pytest.raises(WorkspaceNotFound):
        SmartConnections(tmp_path / "nope")


def test_no_embeddings_gives_the_seed_message(tmp_path):
    b = VaultBuilder(tmp_path)
    with pytest.raises(SmartConnectionsNoEmbeddings) as exc:  # multi/ empty
        reader(tmp_path).semantic_search("x")
    assert str(exc.value) == NO_EMBEDDINGS
    b.note("a.md", "# A\n")
    b.write("a.md", [line("smart_sources:a.md", source_value("a.md"))])  # imported, not embedded yet
    with pytest.raises(SmartConnectionsNoEmbeddings):
        reader(tmp_path).semantic_search("x")
    for f in b.multi.iterdir():
        f.unlink()
    b.multi.rmdir()  # settings present, no multi/ at all
    with pytest.raises(SmartConnectionsNoEmbeddings) as exc:
        similar_notes_tool(tmp_path, "a.md")
    assert str(exc.value) == NO_EMBEDDINGS


def test_wrong_model_names_it_in_strict_mode_and_falls_back_otherwise(tmp_path):
    standard_vault(tmp_path, model="acme/unknown-embedder")
    with pytest.raises(SmartConnectionsModelMismatch) as exc:
        reader(tmp_path, allow_fallback=False).semantic_search("kubernetes")
    assert str(exc.value) == DIFFERENT_MODEL.format(model="acme/unknown-embedder", supported=MODEL)
    assert "acme/unknown-embedder" in str(exc.value)
    with pytest.raises(SmartConnectionsModelMismatch, match="acme/unknown-embedder"):
        semantic_search_tool(tmp_path, "kubernetes", allow_fallback=False, use_hf_cache=False)
    # Default: still answer, say how, and name the model that could not be loaded.
    res = reader(tmp_path).semantic_search("kubernetes")
    assert res.mode == "keyword-rerank" and res.model_key == "acme/unknown-embedder"
    assert any("acme/unknown-embedder" in w for w in res.warnings)
    assert res.results and res.results[0].path == "Projects/GPU Scheduling.md"
    # similar_notes never needs a query model, even in strict mode.
    sim = reader(tmp_path, allow_fallback=False, model_key=None, embedders=[HashEmbedder("acme/unknown-embedder", DIM)])
    assert sim.similar_notes("Projects/GPU Scheduling.md").mode == "vectors"


def test_model_key_from_every_place_and_vectors_win_when_they_disagree(tmp_path):
    b = standard_vault(tmp_path, model="acme/stored-model")
    # Settings name another model; the newer registry names it too.
    (b.env / "smart_env.json").write_text(json.dumps({
        "smart_sources": {"embed_model": {"adapter": "ollama", "ollama": {"model_key": "nomic-embed-text"},
                                          "transformers": {"model_key": MODEL}}},
        "embedding_models": {"default_model_key": "transformers#1"},
    }))
    (b.env / "embedding_models").mkdir()
    (b.env / "embedding_models" / "embedding_models.ajson").write_text(
        line("embedding_models:transformers#1", {"model_key": "Snowflake/snowflake-arctic-embed-xs", "dims": 384, "max_tokens": 512}) + "\n"
    )
    cfg = read_config(tmp_path)
    assert cfg.configured_keys == ["Snowflake/snowflake-arctic-embed-xs", "nomic-embed-text", MODEL]
    assert cfg.info("Snowflake/snowflake-arctic-embed-xs").max_tokens == 512
    st = reader(tmp_path).status()
    assert st.model_key == "acme/stored-model" and st.notes == 5
    assert any("acme/stored-model" in w and "Snowflake" in w for w in st.warnings)


def test_older_plugin_layout_without_smart_env_json(tmp_path):
    b = standard_vault(tmp_path, settings=False)
    legacy = tmp_path / ".obsidian" / "plugins" / "smart-connections"
    legacy.mkdir(parents=True)
    (legacy / "data.json").write_text(json.dumps({"smart_sources": {"embed_model": {"model_key": MODEL}}}))
    cfg = read_config(tmp_path)
    assert not cfg.settings_found and cfg.configured_keys == [MODEL]
    assert "data.json" in cfg.models[0].source
    st = reader(tmp_path).status()
    assert st.configured and st.model_key == MODEL and st.notes == 5 and st.warnings == []
    for f in b.multi.iterdir():
        f.unlink()
    b.multi.rmdir()  # neither settings nor data in .smart-env: not configured
    assert reader(tmp_path).status().error == NOT_CONFIGURED


def test_configured_model_preferred_while_it_covers_half_the_vectors(tmp_path):
    b = VaultBuilder(tmp_path, model=MODEL)
    for i in range(4):
        value = source_value(f"n{i}.md", unit(rng.normal(size=8)), "acme/old")
        if i < 2:
            value["embeddings"][MODEL] = {"vec": unit(rng.normal(size=DIM))}
        b.note(f"n{i}.md", f"# N{i}\n")
        b.write(f"n{i}.md", [line(f"smart_sources:n{i}.md", value)])
    sc = reader(tmp_path)
    # acme/old has 4 vectors, the configured model 2: still at least half, so it wins.
    assert sc.status().model_key == MODEL and sc.status().notes == 2 and sc.status().dim == DIM
    forced = reader(tmp_path, model_key="acme/old").status()
    assert forced.notes == 4 and forced.dim == 8
    # Once the configured model covers less than half, the vectors decide.
    b.write("n0.md", [line("smart_sources:n0.md", source_value("n0.md", unit(rng.normal(size=8)), "acme/old"))])
    assert sc.status().model_key == "acme/old" and sc.status().notes == 4


# -- incremental cache ----------------------------------------------------------------


def test_first_search_loads_all_and_second_uses_the_cache(tmp_path):
    standard_vault(tmp_path)
    sc = reader(tmp_path, sweep_interval=60)
    first = sc.semantic_search("kubernetes")
    assert first.load["check"] == "cold"
    assert first.load["files_read"] == 5 and first.load["files_total"] == 5
    assert first.load["notes"] == 5 and first.load["blocks"] == 4
    second = sc.semantic_search("pasta")
    assert second.load["check"] == "cached"
    assert second.load["files_read"] == 0 and second.load["files_read_total"] == 5
    # A sweep (every file stat-ed) that finds nothing changed reads nothing either.
    third = reader(tmp_path, sweep_interval=0, watch=False)
    third.refresh()
    assert third.refresh().check == "swept" and third.refresh().files_read_total == 5


def test_appended_line_reloads_only_that_file(tmp_path):
    b = standard_vault(tmp_path)
    sc = reader(tmp_path)
    before = sc.similar_notes("Daily/2024-01-01.md", min_score=-1)
    assert before.results[0].path != "Projects/Cooking.md"
    folder_mtime = b.multi.stat().st_mtime_ns
    # The plugin re-embeds the daily note: it appends a line to the existing file.
    b.append("Daily/2024-01-01.md", [line("smart_sources:Daily/2024-01-01.md",
                                            source_value("Daily/2024-01-01.md", unit(TOPIC["food"])))])
    os.utime(b.multi, ns=(folder_mtime, folder_mtime))  # in-place writes leave the folder alone
    after = sc.similar_notes("Daily/2024-01-01.md", min_score=-1)
    assert after.load["check"] == "reloaded" and after.load["files_read"] == 1
    assert after.load["files_read_total"] == 6
    assert after.results[0].path == "Projects/Cooking.md"


def test_sweep_interval_trades_freshness_for_a_cheap_check(tmp_path):
    b = standard_vault(tmp_path)
    now = [100.0]
    cache = VectorCache(b.multi, preferred_keys=[MODEL], sweep_interval=5.0, clock=lambda: now[0], watch=False)
    cache.refresh()
    folder_mtime = b.multi.stat().st_mtime_ns
    b.append("Projects/Cooking.md", [line("smart_sources:Projects/Cooking.md", None)])
    os.utime(b.multi, ns=(folder_mtime, folder_mtime))
    assert cache.refresh().check == "cached" and cache.counts()[0] == 5  # inside the interval
    now[0] += 5.0
    st = cache.refresh()
    assert st.check == "reloaded" and st.files_read == 1 and st.deleted_keys == 1
    assert cache.counts() == (4, 4)
    # A new file changes the folder mtime: seen at once, whatever the interval.
    b.standard_note("New.md", "# New\n", unit(TOPIC["music"]))
    assert cache.refresh().check == "reloaded" and cache.counts()[0] == 5


def test_watch_reports_appends_at_once_without_sweeps(tmp_path):
    b = standard_vault(tmp_path)
    now = [100.0]
    cache = VectorCache(b.multi, preferred_keys=[MODEL], sweep_interval=3600, clock=lambda: now[0])
    cache.refresh()
    if not cache.watching:
        pytest.skip("no inotify watch on this platform")
    assert cache.refresh().check == "cached"
    folder_mtime = b.multi.stat().st_mtime_ns
    b.append("Projects/Cooking.md", [line("smart_sources:Projects/Cooking.md", None)])
    os.utime(b.multi, ns=(folder_mtime, folder_mtime))
    st = cache.refresh()  # same instant: no interval elapsed, the watch names the file
    assert (st.check, st.files_read, st.deleted_keys, st.watching) == ("reloaded", 1, 1, True)
    assert cache.counts() == (4, 4) and cache.refresh().check == "cached"
    (b.multi / data_file_name("Daily/2024-01-01.md")).unlink()
    b.standard_note("New.md", "# New\n", unit(TOPIC["music"]))
    st = cache.refresh()
    assert (st.check, st.files_read, st.files_removed) == ("reloaded", 1, 1) and cache.counts()[0] == 4
    # The folder replaced under the watch (the plugin reset its data): a sweep, and a new watch.
    for f in b.multi.iterdir():
        f.unlink()
    b.multi.rmdir()
    b.multi.mkdir()
    b.standard_note("Only.md", "# Only\n", unit(TOPIC["gpu"]))
    st = cache.refresh()
    assert st.check == "reloaded" and cache.counts()[0] == 1 and st.watching
    cache.close()
    assert not cache.watching


def test_deleted_file_entries_disappear(tmp_path):
    b = standard_vault(tmp_path)
    sc = reader(tmp_path)
    assert sc.status().notes == 5
    (b.multi / data_file_name("Projects/GPU Scheduling.md")).unlink()
    res = sc.semantic_search("kubernetes gpu", scope="both", min_score=-1)
    assert res.load["files_removed"] == 1 and res.load["files_read"] == 0
    assert all(h.path != "Projects/GPU Scheduling.md" for h in res.results)
    assert sc.status().notes == 4 and sc.status().blocks == 1


def test_rewritten_file_replaces_its_entries(tmp_path):
    b = standard_vault(tmp_path)
    sc = reader(tmp_path)
    sc.refresh()
    # The plugin compacts a file in place: fewer bytes, one line per key, a block gone.
    path = "Projects/GPU Scheduling.md"
    b.write(path, [line(f"smart_sources:{path}", source_value(path, unit(TOPIC["gpu"]), blocks={"#GPU Scheduling": [4, 12]})),
                   line(f"smart_blocks:{path}#GPU Scheduling", block_value(f"{path}#GPU Scheduling", [4, 12], unit(TOPIC["gpu"])))])
    st = sc.refresh()
    assert st.check == "reloaded" and st.files_read == 1
    assert sc.status().blocks == 2  # 1 left here + Pasta


def test_same_key_in_two_files_newest_wins_and_comes_back(tmp_path):
    b = standard_vault(tmp_path)
    cache = VectorCache(b.multi, preferred_keys=[MODEL], sweep_interval=0)
    cache.refresh()
    old = b.multi / "legacy_copy.ajson"
    old.write_text(line("smart_sources:Projects/Cooking.md", source_value("Projects/Cooking.md", unit(TOPIC["music"]))) + "\n")
    past = time.time_ns() - 10**10
    os.utime(old, ns=(past, past))
    os.utime(b.multi, ns=(past, past + 1))
    cache.refresh(force=True)
    row = cache.row_of("Projects/Cooking.md")
    assert np.allclose(cache.matrix()[row], unit(TOPIC["food"]), atol=1e-6)  # the newer file wins
    (b.multi / data_file_name("Projects/Cooking.md")).unlink()
    cache.refresh()
    row = cache.row_of("Projects/Cooking.md")
    assert row is not None and np.allclose(cache.matrix()[row], unit(TOPIC["music"]), atol=1e-6)


def test_rows_are_reused_and_compacted(tmp_path):
    b = VaultBuilder(tmp_path)
    for i in range(600):
        b.standard_note(f"n/{i}.md", f"# {i}\n", unit(rng.normal(size=DIM)))
    cache = VectorCache(b.multi, preferred_keys=[MODEL], sweep_interval=0)
    cache.refresh()
    assert cache.counts() == (600, 0) and cache.matrix().dtype == np.float32
    capacity = cache.memory_bytes()
    b.append("n/1.md", [line("smart_sources:n/1.md", source_value("n/1.md", unit(rng.normal(size=DIM))))])
    cache.refresh(force=True)
    assert cache.n_rows == 600  # the freed row was reused, nothing grew
    for i in range(450):
        (b.multi / data_file_name(f"n/{i}.md")).unlink()
    cache.refresh()
    assert cache.counts() == (150, 0) and cache.n_rows == 150  # compacted
    assert cache.memory_bytes() < capacity
    for i in range(450, 600):
        row = cache.row_of(f"n/{i}.md")
        assert cache.record(row).path == f"n/{i}.md"


def _tree_state(folder: Path) -> dict:
    return {p: (p.stat().st_mtime_ns, p.stat().st_size) for p in folder.rglob("*")}


def test_store_lets_a_new_process_skip_parsing(tmp_path):
    b = standard_vault(tmp_path)
    store = tmp_path / ".smartcontext" / "sc.sqlite"
    plugin_files = _tree_state(b.env)
    first = reader(tmp_path, cache_path=store)
    assert first.refresh().files_read == 5
    expected = [(h.path, h.score) for h in first.similar_notes("Projects/GPU Scheduling.md", min_score=-1).results]
    second = reader(tmp_path, cache_path=store)  # what a new CLI process does
    st = second.refresh()
    assert (st.check, st.files_read, st.files_restored) == ("cold", 0, 5)
    assert (st.notes, st.blocks) == (5, 4)
    assert [(h.path, h.score) for h in second.similar_notes("Projects/GPU Scheduling.md", min_score=-1).results] == expected
    assert _tree_state(b.env) == plugin_files  # the plugin's folder is only read, never written
    # A file changed since it was stored is parsed again; a deleted one leaves the store.
    b.append("Projects/Cooking.md", [line("smart_sources:Projects/Cooking.md",
                                          source_value("Projects/Cooking.md", unit(TOPIC["music"])))])
    (b.multi / data_file_name("Daily/2024-01-01.md")).unlink()
    st = reader(tmp_path, cache_path=store).refresh()
    assert (st.files_read, st.files_restored, st.notes) == (1, 3, 4)
    st = reader(tmp_path, cache_path=store).refresh()
    assert (st.files_read, st.files_restored) == (0, 4)


def test_store_is_per_model_and_a_broken_store_is_ignored(tmp_path):
    standard_vault(tmp_path)
    store = tmp_path / "cache" / "sc.sqlite"
    reader(tmp_path, cache_path=store).refresh()
    other = VectorCache(tmp_path / ".smart-env" / "multi", model_key="acme/other", store=ParseStore(store))
    st = other.refresh()
    assert (st.files_restored, st.files_read) == (0, 5)  # rows of another model are not reused
    store.write_bytes(b"this is not a database" * 100)
    for suffix in ("-wal", "-shm"):
        Path(str(store) + suffix).unlink(missing_ok=True)
    sc = reader(tmp_path, cache_path=store)
    st = sc.refresh()
    assert (st.files_read, st.notes) == (5, 5)
    assert any("not used" in w for w in sc.status().warnings)


def test_default_store_lives_beside_the_workspace_index(tmp_path):
    standard_vault(tmp_path)
    sc = SmartConnections(tmp_path, use_hf_cache=False)
    sc.refresh()
    assert sc.status().vector_store == str(tmp_path.resolve() / ".smartcontext" / "smart_connections.sqlite")
    assert SmartConnections(tmp_path, use_hf_cache=False).refresh().files_restored == 5


# -- search, filters, snippets --------------------------------------------------------


def test_filters_by_tags_and_folders(tmp_path):
    standard_vault(tmp_path)
    sc = reader(tmp_path)
    hits = lambda **kw: [h.path for h in sc.semantic_search("gpu", min_score=-1, limit=20, **kw).results]
    assert set(hits(tags=["ai"])) == {"Projects/GPU Scheduling.md", "Areas/Inference.md"}  # ai/llm is under ai
    assert set(hits(tags=["#INFRA/gpu"])) == {"Projects/GPU Scheduling.md"}
    assert set(hits(tags=["infra"])) == {"Projects/GPU Scheduling.md"}
    assert hits(tags=["not-a-tag"]) == []  # inside a code fence
    assert set(hits(paths=["Projects"])) == {"Projects/GPU Scheduling.md", "Projects/Cooking.md"}  # not Projects2
    assert set(hits(paths=["./Projects2/", "Daily"])) == {"Projects2/Other.md", "Daily/2024-01-01.md"}
    assert hits(paths=["Projects"], tags=["food"]) == ["Projects/Cooking.md"]
    blocks = sc.semantic_search("gpu", scope="blocks", min_score=-1, tags=["food"]).results
    assert [(h.kind, h.heading) for h in blocks] == [("block", "Cooking > Pasta")]


def test_block_results_carry_heading_lines_and_snippet(tmp_path):
    b = standard_vault(tmp_path)
    sc = reader(tmp_path)
    res = sc.similar_notes("Projects/Cooking.md", scope="blocks", min_score=-1, limit=10)
    kube = next(h for h in res.results if h.heading == "GPU Scheduling > Kubernetes")
    assert kube.kind == "block" and kube.lines == [8, 9] and kube.key == "Projects/GPU Scheduling.md#GPU Scheduling#Kubernetes"
    assert kube.snippet.startswith("The device plugin exposes GPUs")
    # The note was edited after the plugin stored the lines: the heading is found again.
    b.note("Projects/GPU Scheduling.md", "\n\n\n" + GPU_NOTE)
    kube = next(h for h in sc.similar_notes("Projects/Cooking.md", scope="blocks", min_score=-1).results
                if h.heading == "GPU Scheduling > Kubernetes")
    assert kube.lines == [11, 12] and kube.snippet.startswith("The device plugin")
    note = sc.semantic_search("pasta", min_score=-1, paths=["Projects/Cooking.md"]).results[0]
    assert note.kind == "note" and note.heading is None and note.snippet.startswith("## Pasta Boil water")


def test_min_score_limit_and_argument_checks(tmp_path):
    standard_vault(tmp_path)
    sc = reader(tmp_path)
    res = sc.semantic_search("kubernetes", limit=2, min_score=-1)
    assert len(res.results) == 2 and res.results[0].score >= res.results[1].score
    assert all(h.score >= 0.8 for h in sc.semantic_search("kubernetes", min_score=0.8).results)
    for bad in ({"limit": 0}, {"min_score": 2}, {"scope": "everything"}, {"tags": [3]}, {"paths": 5}):
        with pytest.raises(InvalidArgument):
            sc.semantic_search("x", **bad)
    with pytest.raises(InvalidArgument):
        sc.semantic_search("   ")
    with pytest.raises(InvalidArgument, match="limit"):
        semantic_search_tool(tmp_path, "x", limit=0)


def test_results_for_notes_deleted_from_the_vault_are_skipped(tmp_path):
    standard_vault(tmp_path)
    sc = reader(tmp_path)
    (tmp_path / "Areas" / "Inference.md").unlink()
    res = sc.similar_notes("Projects/GPU Scheduling.md", min_score=-1, limit=10)
    assert "Areas/Inference.md" not in [h.path for h in res.results]
    assert any("no longer exists" in w for w in res.warnings)


def test_paths_from_ajson_never_escape_the_vault(tmp_path):
    vault = tmp_path / "vault"
    b = standard_vault(vault)
    (tmp_path / "secret.md").write_text("# Secret\n\npassword=hunter2\n")
    b.write("evil", [line("smart_sources:../secret.md", source_value("../secret.md", unit(TOPIC["gpu"])))])
    sc = reader(vault)
    res = sc.similar_notes("Projects/GPU Scheduling.md", min_score=-1, limit=20)
    assert all("hunter2" not in h.snippet and h.path != "../secret.md" for h in res.results)
    with pytest.raises(PathOutsideWorkspace):
        sc.similar_notes("../secret.md")
    assert VaultNotes(vault).read_text("../secret.md") is None


# -- similar_notes --------------------------------------------------------------------


def test_similar_notes_from_stored_vectors(tmp_path):
    standard_vault(tmp_path)
    sc = reader(tmp_path)
    res = sc.similar_notes("Projects/GPU Scheduling", min_score=-1)  # .md may be left out
    assert res.mode == "vectors" and res.path == "Projects/GPU Scheduling.md"
    paths = [h.path for h in res.results]
    assert "Projects/GPU Scheduling.md" not in paths
    assert paths[0] == "Areas/Inference.md" and paths[-1] == "Projects/Cooking.md"
    assert res.results[0].score == pytest.approx(float(np.dot(unit(TOPIC["gpu"]), unit(0.8 * TOPIC["gpu"] + 0.6 * TOPIC["llm"]))), abs=1e-4)
    with pytest.raises(NoteNotFound):
        sc.similar_notes("Nowhere.md")


def test_similar_notes_uses_block_mean_without_a_note_vector(tmp_path):
    b = standard_vault(tmp_path)
    path = "Music.md"
    b.note(path, "# Music\n\n## Jazz\nSwing.\n")
    b.write(path, [line(f"smart_sources:{path}", source_value(path, None, blocks={"#Music#Jazz": [3, 4]})),
                   line(f"smart_blocks:{path}#Music#Jazz", block_value(f"{path}#Music#Jazz", [3, 4], unit(TOPIC["food"])))])
    res = reader(tmp_path).similar_notes(path, min_score=-1)
    assert res.results[0].path == "Projects/Cooking.md"
    assert any("mean of its 1 block" in w for w in res.warnings)


# -- query models -----------------------------------------------------------------------


class HashEmbedder:
    """A tiny bag-of-words embedder (hashed words), standing in for a user's model."""

    def __init__(self, name: str, dim: int = DIM):
        self.name = name
        self.dim = dim
        self.calls = 0

    def embed_query(self, text: str) -> np.ndarray:
        self.calls += 1
        v = np.zeros(self.dim, dtype=np.float32)
        for word in re.findall(r"\w+", text.lower()):
            v[zlib.crc32(word.encode()) % self.dim] += 1.0
        return v / max(float(np.linalg.norm(v)), 1e-9)


def model_vault(root: Path, embed, model: str) -> VaultBuilder:
    b = VaultBuilder(root, model=model)
    texts = {
        "gpu.md": "# GPUs\n\nkubernetes device plugin schedules gpu pods on nodes\n",
        "food.md": "# Food\n\npasta tomato sauce basil spaghetti dinner\n",
        "music.md": "# Music\n\njazz piano trumpet swing concert\n",
    }
    for path, text in texts.items():
        b.standard_note(path, text, [round(float(x), 8) for x in embed(text)])
    return b


def test_injected_embedder_answers_in_model_mode_only_for_its_model(tmp_path):
    emb = HashEmbedder("acme/hash-v1", 64)
    model_vault(tmp_path, emb.embed_query, "acme/hash-v1")
    sc = reader(tmp_path, embedders=[HashEmbedder("other/model", 64), emb])
    res = sc.semantic_search("spaghetti with tomato", min_score=0.1)
    assert res.mode == "model" and res.results[0].path == "food.md"
    assert set(res.results[0].signals) == {"cosine"}
    calls = emb.calls
    again = sc.semantic_search("spaghetti with tomato", min_score=0.1, scope="both")
    assert emb.calls == calls and again.results[0].path == "food.md"  # the query vector is reused
    # An embedder for another model is never used: its vectors live in another space.
    res = reader(tmp_path, embedders=[HashEmbedder("other/model", 64)]).semantic_search("spaghetti tomato", min_score=0)
    assert res.mode == "keyword-rerank"
    assert res.results[0].path == "food.md" and set(res.results[0].signals) == {"cosine", "keyword"}


def test_embedder_with_the_wrong_dimension_is_refused(tmp_path):
    emb = HashEmbedder("acme/hash-v1", 64)
    model_vault(tmp_path, emb.embed_query, "acme/hash-v1")
    res = reader(tmp_path, embedders=[HashEmbedder("acme/hash-v1", 32)]).semantic_search("pasta", min_score=0)
    assert res.mode == "keyword-rerank"
    assert any("32-d" in w and "64-d" in w for w in res.warnings)
    with pytest.raises(EmbeddingError, match="32-d") as exc:
        reader(tmp_path, embedders=[HashEmbedder("acme/hash-v1", 32)], allow_fallback=False).semantic_search("pasta")
    assert not isinstance(exc.value, SmartConnectionsModelMismatch)


def test_model_names_compare_across_spellings():
    assert same_model("TaylorAI/bge-micro-v2", "onnx:bge-micro-v2:ab12cd:mean:512")
    assert same_model("local:all-MiniLM-L6-v2-int8", "Xenova/all-MiniLM-L6-v2")
    assert same_model("all-minilm:latest", "sentence-transformers/all-MiniLM-L6-v2")
    assert not same_model("TaylorAI/bge-micro-v2", "TaylorAI/gte-tiny")
    assert canonical_model_name("Snowflake/snowflake-arctic-embed-xs") == "snowflake-arctic-embed-xs"


def _minilm_files() -> tuple[Path, Path]:
    from smartcontext.embeddings.local_onnx import default_model_files

    try:
        return default_model_files()
    except Exception as exc:  # the carrier packages are project dependencies
        pytest.skip(f"bundled MiniLM files unavailable: {exc}")


def test_local_onnx_folder_in_models_dir_and_hf_cache(tmp_path, monkeypatch):
    model_file, tokenizer = _minilm_files()
    models = tmp_path / "models" / "acme" / "mini-embed"
    (models / "onnx").mkdir(parents=True)
    (models / "onnx" / "model.onnx").symlink_to(model_file)
    (models / "tokenizer.json").symlink_to(tokenizer)
    found = find_query_model("acme/mini-embed", models_dirs=[tmp_path / "models"], use_hf_cache=False, use_bundled=False)
    assert found.available and "mini-embed" in found.source
    vault = tmp_path / "vault"
    model_vault(vault, found.embedder.embed_query, "acme/mini-embed")
    res = reader(vault, models_dirs=[tmp_path / "models"]).semantic_search("a jazz concert with a trumpet", min_score=0)
    assert res.mode == "model" and res.results[0].path == "music.md"
    # The same files in a Hugging Face cache layout, found through HF_HUB_CACHE.
    snap = tmp_path / "hub" / "models--acme--mini-embed" / "snapshots" / "abc123"
    snap.mkdir(parents=True)
    (snap / "model.onnx").symlink_to(model_file)
    (snap / "tokenizer.json").symlink_to(tokenizer)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    res = reader(vault, use_hf_cache=True).semantic_search("pasta with basil", min_score=0)
    assert res.mode == "model" and res.results[0].path == "food.md"
    st = reader(vault, use_hf_cache=True).status()
    assert st.query_model["available"] and "abc123" in st.query_model["source"] and st.search_mode == "model"


def test_vault_embedded_with_the_bundled_model_is_searched_in_model_mode(tmp_path):
    _minilm_files()
    from smartcontext.embeddings.local_onnx import default_embedder

    model_vault(tmp_path, default_embedder().embed_query, "Xenova/all-MiniLM-L6-v2")
    res = reader(tmp_path).semantic_search("kubernetes gpu nodes", min_score=0)
    assert res.mode == "model" and res.results[0].path == "gpu.md"


def test_injected_keyword_candidates_drive_the_rerank(tmp_path):
    standard_vault(tmp_path)
    calls = []

    def candidates(query, k):
        calls.append((query, k))
        return [("Projects/Cooking.md", 7.0)]

    res = reader(tmp_path, keyword_candidates=candidates).semantic_search("anything at all", min_score=-1)
    assert calls and calls[0][0] == "anything at all"
    assert res.mode == "keyword-rerank" and res.results[0].path == "Projects/Cooking.md"
    assert res.results[0].signals == {"cosine": pytest.approx(1.0, abs=1e-4), "keyword": 1.0}


def test_keyword_rerank_finds_related_notes_without_the_words(tmp_path):
    standard_vault(tmp_path)
    res = reader(tmp_path).semantic_search("slurm partitions", min_score=-1, limit=5)
    paths = [h.path for h in res.results]
    assert res.mode == "keyword-rerank" and paths[0] == "Projects/GPU Scheduling.md"
    # Inference.md never says "slurm" but sits next to the hit in vector space.
    assert paths.index("Areas/Inference.md") < paths.index("Projects/Cooking.md")
    none = reader(tmp_path).semantic_search("zzzz qqqq")
    assert none.results == [] and any("no note containing" in w for w in none.warnings)


def test_keyword_rerank_searches_only_the_notes_with_vectors(tmp_path):
    # Notes the plugin never embedded can hold the query's words more often than any
    # embedded note; the keyword search is scoped to the embedded notes' sections, so
    # they cannot crowd those out of the candidates (a global top 200 would be all theirs).
    standard_vault(tmp_path)
    for i in range(250):
        note = tmp_path / "Unembedded" / f"Slurm {i}.md"
        note.parent.mkdir(exist_ok=True)
        note.write_text(f"# Slurm {i}\n\nslurm partitions slurm partitions slurm.\n")
    res = reader(tmp_path).semantic_search("slurm partitions", min_score=-1, limit=3)
    assert res.mode == "keyword-rerank" and res.results[0].path == "Projects/GPU Scheduling.md"
    assert not any(h.path.startswith("Unembedded/") for h in res.results)


def test_keyword_index_follows_note_edits(tmp_path):
    b = standard_vault(tmp_path)
    sc = reader(tmp_path)
    assert sc.semantic_search("bagpipes", min_score=-1).results == []
    b.note("Daily/2024-01-01.md", "# Monday\n\nPractised the bagpipes.\n")
    assert sc.semantic_search("bagpipes", min_score=-1).results[0].path == "Daily/2024-01-01.md"


def test_inline_tags_ignore_code_headings_and_numbers():
    # The notes core's scanner, which the reader's tag filter uses.
    lines = ["# Heading", "text #a/b and `#code` and #123 and url http://x.com/#frag", "```", "#fenced", "```", "#ok-tag."]
    assert set(extract_tags("\n".join(lines))) == {"a/b", "ok-tag"}


# -- tools and CLI functions ------------------------------------------------------------


def test_tool_and_cli_functions(tmp_path):
    standard_vault(tmp_path)
    out = semantic_search_tool(tmp_path, "kubernetes", limit=3, minScore=-1, tags=["ai"], scope="both",
                               use_hf_cache=False)
    assert "success" not in out and out["mode"] == "keyword-rerank" and out["count"] == len(out["results"]) <= 3
    # heading and lines only where a hit has them; the plugin's internals stay out
    assert all({"path", "score", "kind", "snippet"} <= set(hit) <= {"path", "score", "kind", "snippet", "heading",
                                                                 "lines"} for hit in out["results"])
    assert any("heading" in hit for hit in out["results"]) and "load" not in out
    out = similar_notes_tool(tmp_path, "Projects/Cooking.md", minScore=-1, use_hf_cache=False)
    assert out["mode"] == "vectors" and out["results"] and json.loads(json.dumps(out)) == out
    with pytest.raises(NoteNotFound):
        similar_notes_tool(tmp_path, "missing.md")

    res = sc_search("kubernetes", tmp_path, min_score=-1, use_hf_cache=False)
    text = render_search(res)
    assert "mode: keyword-rerank" in text and "Projects/GPU Scheduling.md" in text
    similar = render_similar(sc_similar("Projects/GPU Scheduling.md", tmp_path, min_score=-1)).splitlines()
    assert similar[0].startswith("4 note(s) similar to Projects/GPU Scheduling.md - mode: vectors")
    assert "1. 0.803  Areas/Inference.md" in similar[1]
    assert not any("GPU Scheduling.md" in row for row in similar[1:])
    st = sc_status(tmp_path)
    assert st.configured and st.notes == 5 and st.blocks == 4 and st.model_key == MODEL
    assert "notes: 5" in render_status(st) and "keyword-rerank" in render_status(st)
    assert json.loads(json.dumps(res.to_dict()))["results"][0]["path"] == res.results[0].path


def test_status_counts_and_memory(tmp_path):
    b = standard_vault(tmp_path)
    b.append("Projects/Cooking.md", ["garbage that is not an entry,"])
    st = reader(tmp_path).status()
    assert st.bad_lines == 1 and st.files == 5 and st.stored_models == {MODEL: 9}
    assert st.dim == DIM and st.vector_bytes >= 9 * DIM * 4
    assert st.last_load["check"] == "cold"


# -- the real plugin output (skipped without ../shared/datasets) ----------------------------


@pytest.fixture(scope="module")
def real_vault(tmp_path_factory) -> Path:
    if not DATASET.is_file():
        pytest.skip(f"dataset not found: {DATASET}")
    root = tmp_path_factory.mktemp("scvault")
    with tarfile.open(DATASET) as tar:
        tar.extractall(root, filter="data")
    return root


def test_real_vault_loads_all_notes_and_blocks(real_vault):
    sc = reader(real_vault)
    st = sc.status()
    assert st.error is None and st.model_key == MODEL and st.dim == 384
    assert st.files == 274 and st.stored_models == {MODEL: 1301}
    assert st.notes == 273 and st.blocks == 1026 and st.stale_blocks == 2
    assert st.bad_lines == 0
    assert st.configured_models[0]["max_tokens"] == 512
    cache = sc._cache
    lines = [cache.record(r).lines for r in np.flatnonzero(cache.alive()) if cache.record(r).kind == BLOCK]
    assert len(lines) == 1026 and all(l is not None and l[0] <= l[1] for l in lines)
    assert cache.matrix().dtype == np.float32
    assert np.allclose(np.linalg.norm(cache.matrix()[cache.alive()], axis=1), 1.0, atol=1e-4)


def test_real_vault_similar_notes_are_sensible(real_vault):
    sc = reader(real_vault)
    res = sc.similar_notes("03-Concepts/Quantization.md", limit=8)
    assert res.mode == "vectors" and len(res.results) == 8
    text = " ".join(h.path for h in res.results).lower()
    assert any(w in text for w in ("quant", "inference", "cost", "optimization"))
    res = sc.similar_notes("05-Resources/Papers/Attention Is All You Need.md", limit=5)
    assert "03-Concepts/Attention.md" in [h.path for h in res.results]


def test_real_vault_fallback_search(real_vault):
    sc = reader(real_vault)
    res = sc.semantic_search("gpu scheduling on kubernetes", limit=5, scope="both")
    assert res.mode == "keyword-rerank" and len(res.results) == 5
    assert any("kubernetes" in h.path.lower() for h in res.results)
    blocks = [h for h in res.results if h.kind == "block"]
    assert all(h.heading and h.lines and h.snippet for h in blocks)
    res = sc.semantic_search("attention transformer paper", limit=5, paths=["05-Resources/Papers"])
    assert res.results and all(h.path.startswith("05-Resources/Papers/") for h in res.results)


def test_store_tables_are_a_migration_set_and_an_old_format_store_is_kept(tmp_path):
    import sqlite3

    from smartcontext.smart_connections.store import MIGRATIONS

    standard_vault(tmp_path)
    store = tmp_path / "sc.sqlite"
    reader(tmp_path, cache_path=store).refresh()
    db = sqlite3.connect(store)
    assert MIGRATIONS.applied(db) == ["m001_files"]
    # What the wipe-on-change versions left behind: the same rows plus an "info" table,
    # and no migration record. Its rows are still valid and are used.
    db.execute("DELETE FROM _migrations")
    db.execute("CREATE TABLE info(key TEXT PRIMARY KEY, value TEXT)")
    db.execute("INSERT INTO info VALUES ('format', '1')")
    db.commit()
    db.close()
    st = reader(tmp_path, cache_path=store).refresh()
    assert (st.files_read, st.files_restored) == (0, 5)
    db = sqlite3.connect(store)
    assert db.execute("SELECT name FROM sqlite_master WHERE name = 'info'").fetchone() is None
    # A store written by a newer version is not touched: the reader parses instead and says so.
    db.execute("INSERT INTO _migrations VALUES ('smart_connections', 'm999_future', 0)")
    db.commit()
    db.close()
    sc = reader(tmp_path, cache_path=store)
    assert sc.refresh().files_read == 5
    assert any("newer Smart Context" in w for w in sc.status().warnings)


def test_keyword_fallback_uses_the_workspace_index(tmp_path):
    from smartcontext import Workspace

    standard_vault(tmp_path)
    res = reader(tmp_path).semantic_search("slurm partitions", min_score=-1)
    assert res.mode == "keyword-rerank" and res.results[0].path == "Projects/GPU Scheduling.md"
    # The answer came from the vault's workspace index, which now exists on disk and
    # holds the notes; no other keyword index is kept.
    ws = Workspace.open(tmp_path)
    try:
        assert ws.has_index
        hits = ws.search("slurm", mode="keyword")
        assert hits and hits[0].path == "Projects/GPU Scheduling.md"
    finally:
        ws.close()
    # A vault whose index cannot be written still answers by keyword-rerank's warning,
    # not by a crash.
    locked = tmp_path / "locked"
    standard_vault(locked)
    (locked / ".smartcontext").mkdir()
    (locked / ".smartcontext" / "index.db").write_bytes(b"not a database" * 100)
    res = reader(locked).semantic_search("slurm partitions", min_score=-1)
    assert res.results == [] and any("keyword search over the vault's index failed" in w for w in res.warnings)


def test_a_server_can_lend_its_own_workspace_to_the_keyword_fallback(tmp_path):
    from smartcontext import Workspace

    standard_vault(tmp_path)
    ws = Workspace.open(tmp_path)
    ws.index(embeddings=False)
    lent = []

    def ready_workspace():
        lent.append(ws)
        return ws

    try:
        sc = reader(tmp_path, workspace=ready_workspace)
        res = sc.semantic_search("slurm partitions", min_score=-1)
        assert res.mode == "keyword-rerank" and res.results[0].path == "Projects/GPU Scheduling.md"
        assert lent and sc._workspace is None  # no second workspace opened
        assert sc.workspace() is ws
    finally:
        ws.close()


def test_keyword_fallback_refresh_keeps_an_index_with_vectors_embedded(tmp_path):
    (tmp_path / "Roses.md").write_text("# Roses\n\nPrune rose bushes in late winter.\n")
    sc = reader(tmp_path)
    try:
        ws = sc.workspace()
        ws.index(embeddings=True)
        before = ws.store.counts()
        assert before["vectors"] == before["items"] > 0
        (tmp_path / "Tomatoes.md").write_text("# Tomatoes\n\nWater tomato plants deeply twice a week.\n")
        assert sc._ready_workspace(force=True) is ws
        after = ws.store.counts()
        assert after["items"] > before["items"]
        assert after["vectors"] == after["items"]  # the new note was embedded too
    finally:
        sc.close()


def test_parse_counts_vectors_of_the_wrong_size_and_with_nan():
    v1 = unit(TOPIC["gpu"])
    text = "\n".join([
        line("smart_sources:a.md", source_value("a.md", v1)),
        line("smart_sources:b.md", source_value("b.md", v1 + [0.5])),  # one number too many
        line("smart_sources:c.md", source_value("c.md", [float("nan")] + v1[1:])),
        line("smart_sources:d.md", source_value("d.md", v1[:-1])),  # one too few
    ])
    p = parse_ajson(text, MODEL, DIM)
    assert [r.key for r in p.records] == ["a.md"]
    assert p.bad_vectors == 3
