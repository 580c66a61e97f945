"""Installed plugins load one by one: a broken one is skipped with a warning naming it."""

from __future__ import annotations

import sys

import pluggy
import pytest

from smartcontext.plugins import PROJECT, Hooks, hookimpl, load_entry_points
from smartcontext.tools import registry


def _install(tmp_path, monkeypatch, entry_points: str, modules: dict[str, str]):
    """A distribution on sys.path whose entry points name ``modules``."""
    dist = tmp_path / "fake_plugins-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: fake-plugins\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(f"[{PROJECT}]\n{entry_points}")
    for name, code in modules.items():
        (tmp_path / f"{name}.py").write_text(code)
        monkeypatch.delitem(sys.modules, name, raising=False)
    monkeypatch.syspath_prepend(str(tmp_path))


def test_a_broken_entry_point_is_skipped_and_the_others_load(tmp_path, monkeypatch):
    _install(tmp_path, monkeypatch,
             "missing = sc_no_such_plugin_module\n"
             "misfit = sc_misfit_plugin\n"
             "good = sc_good_plugin\n",
             {"sc_misfit_plugin": ("from smartcontext.plugins import hookimpl\n"
                                   "@hookimpl\ndef register_tools(register, unknown_argument):\n    pass\n"),
              "sc_good_plugin": ("from smartcontext.plugins import hookimpl\n"
                                 "@hookimpl\ndef register_tools(register):\n    register(lambda ctx: [], 'good')\n")})
    pm = pluggy.PluginManager(PROJECT)
    pm.add_hookspecs(Hooks)
    with pytest.warns(RuntimeWarning) as caught:
        loaded = load_entry_points(pm)
    assert loaded == ["good"]
    messages = [str(w.message) for w in caught]
    assert any("'missing'" in m and "ModuleNotFoundError" in m for m in messages)
    assert any("'misfit'" in m and "sc_misfit_plugin" in m for m in messages)
    seen = []
    pm.hook.register_tools(register=lambda provider, name: seen.append(name))
    assert seen == ["good"]


class _FailingPlugin:
    @hookimpl
    def register_tools(self, register):
        raise RuntimeError("plugin setup failed")


def test_tool_plugins_are_marked_loaded_only_after_a_successful_load(monkeypatch):
    from smartcontext.plugins import plugin_manager

    monkeypatch.setattr(registry, "_providers", {})
    monkeypatch.setattr(registry._hook, "loaded", False)
    pm = plugin_manager()
    plugin = _FailingPlugin()
    pm.register(plugin, name="failing-test")
    try:
        with pytest.raises(RuntimeError, match="plugin setup failed"):
            registry.registered_providers()
        assert registry._hook.loaded is False
    finally:
        pm.unregister(plugin)
    names = [name for name, _ in registry.registered_providers()]  # asked again, now whole
    assert names == ["workspace", "vault", "smart_connections", "chat"]
    assert registry._hook.loaded is True


def test_embedder_plugins_are_marked_loaded_only_after_a_successful_load(monkeypatch):
    from smartcontext.embeddings import registry as embedders
    from smartcontext.plugins import plugin_manager

    class Failing:
        @hookimpl
        def register_embedders(self, register):
            raise RuntimeError("embedder plugin failed")

    monkeypatch.setattr(embedders, "_named", {})
    monkeypatch.setattr(embedders, "_schemes", {})
    monkeypatch.setattr(embedders._hook, "loaded", False)
    pm = plugin_manager()
    plugin = Failing()
    pm.register(plugin, name="failing-embedder-test")
    try:
        with pytest.raises(RuntimeError, match="embedder plugin failed"):
            embedders._load_plugins()
        assert embedders._hook.loaded is False
    finally:
        pm.unregister(plugin)
    embedders._load_plugins()
    assert embedders._hook.loaded is True and "onnx" in embedders._schemes


def test_the_entry_point_scan_is_remembered_until_a_distribution_comes_or_goes(tmp_path, monkeypatch):
    import os

    from smartcontext.plugins import installed_entry_points

    monkeypatch.setenv("SMARTCONTEXT_CACHE_DIR", str(tmp_path / "cache"))
    site = tmp_path / "site"
    site.mkdir()
    _install(site, monkeypatch, "first = sc_first_plugin\n", {"sc_first_plugin": ""})
    past = 1_600_000_000
    os.utime(site, (past, past))  # installed a while ago: its stamp can be trusted
    assert installed_entry_points() == [("first", "sc_first_plugin")]
    memo = tmp_path / "cache" / "entry_points.bin"
    assert memo.is_file()
    # Remembered: a change inside the distribution that leaves the folder's stamp alone
    # is not seen (as for any installed package until it is reinstalled)...
    (site / "fake_plugins-0.1.dist-info" / "entry_points.txt").write_text(f"[{PROJECT}]\nedited = x\n")
    os.utime(site, (past, past))
    assert installed_entry_points() == [("first", "sc_first_plugin")]
    # ...while installing or removing a distribution moves the folder's stamp.
    other = site / "more_plugins-0.1.dist-info"
    other.mkdir()
    (other / "METADATA").write_text("Metadata-Version: 2.1\nName: more-plugins\nVersion: 0.1\n")
    (other / "entry_points.txt").write_text(f"[{PROJECT}]\nsecond = sc_second_plugin:thing\n")
    assert sorted(installed_entry_points()) == [("edited", "x"), ("second", "sc_second_plugin:thing")]


def test_the_remembered_scan_holds_in_any_current_folder_without_distributions(tmp_path, monkeypatch):
    """`python -m smartcontext` puts the current folder first on sys.path: another one per
    project, moved by every file added there. Without a distribution in it, it is not part
    of what the scan is remembered by (a question in a vault being edited skipped the
    remembered scan, a tenth of a second)."""
    import os

    from smartcontext.plugins import installed_entry_points

    monkeypatch.setenv("SMARTCONTEXT_CACHE_DIR", str(tmp_path / "cache"))
    site = tmp_path / "site"
    site.mkdir()
    _install(site, monkeypatch, "first = sc_first_plugin\n", {"sc_first_plugin": ""})
    past = 1_600_000_000
    os.utime(site, (past, past))
    vault, project = tmp_path / "vault", tmp_path / "project"
    vault.mkdir()
    project.mkdir()
    monkeypatch.setattr(sys, "path", [str(vault), *sys.path])
    assert installed_entry_points() == [("first", "sc_first_plugin")]
    # Edited in place (the folder's stamp put back): only a new scan would see it.
    (site / "fake_plugins-0.1.dist-info" / "entry_points.txt").write_text(f"[{PROJECT}]\nedited = x\n")
    os.utime(site, (past, past))
    (vault / "new note.md").write_text("just written\n")  # the vault's stamp moves
    assert installed_entry_points() == [("first", "sc_first_plugin")]
    monkeypatch.setattr(sys, "path", [str(project), *sys.path[1:]])
    assert installed_entry_points() == [("first", "sc_first_plugin")]
    # A first folder that holds a distribution is part of the key: scanned again.
    (project / "local_plugins-0.1.dist-info").mkdir()
    assert installed_entry_points() == [("edited", "x")]
