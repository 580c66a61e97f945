"""Scoring on its own: hand-made items in a real index file, no workspace, no parser."""

from __future__ import annotations

import math

import pytest

from smartcontext.context.models import ExtractionConfig
from smartcontext.model import Item
from smartcontext.retrieval import scoring
from smartcontext.retrieval.catalogue import Catalogue
from smartcontext.retrieval.entities import ExtractedEntity
from smartcontext.retrieval.graph import Neighbour
from smartcontext.retrieval.scoring import ScoredItem
from smartcontext.store import open_store

# path -> (module name, [(id suffix, kind, qualname, parent suffix)])
FILES = {
    "pkg/auth.py": ("pkg.auth", [
        ("", "module", "pkg.auth", None),
        ("::AuthService", "class", "AuthService", ""),
        ("::AuthService.login", "method", "AuthService.login", "::AuthService"),
        ("::hash_password", "function", "hash_password", ""),
    ]),
    "pkg/cart.py": ("pkg.cart", [
        ("", "module", "pkg.cart", None),
        ("::Cart", "class", "Cart", ""),
        ("::Cart.login", "method", "Cart.login", "::Cart"),
    ]),
    "docs/guide.md": ("docs/guide", [
        ("#Login", "section", "Login", None),
    ]),
}


@pytest.fixture
def cat(tmp_path):
    store = open_store(tmp_path / "index.db")
    for path, (module, specs) in FILES.items():
        rows = []
        for n, (suffix, kind, qual, parent) in enumerate(specs):
            item = Item(
                id=path + suffix, path=path, kind=kind, name=qual.rsplit(".", 1)[-1], qualname=qual,
                start_line=1 + 10 * n, end_line=10 + 10 * n, text=qual,
                parent_id=None if parent is None else path + parent, tokens=10,
            )
            if kind == "module":
                fq = module
            elif kind == "section":
                fq = f"{module}#{qual}"
            else:
                fq = f"{module}.{qual}"
            rows.append((item, fq, 3, f"{path}{suffix}"))
        store.replace_file(path=path, mtime_ns=1, size=1, hash=path, language="python",
                           source="code", module=module, warnings=[], items=rows, edges=[])
    yield Catalogue(store)
    store.close()


def row(cat: Catalogue, item_id: str) -> int:
    return cat.by_id[item_id]


def test_keyword_scores_are_relative_to_the_best():
    assert scoring.keyword_scores([(1, 4.0), (2, 2.0), (3, 0.0)]) == {1: 1.0, 2: 0.5}
    assert scoring.keyword_scores([]) == {}


def test_vector_scores_spread_between_the_weakest_and_the_best():
    out = scoring.vector_scores([(1, 0.8), (2, 0.5), (3, 0.2)])
    assert out[1] == pytest.approx(0.8) and out[2] == pytest.approx(0.4) and out[3] == 0.0
    assert scoring.vector_scores([(1, -0.1)]) == {}


def test_an_exact_name_beats_an_ambiguous_one(cat):
    scores = scoring.entity_scores(cat, [ExtractedEntity("AuthService", "camel", 0.9)])
    assert scores == {row(cat, "pkg/auth.py::AuthService"): pytest.approx(0.9)}
    # Three items are called login (one as "Login"): each match is damped by 1 / (1 + ln 3),
    # and the one spelt differently counts as a case-insensitive match.
    scores = scoring.entity_scores(cat, [ExtractedEntity("login", "snake", 0.9)])
    damp = 1 / (1 + math.log(3))
    assert scores[row(cat, "pkg/auth.py::AuthService.login")] == pytest.approx(0.9 * damp)
    assert scores[row(cat, "pkg/cart.py::Cart.login")] == pytest.approx(0.9 * damp)
    assert scores[row(cat, "docs/guide.md#Login")] == pytest.approx(0.9 * scoring.CASE_INSENSITIVE * damp)


def test_a_qualified_name_prefers_the_matching_owner(cat):
    scores = scoring.entity_scores(cat, [ExtractedEntity("AuthService.login", "qualified", 0.9)])
    damp = 1 / (1 + math.log(3))
    assert scores[row(cat, "pkg/auth.py::AuthService.login")] == pytest.approx(0.9 * 0.95 * damp)
    assert scores[row(cat, "pkg/cart.py::Cart.login")] == pytest.approx(0.9 * scoring.SUFFIX * 0.6 * damp)
    # The full dotted name is an exact match, alone.
    scores = scoring.entity_scores(cat, [ExtractedEntity("pkg.auth.AuthService.login", "qualified", 0.9)])
    assert max(scores, key=scores.get) == row(cat, "pkg/auth.py::AuthService.login")


def test_a_path_names_its_module_and_touches_its_symbols(cat):
    path = ExtractedEntity("auth.py", "path", 0.8)
    scores = scoring.entity_scores(cat, [path])
    assert scores[row(cat, "pkg/auth.py")] == pytest.approx(0.8)
    assert scores[row(cat, "pkg/auth.py::hash_password")] == pytest.approx(0.12)
    assert row(cat, "pkg/cart.py") not in scores
    # Evidence from several entities adds up as a noisy-or.
    both = scoring.entity_scores(cat, [path, ExtractedEntity("AuthService", "camel", 0.9)])
    assert both[row(cat, "pkg/auth.py::AuthService")] == pytest.approx(1 - 0.1 * 0.88)


def test_fuse_weights_the_signals_present(cat):
    a, b = row(cat, "pkg/auth.py::AuthService"), row(cat, "pkg/cart.py::Cart")
    cfg = ExtractionConfig(entity_weight=1.0, keyword_weight=1.0, vector_weight=2.0)
    out = scoring.fuse(cat, cfg, {a: 1.0}, {a: 0.5, b: 1.0}, {})
    # No vectors: their weight is left out of the mean.
    assert out[a].score == pytest.approx(0.75) and out[b].score == pytest.approx(0.5)
    assert out[a].direct and out[a].item_id == "pkg/auth.py::AuthService"
    assert out[a].signals() == {"entity": 1.0, "keyword": 0.5}
    out = scoring.fuse(cat, cfg, {a: 1.0}, {a: 0.5, b: 1.0}, {b: 1.0})
    assert out[b].score == pytest.approx(3.0 / 4.0)
    assert scoring.fuse(cat, cfg, {999: 1.0}, {}, {}) == {}


def test_graph_neighbours_add_but_never_push_out_strong_matches(cat):
    a = row(cat, "pkg/auth.py::AuthService")
    b = row(cat, "pkg/cart.py::Cart")
    c = row(cat, "pkg/auth.py::hash_password")
    n = row(cat, "pkg/cart.py::Cart.login")
    scored = {
        a: ScoredItem(a, "a", score=0.8, direct=True),
        b: ScoredItem(b, "b", score=0.6, direct=True),
        c: ScoredItem(c, "c", score=0.2, direct=True),
    }
    neighbours = {
        n: Neighbour(n, distance=1, via=a, relation="calls:out", strength=1.0),
        c: Neighbour(c, distance=1, via=a, relation="calls:out", strength=0.5),
    }
    cfg = ExtractionConfig(proximity_weight=3.0)
    scoring.add_graph(scored, neighbours, cat, cfg)
    # Reached only through the graph: capped just below the weakest strong match (0.6).
    assert not scored[n].direct
    assert scored[n].score == pytest.approx(0.99 * 0.6)
    assert scored[n].proximity_score == pytest.approx(0.4)
    # A direct match that is also a neighbour gains from it.
    assert scored[c].proximity_score == pytest.approx(0.2)
    assert scored[c].score == pytest.approx(0.2 + 3.0 * 0.2)
    scoring.normalise_final(scored)
    assert max(s.score for s in scored.values()) == pytest.approx(1.0)


def test_file_scores_join_whole_file_symbols_and_names(cat):
    mod_auth, mod_cart = row(cat, "pkg/auth.py"), row(cat, "pkg/cart.py")
    login = row(cat, "pkg/auth.py::AuthService.login")
    hash_pw = row(cat, "pkg/auth.py::hash_password")
    cart_login = row(cat, "pkg/cart.py::Cart.login")
    section = row(cat, "docs/guide.md#Login")
    keyword = {login: 1.0, hash_pw: 0.5, mod_auth: 1.0, cart_login: 0.2, section: 0.3}
    entity = {row(cat, "pkg/auth.py::AuthService"): 0.9}
    files = scoring.file_scores(cat, [(mod_auth, 2.0), (mod_cart, 1.0)], keyword, entity, {}, lambda r: True)
    # The module row is the whole-file hit; its keyword score is not counted again as a symbol.
    assert files["pkg/auth.py"] == pytest.approx(1.0 + 0.5 * 1.5 / 1.5 + 0.25 * 0.9)
    assert files["pkg/cart.py"] == pytest.approx(0.5 + 0.5 * 0.2 / 1.5)
    assert files["docs/guide.md"] == pytest.approx(0.5 * 0.3 / 1.5)
    # Filtered-out files lose their whole-file score.
    files = scoring.file_scores(cat, [(mod_auth, 2.0), (mod_cart, 1.0)], {}, {}, {}, lambda r: r != mod_auth)
    assert files == {"pkg/cart.py": pytest.approx(1.0)}


def test_file_prior_lifts_symbols_of_top_files(cat):
    login = row(cat, "pkg/auth.py::AuthService.login")
    cart_login = row(cat, "pkg/cart.py::Cart.login")
    scored = {
        login: ScoredItem(login, "l", score=0.4, direct=True),
        cart_login: ScoredItem(cart_login, "c", score=0.4, direct=True),
    }
    scoring.add_file_prior(scored, cat, {"pkg/auth.py": 2.0, "pkg/cart.py": 1.0})
    assert scored[login].score == pytest.approx(0.4 + 0.5 * 1.0 * 0.4)
    assert scored[cart_login].score == pytest.approx(0.4 + 0.5 * 0.5 * 0.4)
