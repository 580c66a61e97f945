"""Packing at the edge of the budget: the exact count trims what the estimates let in.

The budgeter plans with the index's token estimates; the pipeline then counts the rendered
text exactly and trims. A whole module shown in full renders longer than its estimate, and
trimming in batches used to drop every match, the best one last, leaving an empty context
with the warning that the budget could not hold even one signature.
"""

from __future__ import annotations

import pytest

from smartcontext import Workspace
from smartcontext.tokens import count_tokens

# The module is named as a file: a plain word that only happens to be a file's stem ("the
# budgeter") is weaker evidence than a name shaped like code (retrieval/entities.py), and
# this test is about trimming, not about that ranking.
QUESTION = "How does budgeter.py fit items into max_tokens?"


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    root = tmp_path_factory.mktemp("packing")
    steps = "".join(f"    step_{i} = ranked[{i}:] + [limit - {i}]\n" for i in range(40))
    helpers = "".join(
        f"\n\ndef helper_{i}(value):\n    '''Format value {i} for the report.'''\n    return str(value).rjust({i})\n"
        for i in range(30)
    )
    (root / "budgeter.py").write_text(
        '"""Choose what fits in a token budget."""\n\n'
        "def plan_budget(ranked, limit):\n    '''Choose which ranked items fit into max_tokens.'''\n"
        + steps + "    return ranked\n" + helpers
    )
    (root / "matrix.py").write_text(
        "class Matrix:\n    def fit(self):\n        '''Drop spare capacity.'''\n        return self\n\n"
        "    def grow(self, n):\n        return n\n"
    )
    for i in range(4):
        lines = "".join(f"    items_{j} = [it for it in items if it.tokens < max_tokens - {j}]\n" for j in range(25))
        (root / f"render{i}.py").write_text(
            f"def render_items_{i}(items, max_tokens):\n    '''Render items up to max_tokens.'''\n"
            + lines + "    return items\n"
        )
    ws = Workspace.open(root)
    ws.index(embeddings=False)
    yield ws
    ws.close()


@pytest.mark.parametrize("budget", [1200, 1400, 1500, 1600, 1800, 2000])
def test_trimming_keeps_the_best_match(tree, budget):
    res = tree.context(QUESTION, max_tokens=budget)
    assert res.token_count <= budget
    assert count_tokens(res.text, "cl100k_base") == res.token_count
    shown = {s.item.qualname for s in res.items if not s.context_only}
    # The best match (the budgeter module, named by the question) survives the trim,
    # as a body or at least as its summary line.
    assert "budgeter" in shown, shown
    assert not any("too small for even one signature" in w for w in res.warnings), res.warnings
