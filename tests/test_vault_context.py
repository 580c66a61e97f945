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


def test_context_files_are_the_files_of_the_text_in_its_order(tmp_path, store_env):
    # The web page lists the files a context holds; the ranking (``files``) can order them
    # otherwise, since an item's own score orders the text.
    (tmp_path / "This Week.md").write_text("# This Week\n\n## How to use\nMark the current week done.\n")
    for i in range(1, 6):
        (tmp_path / f"Week {i:02d}.md").write_text(
            f"# Week {i:02d}\n\n## Plan\nThis week you work on topic {i}; each week builds on last week.\n")
    with Workspace.open(tmp_path) as ws:
        ws.index(embeddings=False)
        mu = ws.context("what should I work on this week?", max_tokens=2000)
        md = ws.context("what should I work on this week?", max_tokens=2000, format="markdown")
    assert len(mu.context_files) == 6 and set(mu.context_files) <= set(mu.files)
    assert [line[2:] for line in mu.text.splitlines() if line.startswith("! ")] == mu.context_files
    assert [line[4:] for line in md.text.splitlines() if line.startswith("### ")] == md.context_files
    assert mu.to_dict(max_files=2)["context_files"] == mu.context_files
