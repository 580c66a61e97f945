import inspect
import json

import pytest

from smartcontext.errors import WorkspaceNotFound
from smartcontext.vault import TOOL_SPECS, VaultTools


def call(result: dict) -> dict:
    """A tool's answer: a dict of plain JSON values with its success flag."""
    assert isinstance(result, dict) and isinstance(result["success"], bool)
    assert json.loads(json.dumps(result)) == result
    return result


@pytest.fixture
def tools(tmp_path):
    (tmp_path / "a.md").write_text("# A\n")
    return VaultTools(tmp_path)


def test_every_spec_matches_a_method_signature():
    names = [s["name"] for s in TOOL_SPECS]
    assert len(names) == len(set(names)) == 18
    for spec in TOOL_SPECS:
        method = getattr(VaultTools, spec["name"])
        assert getattr(method, "is_tool", False), spec["name"]
        params = spec["parameters"]
        assert params["type"] == "object" and params["additionalProperties"] is False
        sig = inspect.signature(method)
        accepted = [p for p in sig.parameters if p != "self"]
        assert accepted == list(params["properties"]), spec["name"]
        required = [p for p in accepted if sig.parameters[p].default is inspect.Parameter.empty]
        assert required == params["required"], spec["name"]
        assert spec["description"] and all(isinstance(v, dict) for v in params["properties"].values())
        json.dumps(spec)


def test_call_tool_runs_tools_by_name(tools):
    assert call(tools.call_tool("read_file", {"path": "a.md"}))["content"] == "# A\n"
    assert call(tools.call_tool("read_file", '{"path": "a.md", "length": 2}'))["content"].startswith("# ")
    assert call(tools.call_tool("get_current_date"))["success"]
    assert call(tools.call_tool("list_preferences", {}))["success"]


@pytest.mark.parametrize(
    ("name", "arguments", "message"),
    [
        ("rm_rf", {}, "Unknown tool: rm_rf"),
        (None, {}, "Unknown tool"),
        ("read_file", {}, "read_file: missing required argument(s) path"),
        ("read_file", {"path": "a.md", "mode": "r"}, "unknown argument(s) mode (expected: path, offset, length)"),
        ("read_file", {"path": ["a.md"]}, "read_file: path must be a string, not array"),
        ("read_file", {"path": "a.md", "offset": "ten"}, "offset must be an integer, not string"),
        ("read_file", {"path": "a.md", "offset": True}, "offset must be an integer, not boolean"),
        ("read_file", {"path": "a.md", "offset": 1.5}, "offset must be an integer, not number"),
        ("read_file", "not json", "arguments are not valid JSON"),
        ("read_file", ["a.md"], "arguments must be a JSON object"),
        ("read_file", {1: "a.md"}, "argument names must be strings"),
        ("create_file", {"path": "b.md", "content": "x", "overwrite": "maybe"}, "overwrite must be a boolean"),
        ("batch_move_files", {"moves": [{"source": "a.md", "destination": "b.md", "x": 1}]}, "unknown field(s) x"),
        ("batch_move_files", {"moves": [{"source": 1, "destination": "b.md"}]}, "moves[0].source must be a string"),
        ("log_interaction", {"task_description": "t", "query": "q", "summary": "s", "files": 5}, "files must be an array, not integer"),
        ("log_interaction", {"task_description": "t", "query": "q", "summary": "s", "files": [3]}, "files[0] must be a string"),
        ("list_files_by_frontmatter", {"field": "x", "value": {"a": 1}}, "value must be a string or number or boolean"),
    ],
)
def test_call_tool_rejects_bad_calls(tools, name, arguments, message):
    r = call(tools.call_tool(name, arguments))
    assert r["success"] is False and message in r["error"], r


def test_clear_string_spellings_are_accepted(tools):
    assert call(tools.call_tool("read_file", {"path": "a.md", "offset": "2", "length": "1"}))["content"].startswith(
        "[Continuing from char 2 of 4]")
    assert call(tools.call_tool("create_file", {"path": "a.md", "content": "new", "overwrite": "true"}))["success"]
    assert call(tools.call_tool("read_file", {"path": "a.md", "offset": 0.0}))["content"] == "new"
    # one string where a list of strings is expected is that list
    logged = call(tools.call_tool("log_interaction", {"task_description": "t", "query": "q", "summary": "s",
                                                      "files": "a.md"}))
    assert logged["success"]
    # null for an optional argument means "use the default"
    assert call(tools.call_tool("read_file", {"path": "a.md", "offset": None, "length": None}))["content"] == "new"


def test_direct_calls_are_checked_too_and_never_raise(tools):
    assert "unexpected keyword argument" in call(tools.read_file(path="a.md", bogus=1))["error"]
    assert call(tools.read_file())["error"] == "read_file: missing required argument(s) path"
    odd_values = [None, 0, -1, 3.5, True, "", "../..", "\x00", [], {}, ["x"], {"a": None}, "a" * 5000]
    for spec in TOOL_SPECS:
        method = getattr(tools, spec["name"])
        for value in odd_values:
            arguments = {p: value for p in spec["parameters"]["properties"]}
            result = method(**arguments)
            assert isinstance(call(result)["success"], bool), (spec["name"], value)


def test_missing_vault_folder_raises_a_typed_error(tmp_path):
    with pytest.raises(WorkspaceNotFound, match="vault folder not found"):
        VaultTools(tmp_path / "nope")
