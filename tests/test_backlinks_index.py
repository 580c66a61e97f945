"""find_backlinks from the index (links are edges): the same answers as reading every
note, on SQLite and PostgreSQL, without reading the notes (issue 25).

Each name is asked through the tool registry (the index's links) and of the vault tools
alone (no index: every note is read and its links resolved), and the answers must agree:
names in other folders, relative and markdown links, properties, case, accents, and the
characters LIKE treats specially."""

from __future__ import annotations

import json

import pytest
from conftest import write_tree

from smartcontext.tools import ToolRegistry
from smartcontext.vault import VaultTools

pytestmark = pytest.mark.usefixtures("store_env")


@pytest.fixture(autouse=True)
def keywords_only(monkeypatch):
    monkeypatch.setenv("SMARTCONTEXT_EMBEDDING_MODEL", "none")

NOTES = {
    "Projects/Plan.md": "# Plan\nSee [[Budget]] and [[Areas/Team|the team]] and [[100% done]].\n",
    "Projects/Budget.md": "---\nup: '[[Plan]]'\n---\n# Budget\n![[chart.png]]\n[[Budget#Totals]] [[#Local]]\n",
    "Areas/Team.md": "# Team\n[Plan](../Projects/Plan.md) and [[Missing Note]]\n```\n[[Budget]]\n```\n`[[Budget]]`\n",
    "Daily/2024-01-05.md": "Met about [[plan#Goals|the plan]] and [[Missing Note]] at the [[CAFÉ]].\n",
    "Archive/Old/Plan.md": "# Old plan\n[[Plan]] here resolves to this very note (same folder first).\n",
    "Index.md": "[[projects/budget]] ![[Team]] [[snake_case]] [[Café]] [[Mobile plans]]\n",
    "Places/Café.md": "# Café\nNear the [[Plan|plan]]; see [[snake case]] (not the same).\n",
    "Code/snake_case.md": "# snake_case\nLinked from [[Index]] and [[snakeXcase]].\n",
    "Done/100% done.md": "# Done\n[[Budget]]\n",
    "Mobile plans.md": "# Mobile plans\n[[Plan]] is elsewhere.\n",
    "chart.png": "binary-ish",
}
NAMES = ["Budget", "Projects/Budget.md", "[[Budget]]", "Plan", "Team", "Missing Note", "Index", "Café",
         "café", "snake_case", "snake case", "snakeXcase", "100% done", "Mobile plans", "plans", "Nothing Here"]


def answer(result) -> dict:
    return json.loads(result) if isinstance(result, str) else result


def test_backlinks_from_the_index_match_reading_the_notes(tmp_path):
    folder = write_tree(tmp_path / "vault", NOTES)
    registry = ToolRegistry.open(folder, refresh_interval=0)
    try:
        assert registry.call("status", {})["success"]
        registry.context.ready_workspace()  # the index is built: backlinks come from it
        by_reading = VaultTools(folder)
        for name in NAMES:
            want = answer(by_reading.find_backlinks(name))
            got = registry.call("find_backlinks", {"note_name": name})
            assert got == want, name
        vault = registry.context.shared("vault", lambda: None)
        assert not vault._notes  # asked the index: no note was read
        # An attachment is not in the index: its backlinks come from reading the notes.
        assert registry.call("find_backlinks", {"note_name": "chart.png"}) == answer(
            by_reading.find_backlinks("chart.png"))
        assert vault._notes
        assert answer(by_reading.find_backlinks("Budget"))["results"] == ["Done/100% done.md", "Index.md",
                                                                         "Projects/Plan.md"]
        assert answer(by_reading.find_backlinks("Café"))["results"] == ["Daily/2024-01-05.md", "Index.md"]
    finally:
        registry.close()


def test_backlinks_follow_a_note_written_through_the_tools(tmp_path):
    folder = write_tree(tmp_path / "vault", NOTES)
    registry = ToolRegistry.open(folder, refresh_interval=-1)  # only the tools' own writes
    try:
        registry.context.ready_workspace()
        before = registry.call("find_backlinks", {"note_name": "Team"})["results"]
        made = registry.call("create_file", {"path": "Later/Review.md", "content": "Ask [[team]] about it.\n"})
        assert made["success"], made
        after = registry.call("find_backlinks", {"note_name": "Team"})["results"]
        assert after == sorted(before + ["Later/Review.md"])
        vault = registry.context.shared("vault", lambda: None)
        assert not vault._notes  # answered from the index, not by reading the notes
    finally:
        registry.close()
