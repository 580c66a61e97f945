"""The budgeter on its own: hand-made items and scores, no index, no workspace."""

from __future__ import annotations

import random

from smartcontext.context.budgeter import PER_FILE_OVERHEAD, PER_ITEM_OVERHEAD, plan_budget
from smartcontext.context.models import ExtractionConfig
from smartcontext.model import Item
from smartcontext.retrieval.scoring import ScoredItem
from smartcontext.store.base import StoredItem


class Index:
    """Stored items by row id, made by hand."""

    def __init__(self) -> None:
        self.stored: dict[int, StoredItem] = {}

    def add(self, id, kind, tokens, lines, parent=None, path="pkg/m.py", sig_tokens=10) -> int:
        rowid = len(self.stored) + 1
        name = id.rsplit(".", 1)[-1].rsplit("::", 1)[-1]
        item = Item(
            id=id, path=path, kind=kind, name=name, qualname=name, start_line=lines[0],
            end_line=lines[1], signature=f"def {name}():", text="x\n" * (lines[1] - lines[0] + 1),
            parent_id=parent, tokens=tokens,
        )
        self.stored[rowid] = StoredItem(rowid, item, name, sig_tokens, f"h{rowid}")
        return rowid

    def ranked(self, *rowids, score=0.9) -> list[ScoredItem]:
        return [
            ScoredItem(r, self.stored[r].item.id, score=score - 0.01 * i, keyword_score=1.0, direct=True)
            for i, r in enumerate(rowids)
        ]

    def modes(self, plan) -> dict[str, tuple[str, bool]]:
        return {s.item.id: (s.mode, s.context_only) for s in plan.selected}


def _config(max_tokens, **kw) -> ExtractionConfig:
    return ExtractionConfig(max_tokens=max_tokens, **kw)


def test_top_items_get_full_code_until_the_full_share_is_spent():
    ix = Index()
    f1 = ix.add("pkg/m.py::f1", "function", 150, (1, 20))
    f2 = ix.add("pkg/m.py::f2", "function", 150, (30, 50))
    # 300 tokens, 80% for full code: f1 in full costs 170, f2 in full would pass 240.
    plan = plan_budget(ix.ranked(f1, f2), ix.stored, {}, _config(300))
    assert ix.modes(plan) == {"pkg/m.py::f1": ("full", False), "pkg/m.py::f2": ("signature", False)}
    full_cost = 150 + PER_ITEM_OVERHEAD + PER_FILE_OVERHEAD
    assert plan.used == full_cost + 10 + PER_ITEM_OVERHEAD


def test_a_files_imports_line_counts_against_the_budget_not_the_share_for_bodies():
    ix = Index()
    f1 = ix.add("pkg/m.py::f1", "function", 150, (1, 20))
    f2 = ix.add("pkg/n.py::f2", "function", 50, (1, 10), path="pkg/n.py")
    imports = 60
    costs = {"pkg/m.py": PER_FILE_OVERHEAD + imports, "pkg/n.py": PER_FILE_OVERHEAD}
    # 300 tokens, 240 for bodies: f1 whole costs 170 of that share, plus 60 of budget.
    plan = plan_budget(ix.ranked(f1, f2), ix.stored, {}, _config(300), file_costs=costs)
    assert ix.modes(plan) == {"pkg/m.py::f1": ("full", False), "pkg/n.py::f2": ("full", False)}
    assert plan.used == 150 + 50 + 2 * (PER_ITEM_OVERHEAD + PER_FILE_OVERHEAD) + imports
    # With a longer imports line, f2's body no longer fits what is left: its signature does.
    costs["pkg/m.py"] += 30
    plan = plan_budget(ix.ranked(f1, f2), ix.stored, {}, _config(300), file_costs=costs)
    assert ix.modes(plan) == {"pkg/m.py::f1": ("full", False), "pkg/n.py::f2": ("signature", False)}
    assert plan.used <= 300


def test_a_method_brings_its_class_header_once():
    ix = Index()
    cls = ix.add("pkg/m.py::C", "class", 2000, (1, 100))
    m1 = ix.add("pkg/m.py::C.a", "method", 40, (10, 20), parent="pkg/m.py::C")
    m2 = ix.add("pkg/m.py::C.b", "method", 40, (30, 40), parent="pkg/m.py::C")
    plan = plan_budget(ix.ranked(m1, m2), ix.stored, {}, _config(4000))
    assert ix.modes(plan) == {
        "pkg/m.py::C": ("signature", True),
        "pkg/m.py::C.a": ("full", False),
        "pkg/m.py::C.b": ("full", False),
    }
    header = 10 + PER_ITEM_OVERHEAD
    assert plan.used == header + (40 + PER_ITEM_OVERHEAD + PER_FILE_OVERHEAD) + (40 + PER_ITEM_OVERHEAD)
    # Without include_parent the class stays out.
    plan = plan_budget(ix.ranked(m1), ix.stored, {}, _config(4000, include_parent=False))
    assert set(ix.modes(plan)) == {"pkg/m.py::C.a"}
    assert cls in ix.stored


def test_a_header_brought_by_a_member_becomes_a_match_when_it_ranks_itself():
    ix = Index()
    cls = ix.add("pkg/m.py::C", "class", 2000, (1, 100))
    m = ix.add("pkg/m.py::C.a", "method", 40, (10, 20), parent="pkg/m.py::C")
    plan = plan_budget(ix.ranked(m, cls), ix.stored, {}, _config(4000))
    header = next(s for s in plan.selected if s.item.id == "pkg/m.py::C")
    assert header.context_only is False and header.mode == "signature"
    assert header.score == ix.ranked(m, cls)[1].score


def test_the_parent_header_can_come_from_outside_the_ranked_pool():
    ix = Index()
    m = ix.add("pkg/m.py::C.a", "method", 40, (10, 20), parent="pkg/m.py::C")
    parent_only = Index()
    parent_only.add("pkg/m.py::C", "class", 2000, (1, 100), sig_tokens=25)
    parents = {si.item.id: si for si in parent_only.stored.values()}
    plan = plan_budget(ix.ranked(m), ix.stored, parents, _config(4000))
    assert ix.modes(plan)["pkg/m.py::C"] == ("signature", True)
    assert plan.used == (25 + PER_ITEM_OVERHEAD) + (40 + PER_ITEM_OVERHEAD + PER_FILE_OVERHEAD)


def test_a_container_is_not_repeated_when_its_members_were_chosen():
    ix = Index()
    mod = ix.add("pkg/m.py", "module", 800, (1, 100))
    f = ix.add("pkg/m.py::f", "function", 60, (10, 20), parent="pkg/m.py")
    plan = plan_budget(ix.ranked(f, mod), ix.stored, {}, _config(8000))
    # The module (800 tokens, under its 1,200 limit) would fit in full, but f ranked
    # higher and would be shown twice.
    assert ix.modes(plan) == {"pkg/m.py::f": ("full", False), "pkg/m.py": ("signature", False)}


def test_a_member_is_skipped_when_an_ancestor_is_shown_in_full():
    ix = Index()
    cls = ix.add("pkg/m.py::C", "class", 300, (1, 40))
    m = ix.add("pkg/m.py::C.a", "method", 40, (10, 20), parent="pkg/m.py::C")
    plan = plan_budget(ix.ranked(cls, m), ix.stored, {}, _config(4000))
    assert ix.modes(plan) == {"pkg/m.py::C": ("full", False)}


def test_note_sections_do_not_hide_their_sub_sections():
    # A section's line span covers its sub-sections, but its text does not repeat them.
    ix = Index()
    top = ix.add("n.md#A", "section", 100, (1, 30), path="n.md")
    sub = ix.add("n.md#A/B", "section", 50, (10, 20), parent="n.md#A", path="n.md")
    plan = plan_budget(ix.ranked(sub, top), ix.stored, {}, _config(4000))
    assert ix.modes(plan) == {"n.md#A/B": ("full", False), "n.md#A": ("full", False)}


def test_large_containers_show_their_signature_unless_pinned():
    ix = Index()
    mod = ix.add("pkg/m.py", "module", 3000, (1, 400))
    plan = plan_budget(ix.ranked(mod), ix.stored, {}, _config(8000))
    assert ix.modes(plan) == {"pkg/m.py": ("signature", False)}
    plan = plan_budget(ix.ranked(mod), ix.stored, {}, _config(8000), pinned_full={mod})
    assert ix.modes(plan) == {"pkg/m.py": ("full", False)}
    # A function has no size limit of its kind: it is shown whole when the budget allows.
    big = ix.add("pkg/m.py::big", "function", 3000, (401, 700))
    plan = plan_budget(ix.ranked(big), ix.stored, {}, _config(8000))
    assert ix.modes(plan) == {"pkg/m.py::big": ("full", False)}


def test_reserve_and_truncation():
    ix = Index()
    f = ix.add("pkg/m.py::f", "function", 500, (1, 80), sig_tokens=200)
    plan = plan_budget(ix.ranked(f), ix.stored, {}, _config(600), reserve=450)
    assert plan.selected == [] and plan.used == 0
    assert plan.truncated and plan.skipped_for_budget == 1
    # A weak match that does not fit is not worth a warning.
    plan = plan_budget(ix.ranked(f, score=0.3), ix.stored, {}, _config(600), reserve=450)
    assert not plan.truncated


def test_never_over_budget():
    rng = random.Random(7)
    for trial in range(40):
        ix = Index()
        rows = []
        for i in range(rng.randint(1, 60)):
            path = f"pkg/m{rng.randint(0, 5)}.py"
            kind = rng.choice(["module", "class", "function", "method", "section", "text"])
            start = rng.randint(1, 500)
            rows.append(ix.add(f"{path}::x{i}", kind, rng.randint(0, 3000),
                               (start, start + rng.randint(0, 80)), path=path,
                               sig_tokens=rng.randint(0, 60)))
        max_tokens = rng.randint(50, 6000)
        reserve = rng.randint(0, max_tokens // 3)
        ranked = ix.ranked(*rows)
        plan = plan_budget(ranked, ix.stored, {}, _config(max_tokens), reserve=reserve)
        assert plan.used <= max_tokens - reserve, (trial, plan.used, max_tokens, reserve)
        ids = [s.item.id for s in plan.selected]
        assert len(ids) == len(set(ids))


def test_a_class_past_its_kinds_limit_is_whole_when_it_fits_the_class_share(monkeypatch):
    from smartcontext.context import budgeter

    ix = Index()
    cls = ix.add("pkg/m.py::Box", "class", 2500, (1, 300))
    meth = ix.add("pkg/m.py::Box.check", "method", 100, (10, 20), parent="pkg/m.py::Box")
    # 2,500 tokens: past the class limit (1,500), within 0.4 of 8,000; its member is shown inside it.
    plan = plan_budget(ix.ranked(cls, meth), ix.stored, {}, _config(8000))
    assert ix.modes(plan) == {"pkg/m.py::Box": ("full", False)}
    # Not within 0.4 of 4,000: its header, and the member on its own.
    plan = plan_budget(ix.ranked(cls, meth), ix.stored, {}, _config(4000))
    assert ix.modes(plan) == {"pkg/m.py::Box": ("signature", False), "pkg/m.py::Box.check": ("full", False)}
    monkeypatch.setattr(budgeter, "CLASS_FULL_SHARE", 0.0)
    plan = plan_budget(ix.ranked(cls, meth), ix.stored, {}, _config(8000))
    assert ix.modes(plan) == {"pkg/m.py::Box": ("signature", False), "pkg/m.py::Box.check": ("full", False)}
