import json
import os

import pytest

import smartcontext.vault.base as vault_base
from smartcontext.vault import VaultTools


def call(result: dict) -> dict:
    """A tool's answer: a dict of plain JSON values with its success flag."""
    assert isinstance(result, dict) and isinstance(result["success"], bool)
    assert json.loads(json.dumps(result)) == result
    return result


NOTES = {
    "Projects/Plan.md": "# Plan\nSee [[Budget]] and [[Areas/Team|the team]].\n",
    "Projects/Budget.md": "---\nup: '[[Plan]]'\n---\n# Budget\n![[chart.png]]\n[[Budget#Totals]] [[#Local]]\n",
    "Areas/Team.md": "# Team\n[Plan](../Projects/Plan.md) and [[Missing Note]]\n```\n[[Budget]]\n```\n`[[Budget]]`\n",
    "Daily/2024-01-05.md": "Met about [[plan#Goals|the plan]] and [[Missing Note]].\n",
    "Archive/Old/Plan.md": "# Old plan\n[[Plan]] here resolves to this very note (same folder first).\n",
    "Index.md": "[[projects/budget]] ![[Team]]\n",
    "chart.png": "binary-ish",
}


@pytest.fixture
def vault(tmp_path):
    root = tmp_path / "vault"
    for rel, text in NOTES.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    (root / ".trash").mkdir()
    (root / ".trash" / "old.md").write_text("[[Budget]]")  # hidden: never scanned
    return root


@pytest.fixture
def tools(vault):
    return VaultTools(vault)


def test_backlinks_by_name_and_path(tools):
    r = call(tools.find_backlinks("Budget"))
    # Plan ([[Budget]]), Budget itself excluded, Index ([[projects/budget]]); not the code in Team
    assert r == {"success": True, "results": ["Index.md", "Projects/Plan.md"], "path": "Projects/Budget.md"}
    assert call(tools.find_backlinks("Projects/Budget.md"))["results"] == ["Index.md", "Projects/Plan.md"]
    assert call(tools.find_backlinks("[[Budget]]"))["results"] == ["Index.md", "Projects/Plan.md"]


def test_backlinks_count_markdown_links_headings_aliases_and_properties(tools):
    r = call(tools.find_backlinks("Plan"))
    assert r["path"] == "Projects/Plan.md"
    # Team: relative markdown link; Daily: [[plan#Goals|...]]; Budget: link in a property;
    # Archive/Old/Plan.md's [[Plan]] resolves to its own folder's Plan (itself), so it is not one.
    assert r["results"] == ["Areas/Team.md", "Daily/2024-01-05.md", "Projects/Budget.md"]


def test_backlinks_include_embeds_of_attachments(tools):
    assert call(tools.find_backlinks("chart.png"))["results"] == ["Projects/Budget.md"]
    assert call(tools.find_backlinks("Team"))["results"] == ["Index.md", "Projects/Plan.md"]


def test_backlinks_to_a_note_that_does_not_exist_yet(tools):
    r = call(tools.find_backlinks("Missing Note"))
    assert r["success"] and r["results"] == ["Areas/Team.md", "Daily/2024-01-05.md"]
    assert "not a note in the vault yet" in r["message"]


def test_no_backlinks_and_bad_input(tools):
    assert call(tools.find_backlinks("Index")) == {
        "success": True, "message": "No backlinks found to [[Index]]", "results": [], "path": "Index.md"}
    assert call(tools.find_backlinks("   ")) == {"success": False, "error": "note_name cannot be empty"}
    assert call(tools.find_backlinks("../etc/passwd"))["success"] is False


def test_outlinks_resolve_to_paths_and_list_unresolved(tools):
    r = call(tools.find_outlinks("Areas/Team.md"))
    assert r == {"success": True, "results": ["Missing Note", "Projects/Plan.md"],
                 "unresolved": ["Missing Note"], "path": "Areas/Team.md"}
    budget = call(tools.find_outlinks("Budget"))  # by name; self links are not outlinks
    assert budget["results"] == ["Projects/Plan.md", "chart.png"] and budget["unresolved"] == []
    assert call(tools.find_outlinks("Daily/2024-01-05"))["results"] == ["Missing Note", "Projects/Plan.md"]


def test_outlinks_none_and_missing(tools, vault):
    (vault / "Lonely.md").write_text("# Lonely\nno links, `[[code]]` only\n")
    assert call(tools.find_outlinks("Lonely.md")) == {
        "success": True, "message": "No outlinks found in Lonely.md", "results": [], "path": "Lonely.md"}
    assert call(tools.find_outlinks("Nope.md")) == {"success": False, "error": "File not found: Nope.md"}


def test_link_cache_reparses_only_changed_notes(tools, vault, monkeypatch):
    parsed: list[str] = []
    real = vault_base.read_note

    def counting(path, text):
        parsed.append(path)
        return real(path, text)

    monkeypatch.setattr(vault_base, "read_note", counting)
    tools.find_backlinks("Budget")
    assert len(parsed) == 6  # every markdown note once
    parsed.clear()
    tools.find_backlinks("Plan")
    tools.find_outlinks("Index.md")
    assert parsed == []  # nothing changed: nothing re-read
    idea = vault / "Daily/2024-01-05.md"
    idea.write_text("Now about [[Budget]] too, with more text.\n")
    st = idea.stat()
    os.utime(idea, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    assert "Daily/2024-01-05.md" in call(tools.find_backlinks("Budget"))["results"]
    assert parsed == ["Daily/2024-01-05.md"]
    (vault / "Index.md").unlink()
    assert call(tools.find_backlinks("Budget"))["results"] == ["Daily/2024-01-05.md", "Projects/Plan.md"]


def test_search_by_folder(tools, vault):
    assert call(tools.search_by_folder("Projects")) == {
        "success": True, "results": ["Projects/Budget.md", "Projects/Plan.md"], "total": 2}
    everything = call(tools.search_by_folder(""))["results"]
    assert "chart.png" not in everything and ".trash/old.md" not in everything and len(everything) == 6
    assert call(tools.search_by_folder("/"))["results"] == everything
    assert call(tools.search_by_folder("./"))["results"] == everything
    assert call(tools.search_by_folder("./Projects/"))["results"] == ["Projects/Budget.md", "Projects/Plan.md"]
    (vault / "Projects" / "Sub").mkdir()
    (vault / "Projects" / "Sub" / "Deep.md").write_text("x")
    assert "Projects/Sub/Deep.md" in call(tools.search_by_folder("Projects"))["results"]
    flat = call(tools.search_by_folder("Projects", recursive=False))
    assert flat["results"] == ["Projects/Budget.md", "Projects/Plan.md"]
    limited = call(tools.search_by_folder("", limit=2))
    assert limited["results"] == everything[:2] and limited["total"] == 7 and "Showing 2 of 7" in limited["message"]


def test_search_by_folder_empty_missing_and_not_a_folder(tools, vault):
    (vault / "Empty").mkdir()
    assert call(tools.search_by_folder("Empty")) == {
        "success": True, "message": "No markdown files found in Empty", "results": []}
    assert call(tools.search_by_folder("Empty", recursive=False))["message"] == "No markdown files found directly in Empty"
    assert call(tools.search_by_folder("Nope")) == {"success": False, "error": "Folder not found: Nope"}
    assert call(tools.search_by_folder("Index.md")) == {"success": False, "error": "Not a folder: Index.md"}
    assert "hidden" in call(tools.search_by_folder(".trash"))["error"]
