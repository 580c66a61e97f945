"""The source and language registries: a new source or language is one class plus one
registration through the plugin hooks, and the indexer, search and context take it
without any change of their own."""

from __future__ import annotations

from collections import Counter

import pytest

from smartcontext import Workspace
from smartcontext.errors import ConfigError
from smartcontext.model import KIND_TRAITS, Item, KindTraits, ParsedFile, kind_traits, register_kind
from smartcontext.plugins import hookimpl, plugin_manager
from smartcontext.sources import lang, registry
from smartcontext.sources.base import BaseSource, decode
from smartcontext.sources.discover import classify
from smartcontext.sources.lang.python import PythonSpec
from smartcontext.sources.registry import SourceRegistry, get_source, source_for_path


class TodoSource(BaseSource):
    """``.todo`` files: one ``task`` item per ``- [ ]`` / ``- [x]`` line."""

    name = "todo"
    extensions = frozenset({".todo"})
    language = "todo"

    def parse(self, path: str, data: bytes, language: str) -> ParsedFile:
        parsed = ParsedFile(path=path, language=language)
        for n, line in enumerate(decode(data).splitlines(), 1):
            if not line.startswith(("- [ ] ", "- [x] ")):
                continue
            title = line[6:].strip()
            parsed.items.append(Item(
                id=f"{path}:{n}", path=path, kind="task", name=title, qualname=title,
                start_line=n, end_line=n, text=title, language=language,
                meta={"done": line[3] == "x"},
            ))
        return parsed


class _TodoPlugin:
    @hookimpl
    def register_sources(self, register):
        register(TodoSource())


@pytest.fixture
def todo_plugin():
    pm = plugin_manager()
    pm.register(_TodoPlugin(), name="test-todo-source")
    register_kind("task", KindTraits("[]", prose=True))
    registry.reload()
    try:
        yield
    finally:
        pm.unregister(name="test-todo-source")
        KIND_TRAITS.pop("task", None)
        registry.reload()


def test_builtin_sources_claim_their_files():
    assert registry.registry().names()[:3] == ["markdown", "code", "text"]
    assert classify("pkg/mod.py") == ("code", "python")
    assert classify("notes/a.MD") == ("markdown", "markdown")
    assert classify("docs/index.rst") == ("text", "text")
    assert classify("data.todo") is None
    assert get_source("code").skip_generated and not get_source("markdown").skip_generated


def test_a_plugin_source_indexes_a_folder_end_to_end(tmp_path, todo_plugin):
    (tmp_path / "home.todo").write_text("# chores\n- [ ] pay the invoice for the boiler\n- [x] water plants\n")
    (tmp_path / "work.todo").write_text("- [ ] review the quarterly budget\n")
    (tmp_path / "notes.md").write_text("# Boiler\nThe boiler was serviced in March.\n")
    assert classify("home.todo") == ("todo", "todo")

    ws = Workspace.open(tmp_path)
    ws.config.embeddings.model = "none"
    stats = ws.index()
    assert stats.files_indexed == 3
    states = ws.store.file_states()
    assert states["home.todo"].source == "todo" and states["home.todo"].language == "todo"
    assert states["notes.md"].source == "markdown"

    hits = ws.search("invoice boiler", mode="keyword")
    assert hits[0].kind == "task" and hits[0].path == "home.todo"
    assert hits[0].start_line == 2

    result = ws.context("who pays the invoice for the boiler?", max_tokens=2000)
    assert any(s.item.kind == "task" for s in result.items)
    # The kind's traits reach the exporter: its sigil, its title line.
    assert "[] pay the invoice for the boiler" in result.text
    # The source's default naming: module is the path without extension.
    assert ws.catalogue().by_fqname.get("home#pay the invoice for the boiler")

    ws.close()


def test_worker_processes_use_the_registered_source(tmp_path, todo_plugin):
    # Past the parallel threshold the indexer forks workers; they inherit the registry.
    from smartcontext.indexer import _PARALLEL_THRESHOLD

    count = _PARALLEL_THRESHOLD + 6
    for i in range(count):
        (tmp_path / f"list{i}.todo").write_text(f"- [ ] task number {i}\n- [x] done {i}\n")
    ws = Workspace.open(tmp_path)
    ws.config.embeddings.model = "none"
    stats = ws.index(workers=2)
    assert stats.files_indexed == count and not stats.warnings
    assert Counter(e.kind for e in ws.catalogue().entries.values()) == {"task": 2 * count}
    ws.close()


def test_files_of_an_uninstalled_source_leave_the_index(tmp_path):
    (tmp_path / "list.todo").write_text("- [ ] one\n")
    (tmp_path / "a.md").write_text("# A\ntext\n")
    pm = plugin_manager()
    pm.register(_TodoPlugin(), name="test-todo-source")
    registry.reload()
    try:
        ws = Workspace.open(tmp_path)
        ws.config.embeddings.model = "none"
        assert ws.index().files_indexed == 2
    finally:
        pm.unregister(name="test-todo-source")
        registry.reload()
    ws = Workspace.open(tmp_path)
    ws.config.embeddings.model = "none"
    stats = ws.index()
    assert stats.files_deleted == 1
    assert set(ws.store.file_states()) == {"a.md"}
    ws.close()


def test_later_sources_are_asked_first_and_names_replace_in_place():
    reg = SourceRegistry()

    class Md(BaseSource):
        name, extensions, language = "markdown", frozenset({".md"}), "markdown"

    class Chat(BaseSource):
        name, language = "chat", "chat"

        def language_for(self, path):
            return "chat" if path.startswith("chats/") and path.endswith(".md") else None

    reg.register(Md())
    reg.register(Chat())
    assert reg.for_path("chats/2024.md")[0].name == "chat"
    assert reg.for_path("notes/a.md")[0].name == "markdown"
    replacement = Md()
    reg.register(replacement)
    assert reg.names() == ["markdown", "chat"] and reg.get("markdown") is replacement
    assert reg.for_path("x.txt") is None


def test_registry_refuses_incomplete_sources_and_names_unknown_ones():
    reg = SourceRegistry()

    class NoName(BaseSource):
        pass

    class Partial:
        name = "partial"

        def parse(self, path, data, language):
            return ParsedFile(path=path, language=language)

    with pytest.raises(ConfigError, match="non-empty string `name`"):
        reg.register(NoName())
    with pytest.raises(ConfigError, match="fqname.*language_for"):
        reg.register(Partial())
    reg.register(TodoSource())
    with pytest.raises(ConfigError, match="no source named 'chat'.*registered: todo"):
        reg.get("chat")


def test_a_failing_source_parse_becomes_text_windows(tmp_path):
    from smartcontext.indexer import parse_file

    class Broken(BaseSource):
        name = "broken"

        def parse(self, path, data, language):
            raise RuntimeError("boom")

    parsed = parse_file("a.x", Broken(), "x", b"line one\nline two\n")
    assert [it.kind for it in parsed.items] == ["text"]
    assert parsed.items[0].text == "line one\nline two"
    assert "RuntimeError: boom" in parsed.warnings[0]


def test_default_naming_follows_kind_traits():
    src = BaseSource()
    mk = lambda kind, qual: Item(id="x", path="p.py", kind=kind, name=qual, qualname=qual,  # noqa: E731
                                 start_line=1, end_line=1)
    assert src.fqname(mk("module", "pkg.p"), "pkg.p") == "pkg.p"
    assert src.fqname(mk("method", "Cls.m"), "pkg.p") == "pkg.p.Cls.m"
    assert src.fqname(mk("section", "Intro/Setup"), "notes/a") == "notes/a#Intro/Setup"
    assert src.fqname(mk("text", ""), "docs/a") == "docs/a"
    assert src.module_name("notes/a.md") == "notes/a"


def test_unknown_kinds_get_plain_leaf_traits():
    t = kind_traits("never-registered")
    assert t.sigil == "#" and not t.whole_file and not t.code_symbol and t.max_full_tokens is None
    assert kind_traits("method").brings_parent_header and kind_traits("method").callable
    assert not kind_traits("section").shows_nested


class _PywLanguage:
    @hookimpl
    def register_languages(self, register):
        spec = PythonSpec()
        spec.extensions = ("pyw",)
        register(spec, key="python-pyw")


def test_a_plugin_language_claims_its_extensions():
    assert source_for_path("tool.pyw") is None
    pm = plugin_manager()
    pm.register(_PywLanguage(), name="test-pyw-language")
    lang.reload()
    try:
        assert classify("tool.pyw") == ("code", "python")
        parsed = get_source("code").parse("tool.pyw", b"def main():\n    return 1\n", "python")
        assert [(it.kind, it.name) for it in parsed.items] == [("module", "tool"), ("function", "main")]
        assert "python" in lang.known_languages()
    finally:
        pm.unregister(name="test-pyw-language")
        lang.reload()
    assert source_for_path("tool.pyw") is None


class _Misbehaving(TodoSource):
    """A todo source whose hooks past ``parse`` break, chosen by the file's first word."""

    def module_name(self, path):
        if path.startswith("module"):
            raise RuntimeError("module_name broke")
        return super().module_name(path)

    def fts_bodies(self, items, text):
        if text.startswith("short"):
            return []  # one body too few per item
        if text.startswith("bodies"):
            raise RuntimeError("fts_bodies broke")
        return super().fts_bodies(items, text)

    def fqname(self, item, module):
        if module.startswith("fq"):
            raise RuntimeError("fqname broke")
        return super().fqname(item, module)

    def warm_up(self, path, language):
        raise RuntimeError("warm_up broke")


class _MisbehavingPlugin:
    @hookimpl
    def register_sources(self, register):
        register(_Misbehaving())


def test_a_source_whose_naming_or_bodies_break_leaves_its_files_as_text(tmp_path):
    pm = plugin_manager()
    pm.register(_MisbehavingPlugin(), name="test-misbehaving-source")
    register_kind("task", KindTraits("[]", prose=True))
    registry.reload()
    try:
        (tmp_path / "module.todo").write_text("- [ ] alpha pelican\n")
        (tmp_path / "short.todo").write_text("short\n- [ ] beta pelican\n")
        (tmp_path / "bodies.todo").write_text("bodies\n- [ ] gamma pelican\n")
        (tmp_path / "fq.todo").write_text("- [ ] delta pelican\n")
        (tmp_path / "fine.todo").write_text("- [ ] epsilon pelican\n")
        ws = Workspace.open(tmp_path)
        ws.config.embeddings.model = "none"
        stats = ws.index()
        assert stats.files_indexed == 5
        for broke in ("module_name broke", "fts_bodies gave 0 bodies for 1 items", "fts_bodies broke",
                      "fqname broke"):
            assert any(broke in w and "indexed as text" in w for w in stats.warnings), broke
        from smartcontext.indexer import _warm_up_for_workers
        from smartcontext.sources.discover import DiscoveredFile

        # before workers fork; a broken warm_up is only logged
        _warm_up_for_workers([(DiscoveredFile("fine.todo", tmp_path / "fine.todo", "todo", "todo", 0, 0), None)])
        kinds = {h.path: h.kind for h in ws.search("pelican", mode="keyword", limit=20)}
        assert kinds == {"module.todo": "text", "short.todo": "text", "bodies.todo": "text",
                         "fq.todo": "text", "fine.todo": "task"}
        ws.close()
    finally:
        pm.unregister(name="test-misbehaving-source")
        KIND_TRAITS.pop("task", None)
        registry.reload()


def test_a_new_version_of_a_source_reads_its_unchanged_files_again(tmp_path, monkeypatch):
    """A file nobody edits is read again once, by the version of its source that now reads
    it otherwise; other sources' files are not."""
    (tmp_path / "guide.md").write_text("# Guide\n\n## Props {#props}\n\nThe props.\n")
    (tmp_path / "app.py").write_text("def run():\n    return 1\n")
    ws = Workspace.open(tmp_path)
    ws.config.embeddings.model = "none"
    assert ws.index().files_indexed == 2
    assert ws.refresh().files_indexed == 0
    assert not ws.pending_changes()
    markdown = get_source("markdown")
    monkeypatch.setattr(markdown, "version", markdown.version + 1)
    assert ws.pending_changes()
    again = ws.refresh()
    assert (again.files_indexed, again.files_unchanged) == (1, 1)
    assert ws.refresh().files_indexed == 0 and not ws.pending_changes()
    assert ws.search("Props", mode="keyword")[0].id == "guide.md#Guide/Props"
    ws.close()
