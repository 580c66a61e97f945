"""The tools layer in process: the one argument check, the registry's answers, providers
plugged in by ``register_provider`` and by a plugin on the plugin manager."""

from __future__ import annotations

import json
from typing import Any

import pytest
from conftest import SAMPLE_REPO, write_tree
from jsonschema import Draft202012Validator

from smartcontext.errors import InvalidArgument
from smartcontext.plugins import hookimpl, plugin_manager
from smartcontext.tools import (
    MAX_ARGUMENTS_CHARS,
    ToolError,
    ToolRegistry,
    ToolSpec,
    check_arguments,
    registry,
    spec_tools,
)
from smartcontext.validate import compile_schema
from smartcontext.vault import VaultTools
from smartcontext.vault.schema import SPECS_BY_NAME

# Every test once on SQLite and once on PostgreSQL (conftest.store_env).
pytestmark = pytest.mark.usefixtures("store_env")


NOTES = {"notes/Plan.md": "---\ntags: [project]\n---\n# Plan\n\nShip the garden shed by spring.\n"}


@pytest.fixture
def folder(tmp_path):
    write_tree(tmp_path, NOTES)
    return tmp_path


@pytest.fixture
def fresh_providers(monkeypatch):
    """Provider registrations made by a test stay in that test."""
    monkeypatch.setattr(registry, "_providers", dict(registry._providers))
    monkeypatch.setattr(registry._hook, "loaded", registry._hook.loaded)


def probe_tools(ctx) -> list[ToolSpec]:
    """Handlers that answer data, refuse, break, or break the protocol."""

    def handler(args: dict[str, Any]) -> Any:
        what = args["what"]
        if what == "refuse":
            raise InvalidArgument("probe: say it differently")
        if what == "boom":
            raise RuntimeError("exploded")
        if what == "missing":
            raise FileNotFoundError(2, "No such file or directory", "gone.md")
        if what == "list":
            return [1, 2]
        if what == "flag":
            return {"success": True}
        return {"echo": what * args.get("times", 1), "tags": args.get("tags", []), "ratio": args.get("ratio")}

    schema = {
        "type": "object",
        "properties": {
            "what": {"type": "string", "maxLength": 100},
            "times": {"type": "integer", "minimum": 1},
            "tags": {"type": "array", "items": {"type": "string"}},
            "ratio": {"type": "number"},
            "loud": {"type": "boolean"},
        },
        "required": ["what"],
        "additionalProperties": False,
    }
    return [ToolSpec("probe", "Probe the registry.", schema, handler, provider="probe")]


@pytest.fixture
def probe(folder, fresh_providers):
    registry.register_provider(probe_tools, "probe")
    reg = ToolRegistry.open(folder)
    yield reg
    reg.close()


# -- the registry's answers -------------------------------------------------------------------


def test_handler_data_is_wrapped_once(probe):
    assert probe.call("probe", {"what": "ab", "times": 2}) == {
        "success": True, "echo": "abab", "tags": [], "ratio": None}
    assert json.loads(probe.call_json("probe", '{"what": "x"}'))["echo"] == "x"


def test_strings_are_coerced_by_the_schema(probe):
    answer = probe.call("probe", {"what": "a", "times": "3", "tags": "solo", "ratio": "0.5"})
    assert answer == {"success": True, "echo": "aaa", "tags": ["solo"], "ratio": 0.5}
    assert probe.call("probe", {"what": "a", "times": 2.0})["echo"] == "aa"
    assert probe.call("probe", {"what": "a", "times": None})["echo"] == "a"  # null: the default
    assert probe.call("probe", {"what": "a", "loud": "true"})["success"]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({}, "probe: missing required argument(s) what"),
        ({"what": None}, "probe: missing required argument(s) what"),
        ({"what": "a", "colour": "red"}, "probe: unknown argument(s) colour (expected: what, times, tags, ratio, loud)"),
        ({"what": "a", "times": "many"}, "probe: times must be an integer, not string"),
        ({"what": "a", "times": True}, "probe: times must be an integer, not boolean"),
        ({"what": "a", "times": 1.5}, "probe: times must be an integer, not number"),
        ({"what": "a", "times": 0}, "probe: times must be at least 1, not 0"),
        ({"what": "a", "loud": "maybe"}, "probe: loud must be a boolean, not string"),
        ({"what": "a", "tags": [3]}, "probe: tags[0] must be a string, not integer"),
        ({"what": "a" * 5000}, "probe: what has 5,000 characters; at most 100 are accepted"),
        ("{broken", "probe: arguments are not valid JSON"),
        ([1, 2], "probe: arguments must be a JSON object, not array"),
        ({1: "a"}, "probe: argument names must be strings"),
    ],
)
def test_bad_arguments_are_refused_in_words(probe, arguments, message):
    answer = probe.call("probe", arguments)
    assert answer["success"] is False and answer["error"].startswith(message), answer


def test_unknown_tool_and_oversized_arguments(probe):
    unknown = probe.call("rm_rf", {})
    assert unknown["error"].startswith("Unknown tool: rm_rf. Available tools: context, search, status")
    assert probe.call(None)["success"] is False
    assert probe.call("x" * 10_000)["error"].startswith("Unknown tool: " + "x" * 100 + "…")
    huge = probe.call("probe", {"what": "y" * (MAX_ARGUMENTS_CHARS + 1)})
    assert huge["success"] is False and "the limit is 2,000,000" in huge["error"]
    assert len(huge["error"]) < 200


def test_handler_failures_become_answers(probe):
    assert probe.call("probe", {"what": "refuse"}) == {"success": False, "error": "probe: say it differently"}
    assert probe.call("probe", {"what": "boom"}) == {"success": False, "error": "probe failed: RuntimeError: exploded"}
    assert probe.call("probe", {"what": "missing"})["error"] == "probe: No such file or directory: gone.md"
    assert probe.call("probe", {"what": "list"})["error"] == "probe answered list, not a JSON object"
    assert "own success flag" in probe.call("probe", {"what": "flag"})["error"]


def test_arguments_are_checked_once_per_call(folder, monkeypatch):
    """Through the registry, VaultTools.call_tool and a direct method call alike, the
    read_file schema is evaluated exactly once (nested schemas are not counted)."""
    top = SPECS_BY_NAME["read_file"]["parameters"]
    runs: list[int] = []
    original = Draft202012Validator.iter_errors

    def counting(self, *args, **kwargs):
        if self.schema is top:
            runs.append(1)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Draft202012Validator, "iter_errors", counting)
    reg = ToolRegistry.open(folder)
    try:
        assert reg.call("read_file", {"path": "notes/Plan.md", "length": "20"})["success"]
        assert len(runs) == 1
        refused = reg.call("read_file", {"path": "notes/Plan.md", "length": 0})
        assert refused["error"] == "read_file: length must be at least 1, not 0" and len(runs) == 2
    finally:
        reg.close()
    vault = VaultTools(folder)
    assert vault.call_tool("read_file", {"path": "notes/Plan.md"})["success"] and len(runs) == 3
    assert vault.read_file("notes/Plan.md")["success"] and len(runs) == 4


def test_vault_errors_pass_through_unchanged(folder):
    reg = ToolRegistry.open(folder)
    try:
        answer = reg.call("read_file", {"path": "nope.md"})
        assert answer == {"success": False, "error": "File not found: nope.md"}
        nested = reg.call("batch_move_files", {"moves": [{"source": "a.md"}]})
        assert nested["error"] == "batch_move_files: moves[0] is missing destination"
        extra = reg.call("batch_move_files", {"moves": [{"source": "a", "destination": "b", "x": 1}]})
        assert extra["error"] == "batch_move_files: moves[0] has unknown field(s) x"
        enum = reg.call("search", {"query": "shed", "mode": "telepathic"})
        assert enum["error"].startswith("search: mode must be one of hybrid, keyword, semantic, not 'telepathic'")
    finally:
        reg.close()


# -- the shared result shapes -------------------------------------------------------------------


def test_search_and_context_tools_answer_the_result_to_dicts(tmp_path, static_model):
    write_tree(tmp_path, SAMPLE_REPO)
    write_tree(tmp_path, NOTES)
    reg = ToolRegistry.open(tmp_path)
    try:
        ws = reg.context.ready_workspace()
        # The notes are embedded in the background: compare once it is done, or vectors
        # landing between two calls change hybrid answers and vector counts.
        assert ws.background.join(60)
        found = reg.call("search", {"query": "apply_discount", "mode": "keyword", "limit": 3})
        hits, info = ws.search_with_info("apply_discount", limit=3, mode="keyword")
        assert found == {"success": True, "results": [h.to_dict() for h in hits], "count": len(hits), **info}
        top = found["results"][0]
        assert set(top) == {"id", "path", "lines", "kind", "name", "heading", "score", "snippet", "signals", "tags"}
        assert top["lines"] == [hits[0].start_line, hits[0].end_line]

        ctx = reg.call("context", {"question": "How does apply_discount work?", "include_items": True})
        result = ws.context("How does apply_discount work?")
        expected = result.to_dict(include_text=False, max_files=20)
        assert len(result.files) > 1
        cut = result.to_dict(max_files=1)
        assert cut["files"] == result.files[:1] and cut["more_files"] == len(result.files) - 1
        for key in ("text", "token_count", "item_count", "files", "more_files", "format", "question"):
            assert ctx[key] == expected[key], key
        assert [i["id"] for i in ctx["items"]] == [i["id"] for i in expected["items"]]
        assert "text" not in ctx["items"][0]
        brief = reg.call("context", {"question": "How does apply_discount work?"})
        assert "items" not in brief and "stats" not in brief and brief["item_count"] == ctx["item_count"]

        status = reg.call("status")
        assert {k: v for k, v in status.items() if k != "success"} == ws.status().to_dict()
    finally:
        reg.close()


# -- providers and plugins ------------------------------------------------------------------------


class EchoTools:
    """A provider in the vault tools' protocol: specs plus call_tool answering JSON text."""

    SPECS = [{"name": "echo", "description": "Echo a word.", "parameters": {
        "type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"],
        "additionalProperties": False}}]

    def call_tool(self, name: str, arguments: dict[str, Any]) -> str:
        if arguments["word"] == "no":
            return json.dumps({"success": False, "error": "echo: will not"})
        return json.dumps({"success": True, "echo": arguments["word"]})


def test_register_provider_and_broken_providers(folder, fresh_providers):
    registry.register_provider(lambda ctx: spec_tools(EchoTools.SPECS, EchoTools().call_tool, "echo"), "echo")

    def broken(ctx):
        raise RuntimeError("no such plugin")

    registry.register_provider(broken, "broken")
    reg = ToolRegistry.open(folder)
    try:
        assert "echo" in reg.names() and {"context", "read_file"} <= set(reg.names())
        assert any("no such plugin" in w for w in reg.warnings)
        assert reg.call("echo", {"word": "hi"}) == {"success": True, "echo": "hi"}
        assert reg.call("echo", {"word": "no"}) == {"success": False, "error": "echo: will not"}
    finally:
        reg.close()
    # opening the tools builds nothing: the server's warm-up or the first question does
    assert not (folder / ".smartcontext" / "index.db").exists()


class GreeterPlugin:
    """An installed plugin: a hook implementation on the plugin manager."""

    @hookimpl
    def register_tools(self, register):
        def greeter(ctx) -> list[ToolSpec]:
            def greet(args: dict[str, Any]) -> dict[str, Any]:
                return {"greeting": f"hello {args['name']} from {ctx.root.name}"}

            def status(args: dict[str, Any]) -> dict[str, Any]:
                return {"mine": True}

            schema = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
            empty = {"type": "object", "properties": {}, "additionalProperties": False}
            return [ToolSpec("greet", "Greet someone.", schema, greet, provider="greeter"),
                    ToolSpec("status", "A plugin's own status.", empty, status, provider="greeter")]

        register(greeter, "greeter")


def test_a_plugin_on_the_plugin_manager_adds_tools(folder, monkeypatch):
    monkeypatch.setattr(registry, "_providers", {})
    monkeypatch.setattr(registry._hook, "loaded", False)  # ask the hook again, with the plugin
    pm = plugin_manager()
    plugin = GreeterPlugin()
    pm.register(plugin, name="greeter-test")
    try:
        names = [name for name, _ in registry.registered_providers()]
        assert names == ["workspace", "vault", "smart_connections", "chat", "greeter"]  # built-ins first
        reg = ToolRegistry.open(folder)
        try:
            assert "greet" in reg.names() and "read_file" in reg.names()
            assert reg.call("greet", {"name": "Ada"}) == {"success": True, "greeting": f"hello Ada from {folder.name}"}
            assert reg.call("status") == {"success": True, "mine": True}  # a later provider's tool wins
            assert "tool status of greeter replaces the one of workspace" in reg.warnings
        finally:
            reg.close()
    finally:
        pm.unregister(plugin)


# -- the validator alone ----------------------------------------------------------------------------


def test_check_arguments_without_a_registry():
    validator = compile_schema({"type": "object", "properties": {"n": {"type": ["integer", "null"]},
                                                                 "v": {"type": ["string", "number", "boolean"]}}})
    assert check_arguments("t", validator, {"n": "+7", "v": "x"}) == {"n": 7, "v": "x"}
    assert check_arguments("t", validator, None) == {} == check_arguments("t", validator, "  ")
    with pytest.raises(ToolError, match=r"^t: v must be a string or number or boolean, not object$"):
        check_arguments("t", validator, {"v": {"a": 1}})
    with pytest.raises(Exception):
        compile_schema({"type": "no-such-type"})


def test_smart_connections_tools_read_under_the_index_lock(folder):
    # A writer holding the index lock keeps semantic_search waiting, as it keeps search.
    import threading

    (folder / ".obsidian").mkdir()
    (folder / "a.md").write_text("# A\n\nroses and tulips\n")
    reg = ToolRegistry.open(folder)
    try:
        reg.call("search", {"query": "roses"})  # builds the index first
        done = threading.Event()
        with reg.context.index_lock.writer:
            worker = threading.Thread(
                target=lambda: (reg.call("semantic_search", {"query": "roses"}), done.set())
            )
            worker.start()
            assert not done.wait(0.5)
        assert done.wait(30)
        worker.join()
    finally:
        reg.close()
