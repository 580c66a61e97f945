"""One error contract, names that are checked, and sizes that say what they count, as a
user meets them: the CLI in a subprocess, the HTTP API and an MCP client over stdio.

- every error is one line on stderr: exit 1 for errors (and for a `context` or `search`
  that found nothing), 2 for usage errors (typer's usage box no longer);
- an unknown tool, tool argument, note or embedding model is refused with the closest name;
- the JSON format's answer carries `json_tokens` (the printed JSON) beside `token_count`
  (the content the budget holds)."""

import json
import os
import subprocess
import sys

import anyio
import pytest
from conftest import write_tree
from mcp import ClientSession, StdioServerParameters, stdio_client
from starlette.testclient import TestClient

from smartcontext.server.http import build_app
from smartcontext.tokens import count_tokens
from smartcontext.tools import ToolRegistry

NOTES = {
    "00 - Start here.md": "# Start here\n\nWelcome to the garden vault.\n",
    "plants/Tomatoes.md": "# Tomatoes\n\nWater tomatoes deeply twice a week.\n",
}


def run(*args, cwd=None, env=None):
    full = {**os.environ, "SMARTCONTEXT_EMBEDDING_MODEL": "none", **(env or {})}
    full.pop("SMARTCONTEXT_STORE_URL", None)
    return subprocess.run([sys.executable, "-m", "smartcontext", *args], capture_output=True, text=True,
                          env=full, cwd=cwd, timeout=120, stdin=subprocess.DEVNULL)


def error_line(proc, code):
    assert proc.returncode == code, (proc.returncode, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), proc.stderr
    assert "╭" not in proc.stderr and "Usage:" not in proc.stderr
    return lines[0]


@pytest.fixture
def vault(tmp_path):
    return write_tree(tmp_path / "vault", NOTES)


@pytest.mark.parametrize("args", [
    ["status", "--nope"],
    ["context"],
    ["context", "a question", "--max-tokens", "many"],
    ["search", "zebra", "--limt", "3"],
    ["store", "copy", "only-one"],
    ["no-such-command"],
])
def test_usage_errors_are_one_line_and_exit_2(args, sample_repo):
    line = error_line(run(*args, cwd=sample_repo), 2)
    assert "--help`)" in line


def test_errors_are_one_line_and_exit_1(sample_repo, tmp_path):
    error_line(run("index", str(tmp_path / "missing")), 1)
    assert "yaml" in error_line(run("context", "login", str(sample_repo), "-f", "yaml"), 1)


def test_no_match_exits_1_for_context_and_search(sample_repo):
    run("index", str(sample_repo))
    question = "zqxj vwkp"
    text = run("context", question, str(sample_repo))
    assert text.returncode == 1 and text.stdout.strip() == "" and "nothing in the index matched" in text.stderr
    as_json = run("context", question, str(sample_repo), "--json")
    assert as_json.returncode == 1 and json.loads(as_json.stdout)["item_count"] == 0
    assert run("search", question, str(sample_repo)).returncode == 1
    found = run("context", "How does AuthService handle login?", str(sample_repo))
    assert found.returncode == 0 and "login" in found.stdout


def test_unknown_tool_argument_and_note_offer_the_closest_name(vault):
    cases = [
        (["tool", "search", "-C", str(vault), "--limt", "3"], "did you mean 'limit'?"),
        (["tool", "serch", "-C", str(vault)], "did you mean 'search'?"),
        (["tool", "read_file", "-C", str(vault), "--path", "00 - Start her"], "did you mean '00 - Start here'?"),
        (["tool", "read_file", "-C", str(vault), "--path", "Tomatos"], "did you mean 'plants/Tomatoes'?"),
    ]
    for args, hint in cases:
        proc = run(*args)
        answer = json.loads(proc.stdout)  # the tool's answer, as a program receives it
        assert answer["success"] is False and hint in answer["error"]
        assert hint in error_line(proc, 1)
    # the name offered is one that works
    ok = run("tool", "read_file", "-C", str(vault), "--path", "plants/Tomatoes")
    assert ok.returncode == 0 and json.loads(ok.stdout)["success"]


def test_an_unknown_embedding_model_is_reported_by_status(vault):
    run("index", str(vault))
    proc = run("status", str(vault), env={"SMARTCONTEXT_EMBEDDING_MODEL": "nonsense"})
    assert "unknown embedding model 'nonsense'" in error_line(proc, 1) and "Files 2" in proc.stdout
    near = run("status", str(vault), "--json", env={"SMARTCONTEXT_EMBEDDING_MODEL": "local:statc"})
    assert "did you mean 'local:static'?" in json.loads(near.stdout)["problems"][0]
    assert near.returncode == 1
    assert run("status", str(vault)).returncode == 0  # embeddings off: nothing wrong


def test_json_format_says_what_its_count_covers(sample_repo):
    proc = run("context", "How does AuthService handle login?", str(sample_repo), "-t", "300", "-f", "json")
    assert proc.returncode == 0, proc.stderr
    printed = proc.stdout.rstrip("\n")
    doc = json.loads(printed)
    assert doc["token_count"] <= 300 < doc["json_tokens"]
    assert doc["json_tokens"] == count_tokens(printed, doc["encoding"])
    assert "json_tokens" in doc["counts"]
    # the other formats count the printed text itself, and carry no json_tokens
    mu = json.loads(run("context", "How does AuthService handle login?", str(sample_repo), "-t", "300",
                        "--json").stdout)
    assert "json_tokens" not in mu and mu["token_count"] == count_tokens(mu["text"], "cl100k_base")


def test_http_answers_the_same_names_and_sizes(vault, sample_repo, monkeypatch):
    monkeypatch.setenv("SMARTCONTEXT_EMBEDDING_MODEL", "none")
    registry = ToolRegistry.open(vault)
    try:
        with TestClient(build_app(registry), base_url="http://127.0.0.1:8766") as client:
            note = client.post("/api/tools/read_file", json={"path": "00 - Start her"})
            assert note.status_code in (400, 404) and note.json()["success"] is False
            assert "did you mean '00 - Start here'?" in note.json()["error"]
            arg = client.post("/api/tools/search", json={"query": "water", "limt": 3}).json()
            assert arg["success"] is False and "did you mean 'limit'?" in arg["error"]
            ctx = client.post("/api/context", json={"question": "How to water tomatoes?", "format": "json"}).json()
            assert ctx["success"] and ctx["json_tokens"] == count_tokens(ctx["text"], "cl100k_base")
            assert ctx["json_tokens"] > ctx["token_count"]
    finally:
        registry.close()


def test_mcp_answers_the_same_names(vault):
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "smartcontext", "serve", "mcp", str(vault), "--transport", "stdio"],
        env={**{k: v for k, v in os.environ.items() if not k.startswith("SMARTCONTEXT_")},
             "SMARTCONTEXT_EMBEDDING_MODEL": "none"},
        cwd=str(vault),
    )

    async def scenario():
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            for name, args, hint in [
                ("read_file", {"path": "00 - Start her"}, "did you mean '00 - Start here'?"),
                ("search", {"query": "water", "limt": 3}, "did you mean 'limit'?"),
                ("serch", {"query": "water"}, "did you mean 'search'?"),
            ]:
                result = await session.call_tool(name, args)
                text = " ".join(block.text for block in result.content)
                assert result.is_error and hint in text, text

    async def main():
        with anyio.fail_after(60):
            await scenario()

    anyio.run(main)
