"""Search over a small real vault: keyword (BM25), semantic (local model), hybrid, filters."""

import pytest

from smartcontext import Workspace
from smartcontext.errors import InvalidArgument

NOTES = {
    "garden/Tomatoes.md": "---\ntags: [garden, food]\n---\n# Tomatoes\n\nWater tomato plants deeply twice a week.\n",
    "garden/Roses.md": "# Roses\n\nPrune rose bushes in late winter. #garden\n",
    "work/Standup.md": "---\ntags: [work]\n---\n# Standup\n\nDaily standup notes: blockers, deploys, on-call.\n",
    "work/Budget.md": "# Budget\n\nQuarterly spending forecast for the platform team. #work/finance\n",
    "Cooking.md": "# Cooking\n\nA sauce from ripe red fruit of the nightshade family simmered with basil.\n",
}


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def vault(tmp_path_factory, request):
    from smartcontext.config import Config

    root = tmp_path_factory.mktemp("vault")
    for rel, text in NOTES.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    config = Config.load(root)
    if request.param == "postgres":
        config.store.url = request.getfixturevalue("pg_url")
        config.store.workspace = "search_vault"
    ws = Workspace.open(root, config)
    ws.index(embeddings=True)
    yield ws
    ws.close()
    if request.param == "postgres":
        from smartcontext.store.postgres import drop_workspace

        drop_workspace(config.store.url, "search_vault", clear_cache=True)


def test_keyword_ranks_by_bm25(vault):
    hits = vault.search("tomato plants water", mode="keyword")
    assert hits[0].path == "garden/Tomatoes.md"
    assert hits[0].signals == ["keyword"] and hits[0].heading == "Tomatoes"
    assert "tomato" in hits[0].snippet.lower()


def test_semantic_finds_meaning_without_shared_words(vault):
    hits = vault.search("tomato sauce recipe", mode="semantic", limit=3)
    assert "Cooking.md" in [h.path for h in hits]
    assert all(h.signals == ["semantic"] for h in hits)


def test_hybrid_fuses_both_signals(vault):
    hits, info = vault.search_with_info("pruning roses in winter", mode="hybrid")
    assert info["signals"] == ["keyword", "semantic"]
    assert hits[0].path == "garden/Roses.md"
    assert set(hits[0].signals) == {"keyword", "semantic"}


def test_filters_by_tag_path_and_score(vault):
    tagged = vault.search("notes plants forecast standup", tags=["work"], mode="keyword")
    assert {h.path for h in tagged} <= {"work/Standup.md", "work/Budget.md"}
    assert "work/Budget.md" in {h.path for h in tagged}  # nested tag work/finance counts as work
    in_garden = vault.search("winter week", paths=["garden"], mode="keyword")
    assert in_garden and all(h.path.startswith("garden/") for h in in_garden)
    assert vault.search("tomato", mode="keyword", min_score=1.01) == []


def test_similar_notes(vault):
    sims = vault.similar("garden/Tomatoes.md", limit=2)
    assert sims and "garden/Tomatoes.md" not in [h.path for h in sims]


def test_bad_search_arguments(vault):
    with pytest.raises(InvalidArgument):
        vault.search("x", mode="fuzzy")
    with pytest.raises(InvalidArgument):
        vault.search("  ")
    with pytest.raises(InvalidArgument):
        vault.search("x", limit=0)


def test_semantic_without_embeddings_is_a_clear_error(tmp_path, open_ws):
    (tmp_path / "a.md").write_text("# A\n\ngreetings from the harbour\n")
    ws = open_ws(tmp_path)
    ws.config.embeddings.model = "none"
    ws.index()
    with pytest.raises(InvalidArgument, match="embeddings"):
        ws.search("harbour", mode="semantic")
    hits, info = ws.search_with_info("harbour", mode="hybrid")
    assert hits and "keywords only" in info["note"]


def test_filters_apply_before_the_pool_is_cut(tmp_path, open_ws):
    # 300 notes match the query strongly; the 12 that pass each filter match weakly and
    # would all fall outside a global top-100 pool.
    for i in range(300):
        (tmp_path / f"loud{i}.md").write_text(f"# Loud {i}\n\nalpha alpha alpha alpha beacon\n")
    (tmp_path / "quiet").mkdir()
    for i in range(12):
        (tmp_path / "quiet" / f"q{i}.md").write_text(
            f"---\ntags: [rare]\n---\n# Quiet {i}\n\nalpha once, among many other words here {i}\n"
        )
    ws = open_ws(tmp_path)
    ws.config.embeddings.model = "none"
    ws.index()
    assert len(ws.search("alpha", mode="keyword", tags=["rare"], limit=10)) == 10
    assert len(ws.search("alpha", mode="keyword", paths=["quiet"], limit=10)) == 10
    ws.close()


def test_folder_filters_accept_dot_slash_and_the_whole_vault(vault):
    plain = [h.path for h in vault.search("winter week", paths=["garden"], mode="keyword")]
    assert plain and [h.path for h in vault.search("winter week", paths=["./garden/"], mode="keyword")] == plain
    everywhere = [h.path for h in vault.search("winter week forecast", mode="keyword")]
    assert [h.path for h in vault.search("winter week forecast", paths=["."], mode="keyword")] == everywhere

    def selected(paths):
        result = vault.context("pruning roses and watering tomatoes", max_tokens=2000, paths=paths)
        return [s.item.path for s in result.items]

    in_garden = selected(["garden"])
    assert in_garden and all(p.startswith("garden/") for p in in_garden)
    assert selected(["./garden"]) == in_garden
    assert selected(["."]) == selected(None)
