"""The in-memory catalogue, built from a real store (SQLite and PostgreSQL)."""

import pytest

from smartcontext.model import Edge, Item
from smartcontext.retrieval.catalogue import Catalogue, is_test_path


def _code(path, qual, kind, start, end, parent=None, module="pkg.mod"):
    return Item(id=f"{path}::{qual}" if kind != "module" else path, path=path, kind=kind,
                name=qual.split(".")[-1], qualname=qual, start_line=start, end_line=end,
                text=f"{kind} {qual}", parent_id=parent, language="python", tokens=4)


def _note(path, heading, start, tags, parent=None):
    return Item(id=path if not heading else f"{path}#{heading}", path=path, kind="section",
                name=heading or path, qualname=heading, start_line=start, end_line=start + 1,
                text=f"text of {heading or path}", parent_id=parent, language="markdown",
                meta={"tags": tags}, tokens=4)


def _put(store, path, items, module, source="code"):
    fq = (lambda it: it.qualname if it.kind == "module" else f"{module}.{it.qualname}")
    store.replace_file(path=path, mtime_ns=1, size=1, hash=path, language=items[0].language,
                       source=source, module=module, warnings=[],
                       items=[(it, fq(it), 2, "h" + it.id) for it in items],
                       edges=[Edge(it.parent_id, "contains", dst=it.id) for it in items if it.parent_id])


@pytest.fixture
def store(make_store):
    s = make_store()
    mod = _code("pkg/mod.py", "pkg.mod", "module", 1, 20)
    cls = _code("pkg/mod.py", "Session", "class", 3, 15, parent=mod.id)
    meth = _code("pkg/mod.py", "Session.send", "method", 5, 9, parent=cls.id)
    func = _code("pkg/mod.py", "send", "function", 17, 20, parent=mod.id)
    _put(s, "pkg/mod.py", [mod, cls, meth, func], "pkg.mod")
    tmod = _code("tests/test_mod.py", "tests.test_mod", "module", 1, 5, module="tests.test_mod")
    _put(s, "tests/test_mod.py", [tmod, _code("tests/test_mod.py", "test_send", "function", 2, 5,
                                               parent=tmod.id, module="tests.test_mod")], "tests.test_mod")
    intro = _note("notes/Daily Log.md", "", 1, ["#Project/Alpha", "journal"])
    sec = _note("notes/Daily Log.md", "Plans", 3, ["#Project/Alpha", "journal"], parent=intro.id)
    _put(s, "notes/Daily Log.md", [intro, sec], "notes/Daily Log", source="markdown")
    headless = _note("notes/other.md", "Only heading", 1, ["projects"])
    _put(s, "notes/other.md", [headless], "notes/other", source="markdown")
    return s


def test_indexes_by_name_path_and_parent(store):
    cat = Catalogue(store)
    assert cat.generation == store.generation()
    assert len(cat.entries) == 9 and cat.has_code
    send = cat.by_name["send"]
    assert sorted(cat.entries[r].id for r in send) == ["pkg/mod.py::Session.send", "pkg/mod.py::send"]
    assert cat.entries[cat.by_fqname["pkg.mod.session.send"][0]].kind == "method"
    assert cat.module_of_path["pkg/mod.py"] == cat.by_id["pkg/mod.py"]
    assert cat.by_stem["mod"] == ["pkg/mod.py"] and cat.test_paths == {"tests/test_mod.py"}
    meth = cat.by_id["pkg/mod.py::Session.send"]
    assert cat.parent(meth).id == "pkg/mod.py::Session"
    assert [cat.entries[r].id for r in cat.ancestors(meth)] == ["pkg/mod.py::Session", "pkg/mod.py"]
    assert sorted(cat.entries[r].name for r in cat.children["pkg/mod.py"]) == ["Session", "send"]


def test_resolve_name_prefers_qualified_then_same_file(store):
    cat = Catalogue(store)
    ids = lambda rows: [cat.entries[r].id for r in rows]  # noqa: E731
    assert ids(cat.resolve_name("pkg.mod.Session.send")) == ["pkg/mod.py::Session.send"]
    assert ids(cat.resolve_name("Session.send")) == ["pkg/mod.py::Session.send"]
    assert set(ids(cat.resolve_name("send", from_path="pkg/mod.py"))) == {
        "pkg/mod.py::Session.send", "pkg/mod.py::send"}
    assert cat.resolve_name("nothing") == []
    assert cat.is_known("Session") and cat.is_known("mod") and not cat.is_known("absent")


def test_paths_matching_and_test_paths(store):
    cat = Catalogue(store)
    assert cat.paths_matching("mod.py") == ["pkg/mod.py"]
    assert cat.paths_matching("/usr/lib/site-packages/pkg/mod.py") == ["pkg/mod.py"]
    assert cat.paths_matching("") == []
    assert is_test_path("src/conftest.py") and is_test_path("a/tests/x.py")
    assert not is_test_path("src/testing_tools.py")


@pytest.mark.parametrize("path, test", [
    # Other languages' conventions, with their case: a class or a project named for tests.
    ("Src/Newtonsoft.Json.Tests/Converters/IsoDateTimeConverterTests.cs", True),
    ("src/main/java/org/ParserTest.java", True),
    ("Tests/AlamofireTests/SessionTests.swift", True),
    ("app/src/androidTest/java/MainScreen.kt", True),
    ("spec/lib/router_spec.rb", True),
    ("lib/router_spec.rb", True),
    ("src/Json/Utilities/DateTimeUtils.cs", False),
    ("src/main/java/org/Contest.java", False),
    ("src/Latest.cs", False),
    ("docs/Tests.md", False),
    ("src/Attest/Verifier.php", False),
])
def test_test_paths_of_other_languages(path, test):
    assert is_test_path(path) is test


def test_tags_match_nested_tags_case_insensitively(store):
    cat = Catalogue(store)
    alpha = {cat.entries[r].id for r in cat.tagged({"project"})}
    assert alpha == {"notes/Daily Log.md", "notes/Daily Log.md#Plans"}
    assert {cat.entries[r].id for r in cat.tagged({"projects"})} == {"notes/other.md#Only heading"}
    assert cat.tagged({"proj"}) == set()


def test_notes_and_links(store):
    cat = Catalogue(store)
    intro = cat.by_id["notes/Daily Log.md"]
    assert cat.note_item("notes/Daily Log.md") == intro
    # a note without intro text is stood for by its first heading
    assert cat.entries[cat.note_item("notes/other.md")].id == "notes/other.md#Only heading"
    assert cat.resolve_link("Daily Log", "notes/other.md") == [intro]
    assert cat.resolve_link("nowhere", "notes/other.md") == []
    assert cat.link_names(cat.entries[intro]) == ["notes/Daily Log", "Daily Log"]
    assert cat.link_names(cat.entries[cat.by_id["pkg/mod.py"]]) == []


def test_a_new_generation_is_seen(store):
    cat = Catalogue(store)
    store.delete_files(["notes/other.md"])
    assert store.generation() != cat.generation
    assert "notes/other.md" not in Catalogue(store).by_path
