"""One Query for every front end: the declarations, their checks, and the same answer from
the CLI, the MCP server (the SDK's real client), the HTTP API and the Python API."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from conftest import SAMPLE_REPO, write_tree
from starlette.testclient import TestClient
from test_mcp_server import payload, stdio_session

from smartcontext import Workspace
from smartcontext.config import ContextDefaults
from smartcontext.errors import InvalidArgument
from smartcontext.query import CONTEXT_OPTIONS, PROFILES, Query
from smartcontext.query.fusion import reciprocal_rank, rrf_ceiling, weighted_sum
from smartcontext.query.options import MAX_BUDGET, MAX_QUESTION_CHARS
from smartcontext.server.http import build_app
from smartcontext.tools.registry import ToolRegistry

ENV = {**{k: v for k, v in os.environ.items() if not k.startswith("SMARTCONTEXT_")},
       "SMARTCONTEXT_EMBEDDING_MODEL": "none"}
NOTES = {
    "garden/Tomatoes.md": "---\ntags: [garden]\n---\n# Tomatoes\n\n## Staking\n\nStake tomatoes early; "
                          "see [[Watering]].\n\n## Pests\n\nAphids hide under the leaves.\n",
    "garden/Watering.md": "# Watering\n\nDrip irrigation in the morning saves water for the tomatoes.\n",
    "work/Budget.md": "# Budget\n\nThe quarterly budget review is in March.\n",
}


# -- the declaration ---------------------------------------------------------------------

def test_a_query_resolves_given_then_configured_then_declared_defaults():
    configured = ContextDefaults(max_tokens=1234, expand_depth=2, exclude_tests=True)
    q = Query.build("code-context", "How are prices discounted?", defaults=configured, depth=0)
    assert q.max_tokens == 1234                        # from the configuration
    assert q.options["depth"] == 0                     # given wins over the configuration
    assert q.options["exclude_tests"] is True
    assert q.options["imports"] is True                # the declared default
    assert q.format == "mu" and q.scope.paths == ()
    scoped = Query.build("search", "tomato", paths=["garden/"], kinds=["section"], limit=3)
    assert scoped.scope.paths == ("garden/",) and scoped.scope.kinds == ("section",)
    assert scoped.options == {"mode": "hybrid", "limit": 3, "min_score": 0.0}


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"max_tokens": 0}, "between 1 and 2,000,000"),
        ({"max_tokens": MAX_BUDGET + 1}, "between 1 and 2,000,000"),
        ({"max_tokens": "many"}, "must be a number"),
        ({"depth": 4}, "between 0 and 3"),
        ({"format": "xml"}, "unknown format 'xml'"),
        ({"encoding": "p50k"}, "unknown token encoding"),
        ({"paths": "src/"}, "list of strings"),
        ({"paths": ["x"] * 101}, "at most 100"),
        ({"kinds": [""]}, "kinds holds an empty value: leave kinds out"),
        ({"exclude": ["tests/", "  "]}, "exclude holds an empty value"),
        ({"dpeth": 1}, "did you mean 'depth'"),
    ],
)
def test_a_query_refuses_what_is_out_of_bounds(values, message):
    with pytest.raises(InvalidArgument, match=message):
        Query.build("code-context", "q", **values)


def test_question_limits_are_where_users_do_not_hit_them():
    pasted_log = "Traceback (most recent call last):\n" + "  File \"app.py\", line 1, in run\n" * 4000
    assert 100_000 < len(pasted_log) < MAX_QUESTION_CHARS
    assert Query.build("code-context", pasted_log).text == pasted_log
    with pytest.raises(InvalidArgument, match="the question is empty"):
        Query.build("code-context", "  \n")
    with pytest.raises(InvalidArgument, match="characters long; the limit is 500,000"):
        Query.build("code-context", "x" * (MAX_QUESTION_CHARS + 1))


def test_every_profile_declares_signals_fusion_and_packer():
    assert set(PROFILES) == {"code-context", "search", "chat-history", "vault-semantic"}
    for p in PROFILES.values():
        assert p.signals and p.fusion.method in ("weighted", "reciprocal") and p.packer
        if p.fusion.method == "reciprocal":
            assert p.fusion.k > 0
        assert json.dumps(p.to_dict())  # describable as data


def test_the_one_fusion():
    fused = weighted_sum({"a": {1: 1.0, 2: 0.5}, "b": {2: 1.0}}, {"a": 1.0, "b": 3.0})
    assert fused == {1: 0.25, 2: (0.5 + 3.0) / 4}
    # a signal that is not given does not lower the others' scale
    assert weighted_sum({"a": {1: 1.0}}, {"a": 1.0, "b": 3.0}) == {1: 1.0}
    rrf = reciprocal_rank([["x", "y"], ["y", "z"]], k=10)
    assert rrf["y"] == pytest.approx(1 / 12 + 1 / 11) and rrf["z"] == pytest.approx(1 / 12)
    assert max(rrf.values()) < rrf_ceiling(10, [1.0, 1.0])
    weighted = reciprocal_rank([["x"], ["x"]], k=5, weights=[1.0, 2.0])
    assert weighted["x"] == pytest.approx(rrf_ceiling(5, [1.0, 2.0]))


# -- one contract in every front end -----------------------------------------------------

def _cli(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "smartcontext", *args], capture_output=True, text=True,
                          cwd=cwd, env=ENV, timeout=180)


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    root = write_tree(tmp_path / "repo", SAMPLE_REPO)
    assert _cli(["index", str(root)], root).returncode == 0
    return root


@pytest.fixture()
def vault(tmp_path: Path) -> Path:
    root = write_tree(tmp_path / "vault", NOTES)
    assert _cli(["index", str(root)], root).returncode == 0
    return root


def _answers(folder: Path, question: str, **options) -> dict[str, list[str]]:
    """The selected item ids, in output order, from the four front ends."""
    flags = []
    for name, value in options.items():
        option = next(o for o in CONTEXT_OPTIONS if o.name == name)
        if option.kind == "bool":
            flags.append(option.flags[0] if value else option.off_flag)
            continue
        for v in value if isinstance(value, list) else [value]:
            flags += [option.flags[0], str(v)]
    cli = _cli(["context", question, str(folder), "--json", *flags], folder)
    assert cli.returncode == 0, cli.stderr
    out = {"cli": [i["id"] for i in json.loads(cli.stdout)["items"]]}

    os.environ["SMARTCONTEXT_EMBEDDING_MODEL"] = "none"
    try:
        ws = Workspace.open(folder)
        out["python"] = [s.item.id for s in ws.context(question, **options).items]
        ws.close()
        registry = ToolRegistry.open(folder)
        try:
            with TestClient(build_app(registry), base_url="http://127.0.0.1:8766") as client:
                http = client.post("/api/context", json={"question": question, "include_items": True, **options})
            assert http.status_code == 200, http.text
            out["http"] = [i["id"] for i in http.json()["items"]]
        finally:
            registry.close()
    finally:
        os.environ.pop("SMARTCONTEXT_EMBEDDING_MODEL", None)

    async def over_mcp() -> list[str]:
        async with stdio_session(folder) as session:
            data = payload(await session.call_tool(
                "context", {"question": question, "include_items": True, **options}))
            assert data["success"], data
            return [i["id"] for i in data["items"]]

    out["mcp"] = anyio.run(over_mcp)
    return out


@pytest.mark.timeout(300)
def test_the_same_question_gets_the_same_items_everywhere_on_a_repository(repo):
    answers = _answers(repo, "How does AuthService handle login and hash passwords?", max_tokens=1200)
    assert answers["cli"], answers
    assert answers["python"] == answers["cli"] == answers["http"] == answers["mcp"], answers
    narrowed = _answers(repo, "login", max_tokens=2000, exclude_tests=True, depth=0, paths=["shop/auth.py"])
    assert narrowed["cli"] and all(i.startswith("shop/auth.py") for i in narrowed["cli"]), narrowed
    assert narrowed["python"] == narrowed["cli"] == narrowed["http"] == narrowed["mcp"], narrowed


@pytest.mark.timeout(300)
def test_the_same_question_gets_the_same_items_everywhere_on_a_vault(vault):
    answers = _answers(vault, "when should tomatoes be watered and staked", max_tokens=300)
    assert answers["cli"], answers
    assert answers["python"] == answers["cli"] == answers["http"] == answers["mcp"], answers


CASES = [
    # (tool arguments, accepted?)
    ({"question": "login", "max_tokens": 150}, True),
    ({"question": "login", "max_tokens": 0}, False),
    ({"question": "login", "max_tokens": MAX_BUDGET + 1}, False),
    ({"question": "login", "depth": 4}, False),
    ({"question": "login", "format": "xml"}, False),
    ({"question": "login", "encoding": "p50k"}, False),
    ({"question": "login " * 2000}, True),                   # 12,000 characters
    ({"question": "x" * (MAX_QUESTION_CHARS + 1)}, False),
    ({"question": "   "}, False),
]


def _flags(args: dict) -> list[str]:
    out = [args["question"] if len(args["question"]) < 100_000 else "-"]
    for name, value in args.items():
        if name != "question":
            out += [next(o for o in CONTEXT_OPTIONS if o.name == name).flags[0], str(value)]
    return out


@pytest.mark.timeout(300)
def test_the_cli_and_the_tools_accept_and_refuse_the_same_inputs(repo):
    registry = ToolRegistry.open(repo)
    try:
        for args, accepted in CASES:
            stdin = args["question"] if len(args["question"]) >= 100_000 else None
            cli = subprocess.run([sys.executable, "-m", "smartcontext", "context", *_flags(args), str(repo)],
                                 input=stdin, capture_output=True, text=True, cwd=repo, env=ENV, timeout=180)
            tool = registry.call("context", args)
            assert (cli.returncode == 0) is accepted, (args.get("max_tokens"), cli.stderr[-300:])
            assert tool["success"] is accepted, (args.get("max_tokens"), tool.get("error"))
    finally:
        registry.close()


def test_an_empty_filter_value_is_refused_everywhere_instead_of_matching_nothing(vault):
    """A model's ``tags: [""]`` (or a CLI ``--tag ""``) named no note and answered nothing;
    now every front end refuses it and the tools' schema says so up front."""
    registry = ToolRegistry.open(vault)
    try:
        schema = registry.input_schema("search")
        assert schema["properties"]["tags"]["items"]["minLength"] == 1
        refused = registry.call("search", {"query": "ferry", "tags": [""]})
        assert refused["success"] is False and "tags" in refused["error"] and "empty" in refused["error"]
        assert registry.call("search", {"query": "ferry", "tags": []})["success"] is True
    finally:
        registry.close()
    cli = subprocess.run([sys.executable, "-m", "smartcontext", "search", "ferry", "--tag", "", str(vault)],
                         capture_output=True, text=True, cwd=vault, env=ENV, timeout=180)
    assert cli.returncode == 1 and "tags holds an empty value" in cli.stderr
    with pytest.raises(InvalidArgument, match="kinds holds an empty value"):
        Query.build("code-context", "q", kinds=[" "])
