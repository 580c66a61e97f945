"""Context from a notes vault reads well: split parts of a long section are shown once, and
lines of only badge images are left out (issue 12)."""

from __future__ import annotations

import pytest

from smartcontext import Workspace

BADGES = ("[![Build](https://img.shields.io/badge/build-passing-green.svg)](https://ci.example.com) "
          "![Downloads](https://img.shields.io/npm/dm/x.svg)")


@pytest.fixture()
def vault(tmp_path, store_env):
    lines = ["# Flashcards", "", BADGES, "", "![](logo.png) Logo by Ann.", ""]
    lines += [f"- Plugin number {i} helps with spaced repetition flashcards by scheduling review {i}."
              for i in range(60)]
    (tmp_path / "Plugins.md").write_text("\n".join(lines) + "\n")
    return tmp_path


@pytest.mark.parametrize("fmt", ["mu", "markdown", "json"])
def test_overlapping_parts_of_a_section_are_shown_once(vault, fmt):
    with Workspace.open(vault) as ws:
        ws.index(embeddings=False)
        parts = [i for i in ws.catalogue().entries.values() if i.path == "Plugins.md"]
        assert len(parts) >= 3  # the section was split, and split parts overlap
        res = ws.context("which plugins help with spaced repetition flashcards?", max_tokens=6000, format=fmt)
    assert res.token_count <= 6000
    for i in range(60):
        assert res.text.count(f"Plugin number {i} helps") == 1, (i, res.text)
    assert "shields.io" not in res.text  # a line of badges carries no words
    assert "Logo by Ann." in res.text  # an image beside words stays
