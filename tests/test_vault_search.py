"""Search tools against the real Workspace index (keyword signals; no embedding model needed),
on SQLite and on PostgreSQL."""

import json

import pytest

from smartcontext import Workspace
from smartcontext.vault import VaultTools


def call(result: dict) -> dict:
    """A tool's answer: a dict of plain JSON values with its success flag."""
    assert isinstance(result, dict) and isinstance(result["success"], bool)
    assert json.loads(json.dumps(result)) == result
    return result


NOTES = {
    "Projects/Budget.md": (
        "---\ntags: [finance]\n---\n# Budget\n## Vendors\nThe vendor invoices for the espresso machine are overdue.\n"
    ),
    "Projects/Roadmap.md": "# Roadmap\nShip the espresso ordering app in spring.\n",
    "Garden.md": "# Garden\nTomatoes need water daily. #outdoors\n",
}


@pytest.fixture
def vault(tmp_path, store_env):
    root = tmp_path / "vault"
    for rel, text in NOTES.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return root


@pytest.fixture
def workspace(vault):
    ws = Workspace.open(vault)
    ws.index(embeddings=False)
    yield ws
    ws.close()


def test_search_without_an_index_says_how_to_get_one(vault):
    tools = VaultTools(vault)
    for result in (tools.search_vault("espresso"), tools.keyword_search("espresso")):
        r = call(result)
        assert r["success"] is False and r["error"].startswith("search needs an index")


def test_keyword_search_returns_sections_with_source_heading_and_snippet(vault, workspace):
    r = call(VaultTools(vault, workspace=workspace).keyword_search("espresso invoices"))
    top = r["results"][0]
    assert top["source"] == "Projects/Budget.md"
    assert top["heading"] == "Budget > Vendors"
    assert "invoices" in top["content"]
    assert top["id"] == "Projects/Budget.md#Budget/Vendors"
    assert top["lines"] == [5, 6] and 0 < top["score"] <= 1


def test_search_vault_filters_by_folder_and_tags(vault, workspace):
    tools = VaultTools(vault, workspace=workspace)
    everywhere = {x["source"] for x in call(tools.search_vault("espresso"))["results"]}
    assert everywhere == {"Projects/Budget.md", "Projects/Roadmap.md"}
    assert call(tools.search_vault("tomatoes", folder="Projects")) == {
        "success": True, "message": "No results found for 'tomatoes'", "results": []}
    assert [x["source"] for x in call(tools.search_vault("tomatoes", folder="/"))["results"]] == ["Garden.md"]
    tagged = call(tools.search_vault("espresso", tags=["#finance"]))["results"]
    assert [x["source"] for x in tagged] == ["Projects/Budget.md"]
    assert call(tools.search_vault("water", tags=["outdoors"]))["results"][0]["source"] == "Garden.md"


def test_writes_reach_the_index(vault, workspace):
    tools = VaultTools(vault, workspace=workspace)
    assert call(tools.keyword_search("grinder"))["results"] == []
    call(tools.create_file("Inbox/Coffee", "# Coffee\nThe grinder arrived.\n"))
    assert call(tools.keyword_search("grinder"))["results"][0]["source"] == "Inbox/Coffee.md"
    call(tools.move_file("Inbox/Coffee.md", "Archive/"))
    assert [x["source"] for x in call(tools.keyword_search("grinder"))["results"]] == ["Archive/Coffee.md"]
    call(tools.append_to_file("Garden.md", "Basil likes the sun.\n"))
    assert call(tools.keyword_search("basil"))["results"][0]["source"] == "Garden.md"
    call(tools.update_frontmatter("Garden.md", append={"tags": ["herbs"]}))
    assert [x["source"] for x in call(tools.search_vault("basil", tags=["herbs"]))["results"]] == ["Garden.md"]


def test_search_argument_errors_and_index_failures(vault, workspace):
    tools = VaultTools(vault, workspace=workspace)
    assert call(tools.search_vault("  ")) == {"success": False, "error": "query cannot be empty"}
    assert "must be one of hybrid, keyword, semantic" in call(tools.search_vault("x", mode="fuzzy"))["error"]
    assert "at most 50" in call(tools.keyword_search("x", limit=500))["error"]
    assert call(tools.search_vault("x", folder="Nope")) == {"success": False, "error": "Folder not found: Nope"}
    assert "outside the vault" in call(tools.search_vault("x", folder="../.."))["error"]

    class FailingIndex:
        def search(self, query, **kwargs):
            raise RuntimeError("index is corrupt; run smartcontext index --rebuild")

    r = call(VaultTools(vault, workspace=FailingIndex()).search_vault("espresso"))
    assert r == {"success": False, "error": "Search failed: index is corrupt; run smartcontext index --rebuild"}
