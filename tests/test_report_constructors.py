"""A class a report calls runs its constructor (scoring.add_constructors): ``Range(3, j, 2)``
gives ``Range.__new__`` a share of the class's match; a repr an interactive session printed
is not a call."""

from __future__ import annotations

import textwrap

from smartcontext import Workspace
from smartcontext.retrieval import scoring
from smartcontext.retrieval.entities import EntityExtractor

SETS = '''
class Range:
    """A range of integers."""

    def __new__(cls, *args):
        start, stop, step = args
        return object.__new__(cls)

    def size(self):
        return 0


class Interval:
    def __init__(self, start, end):
        self.start, self.end = start, end
'''


def _entity_scores(tmp_path, report: str) -> dict[str, float]:
    (tmp_path / "pkg").mkdir(parents=True)
    (tmp_path / "pkg/__init__.py").write_text("")
    (tmp_path / "pkg/sets.py").write_text(textwrap.dedent(SETS).lstrip())
    with Workspace.open(tmp_path) as ws:
        ws.index(embeddings=False)
        cat = ws.catalogue()
        entities = EntityExtractor(is_known=cat.is_known).extract(report)
        ent = scoring.entity_scores(cat, entities)
        scoring.add_constructors(cat, ent, report)
        return {cat.entries[r].qualname: s for r, s in ent.items()}


def test_a_class_the_report_calls_brings_its_constructor(tmp_path):
    scores = _entity_scores(tmp_path, "Range(3, j, 2) drops its step when j is symbolic.")
    assert scores["Range.__new__"] == scoring.CONSTRUCTOR_SHARE * scores["Range"]
    assert "Range.size" not in scores  # only the constructor: the report called nothing else
    assert "Interval.__init__" not in scores  # a class the report does not call


def test_a_class_only_named_brings_no_constructor(tmp_path):
    scores = _entity_scores(tmp_path, "A Range drops its step when the stop is symbolic.")
    assert "Range" in scores and "Range.__new__" not in scores


def test_what_an_interactive_session_printed_is_not_a_call(tmp_path):
    report = "The step is lost:\n\n>>> r = make(3, 7)\n>>> r\nRange(3, 7, 2)\n\nIt should keep it."
    scores = _entity_scores(tmp_path, report)
    assert "Range.__new__" not in scores
    # The prompt lines themselves are read: a call typed at the prompt is a call.
    typed = _entity_scores(tmp_path / "typed", ">>> Range(3, 7, 2).size\n0\n")
    assert "Range.__new__" in typed
