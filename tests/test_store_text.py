"""Item text stored once per file: every item's text comes back exactly."""

from smartcontext.model import Item
from smartcontext.store.text import FileData, pack_file


def _it(start, text, meta=None):
    return Item(id=f"x{start}:{len(text)}", path="f", kind="section", name="n", qualname="n",
                start_line=start, end_line=start + text.count("\n"), text=text, meta=meta or {})


def _roundtrip(items):
    blob, spans, details = pack_file(items)
    data = FileData.unpack(blob)
    assert [data.details(a, n) for a, n in details] == [[it.signature, it.docstring, it.meta] for it in items]
    return data, [data.slice(a, n) for a, n in spans]


def test_nested_texts_are_stored_once():
    whole = "class A:\n    def f(self):\n        return 1\n\n    def g(self):\n        return 2\n"
    items = [_it(1, whole), _it(2, "def f(self):\n        return 1"), _it(5, "def g(self):\n        return 2")]
    data, texts = _roundtrip(items)
    assert texts == [it.text for it in items]
    assert data.text.startswith(whole) and data.text.count("return 1") == 1  # stored once


def test_texts_not_inside_another_become_stretches():
    # overlapping parts, a rewritten text, an empty one, unicode, a NUL character
    items = [_it(1, "a\nb\nc"), _it(3, "c\nd\ne"), _it(2, "B rewritten"), _it(4, ""),
             _it(9, "ünïcödé 🙂 \x00 end")]
    data, texts = _roundtrip(items)
    assert texts == [it.text for it in items]
    assert data.text.count("d\ne") == 1


def test_a_text_is_only_matched_on_its_own_start_line():
    # "x = 1" occurs on line 1 too; the item on line 3 must get the copy on line 3
    whole = "x = 1\ny = 2\nx = 1\n"
    items = [_it(1, whole), _it(3, "x = 1")]
    blob, spans, _ = pack_file(items)
    assert spans[1] == (12, 5)


def test_details_come_back_with_the_text():
    items = [_it(1, "t", meta={"tags": ["a"], "frontmatter": {"k": [1, 2]}})]
    items[0].signature, items[0].docstring = "sig", "doc"
    blob, _, details = pack_file(items)
    assert FileData.unpack(blob).details(*details[0]) == ["sig", "doc", {"tags": ["a"], "frontmatter": {"k": [1, 2]}}]
    assert FileData.unpack(b"").slice(0, 3) == ""
