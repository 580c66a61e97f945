"""The one-line summary a signature is shown with (``Item.doc_summary``)."""

from smartcontext.model import Item, summary_of
from smartcontext.context.export import render_mu
from smartcontext.context.models import SelectedItem


def test_a_first_line_holding_two_sentences_and_half_a_third_is_cut_at_the_first():
    doc = ("Metaclass for the Schema class. Binds the declared fields to\n"
           "a ``_declared_fields`` attribute, which is a dictionary.")
    assert summary_of(doc) == "Metaclass for the Schema class."


def test_a_summary_is_never_longer_than_the_first_line_and_says_when_it_is_cut():
    doc = "Collect fields from a class, following its\nresolution order.\n\nThe class itself is excluded."
    assert summary_of(doc) == "Collect fields from a class, following its …"


def test_a_first_line_that_ends_its_sentence_or_paragraph_is_not_marked():
    assert summary_of("Return the value.\nMore about it.") == "Return the value."
    assert summary_of("Lay out rows\n\nin columns") == "Lay out rows"
    assert summary_of("Options:\n  width: columns") == "Options:"
    assert summary_of("Return the value") == "Return the value"


def test_the_mark_can_be_switched_off(monkeypatch):
    from smartcontext import model

    monkeypatch.setattr(model, "SUMMARY_MARKS_WRAP", False)
    assert summary_of("Collect fields from a class, following its\nresolution order.") == (
        "Collect fields from a class, following its")


def test_abbreviations_and_initials_end_no_sentence():
    assert summary_of("Return a list, e.g. of paths, sorted. Then more.") == "Return a list, e.g. of paths, sorted."
    assert summary_of("Parse (see Fig. 2) values. Next") == "Parse (see Fig. 2) values."
    assert summary_of("Version 1.2.3 of the thing") == "Version 1.2.3 of the thing"


def test_empty_and_blank_docstrings_have_no_summary():
    assert summary_of("") == ""
    assert summary_of("\n\n   \n") == ""
    assert summary_of("\n\n  Only one line  \n") == "Only one line"


def test_a_signature_is_shown_with_the_first_sentence():
    item = Item(id="m.py::Meta", path="m.py", kind="class", name="Meta", qualname="Meta",
                language="python", start_line=1, end_line=3, signature="class Meta(type):",
                docstring="Metaclass for schemas. Binds the declared fields to\nthe class.", tokens=20)
    text = render_mu([SelectedItem(item, 1.0, "signature")], {"m.py": ["class Meta(type):", "    pass"]}, {}, {})
    assert "Metaclass for schemas." in text
    assert "Binds the declared" not in text
