"""What went in, what was left out, and why: ``context --explain`` and ``omitted``, the
coverage listing (``files``), ``.smartcontextignore``, ``--paths``/``--exclude`` and
``config show``; through the library, the CLI as a user runs it, and the MCP tools."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import SAMPLE_REPO, write_tree

from smartcontext import Workspace
from smartcontext.config import config_sources

ENV = {**os.environ, "SMARTCONTEXT_EMBEDDING_MODEL": "none"}

# Five functions of about the same size with distinct names: a question naming all of
# them fits only some into a small budget.
BILLING = '"""Billing."""\n\n' + "\n\n".join(
    f'def {name}(invoice, customer, amount):\n    """{doc}"""\n'
    + "".join(f"    step_{i} = amount * {i} + len(customer.name)  # {name} step {i}\n" for i in range(6))
    + "    return invoice\n"
    for name, doc in [
        ("charge_card", "Charge the customer's card for the invoice."),
        ("refund_payment", "Refund a payment of the invoice to the customer."),
        ("send_receipt", "Send the customer a receipt of the invoice."),
        ("apply_tax", "Apply the customer's tax rate to the invoice amount."),
        ("close_invoice", "Close the invoice once paid by the customer."),
    ]
)
QUESTION = "charge_card refund_payment send_receipt apply_tax close_invoice for the invoice"


def run(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None, check: bool = True):
    proc = subprocess.run([sys.executable, "-m", "smartcontext", *args], capture_output=True, text=True,
                          cwd=cwd, env=env or ENV, timeout=180)
    if check and proc.returncode != 0:
        raise AssertionError(f"exit {proc.returncode}\nstdout: {proc.stdout}\nstderr: {proc.stderr}")
    return proc


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = write_tree(tmp_path / "repo", {**SAMPLE_REPO, "billing/pay.py": BILLING})
    (root / ".git").mkdir()  # a repository root: the CLI finds it from inside
    (root / ".gitignore").write_text("build/\n", encoding="utf-8")
    write_tree(root, {"build/generated_shop.py": "def charge_card_copy():\n    return 1\n"})
    (root / "shop" / "blob.py").write_bytes(b"def charge_card():\x00\x01\x02 binary")
    return root


@pytest.fixture
def ws(repo: Path):
    w = Workspace.open(repo)
    w.config.embeddings.enabled = False
    w.index()
    yield w
    w.close()


# -- the explanation of a context ---------------------------------------------------------


def test_a_function_cut_by_a_small_budget_is_omitted_with_its_cost(ws):
    small = ws.context(QUESTION, max_tokens=220)
    shown = {s.item.qualname for s in small.items}
    cut = [o for o in small.omitted if o.reason == "over budget" and o.kind == "function"]
    assert cut, small.omitted
    for o in cut:
        assert o.path == "billing/pay.py" and o.name not in shown
        assert o.tokens > 20 and "free" in o.detail
        free = int(o.detail.split(", ")[1].split()[0])
        assert o.tokens > free  # it really did not fit
    assert small.omitted_counts["over budget"] >= len(cut)
    # With room, the same function is shown: the budget was the only reason.
    large = ws.context(QUESTION, max_tokens=4000)
    assert f"def {cut[0].name}(" in large.text
    assert not any(o.name == cut[0].name and o.reason == "over budget" for o in large.omitted)


def test_a_module_whose_function_is_shown_is_no_budget_warning(tmp_path):
    """A one-function file: the function is shown whole and the module row that holds it
    would fit, but repeats it. It was reported "over budget" ("needs 23 tokens, 465 free")
    with the warning that the budget was constraining."""
    root = write_tree(tmp_path / "calc", {
        "pkg/calc.py": 'def add(a, b):\n    """Add two numbers."""\n    return a + b\n'})
    with Workspace.open(root) as w:
        w.config.embeddings.enabled = False
        w.index()
        result = w.context("how are two numbers added", max_tokens=500)
    assert "def add(a, b):" in result.text
    assert not any("constraining" in warning for warning in result.warnings), result.warnings
    module = [o for o in result.omitted if o.kind == "module"]
    assert [(o.reason, o.detail) for o in module] == [("duplicate of a shown item", "its members are shown")]


def test_a_test_file_left_out_says_so(ws):
    result = ws.context("How does AuthService handle login?", max_tokens=1500, exclude_tests=True)
    tests = [o for o in result.omitted if o.path == "tests/test_auth.py"]
    assert tests and all(o.reason == "test excluded" for o in tests)
    assert any(o.name == "test_login_rejects_bad_password" and o.kind == "function" for o in tests)
    assert all(0 < o.score <= 1 for o in tests)
    kept = ws.context("How does AuthService handle login?", max_tokens=1500, exclude_tests=False)
    assert not any(o.reason == "test excluded" for o in kept.omitted)


def test_below_the_score_floor_and_spend(ws):
    result = ws.context(QUESTION, max_tokens=4000, min_relevance=0.95)
    floor = [o for o in result.omitted if o.reason == "below score floor"]
    assert floor and all(o.score < 0.95 for o in floor)
    spend = result.spend
    parts = ("bodies", "signatures", "headers", "files")
    assert sum(spend[k]["tokens"] for k in parts) == spend["total"] == result.token_count
    assert spend["free"] == 4000 - result.token_count
    assert spend["bodies"]["items"] == sum(1 for s in result.items if s.mode == "full")


def test_explaining_changes_nothing_in_the_answer(ws):
    on = ws.context(QUESTION, max_tokens=300, exclude_tests=True)
    off = ws.context(QUESTION, max_tokens=300, exclude_tests=True, explain=False)
    assert on.text == off.text and on.token_count == off.token_count
    assert on.omitted and not off.omitted and not off.spend
    d = on.to_dict()
    assert d["omitted"][0].keys() >= {"path", "name", "kind", "score", "tokens", "reason"}


def test_a_question_naming_a_file_too_large_to_index(repo):
    (repo / "huge_tables.py").write_text("X = 1\n" * 20, encoding="utf-8")
    (repo / "smartcontext.toml").write_text("[index]\nmax_file_bytes = 100\n[embeddings]\nenabled = false\n",
                                            encoding="utf-8")
    ws = Workspace.open(repo)
    try:
        ws.index()
        result = ws.context("what does huge_tables.py define?", max_tokens=1000)
        big = [o for o in result.omitted if o.path == "huge_tables.py"]
        assert big and big[0].reason == "file too large"
    finally:
        ws.close()


def test_paths_and_exclude_take_folders_and_globs(ws):
    only = ws.context("AuthService login discount cart", max_tokens=3000, paths=["shop"])
    assert only.items and {s.item.path.split("/")[0] for s in only.items} == {"shop"}
    assert any(o.reason == "outside --paths" for o in only.omitted)
    globbed = ws.context("AuthService login discount cart", max_tokens=3000, exclude=["shop/auth.py", "**/*.js"])
    paths = {s.item.path for s in globbed.items}
    assert paths and "shop/auth.py" not in paths and not any(p.endswith(".js") for p in paths)
    assert any(o.reason == "matched --exclude" and o.path == "shop/auth.py" for o in globbed.omitted)
    nowhere = ws.context("AuthService login", max_tokens=3000, paths=["shpo"])
    assert not nowhere.items and "--paths" in nowhere.warnings[0]
    hits = ws.search("login", mode="keyword", exclude=["tests"])
    assert hits and not any(h.path.startswith("tests/") for h in hits)
    hits = ws.search("login", mode="keyword", paths=["*.py"], exclude=["shop/auth.py"])
    assert hits and all(h.path.endswith(".py") and h.path != "shop/auth.py" for h in hits)


# -- the CLI ------------------------------------------------------------------------------


def test_cli_explain_is_off_by_default_and_goes_to_stderr_when_piped(repo):
    plain = run("context", QUESTION, str(repo), "-t", "220")
    assert "Left out" not in plain.stdout + plain.stderr
    explained = run("context", QUESTION, str(repo), "-t", "220", "--explain")
    assert explained.stdout == plain.stdout  # the context itself is unchanged
    assert "Left out: the best" in explained.stderr and "over budget: needs" in explained.stderr
    assert "Budget: " in explained.stderr and "free" in explained.stderr
    # JSON carries it without asking, in both shapes.
    data = json.loads(run("context", QUESTION, str(repo), "-t", "220", "--json").stdout)
    assert any(o["reason"] == "over budget" and o["tokens"] > 0 for o in data["omitted"])
    assert data["spend"]["total"] == data["token_count"]
    doc = json.loads(run("context", QUESTION, str(repo), "-t", "220", "-f", "json").stdout)
    assert any(o["reason"] == "over budget" for o in doc["omitted"]) and "spend" in doc


def test_cli_paths_limits_a_context_to_its_folder(repo):
    data = json.loads(run("context", "AuthService login cart discount", str(repo), "--paths", "shop",
                          "--json").stdout)
    assert data["items"] and all(i["path"].startswith("shop/") for i in data["items"])
    data = json.loads(run("context", "AuthService login cart discount", str(repo), "--exclude", "shop",
                          "--json").stdout)
    assert not any(i["path"].startswith("shop/") for i in data["items"])
    # The fast path and typer read the options alike (a short-option cluster goes to typer).
    via_typer = json.loads(run("context", "AuthService login cart discount", str(repo), "--paths", "shop",
                               "--json", "-vt", "8000").stdout)
    assert via_typer["items"] and all(i["path"].startswith("shop/") for i in via_typer["items"])
    found = json.loads(run("search", "login", str(repo), "--exclude", "tests", "--json", "-m", "keyword").stdout)
    assert found["results"] and not any(r["path"].startswith("tests/") for r in found["results"])


def test_files_lists_indexed_and_skipped_with_reasons(repo):
    run("index", str(repo))
    data = json.loads(run("files", str(repo), "--json").stdout)
    indexed = {f["path"]: f for f in data["files"]}
    assert indexed["shop/auth.py"]["source"] == "code" and indexed["shop/auth.py"]["items"] > 3
    assert indexed["shop/auth.py"]["tokens"] > 50 and "vectors" in indexed["shop/auth.py"]
    skipped = {s["path"]: s["reason"] for s in data["skipped"]}
    assert skipped["shop/blob.py"] == "binary" and skipped["build/"] == "ignored"
    only = json.loads(run("files", str(repo), "--skipped", "--json").stdout)
    assert only["files"] == [] and {s["path"] for s in only["skipped"]} == set(skipped)
    text = run("files", str(repo / "shop"), "--skipped").stdout
    assert "shop/blob.py" in text and "binary" in text and "build/" not in text
    status = json.loads(run("status", str(repo), "--json").stdout)
    assert status["skipped"] == {"ignored": 1, "binary": 1}
    assert "Skipped: " in run("status", str(repo)).stdout
    # Never in any answer.
    for question in ("charge_card", "charge_card_copy generated shop"):
        answer = json.loads(run("context", question, str(repo), "--json").stdout)
        assert not any(i["path"] in ("shop/blob.py", "build/generated_shop.py") for i in answer["items"])
        found = run("search", question, str(repo), "--json", check=False)
        if found.returncode == 0:
            assert not any(r["path"] in ("shop/blob.py", "build/generated_shop.py")
                           for r in json.loads(found.stdout)["results"])


def test_smartcontextignore_nested_like_gitignore(repo):
    run("index", str(repo))
    (repo / "shop" / ".smartcontextignore").write_text("db.py\n", encoding="utf-8")
    (repo / ".smartcontextignore").write_text("web/\n", encoding="utf-8")
    run("index", str(repo))  # the saved walk notices the new ignore files
    data = json.loads(run("files", str(repo), "--json").stdout)
    paths = {f["path"] for f in data["files"]}
    assert "shop/db.py" not in paths and not any(p.startswith("web/") for p in paths)
    assert "shop/auth.py" in paths
    skipped = {s["path"]: s["reason"] for s in data["skipped"]}
    assert skipped["shop/db.py"] == "ignored" and skipped["web/"] == "ignored"
    # Edited in place, it is read again: db.py comes back.
    (repo / "shop" / ".smartcontextignore").write_text("# nothing\n", encoding="utf-8")
    run("index", str(repo))
    assert "shop/db.py" in {f["path"] for f in json.loads(run("files", str(repo), "--json").stdout)["files"]}


def test_config_show_names_where_each_value_came_from(repo):
    (repo / "smartcontext.toml").write_text("[context]\nmax_tokens = 5000\n", encoding="utf-8")
    data = json.loads(run("config", "show", str(repo), "--json").stdout)
    by_key = {s["key"]: s for s in data["settings"]}
    assert by_key["context.max_tokens"] == {"key": "context.max_tokens", "value": 5000,
                                            "source": "smartcontext.toml", "detail": ""}
    assert by_key["context.encoding"]["source"] == "default"
    assert by_key["embeddings.model"]["source"] == "environment"
    assert by_key["embeddings.model"]["detail"] == "SMARTCONTEXT_EMBEDDING_MODEL"
    text = run("config", "show", str(repo)).stdout
    assert "context.max_tokens" in text and "smartcontext.toml" in text
    env = {k: v for k, v in ENV.items() if not k.startswith("SMARTCONTEXT_")}
    flagged = json.loads(run("--store", "postgresql://me:secret@db.example/idx", "config", "show", str(repo),
                             "--json", env=env).stdout)
    url = next(s for s in flagged["settings"] if s["key"] == "store.url")
    assert url["source"] == "flag" and "secret" not in url["value"] and "me:***@" in url["value"]


def test_config_sources_of_a_vault_table(tmp_path):
    (tmp_path / ".vault.toml").write_text(
        "[plugins.smart_context]\nsimilarity_threshold = 0.6\n[plugins.smart_context.index]\ntext_files = false\n",
        encoding="utf-8")
    by_key = {s.key: s for s in config_sources(tmp_path)}
    assert by_key["chat.similarity_threshold"].value == 0.6
    assert by_key["chat.similarity_threshold"].source == ".vault.toml"
    assert by_key["index.text_files"].source == ".vault.toml" and by_key["index.text_files"].value is False


# -- MCP ----------------------------------------------------------------------------------


def test_mcp_context_carries_omitted_and_files_lists_skipped(repo):
    from test_mcp_server import payload, run as run_async, stdio_session

    async def scenario() -> None:
        async with stdio_session(repo) as session:
            listed = {t.name: t for t in (await session.list_tools()).tools}
            assert "files" in listed and "exclude" in listed["context"].input_schema["properties"]
            answer = payload(await session.call_tool(
                "context", {"question": QUESTION, "max_tokens": 220, "exclude_tests": True}))
            assert answer["success"] and any(o["reason"] == "over budget" for o in answer["omitted"])
            assert answer["spend"]["total"] == answer["token_count"]
            quiet = payload(await session.call_tool(
                "context", {"question": QUESTION, "max_tokens": 220, "explain": False}))
            assert quiet["omitted"] == [] and quiet["text"] == answer["text"]
            scoped = payload(await session.call_tool(
                "context", {"question": "AuthService login", "max_tokens": 2000, "exclude": ["shop"]}))
            assert "shop/auth.py" not in scoped["files"]
            files = payload(await session.call_tool("files", {"skipped": True}))
            assert files["success"] and files["files"] == []
            assert {s["path"]: s["reason"] for s in files["skipped"]} == {"shop/blob.py": "binary",
                                                                         "build/": "ignored"}
            under = payload(await session.call_tool("files", {"path": "billing"}))
            assert [f["path"] for f in under["files"]] == ["billing/pay.py"]

    run_async(scenario)


def test_smartcontextignore_is_read_without_gitignore_and_takes_negations(repo):
    (repo / "smartcontext.toml").write_text("[index]\nrespect_gitignore = false\n[embeddings]\nenabled = false\n",
                                            encoding="utf-8")
    (repo / ".smartcontextignore").write_text("shop/*.py\n!shop/auth.py\n", encoding="utf-8")
    ws = Workspace.open(repo)
    try:
        ws.index()
        found = ws.files()
        indexed = {f.path for f in found.files}
        assert "shop/auth.py" in indexed and "shop/cart.py" not in indexed
        assert "build/generated_shop.py" in indexed  # .gitignore is not read
        skipped = {s.path: s.reason for s in found.skipped}
        assert skipped["shop/cart.py"] == "ignored" and found.summary["ignored"] >= 3
        assert ws.status().skipped == found.summary
    finally:
        ws.close()


def test_a_minified_file_is_listed_as_indexed_as_text(repo):
    (repo / "web" / "bundle.js").write_text("var a=1;" * 3000 + "\n", encoding="utf-8")
    ws = Workspace.open(repo)
    ws.config.embeddings.enabled = False
    try:
        ws.index()
        found = ws.files("web")
        assert {s.path: s.reason for s in found.skipped} == {"web/bundle.js": "minified (indexed as text)"}
        assert "web/bundle.js" in {f.path for f in found.files}  # still indexed, as text windows
    finally:
        ws.close()
