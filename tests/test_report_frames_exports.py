"""Which file ranks first for a bug report: pytest's long tracebacks, source frames before
a failing test's own frame, and names reached through the project's package
(docs/benchmarks.md, "File ranking for bug reports, round 6")."""

from __future__ import annotations

import textwrap
from pathlib import Path

from smartcontext import Workspace
from smartcontext.retrieval import entities, scoring
from smartcontext.retrieval.catalogue import Catalogue
from smartcontext.retrieval.entities import EntityExtractor, ExtractedEntity


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, body in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(body).lstrip(), encoding="utf-8")


def _first(root: Path, question: str) -> str:
    with Workspace.open(root) as ws:
        ws.index(embeddings=False)
        return ws.context(question, max_tokens=8000).files[0]


# pytest's long format: each frame's source, then its place on a line of its own.
_PYTEST_FAILURE = """\
Column comparison fails with the new numpy
```
=================================== FAILURES ===================================
_________________________________ test_ne ____________________________________

    def test_ne():
        col = Column(["a", "b"])
        values = ["a", "b"]
>       assert all(col != values)

pkg/tests/test_column.py:12: 
_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _

self = <Column length=2>, other = ['a', 'b']

    def _compare(self, other):
        # Compare the column's values elementwise with other values.
        if len(other) != len(self.values):
            warn("elementwise comparison failed; returning scalar instead")
>       return self.values != other
E       FutureWarning: elementwise comparison failed; returning scalar instead

pkg/column.py:9: FutureWarning
_________________________________ test_gt ____________________________________

    def test_gt():
        col = Column(["a", "b"])
>       assert col > "a"
E       TypeError: '>' not supported between instances of 'Column' and 'str'

pkg/tests/test_column.py:18: TypeError
test_foo.py:3: AssertionError
```
"""


def test_pytest_long_tracebacks_are_read_as_frames(monkeypatch):
    found = EntityExtractor().extract(_PYTEST_FAILURE)
    frames = sorted((e for e in found if e.kind == "frame"), key=lambda e: e.frame)
    # The function is the last ``def`` shown above the place; a bare file name is the
    # reporter's own test module, not one of the project's.
    assert [(e.text, e.symbol) for e in frames] == [
        ("pkg/tests/test_column.py", "test_ne"),
        ("pkg/column.py", "_compare"),
        ("pkg/tests/test_column.py", "test_gt"),
    ]
    monkeypatch.setattr(entities, "PYTEST_LONG_FRAMES", False)
    assert not any(e.kind == "frame" for e in EntityExtractor().extract(_PYTEST_FAILURE))


def _column_tree(root: Path) -> None:
    _write(root, {
        "pkg/__init__.py": "",
        "pkg/column.py": '''
            class Column:
                """A column of values: a column comparison is elementwise, as numpy
                compares arrays, and a failed elementwise comparison returns a scalar
                with the new numpy."""

                def __init__(self, values):
                    self.values = list(values)

                def __len__(self):
                    return len(self.values)

                def __ne__(self, other):
                    return self._compare(other)

                def _compare(self, other):
                    # Compare the column's values elementwise with other values.
                    if len(other) != len(self.values):
                        warn("elementwise comparison failed; returning scalar instead")
                    return self.values != other
            ''',
        "pkg/tests/__init__.py": "",
        "pkg/tests/test_column.py": '''
            from pkg.column import Column


            def test_ne():
                col = Column(["a", "b"])
                values = ["a", "b"]
                assert all(col != values)


            def test_gt():
                col = Column(["a", "b"])
                assert col > "a"
            ''',
    })


def test_a_source_frame_counts_as_deeper_than_a_failing_tests_own(tmp_path, monkeypatch):
    _column_tree(tmp_path)
    # The last failure stops in the test itself: its frame says where the failure was
    # checked; the fault is in the code it called, whose frame the first failure shows.
    assert _first(tmp_path, _PYTEST_FAILURE) == "pkg/column.py"
    monkeypatch.setattr(scoring, "TEST_FRAMES_LAST", False)
    assert _first(tmp_path, _PYTEST_FAILURE) == "pkg/tests/test_column.py"


def _exports_tree(root: Path) -> None:
    _write(root, {
        "grid/__init__.py": "from grid.core.joins import combine\nfrom grid.core.table import Table\n",
        "grid/core/__init__.py": "",
        "grid/core/joins.py": '''
            def combine(tables, axis):
                """Join tables along an axis."""
                out = []
                for t in tables:
                    out.extend(t.rows)
                return out
            ''',
        "grid/core/table.py": '''
            class Table:
                """A table of rows: the order of its axes and columns is kept as given."""

                def __init__(self, rows, axes):
                    self.rows = rows
                    self.axes = axes

                def combine(self, other, axis):
                    """Join this table's rows with another's, keeping the axis order."""
                    return Table(self.rows + other.rows, self.axes)

                def order(self):
                    """The order of the axes, as the table was given them."""
                    return list(self.axes)

                def sorted_axes(self):
                    return sorted(self.axes)
            ''',
    })


_EXPORTS_REPORT = """\
Joining tables changes the axis order
When I join two tables the order of the axes changes: the table I get back has its axes
sorted, not in the order the tables were given.

```python
a = grid.Table(rows, axes=["y", "x"])
b = grid.combine([a, a], axis="y")
print(b.axes)
```
I expected `grid.combine` to keep the axis order of the tables as given.
"""


def test_a_name_reached_through_the_package_is_the_object_it_exports(tmp_path, monkeypatch):
    _exports_tree(tmp_path)
    with Workspace.open(tmp_path) as ws:
        ws.index(embeddings=False)
        cat = Catalogue(ws.store)
    named = [ExtractedEntity("grid.combine", "qualified", 0.9, True)]

    def scores() -> dict[str, float]:
        return {cat.entries[r].qualname: round(s, 3) for r, s in scoring.entity_scores(cat, named).items()}

    # ``grid.combine`` is the package's own function (grid/core/joins.py), named for sure;
    # the method of the same name is not what the package exports.
    assert scores() == {"combine": round(0.9 * scoring.EXPORTED, 3)}
    monkeypatch.setattr(scoring, "PACKAGE_EXPORTS", False)
    # Without the rule: a weak match with every item called ``combine``, alike.
    weak = scores()
    assert set(weak) == {"combine", "Table.combine"} and len(set(weak.values())) == 1
    assert max(weak.values()) < 0.5


def test_package_exports_are_top_level_definitions_outside_tests(tmp_path):
    _exports_tree(tmp_path)
    _write(tmp_path, {"grid/tests/test_combine.py": "def combine():\n    pass\n"})
    with Workspace.open(tmp_path) as ws:
        ws.index(embeddings=False)
        cat = Catalogue(ws.store)
    found = {cat.entries[r].path for r in scoring._exported(cat, "grid.combine")}
    assert found == {"grid/core/joins.py"}
    assert scoring._exported(cat, "combine") == []
    # A method is not what a package exports.
    assert scoring._exported(cat, "grid.order") == []


def test_of_two_exported_namesakes_the_one_the_package_imports_is_meant(tmp_path, monkeypatch):
    """``xarray.where``: xarray/core/computation.py and duck_array_ops.py both define a
    top-level ``where``; xarray/__init__.py imports the first, so that one is meant."""
    _write(tmp_path, {
        "grid/__init__.py": "from grid.core.compute import where\n",
        "grid/core/__init__.py": "",
        "grid/core/compute.py": "def where(cond, x, y):\n    return x if cond else y\n",
        "grid/core/ops.py": "def where(cond, x, y):\n    return [a if c else b for c, a, b in zip(cond, x, y)]\n",
    })
    with Workspace.open(tmp_path) as ws:
        ws.index(embeddings=False)
        cat = Catalogue(ws.store)
        assert "grid.core.compute.where" in cat.package_imports("grid")
        assert {cat.entries[r].path for r in scoring._exported(cat, "grid.where")} == {"grid/core/compute.py"}
        monkeypatch.setattr(scoring, "PACKAGE_INIT_IMPORTS", False)
        assert {cat.entries[r].path for r in scoring._exported(cat, "grid.where")} == {
            "grid/core/compute.py", "grid/core/ops.py"}
        # A package whose __init__ imports neither keeps both; the catalogue brought up to
        # date after the edit forgets what the old __init__ imported.
        monkeypatch.setattr(scoring, "PACKAGE_INIT_IMPORTS", True)
        (tmp_path / "grid/__init__.py").write_text("")
        ws.index(embeddings=False)
        fresh = cat.updated(ws.store)
        assert fresh is not cat and fresh.package_imports("grid") == []
        assert len(scoring._exported(fresh, "grid.where")) == 2
        assert "grid.core.compute.where" in cat.package_imports("grid")  # the old one as it was


def _sessions_tree(root: Path) -> None:
    _write(root, {
        "web/__init__.py": "",
        "web/sessions.py": '''
            from web.utils import builtin_str


            class Session:
                def request(self, method, url):
                    method = builtin_str(method)
                    return self.send(method, url)
            ''',
        "web/utils.py": '''
            def builtin_str(value):
                """The native string of a value: a binary string is converted."""
                return str(value)


            def to_native_string(value):
                """Converts a binary string to the native string."""
                return value.decode() if isinstance(value, bytes) else value
            ''',
        "web/tests/test_sessions.py": "def test_request():\n    pass\n",
    })


_PATH_REPORT = """\
method = builtin_str(method) problem
In web/sessions.py is a command:

method = builtin_str(method)
Converts method from b'GET' to "b'GET'", which is the literal string, no longer a binary
string. When the method is the literal string, the server answers 404 Not Found. Seems if
the binary string method was converted to a native string there would be no problem.
"""


def test_a_path_the_report_writes_with_its_folder_counts_as_a_frame(tmp_path, monkeypatch):
    _sessions_tree(tmp_path)
    with Workspace.open(tmp_path) as ws:
        ws.index(embeddings=False)
        cat = ws.catalogue()
        found = EntityExtractor(is_known=cat.is_known).extract(_PATH_REPORT)
        assert scoring.named_paths(cat, found) == ["web/sessions.py"]
        # A bare file name, or a test file, is no pointer.
        bare = EntityExtractor(is_known=cat.is_known).extract("see sessions.py and web/tests/test_sessions.py")
        assert scoring.named_paths(cat, bare) == []
    assert _first(tmp_path, _PATH_REPORT) == "web/sessions.py"
    monkeypatch.setattr(scoring, "NAMED_PATH_FILE", 0.0)
    assert _first(tmp_path, _PATH_REPORT) == "web/utils.py"
