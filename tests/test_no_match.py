"""A calibrated "nothing found" with vectors on (issue 20): nonsense exits 1 on notes and on
code, in hybrid and semantic search and in context; real questions still find their
answers. The default embedding model (the static model) throughout, on trees built here."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from smartcontext import Workspace
from smartcontext.retrieval.keyword import KeywordSearcher
from smartcontext.retrieval.noise import noise_floor, probes

NOTES = {
    "Budget.md": "---\ntags: [finance]\n---\n# Budget\n\n## Vendors\n\nThe vendor invoices for the espresso machine are overdue.\n",
    "Roadmap.md": "# Roadmap\n\nShip the espresso ordering app in spring.\n",
    "Garden.md": "# Garden\n\nTomatoes need water daily. The courgettes grow fast in July.\n",
    "Travel.md": "# Travel\n\nThe train to Lisbon leaves at nine; book the hotel near the river.\n",
    "T - How to.md": "A template.\n",
}
CODE = {
    "README.md": "# Shop\n\nA tiny shop: carts, discounts, totals.\n",
    "pkg/cart.py": (
        '"""Shopping cart: line items, discounts and the order total."""\n\n\n'
        "def apply_discount(total, percent):\n"
        '    """Reduce the total by a percentage discount code."""\n'
        "    kf = total * percent / 100\n    return total - kf\n\n\n"
        "def order_total(items):\n"
        '    """Sum the price of every line item in the cart."""\n'
        "    xm = 0\n    for item in items:\n        xm += item.price * item.quantity\n    return xm\n"
    ),
}


def write(root, files):
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def trees(tmp_path_factory):
    base = tmp_path_factory.mktemp("no-match")
    out = {"notes": write(base / "notes", NOTES), "code": write(base / "code", CODE)}
    env = {k: v for k, v in os.environ.items() if k != "SMARTCONTEXT_EMBEDDING_MODEL"}
    for root in out.values():
        subprocess.run([sys.executable, "-m", "smartcontext", "index", str(root)], check=True,
                       capture_output=True, env=env, timeout=600)
    return out, env


def cli(env, *args):
    return subprocess.run([sys.executable, "-m", "smartcontext", *args], capture_output=True, text=True,
                          env=env, timeout=300)


@pytest.mark.parametrize("tree", ["notes", "code"])
@pytest.mark.parametrize("mode", ["hybrid", "semantic"])
def test_nonsense_finds_nothing_with_vectors_on(trees, tree, mode):
    roots, env = trees
    proc = cli(env, "search", "qqzzxxkkjj", str(roots[tree]), "--mode", mode)
    assert proc.returncode == 1 and proc.stdout == "", proc.stdout
    assert "nothing found" in proc.stderr and "noise floor" in proc.stderr
    as_json = cli(env, "search", "qqzzxxkkjj", str(roots[tree]), "--mode", mode, "--json")
    assert as_json.returncode == 1 and json.loads(as_json.stdout)["count"] == 0


@pytest.mark.parametrize("tree, query, where", [
    ("notes", "espresso invoices", "Budget.md"),
    ("notes", "when does the train leave", "Travel.md"),
    ("code", "discount", "pkg/cart.py"),
    ("code", "how is the price of the items summed", "pkg/cart.py"),
])
def test_real_questions_still_find_their_answer(trees, tree, query, where):
    roots, env = trees
    proc = cli(env, "search", query, str(roots[tree]), "--json")
    assert proc.returncode == 0, proc.stderr
    hits = json.loads(proc.stdout)["results"]
    assert where in {h["path"] for h in hits[:3]}
    assert any("semantic" in h["signals"] for h in hits)  # vectors answered too


def test_context_of_nonsense_selects_nothing(trees):
    roots, env = trees
    for query in ("qqzzxxkkjj", "kf28xm4"):
        proc = cli(env, "context", query, str(roots["code"]))
        assert proc.returncode == 1, (query, proc.stdout)
        assert "nothing in the index matched" in proc.stderr
    assert cli(env, "context", "apply_discount", str(roots["code"])).returncode == 0


def test_keyword_evidence_is_a_telling_word(trees):
    roots, _ = trees
    ws = Workspace.open(roots["code"])
    try:
        searcher = KeywordSearcher(ws.store)
        # kf and xm are indexed (variables of cart.py): the pieces of a nonsense token
        # match them, which is not evidence; a whole short word of the query is.
        assert searcher.search("kf28xm4", 5)
        assert not searcher.has_evidence("kf28xm4")
        assert searcher.has_evidence("kf") and searcher.has_evidence("discounts please")
        assert searcher.has_evidence("order_total") and not searcher.has_evidence("qqzzxxkkjj")
    finally:
        ws.close()


def test_a_note_named_by_a_query_of_stop_words_is_still_found(trees):
    roots, env = trees
    proc = cli(env, "search", "T - How to", str(roots["notes"]), "--json")
    assert proc.returncode == 0
    assert json.loads(proc.stdout)["results"][0]["path"] == "T - How to.md"


def test_the_noise_floor_is_measured_on_the_index(trees):
    roots, _ = trees
    ws = Workspace.open(roots["notes"])
    try:
        index, embedder = ws.vectors()
        floor = noise_floor(index, embedder)
        best = [index.search(v, 1)[0][1] for v in embedder.embed(probes())]
        assert max(best) < floor + 0.2 and floor > sum(best) / len(best)
        assert noise_floor(index, embedder) == floor  # once per index
    finally:
        ws.close()
