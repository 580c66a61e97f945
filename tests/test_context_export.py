"""The exporters on hand-made selections: MU sigils and nesting, Markdown fences, JSON
content; and, end to end, that a JSON export fills its budget as MU does."""

import json
import shutil
from pathlib import Path

import pytest

from smartcontext import Workspace
from smartcontext.context.export import (
    EXPORTERS,
    JSON_COUNTS,
    json_content,
    json_document,
    measure_json,
    render_json,
    render_markdown,
    render_mu,
)
from smartcontext.context.models import ECHO_CHARS, FORMATS, SelectedItem
from smartcontext.model import Item
from smartcontext.tokens import count_tokens

AUTH = '''"""Authentication."""
import hashlib


class AuthService(Base):
    """Checks passwords."""

    @cached
    def login(self, name, password) -> str:
        """Return a session token."""
        return hashlib.sha256(name.encode()).hexdigest()
'''
AUTH_LINES = AUTH.splitlines()


def _item(**kw) -> Item:
    base = dict(language="python", tokens=20)
    return Item(**{**base, **kw})


MODULE = _item(id="shop/auth.py", path="shop/auth.py", kind="module", name="auth",
               qualname="shop.auth", start_line=1, end_line=11, text=AUTH,
               docstring="Authentication.")
CLASS = _item(id="shop/auth.py::AuthService", path="shop/auth.py", kind="class",
              name="AuthService", qualname="AuthService", start_line=5, end_line=11,
              signature="class AuthService(Base):", docstring="Checks passwords.",
              parent_id="shop/auth.py", meta={"bases": ["Base"]})
LOGIN = _item(id="shop/auth.py::AuthService.login", path="shop/auth.py", kind="method",
              name="login", qualname="AuthService.login", start_line=8, end_line=11,
              signature="@cached\ndef login(self, name, password) -> str:",
              docstring="Return a session token.\nMore.", parent_id="shop/auth.py::AuthService",
              meta={"decorators": ["cached"]})
PRICE = _item(id="shop/pricing.py::apply_discount", path="shop/pricing.py", kind="function",
              name="apply_discount", qualname="apply_discount", start_line=3, end_line=4,
              signature="def apply_discount(amount):", docstring="Ten percent off.",
              text="def apply_discount(amount):\n    return amount * 0.9")
NOTE_TEXT = "## Usage\n\nRun it:\n\n```bash\nshop --serve\n```\n"
SECTION = _item(id="docs/use.md#Usage", path="docs/use.md", kind="section", name="Usage",
                qualname="Guide > Usage", start_line=3, end_line=9, text=NOTE_TEXT,
                language="markdown")
FILE_LINES = {"shop/auth.py": AUTH_LINES,
              "shop/pricing.py": ["", "", "def apply_discount(amount):", "    return amount * 0.9"]}
DEPS = {"shop/auth.py": ["hashlib"]}
MODULES = {"shop/auth.py": "shop.auth", "shop/pricing.py": "shop.pricing"}


def selection() -> list[SelectedItem]:
    # pricing outranks auth, and auth's items arrive out of source order
    return [
        SelectedItem(PRICE, 0.95, "full"),
        SelectedItem(LOGIN, 0.80, "full"),
        SelectedItem(CLASS, 0.80, "signature", context_only=True),
        SelectedItem(MODULE, 0.40, "signature"),
    ]


def test_mu_groups_by_best_file_then_source_order_with_sigils_and_nesting():
    text = render_mu(selection(), FILE_LINES, DEPS, MODULES, include_scores=True)
    lines = text.splitlines()
    assert lines[0] == "! shop/pricing.py :: module=shop.pricing"
    assert lines[1] == "  # apply_discount(amount) :: relevance=0.95 L3-4"[2:]
    assert lines[2] == "    def apply_discount(amount):"
    auth = lines.index("! shop/auth.py :: module=shop.auth")
    assert lines[auth + 1] == "@ hashlib"
    assert lines[auth + 2] == "  :: Authentication."  # the module's doc line, no sigil of its own
    # the class is context only: no relevance annotation; bases after "<"
    assert lines[auth + 3] == "$ AuthService < Base :: L5-11"
    assert lines[auth + 4] == "  :: Checks passwords."
    # the method nests under its class, its decorator and score annotated
    assert lines[auth + 5] == "  # login(self, name, password) -> str :: @cached relevance=0.80 L8-11"
    assert lines[auth + 6] == "      @cached"  # the body as written, dedented then indented under the sigil
    assert "      def login(self, name, password) -> str:" in lines
    assert text.endswith("hexdigest()\n")


def test_mu_sections_and_no_scores_without_the_flag():
    text = render_mu([SelectedItem(SECTION, 0.5, "signature"), SelectedItem(PRICE, 0.9, "signature")],
                     FILE_LINES, {}, MODULES)
    assert "§ Guide > Usage :: L3-9" in text
    assert "# apply_discount(amount) :: L3-4\n  :: Ten percent off." in text
    assert "relevance" not in text
    assert render_mu([], FILE_LINES, {}, {}) == ""


def test_markdown_fences_code_and_widens_the_fence_around_backticks():
    text = render_markdown(selection() + [SelectedItem(SECTION, 0.3, "full")], FILE_LINES, DEPS, MODULES)
    assert text.index("### shop/pricing.py") < text.index("### shop/auth.py") < text.index("### docs/use.md")
    assert "Imports: `hashlib`" in text
    assert "`AuthService.login` lines 8-11:\n```python\n@cached\ndef login" in text
    assert "- `class AuthService(Base):` lines 5-11: Checks passwords." in text
    # the note holds ``` itself, so its fence is four backticks and closes after it
    assert "````markdown\n## Usage" in text and "```bash\nshop --serve\n```\n````" in text


def test_json_document_carries_code_for_full_items_and_doc_for_signatures():
    doc = json_document(selection(), FILE_LINES, DEPS, MODULES)
    assert [f["path"] for f in doc["files"]] == ["shop/pricing.py", "shop/auth.py"]
    auth = doc["files"][1]
    assert auth["module"] == "shop.auth" and auth["imports"] == ["hashlib"]
    by_id = {i["id"]: i for i in auth["items"]}
    assert [i["id"] for i in auth["items"]] == ["shop/auth.py", CLASS.id, LOGIN.id]
    login = by_id[LOGIN.id]
    assert login["code"].startswith("@cached\ndef login(") and "doc" not in login
    assert (login["start_line"], login["end_line"]) == (8, 11) and login["path"] == "shop/auth.py"
    assert login["mode"] == "full" and login["name"] == "login" and login["qualname"] == "AuthService.login"
    assert by_id[CLASS.id]["doc"] == "Checks passwords." and "code" not in by_id[CLASS.id]
    assert by_id[CLASS.id]["context_only"] is True


def test_render_json_is_valid_json_with_its_header_first_and_unescaped_code():
    header = {"question": 'what "quotes"?', "token_count": 12}
    text = render_json(selection() + [SelectedItem(SECTION, 0.3, "full")], FILE_LINES, DEPS, MODULES,
                       header=header)
    data = json.loads(text)
    assert list(data)[:2] == ["question", "token_count"] and data["question"] == 'what "quotes"?'
    section = data["files"][-1]["items"][0]
    assert section["code"] == NOTE_TEXT.rstrip("\n")


def test_json_budget_counts_the_content_not_the_syntax():
    sel = selection()
    doc = json_document(sel, FILE_LINES, DEPS, MODULES)
    content = measure_json(sel, FILE_LINES, DEPS, MODULES)
    assert content == json_content(doc)
    # every code string is in the counted content verbatim, and no JSON syntax is
    for f in doc["files"]:
        for entry in f["items"]:
            assert entry.get("code", "") in content
    assert '"id"' not in content and "\\n" not in content
    assert count_tokens(content) < count_tokens(render_json(sel, FILE_LINES, DEPS, MODULES))
    assert EXPORTERS["json"].counts == JSON_COUNTS
    assert EXPORTERS["mu"].render is None and EXPORTERS["mu"].measure is render_mu


def test_every_format_has_an_exporter():
    assert set(EXPORTERS) == set(FORMATS)


@pytest.fixture(scope="module")
def own_source(tmp_path_factory):
    """This package's own source as a repository: real code of a realistic size."""
    root = tmp_path_factory.mktemp("own") / "repo"
    shutil.copytree(Path(__file__).resolve().parents[1] / "src" / "smartcontext", root / "smartcontext",
                    ignore=shutil.ignore_patterns("__pycache__", "web"))
    ws = Workspace.open(root)
    ws.config.embeddings.model = "none"
    ws.index()
    yield ws
    ws.close()


def _code_chars(root: Path, res) -> int:
    """Characters of source shown in full (bodies and file headers), read from the files."""
    total = 0
    for s in res.items:
        if s.mode == "signature":
            continue
        lines = (root / s.item.path).read_text().splitlines()
        # A head is the lines it names: the file's preamble from line 1, or one module-level
        # statement the question matched (``FORMATS = (...)`` at L37-37), not lines 1-37.
        total += len("\n".join(lines[max(1, s.item.start_line) - 1 : s.item.end_line]))
    return total


@pytest.mark.parametrize("question", ["how does the budgeter fit items into max_tokens?",
                                      "how is the MU format rendered?"])
def test_json_at_a_budget_carries_about_as_much_code_as_mu(own_source, question):
    mu = own_source.context(question, max_tokens=3000, format="mu")
    js = own_source.context(question, max_tokens=3000, format="json")
    data = json.loads(js.text)
    items = [i for f in data["files"] for i in f["items"]]
    code = sum(len(i.get("code", "")) for i in items)
    mu_code = _code_chars(own_source.root, mu)
    assert len(items) == len(js.items)
    # Each format's plan is scaled by how far its own estimates ran over (pipeline
    # _refill_budget): JSON counts no paths or line framing, so it may afford more whole
    # bodies and fewer signatures than MU. What must hold is that it never carries much
    # less (the JSON code is dedented, so a little shorter than the lines it came from).
    assert len(items) >= 0.6 * len(mu.items)
    assert code >= 0.8 * mu_code
    assert 0.8 * mu.token_count <= js.token_count <= 3000
    assert data["token_count"] == js.token_count and data["counts"] == JSON_COUNTS
    assert data["max_tokens"] == 3000 and data["question"] == question
    assert js.to_dict()["text"] == js.text


def test_json_scores_only_when_asked_like_mu_and_markdown():
    def scored(include_scores):
        doc = json_document(selection(), FILE_LINES, DEPS, MODULES, include_scores=include_scores)
        return {i["id"]: i.get("score") for f in doc["files"] for i in f["items"]}

    assert set(scored(False).values()) == {None}
    with_scores = scored(True)
    assert with_scores[LOGIN.id] is not None and 0 < with_scores[LOGIN.id] <= 1
    assert with_scores[CLASS.id] is None  # context_only: MU and Markdown show no relevance either


def test_a_long_question_is_named_not_handed_back(own_source):
    """A pasted bug report is the question, not part of the answer: the JSON shapes (the
    context tool's, `--json`, HTTP) and the json format's header name it cut, with its
    length, so a client's window does not receive it again."""
    question = "How does the budgeter fit items into max_tokens? " + "The traceback follows. " * 2000
    res = own_source.context(question, max_tokens=1500, format="json")
    for shape in (res.to_dict(), json.loads(res.text)):
        assert shape["question_chars"] == len(question) > 40_000
        assert shape["question"] == question[:ECHO_CHARS] + "…"
    short = own_source.context("how is the MU format rendered?", max_tokens=1500, format="json")
    assert short.to_dict()["question"] == "how is the MU format rendered?" and "question_chars" not in short.to_dict()
