"""A query that is a note's name (title, alias, file name, slug) ranks that note first,
on a vault where plain BM25 ranks other notes above it (issue 20: ``font-size``,
``obsidian-bulk-rename-plugin``, ``🗂️ 02.05 All Community Expansions``)."""

import pytest

from smartcontext import Workspace
from smartcontext.retrieval.titles import normalise_name

# Notes that repeat the words of the named notes more often than those notes do, so
# BM25 alone puts one of them first.
DECOY = (
    "# Styling notes {i}\n\nBulk rename plugin for obsidian: bulk rename, rename again, bulk bulk.\n"
    "Font size, font size and size of the font; publish obsidian publish publish.\n"
    "All community expansions: expansions of the community, all of them.\n"
)
NOTES = {
    "Plugins/obsidian-bulk-rename-plugin.md": (
        "---\nplugin-id: obsidian-bulk-rename-plugin\naliases:\n- Bulk Rename\n---\n\nbadges\n\n"
        "# Bulk Rename\n\nPlugin ID: `obsidian-bulk-rename-plugin`\n"
    ),
    "Snippets/font-size.md": "A CSS snippet.\n\n## Usage\n\nPaste it.\n",
    "🗂️ 02.05 All Community Expansions.md": "# 🗂️ 02.05 All Community Expansions\n\nAn index.\n",
    "Publish/Obsidian Publish.md": "Obsidian's paid service to put notes on the web.\n",
    "Titled.md": "---\ntitle: Quarterly Plan\n---\n# Goals\n\nShip it.\n",
    "People/a/Zero.md": "One person.\n",
    "People/b/Zero.md": "Another person.\n",
    # Titles the keyword signal cannot see: diacritics (FTS5 folds them), one letter.
    "People/AurelienStebe.md": "# Aurélien Stébé\n\nA person.\n",
    "People/KkEi34.md": "# K\n\nAnother person.\n",
}


@pytest.fixture
def vault(tmp_path, store_env):
    root = tmp_path / "vault"
    files = dict(NOTES)
    files.update({f"Decoys/d{i}.md": DECOY.format(i=i) for i in range(8)})
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    ws = Workspace.open(root)
    ws.index(embeddings=False)
    yield root, ws
    ws.close()


def first_note(ws, query, **options):
    hits = ws.search(query, limit=5, mode="keyword", **options)
    return hits[0].path if hits else None


@pytest.mark.parametrize(
    "query, note",
    [
        ("obsidian-bulk-rename-plugin", "Plugins/obsidian-bulk-rename-plugin.md"),  # file name
        ("Obsidian Bulk Rename Plugin", "Plugins/obsidian-bulk-rename-plugin.md"),  # its words
        ("obsidian_bulk_rename_plugin", "Plugins/obsidian-bulk-rename-plugin.md"),
        ("Bulk Rename", "Plugins/obsidian-bulk-rename-plugin.md"),  # alias and level-1 title
        ("bulk-rename", "Plugins/obsidian-bulk-rename-plugin.md"),  # the alias as a slug
        ("font-size", "Snippets/font-size.md"),
        ("font size", "Snippets/font-size.md"),
        ("🗂️ 02.05 All Community Expansions", "🗂️ 02.05 All Community Expansions.md"),
        ("02.05 All Community Expansions", "🗂️ 02.05 All Community Expansions.md"),  # no emoji
        ("Obsidian Publish", "Publish/Obsidian Publish.md"),
        ("obsidian-publish", "Publish/Obsidian Publish.md"),
        ("quarterly plan", "Titled.md"),  # frontmatter title
        ("Aurélien Stébé", "People/AurelienStebe.md"),
        ("K", "People/KkEi34.md"),
    ],
)
def test_a_query_naming_a_note_ranks_it_first(vault, query, note):
    _, ws = vault
    assert first_note(ws, query) == note
    hits = ws.search(query, limit=5)  # hybrid, the default (keywords only here: no vectors)
    assert hits[0].path == note and "title" in hits[0].signals and hits[0].score == 1.0


def test_notes_sharing_a_name_lead_together(vault):
    _, ws = vault
    top = [h.path for h in ws.search("zero", limit=5, mode="keyword")][:2]
    assert sorted(top) == ["People/a/Zero.md", "People/b/Zero.md"]
    assert first_note(ws, "zero", paths=["People/b"]) == "People/b/Zero.md"


def test_only_a_whole_name_counts(vault):
    _, ws = vault
    # A heading is not a note's name, and part of a name is a keyword query like any other.
    for query in ("Usage", "bulk rename plugin obsidian extra", "Goals"):
        assert all("title" not in h.signals for h in ws.search(query, limit=10, mode="keyword")), query
    assert all("title" not in h.signals for h in ws.search("font-size", limit=10, mode="keyword",
                                                            paths=["Decoys"]))


def test_an_alias_added_later_is_found(vault):
    root, ws = vault
    note = root / "Snippets/font-size.md"
    note.write_text("---\naliases: [Text scale]\n---\nA CSS snippet.\n", encoding="utf-8")
    ws.index(embeddings=False)
    assert first_note(ws, "text-scale") == "Snippets/font-size.md"


def test_code_files_are_not_named_by_their_file_name(tmp_path):
    (tmp_path / "search.py").write_text("def find(x):\n    return x\n")
    (tmp_path / "ranking.py").write_text("def search(q):\n    '''search search search'''\n    return q\n")
    ws = Workspace.open(tmp_path)
    ws.index(embeddings=False)
    hits = ws.search("search", limit=5, mode="keyword")
    assert hits[0].path == "ranking.py" and all("title" not in h.signals for h in hits)
    ws.close()


# A hook defined once in the source and once in a test plugin, which the tests and a long
# guide mention far more often than the definitions say it (pytest's pytest_collect_file).
HOOK_TREE = {
    "src/pkg/hooks.py": "def collect_file(path):\n    \"\"\"Return a collector for path, or None.\n\n" + (
        "    Plugins return the first node that knows the file type; the others are asked in turn.\n" * 8
    ) + "    \"\"\"\n    return None\n",
    "src/pkg/config.py": (
        "class Config:\n    def getini(self, name):\n        return name\n\n"
        "class Other:\n    def getini(self, name):\n        return None\n"
    ),
    "tests/test_plugin.py": "def collect_file(path):\n" + "    path = path.parent  # up one folder, then again\n" * 8 + "    return path\n",
    **{f"tests/test_mentions_{i}.py": "".join(
        f"def test_case_{j}(pytester):\n"
        f"    pytester.makeconftest('def collect_file(path): pass  # collect_file collect_file')\n"
        f"    assert pytester.inline_run().collect_file == 'collect_file'\n\n" for j in range(4))
       for i in range(6)},
}


def test_a_name_the_code_defines_ranks_its_definitions_first(tmp_path, store_env):
    for rel, text in HOOK_TREE.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text, encoding="utf-8")
    ws = Workspace.open(tmp_path)
    try:
        ws.index(embeddings=False)
        # Keywords alone put a test that repeats the name first ...
        from smartcontext.retrieval.keyword import KeywordSearcher

        first = KeywordSearcher(ws.store).search("collect_file", 5)[0][0]
        assert ws.catalogue().entries[first].path.startswith("tests/test_mentions_")
        # ... the definitions lead, the source's before the test plugin's.
        hits = ws.search("collect_file", limit=10)
        assert [(h.path, h.name) for h in hits[:2]] == [("src/pkg/hooks.py", "collect_file"),
                                                         ("tests/test_plugin.py", "collect_file")]
        assert all("name" in h.signals and h.score == 1.0 for h in hits[:2])
        # A dotted name asks for that method alone; a phrase is a keyword query as before.
        dotted = ws.search("Config.getini", limit=5, mode="keyword")
        assert dotted[0].name == "Config.getini" and "name" in dotted[0].signals
        assert all(h.name != "Other.getini" or "name" not in h.signals for h in dotted)
        assert all("name" not in h.signals for h in ws.search("collect file", limit=10))
    finally:
        ws.close()


def test_normalise_name():
    assert normalise_name("🗂️ 02.05 All Community Expansions") == "02 05 all community expansions"
    assert normalise_name("obsidian-bulk_rename.Plugin") == "obsidian bulk rename plugin"
    assert normalise_name("A Brief History of the [[Digital garden|Digital Garden]]") == (
        "a brief history of the digital garden"
    )
    assert normalise_name("ＦＵＬＬ　Width") == "full width"
    assert normalise_name("🗂️ — !") == ""
