"""End-to-end through the library: index a real repository folder, ask questions."""

import json

import pytest

from smartcontext import Workspace
from smartcontext.errors import EmptyWorkspace, InvalidArgument, WorkspaceNotFound
from smartcontext.tokens import count_tokens


@pytest.fixture
def ws(sample_repo, open_ws):
    w = open_ws(sample_repo)
    w.config.embeddings.model = "none"
    w.index()
    yield w
    w.close()


def test_open_missing_folder():
    with pytest.raises(WorkspaceNotFound):
        Workspace.open("/no/such/folder/anywhere")


def test_empty_folder_is_reported(tmp_path):
    (tmp_path / "empty").mkdir()
    w = Workspace.open(tmp_path / "empty")
    with pytest.raises(EmptyWorkspace, match="nothing to index"):
        w.index(embeddings=False)


def test_index_counts_items_and_edges(ws):
    st = ws.status()
    assert st.indexed and st.files == 9
    assert st.kinds["class"] >= 4 and st.kinds["method"] >= 6
    assert st.edges > 10


def test_question_naming_a_class_and_method_finds_them(ws):
    res = ws.context("How does AuthService handle login?", max_tokens=2000)
    assert res.files[0] == "shop/auth.py"
    # a small best file is shown whole: header (imports) and every top-level symbol
    modes = {s.item.id: s.mode for s in res.items}
    assert modes["shop/auth.py"] == "head" and "import hashlib" in res.text
    assert modes["shop/auth.py::AuthService.login"] == "full"
    assert "shop/auth.py::AuthService" in modes  # the class header comes along
    assert modes["shop/auth.py::hash_password"] == "full"  # the rest of the small file too
    assert "self.verify(password" in res.text
    assert res.token_count == count_tokens(res.text) <= 2000


def test_precise_items_when_the_best_file_is_too_big_to_show_whole(ws):
    # 2.5 x the file's size: the file no longer fits in the 40% share for a whole file
    res = ws.context("How does AuthService handle login?", max_tokens=400)
    ids = [s.item.id for s in res.items]
    assert "shop/auth.py::AuthService.login" in ids
    login = next(s for s in res.items if s.item.id == "shop/auth.py::AuthService.login")
    assert login.mode == "full"
    # the method brings its class header
    assert "shop/auth.py::AuthService" in ids
    assert res.token_count <= 400


def test_graph_brings_callees_without_pushing_out_direct_matches(ws):
    res = ws.context("Where is the cart total computed?", max_tokens=3000)
    ids = [s.item.id for s in res.items]
    assert "shop/cart.py::Cart.total" in ids
    # apply_discount is called by Cart.total
    assert "shop/pricing.py::apply_discount" in ids
    scores = {s.item.id: s.score for s in res.items}
    assert scores["shop/cart.py::Cart.total"] > scores["shop/pricing.py::apply_discount"]


def test_budget_is_never_exceeded(ws):
    for budget in (30, 80, 200, 500, 1500):
        res = ws.context("login password hash token discount cart", max_tokens=budget)
        assert res.token_count <= budget
        assert count_tokens(res.text) == res.token_count


def test_tiny_budget_warns(ws):
    res = ws.context("How does AuthService handle login?", max_tokens=40)
    assert res.token_count <= 40
    assert res.warnings and "budget" in res.warnings[0]


def test_nothing_matched_says_so(ws):
    res = ws.context("zzqx frobnicate wibble", max_tokens=1000)
    assert res.items == []
    assert "nothing" in res.warnings[0]


def test_nothing_matched_shows_nearest_names(ws):
    res = ws.context("qqzz aply_discont", max_tokens=1000)
    assert res.items == [] and "nothing" in res.warnings[0]
    assert res.nearest and res.nearest[0]["id"] == "shop/pricing.py::apply_discount"


def test_exclude_tests(ws):
    with_tests = ws.context("test login rejects bad password", max_tokens=4000)
    assert any(s.item.path.startswith("tests/") for s in with_tests.items)
    without = ws.context("test login rejects bad password", max_tokens=4000, exclude_tests=True)
    assert not any(s.item.path.startswith("tests/") for s in without.items)


def test_formats(ws):
    mu = ws.context("AuthService login", max_tokens=1500, include_scores=True)
    assert "! shop/auth.py" in mu.text and "$ AuthService" in mu.text
    assert "# login(self, name, password)" in mu.text
    assert "relevance=" in mu.text
    assert "@ hashlib" in mu.text
    md = ws.context("AuthService login", max_tokens=1500, format="markdown")
    assert "### shop/auth.py" in md.text and "```python" in md.text
    js = ws.context("AuthService login", max_tokens=1500, format="json")
    data = json.loads(js.text)
    assert data["files"][0]["path"] == "shop/auth.py"
    assert js.token_count <= 1500
    assert json.loads(json.dumps(js.to_dict()))["token_count"] == js.token_count


def test_no_imports_option(ws):
    res = ws.context("AuthService login", max_tokens=1500, include_imports=False)
    assert "@ hashlib" not in res.text


def test_signatures_when_budget_is_tight_bodies_when_it_allows(ws):
    big = ws.context("discount cart total price", max_tokens=4000)
    assert any(s.mode == "full" for s in big.items)
    small = ws.context("discount cart total price", max_tokens=120)
    assert small.items and all(s.mode == "signature" or s.item.tokens < 60 for s in small.items)


def test_stats_report_each_stage(ws):
    res = ws.context("How does AuthService handle login?", max_tokens=2000)
    st = res.stats
    assert st["entities"] >= 2
    assert st["candidates"]["entity"] > 0 and st["candidates"]["keyword"] > 0
    assert "names" in st["signals"] and "keywords" in st["signals"]
    assert st["tokens_used"] == res.token_count and st["max_tokens"] == 2000
    assert set(st["seconds"]) >= {"entities", "keyword", "fuse", "budget_export"}


def test_javascript_is_indexed_and_linked(ws):
    res = ws.context("How is a price formatted at checkout?", max_tokens=2000)
    ids = [s.item.id for s in res.items]
    assert any(i.startswith("web/format.js") for i in ids)


def test_bad_arguments(ws):
    with pytest.raises(InvalidArgument):
        ws.context("q", max_tokens=0)
    with pytest.raises(InvalidArgument):
        ws.context("q", format="xml")
    with pytest.raises(InvalidArgument):
        ws.context("   ")
    with pytest.raises(InvalidArgument, match="unknown context option"):
        ws.context("q", bogus=1)


def test_huge_question_is_handled(ws):
    q = "How does AuthService handle login? " + ("lorem ipsum " * 9000)
    res = ws.context(q, max_tokens=1000)
    assert res.token_count <= 1000
    assert any(s.item.name == "login" for s in res.items)


def test_context_builds_an_index_when_missing(sample_repo, open_ws):
    w = open_ws(sample_repo)
    w.config.embeddings.model = "none"
    res = w.context("apply_discount", max_tokens=1000)
    assert "built_index" in res.stats
    assert any(s.item.name == "apply_discount" for s in res.items)
    w.close()


def test_vectors_rank_prose_but_not_code_symbols(tmp_path):
    # Measured on SWE-bench Lite, vectors made code context worse; on notes they help.
    from smartcontext import Workspace

    (tmp_path / "garden.py").write_text(
        "def water_tomatoes(days):\n    '''Water the tomato plants every few days.'''\n    return days * 2\n")
    (tmp_path / "Garden.md").write_text("# Garden\n\nTomato plants need deep watering twice a week.\n")
    (tmp_path / "Budget.md").write_text("# Budget\n\nQuarterly spending forecast for the platform team.\n")
    (tmp_path / "Standup.md").write_text("# Standup\n\nDaily notes: blockers, deploys, on-call.\n")
    ws = Workspace.open(tmp_path)
    ws.index(embeddings=True)
    res = ws.context("how often should tomato plants get water?", max_tokens=2000)
    ws.close()
    with_vector = {s.item.kind for s in res.items if s.signals.get("vector")}
    assert "vectors" in res.stats["signals"]
    assert with_vector == {"section"}
    assert any(s.item.name == "Garden" and s.signals.get("vector") for s in res.items)


def _many_matches(root):
    """A repository where far more methods match than any small budget holds, indented
    as real code is (runs of spaces are few tokens: the index's 4-bytes-a-token estimate
    runs high on them)."""
    (root / "pkg").mkdir(parents=True)
    for f in range(6):
        body = f"class Billing{f}:\n" + "\n".join(
            f"    def invoice_total_{n}(self, items, discount):\n"
            f"        \"\"\"Invoice total {n} with the discount applied.\"\"\"\n"
            f"        subtotal = 0\n"
            f"        for item in items:\n"
            f"            if item.quantity:\n"
            f"                if item.price:\n"
            f"                    subtotal += item.price * item.quantity\n"
            f"        return round(subtotal * (1 - discount), 2)\n"
            for n in range(12)
        )
        (root / "pkg" / f"billing_{f}.py").write_text(body, encoding="utf-8")
    return root


def test_a_second_plan_spends_what_the_estimates_left_free(tmp_path, open_ws, monkeypatch):
    from smartcontext.context import pipeline

    w = open_ws(_many_matches(tmp_path / "repo"))
    w.config.embeddings.model = "none"
    w.index()
    question = "how is the invoice total computed with a discount"
    monkeypatch.setattr(pipeline, "REFILL", False)
    first = w.context(question, max_tokens=1500, format="markdown")
    monkeypatch.setattr(pipeline, "REFILL", True)
    refilled = w.context(question, max_tokens=1500, format="markdown")
    # The framing allowances run high, so one plan leaves tokens free; the second uses them.
    assert first.token_count < 1500 * (1 - pipeline.REFILL_SLACK)
    assert first.token_count < refilled.token_count <= 1500
    assert len(refilled.items) > len(first.items)
    assert count_tokens(refilled.text) == refilled.token_count
    w.close()


def test_refill_budget_only_when_the_plan_was_spent_and_the_text_fell_short():
    from smartcontext.context.pipeline import REFILL_MARGIN, _refill_budget

    # Spent its 900-token item budget, the exact text 800 of 1000: scale by 900/700.
    assert _refill_budget(900, 100, 800, 1000) == int(900 * 900 / 700 * REFILL_MARGIN)
    assert _refill_budget(500, 100, 450, 1000) is None  # ran out of candidates, not budget
    assert _refill_budget(900, 100, 990, 1000) is None  # already close to the budget
    assert _refill_budget(900, 100, 100, 1000) is None  # nothing but the reserve
