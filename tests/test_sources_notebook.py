"""Jupyter notebooks: indexed as the markdown and code a person reads, outputs left out."""

import json
from pathlib import Path

from smartcontext import Workspace
from smartcontext.sources.discover import DiscoveryOptions, classify, discover
from smartcontext.sources.notebook import NotebookSource, notebook_markdown

IMAGE = "iVBORw0KGgo" + "A" * 30_000  # a plot's PNG output: one long JSON line


def cell(kind: str, source, **extra) -> dict:
    return {"cell_type": kind, "metadata": {}, "source": source, **extra}


def notebook(*cells, language: str = "python") -> dict:
    return {
        "nbformat": 4, "nbformat_minor": 5,
        "metadata": {"kernelspec": {"name": "k", "display_name": "K", "language": language}},
        "cells": list(cells),
    }


CLUSTERING = notebook(
    cell("markdown", ["# Clustering customers\n", "\n", "We group shoppers by what they buy.\n"]),
    cell("markdown", "## Choosing the number of clusters\n\nThe elbow of the inertia curve picks it."),
    cell("code", ["from sklearn.cluster import KMeans\n", "\n", "def elbow_inertias(data, most=10):\n",
                  "    return [KMeans(k).fit(data).inertia_ for k in range(1, most)]\n"],
         execution_count=1,
         outputs=[{"output_type": "display_data", "data": {"image/png": IMAGE}, "metadata": {}},
                  {"output_type": "stream", "name": "stdout", "text": ["traceback_marker_word\n"]}]),
    cell("markdown", "## Plotting the segments\n\nA scatter plot coloured by segment."),
    cell("code", "plt.scatter(x, y, c=labels)", execution_count=2, outputs=[]),
)


def write(root: Path, rel: str, value) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(value if isinstance(value, str) else json.dumps(value, indent=1), encoding="utf-8")
    return path


def test_cells_become_markdown_with_fenced_code_and_no_outputs():
    text = notebook_markdown(CLUSTERING)
    assert text.startswith("# Clustering customers\n\nWe group shoppers")
    assert "```python\nfrom sklearn.cluster import KMeans\n\ndef elbow_inertias(data, most=10):" in text
    assert "```python\nplt.scatter(x, y, c=labels)\n```" in text
    assert "traceback_marker_word" not in text and "iVBOR" not in text


def test_the_kernel_language_names_the_fence_and_a_backtick_run_gets_a_longer_fence():
    nb = notebook(cell("code", 'doc = """\n```r\nx <- 1\n```\n"""'), language="R")
    text = notebook_markdown(nb)
    assert text.startswith("````r\n") and text.rstrip().endswith("\n````")
    assert notebook_markdown({"cells": [cell("code", "1 + 1")]}).startswith("```python\n")


def test_nbformat_3_worksheets_and_heading_cells_are_read():
    nb = {"nbformat": 3, "worksheets": [{"cells": [
        {"cell_type": "heading", "level": 2, "source": ["Loading data"]},
        {"cell_type": "code", "input": ["df = load()\n"], "language": "python", "outputs": []},
    ]}]}
    assert notebook_markdown(nb) == "## Loading data\n\n```python\ndf = load()\n```\n"


def test_sections_follow_the_markdown_headings():
    parsed = NotebookSource().parse("nb/clusters.ipynb", json.dumps(CLUSTERING).encode(), "notebook")
    names = [it.qualname for it in parsed.items]
    assert names == ["Clustering customers", "Clustering customers/Choosing the number of clusters",
                     "Clustering customers/Plotting the segments"]
    elbow = parsed.items[1]
    assert "def elbow_inertias" in elbow.text and elbow.start_line == 5
    assert parsed.language == "notebook" and not parsed.warnings


def test_a_file_that_is_not_a_notebook_is_text_with_a_warning():
    for data in (b'{"cells": [', b'["a list"]', b'{"cells": 3}'):
        parsed = NotebookSource().parse("bad.ipynb", data, "notebook")
        assert parsed.items and parsed.items[0].kind == "text"
        assert "not a readable notebook" in parsed.warnings[0]


def test_a_cell_with_a_line_of_pasted_data_is_indexed_as_windows():
    nb = notebook(cell("code", "data = '" + "x" * 25_000 + "'"))
    parsed = NotebookSource().parse("big.ipynb", json.dumps(nb).encode(), "notebook")
    assert all(it.kind == "text" for it in parsed.items) and "text windows" in parsed.warnings[0]


def test_a_notebook_may_be_larger_than_the_limit_by_its_outputs(tmp_path):
    write(tmp_path, "big.ipynb", CLUSTERING)
    write(tmp_path, "big.py", "x = '" + "y" * 40_000 + "'\n")
    size = (tmp_path / "big.ipynb").stat().st_size
    found = discover(tmp_path, DiscoveryOptions(max_file_bytes=size // 2))
    assert [f.path for f in found.files] == ["big.ipynb"]
    assert found.skipped_files == {"big.py": "too large"}
    assert discover(tmp_path, DiscoveryOptions(max_file_bytes=size // 20)).skipped_files["big.ipynb"] == "too large"


def test_a_question_finds_the_part_of_the_notebook_that_shows_it(tmp_path):
    assert classify("analysis/Clusters.IPYNB") == ("notebook", "notebook")
    write(tmp_path, "analysis/clusters.ipynb", CLUSTERING)
    write(tmp_path, "analysis/broken.ipynb", '{"cells": [')
    write(tmp_path, "README.md", "# Shop analytics\n\nNotebooks about our customers.\n")
    with Workspace.open(tmp_path) as ws:
        report = ws.index(embeddings=False)
        assert any("broken.ipynb: not a readable notebook" in w for w in report.warnings)
        hits = ws.search("elbow inertia", mode="keyword")
        assert hits[0].id == "analysis/clusters.ipynb#Clustering customers/Choosing the number of clusters"
        res = ws.context("How is the number of clusters chosen?", max_tokens=600)
        assert "def elbow_inertias" in res.text and "traceback_marker_word" not in res.text
        assert res.files[0] == "analysis/clusters.ipynb"
