"""Graph expansion: cycle safety, caps, links between notes, callers and callees."""

from smartcontext import Workspace
from smartcontext.retrieval import graph


def _ws(root):
    w = Workspace.open(root)
    w.config.embeddings.model = "none"
    w.index()
    return w


def test_cycles_terminate_and_caps_hold(tmp_path):
    src = "\n\n".join(
        f"def f{i}():\n    return f{(i + 1) % 30}() + f{(i + 7) % 30}()" for i in range(30)
    )
    (tmp_path / "ring.py").write_text(src + "\n")
    w = _ws(tmp_path)
    cat = w.catalogue()
    seed = cat.by_id["ring.py::f0"]
    out = graph.expand(w.store, cat, [seed], depth=3, per_node=4, total=10)
    assert 0 < len(out) <= 10
    assert seed not in out
    assert all(n.distance <= 3 for n in out.values())
    deeper = graph.expand(w.store, cat, [seed], depth=3, per_node=12, total=500)
    assert len(deeper) < 30  # each node visited once despite the cycles


def test_callers_and_callees_are_neighbours(sample_repo):
    w = _ws(sample_repo)
    cat = w.catalogue()
    total = cat.by_id["shop/cart.py::Cart.total"]
    out = graph.expand(w.store, cat, [total], depth=1)
    names = {cat.entries[r].id: n.relation for r, n in out.items()}
    assert names.get("shop/pricing.py::apply_discount") == "calls:out"
    discount = cat.by_id["shop/pricing.py::apply_discount"]
    back = graph.expand(w.store, cat, [discount], depth=1)
    assert {cat.entries[r].id: n.relation for r, n in back.items()}.get("shop/cart.py::Cart.total") == "calls:in"


def test_wikilinks_connect_notes_both_ways(tmp_path):
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "Alpha.md").write_text("# Alpha\n\nThe launch plan is in [[Beta|the beta note]].\n")
    (tmp_path / "Beta.md").write_text("# Beta\n\nRocket fuel budget and suppliers.\n")
    (tmp_path / "Gamma.md").write_text("# Gamma\n\nUnrelated gardening notes.\n")
    w = _ws(tmp_path)
    cat = w.catalogue()
    alpha = cat.note_item("notes/Alpha.md")
    out = graph.expand(w.store, cat, [alpha], depth=1)
    assert any(cat.entries[r].path == "Beta.md" and n.relation == "links_to:out" for r, n in out.items())
    beta = cat.note_item("Beta.md")
    back = graph.expand(w.store, cat, [beta], depth=1)
    assert any(cat.entries[r].path == "notes/Alpha.md" and n.relation == "links_to:in" for r, n in back.items())
    assert not any(cat.entries[r].path == "Gamma.md" for r in out)
