"""The file ranking's parts, as bench/fit_file_ranking.py reads them: a file's unweighted
signals (scoring.file_components) weighed by combine_file give file_scores, and the bench's
re-ranking of a question's files under the current constants gives the pipeline's order, so
a fit judged there is judged on what the product does (docs/benchmarks.md, "File ranking
fitted across repositories")."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from smartcontext import Workspace
from smartcontext.retrieval import scoring

from conftest import write_tree

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import fit_file_ranking as fit  # noqa: E402

TREE = {
    "pkg/__init__.py": "",
    "pkg/column.py": '''
        class Column:
            """A named column of values."""

            def __init__(self, name, values):
                self.name = name
                self.values = list(values)

            def compare(self, other):
                # Compare the column's values elementwise with other values.
                if len(other) != len(self.values):
                    raise ValueError("elementwise comparison failed: lengths differ")
                return [a != b for a, b in zip(self.values, other)]
    ''',
    "pkg/table.py": '''
        from .column import Column


        class Table:
            """Columns by name."""

            def __init__(self, columns):
                self.columns = {c.name: c for c in columns}

            def compare(self, name, other):
                return self.columns[name].compare(other)
    ''',
    "pkg/tests/test_column.py": '''
        from pkg.column import Column


        def test_compare_lengths():
            col = Column("a", [1, 2])
            assert col.compare([1, 2]) == [False, False]
    ''',
    "docs/examples/compare.py": '''
        from pkg.column import Column

        # Compare a column's values elementwise with other values.
        print(Column("a", [1, 2]).compare([1, 3]))
    ''',
}

REPORT = """Column.compare fails on values of another length

Comparing a column with values of another length raises instead of returning a scalar:

```
Traceback (most recent call last):
  File "pkg/table.py", line 11, in compare
    return self.columns[name].compare(other)
  File "pkg/column.py", line 12, in compare
    raise ValueError("elementwise comparison failed: lengths differ")
ValueError: elementwise comparison failed: lengths differ
```
"""


@pytest.fixture
def recorded(tmp_path):
    """The recorder's row for REPORT over TREE, and the pipeline's own file order."""
    root = write_tree(tmp_path / "repo", TREE)
    rec = fit.Recorder()
    try:
        with Workspace.open(root) as ws:
            ws.index(embeddings=False)
            res = ws.context(REPORT, max_tokens=8000)
        files = list(res.files)
        yield {"set": "t", "id": "t-1", "repo": "t/t", "gold": ["pkg/column.py"], **rec.take(files, ["pkg/column.py"])}, files
    finally:
        rec.restore()


def test_components_weighed_give_file_scores(recorded):
    row, files = recorded
    comps = {p: f["c"] for p, f in row["files"].items() if f["c"] is not None}
    column, test, example = comps["pkg/column.py"], comps["pkg/tests/test_column.py"], comps["docs/examples/compare.py"]
    # The deepest frame is column.py's, the next file out table.py's, one step weaker.
    assert column["frames"] == 1.0 and row["files"]["pkg/column.py"]["depth"] == 0
    assert comps["pkg/table.py"]["frames"] == scoring.FILE_FRAME_STEP
    assert test["test"] == 1.0 and column["test"] == 0.0
    assert example["prior"] == scoring.AUX_PRIOR and column["prior"] == 1.0
    for c in comps.values():
        assert set(c) == set(fit.SIGNALS)
        assert all(0.0 <= c[k] <= 1.0 for k in ("symbols", "names", "frames", "title"))
    # combine_file is file_scores' arithmetic: a weight moved moves the score by its signal.
    before = scoring.combine_file(column)
    saved = scoring.FILE_FRAME_WEIGHT
    try:
        scoring.FILE_FRAME_WEIGHT = saved + 1.0
        assert scoring.combine_file(column) == pytest.approx(before + column["frames"])
    finally:
        scoring.FILE_FRAME_WEIGHT = saved
    assert files[0] == "pkg/column.py"


def test_bench_reranking_is_the_pipelines(recorded):
    row, files = recorded
    current = fit.current_constants()
    assert fit.rerank(row, current)[: len(files)] == files[:50]
    # A test prior of 1 lets the test module rise at least as high as it was.
    kept = fit.rerank(row, {**current, "TEST_PRIOR": 1.0})
    assert kept.index("pkg/tests/test_column.py") <= files.index("pkg/tests/test_column.py")
