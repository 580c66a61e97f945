"""Bug reports as questions (issue 12): what an issue pastes is weighed for what it says.

Tracebacks point at the frame where the error surfaced, quoted messages at the string
literal that prints them, ``format="ascii.rst"`` at a module, package listings at nothing,
and docs examples below the library they illustrate. Each ranking test is a real folder
indexed in tmp_path, with a decoy that the old weighing put first.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from smartcontext import Workspace
from smartcontext.retrieval import scoring
from smartcontext.retrieval.entities import EntityExtractor, ExtractedEntity
from smartcontext.retrieval.keyword import KeywordSearcher, message_phrases
from smartcontext.retrieval.reports import (
    without_environment_blocks,
    without_template_comments,
    without_version_lines,
)


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, body in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(body).lstrip(), encoding="utf-8")


def _files(root: Path, question: str) -> tuple[list[str], str]:
    with Workspace.open(root) as ws:
        ws.index(embeddings=False)
        res = ws.context(question, max_tokens=8000, exclude_tests=True)
        return list(res.files), res.text


# -- pieces -------------------------------------------------------------------------


def test_package_listings_are_not_read_as_names():
    report = textwrap.dedent(
        """\
        The runner hangs when a hook raises.

        ```
        pluggy             0.13.1
        more-itertools==8.0.2
        xarray: 0.16.0
        LC_ALL: None
        - Python version: 3.8.2
        python: 3.8.3 (default, Jul  2 2020, 11:26:31)
        ```
        assert total == 1.5
        return 2.0
        """
    )
    kept = without_version_lines(report)
    for gone in ("pluggy", "more-itertools", "xarray", "LC_ALL", "Python version", "python: 3.8.3"):
        assert gone not in kept
    # Code lines that end in a number stay, and so does the prose.
    assert "assert total == 1.5" in kept and "return 2.0" in kept
    assert "The runner hangs when a hook raises." in kept


def test_quoted_messages_become_three_word_phrases():
    phrases = message_phrases('Since 3.3: "WARNING: no number is assigned for table" and `x`')
    assert phrases[:2] == ["warning no number", "no number is"]
    assert "assigned for table" in phrases
    # A quoted name is not a message.
    assert message_phrases("call `get_writer` or 'ascii.rst'") == []


def test_traceback_frames_are_read_in_four_formats():
    text = textwrap.dedent(
        """\
        Traceback (most recent call last):
          File "/usr/lib/python3/dist-packages/pkg/ui.py", line 856, in write
            writer = get_writer(Writer=Writer)
        File ~/code/pkg/pkg/plot.py:1252, in Plotter._setup_scales(self, p)
        /usr/local/lib/python3.8/site-packages/pkg/runner.py:341: in from_call
        ~/envs/lib/python3.8/site-packages/pkg/core.py in _lookup(self, key)
        TypeError: RST.__init__() got an unexpected keyword argument 'header_rows'
        """
    )
    found = EntityExtractor().extract(text)
    frames = sorted((e for e in found if e.kind == "frame"), key=lambda e: e.frame)
    assert [(e.text.rsplit("/", 2)[-2:], e.symbol) for e in frames] == [
        (["pkg", "ui.py"], "write"),
        (["pkg", "plot.py"], "Plotter._setup_scales"),
        (["pkg", "runner.py"], "from_call"),
        (["pkg", "core.py"], "_lookup"),
    ]
    names = {e.text for e in found}
    # The frame lines are not read again as paths; the code line and the message are.
    assert not any("dist-packages" in n for n in names if n not in {f.text for f in frames})
    assert {"get_writer", "RST.__init__"} <= names


def test_plain_words_that_name_items_weigh_less_in_a_long_report():
    known = {"login", "output"}
    short = {e.text: e.confidence for e in EntityExtractor(known_names=known).extract("How is login done?")}
    filler = " ".join(f"word{n}" for n in range(80))
    long = {e.text: e.confidence for e in EntityExtractor(known_names=known).extract(f"The login {filler}")}
    # A plain word is weaker than a name shaped like code even in a short question, and
    # weaker still in a long report, where most such words are prose.
    assert long["login"] < short["login"] < 0.9
    # A name shaped like code keeps its weight in a long report.
    shaped = EntityExtractor(known_names={"get_login"}).extract(f"get_login {filler}")
    assert next(e for e in shaped if e.text == "get_login").confidence >= 0.9


# -- ranking on real folders --------------------------------------------------------


def test_the_deepest_frame_of_a_traceback_ranks_its_file_first(tmp_path):
    _write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/app.py": '''
            """The application: runs a job, computes a report, prints the report."""
            from pkg.engine import compute


            def run(job):
                """Run the job: compute the report of the job and print the report."""
                report = compute(job)
                print(report)
                return report
            ''',
        "pkg/engine.py": '''
            def compute(job):
                if not job:
                    raise ValueError("empty")
                return sum(job)
            ''',
        "pkg/other.py": '''
            def unrelated(x):
                return x * 2
            ''',
    })
    question = textwrap.dedent(
        """\
        Running a job to compute a report crashes: the report of an empty job is never
        printed and the job run fails.

        Traceback (most recent call last):
          File "/home/me/venv/lib/python3.11/site-packages/pkg/app.py", line 7, in run
            report = compute(job)
          File "/home/me/venv/lib/python3.11/site-packages/pkg/engine.py", line 3, in compute
            raise ValueError("empty")
        ValueError: empty
        """
    )
    files, text = _files(tmp_path, question)
    assert files[0] == "pkg/engine.py"
    assert "def compute(job)" in text


def test_a_frame_of_an_installed_package_finds_the_file_kept_under_src(tmp_path):
    _write(tmp_path, {
        "src/tool/__init__.py": "",
        "src/tool/_io/__init__.py": "",
        "src/tool/_io/saferepr.py": '''
            def saferepr(obj):
                return repr(obj)
            ''',
        "src/tool/report.py": '''
            def report(obj):
                """The report of a failing object."""
                return "report: " + repr(obj)
            ''',
    })
    question = textwrap.dedent(
        """\
        INTERNALERROR when an object's __repr__ raises:

        INTERNALERROR>   File "/usr/lib/python3.8/site-packages/tool/report.py", line 3, in report
        INTERNALERROR>   File "/usr/lib/python3.8/site-packages/tool/_io/saferepr.py", line 2, in saferepr
        INTERNALERROR>   File "/home/me/tests/test_it.py", line 6, in __repr__
        """
    )
    with Workspace.open(tmp_path) as ws:
        ws.index(embeddings=False)
        cat = ws.catalogue()
        assert cat.paths_matching("usr/lib/python3.8/site-packages/tool/_io/saferepr.py") == [
            "src/tool/_io/saferepr.py"
        ]
        assert cat.paths_matching("home/me/tests/test_it.py") == []
        res = ws.context(question, max_tokens=8000, exclude_tests=True)
    assert res.files[0] == "src/tool/_io/saferepr.py"


def test_a_quoted_warning_finds_the_literal_that_prints_it(tmp_path):
    _write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/numbering.py": '''
            import logging

            logger = logging.getLogger(__name__)


            def assign(node, kind):
                if node.number is None:
                    logger.warning("no number is assigned for %s: %s", kind, node)
                return node.number
            ''',
        "pkg/tables.py": '''
            """Tables: a table has a number, a table caption and table rows."""


            class Table:
                """A table. The table number is shown above the table."""

                def number_table(self, table):
                    """Give the table its table number."""
                    table.number = 1
                    return table
            ''',
    })
    question = (
        'Since the upgrade every build prints "WARNING: no number is assigned for table" for each '
        "table, although the table has a number and a caption."
    )
    files, _ = _files(tmp_path, question)
    assert files[0] == "pkg/numbering.py"
    with Workspace.open(tmp_path) as ws:
        clauses, _ = KeywordSearcher(ws.store).build_match(question)
        hits = dict(ws.store.keyword_search([c for c in clauses if c.text == "no number is"], 10))
        rows = {ws.catalogue().entries[r].id for r in hits}
    # The phrase meets the literal (which has %s where the report has "table") and nothing else.
    assert rows and all(r.startswith("pkg/numbering.py") for r in rows)


def test_a_file_name_that_is_a_dotted_module_name_finds_the_module(tmp_path):
    _write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/io/__init__.py": "",
        "pkg/io/ascii/__init__.py": "",
        "pkg/io/ascii/rst.py": '''
            from pkg.io.ascii.core import Basic


            class RST(Basic):
                _format_name = "rst"
            ''',
        "pkg/io/ascii/core.py": '''
            class Basic:
                def __init__(self, delimiter=" "):
                    self.delimiter = delimiter


            def write(table, format):
                """Write a table."""
                return format
            ''',
    })
    # A real report's length: plain words such as "write" are prose here.
    question = textwrap.dedent(
        """\
        Please support header rows in reStructuredText output

        It would be great if the following would work, since reStructuredText output is a
        great way to fill autogenerated documentation with content, so having this flexible
        makes life easier for everyone who builds documentation from measured data:

            tbl.write(sys.stdout, format="ascii.rst", header_rows=["name", "unit"])

        TypeError: RST.__init__() got an unexpected keyword argument 'header_rows'

        Other writers accept those header rows already; expected the same columns, units
        and names above every column, then the values below them.
        """
    )
    files, text = _files(tmp_path, question)
    assert files[0] == "pkg/io/ascii/rst.py"
    assert "class RST(Basic)" in text
    with Workspace.open(tmp_path) as ws:
        cat = ws.catalogue()
        rows = {cat.entries[r].id: s for r, s in scoring.entity_scores(
            cat, [ExtractedEntity("ascii.rst", "path", 0.95), ExtractedEntity("RST.__init__", "qualified", 0.9)]
        ).items()}
    # No file is called ascii.rst: the module pkg.io.ascii.rst is meant.
    assert rows["pkg/io/ascii/rst.py"] > 0.9
    # RST inherits __init__: the class is meant, not Basic.__init__.
    assert rows["pkg/io/ascii/rst.py::RST"] > 0.7
    assert rows.get("pkg/io/ascii/core.py::Basic.__init__", 0.0) == 0.0


def test_docs_examples_and_vendored_code_rank_below_the_library(tmp_path):
    _write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/plotting.py": '''
            def scatter_legend(points, labels):
                """Draw the legend of a scatter plot."""
                return list(zip(points, labels))
            ''',
        "docs/examples/legend_demo.py": '''
            """Demo: the scatter legend with labels, a scatter plot legend example."""
            from pkg.plotting import scatter_legend

            # scatter legend labels: the legend of the scatter plot shows the labels
            print(scatter_legend([1, 2], ["a", "b"]))
            ''',
        "pkg/packages/vendored_lib/legend.py": '''
            def legend(scatter, labels):
                """Scatter legend labels for a legend of scatter plot labels."""
                return scatter, labels
            ''',
    })
    files, _ = _files(tmp_path, "The scatter plot legend drops labels")
    assert files[0] == "pkg/plotting.py"
    assert files.index("docs/examples/legend_demo.py") > 0
    assert files.index("pkg/packages/vendored_lib/legend.py") > 0


def test_message_catalogues_rank_below_the_code(tmp_path, monkeypatch):
    # A gettext catalogue holds the project's user-facing strings: the words of a report
    # about them, once per language.
    catalogue = "Documentation.addTranslations(" + json.dumps({"messages": {
        "Search results": "Suchergebnisse", "Search the index terms": "Indexbegriffe suchen",
        "No search results: the index misses the terms": "Keine Ergebnisse"}}) + ");"
    others = {f"pkg/{name}.py": f'''
        def {name}_open(path):
            """Open the {name} store at path and return a handle."""
            return open(path)
        ''' for name in ("cache", "queue", "ledger", "socket", "pool", "archive", "mailbox", "index_store")}
    _write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/search.py": '''
            def build(doc):
                """Search."""
                return sorted(set(doc.split()))
            ''',
        "pkg/locale/de/LC_MESSAGES/pkg.js": catalogue,
        **others,
    })
    question = "search results miss index terms"
    files, _ = _files(tmp_path, question)
    assert files[0] == "pkg/search.py"
    # Without the rule the catalogue's repeated words win: the check above is not vacuous.
    monkeypatch.setattr(scoring, "AUX_FOLDERS", scoring.AUX_FOLDERS - {"lc_messages"})
    files, _ = _files(tmp_path, question)
    assert files[0] == "pkg/locale/de/LC_MESSAGES/pkg.js"


def test_docs_folders_of_a_vault_are_not_demoted(tmp_path):
    _write(tmp_path, {
        "docs/guide.md": "# Login\n\nHow login works: the login form posts the password.\n",
        "notes/other.md": "# Other\n\nSomething about login.\n",
    })
    with Workspace.open(tmp_path) as ws:
        ws.index(embeddings=False)
        res = ws.context("how does login work", max_tokens=2000)
    assert res.files[0] == "docs/guide.md"


@pytest.mark.parametrize("listing", ["numpy: 1.24.1", "numpy==1.24.1", "numpy        1.24.1"])
def test_a_package_listing_does_not_pull_in_the_module_named_like_it(tmp_path, listing):
    _write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/numpy.py": '''
            def as_array(values):
                return list(values)
            ''',
        "pkg/runner.py": '''
            def run_hooks(hooks):
                """Run every hook; a hook that raises stops the run."""
                for hook in hooks:
                    hook()
            ''',
    })
    question = "A hook that raises hangs run_hooks instead of stopping the run.\n\n" + "\n".join(
        [listing, "pluggy 0.13.1", "py 1.8.1"]
    )
    with Workspace.open(tmp_path) as ws:
        ws.index(embeddings=False)
        res = ws.context(question, max_tokens=4000)
    assert res.files[0] == "pkg/runner.py"
    assert "numpy" not in {e.text.lower() for e in res.entities}
    assert not any(s.item.path == "pkg/numpy.py" for s in res.items)


def test_template_comments_are_not_read_but_a_question_all_comment_is_kept():
    report = "Jquery is out of date\n<!-- Please run:\nimport platform; print(platform.platform())\n-->\nSee jsviewer"
    kept = without_template_comments(report)
    assert "platform" not in kept and "Jquery is out of date" in kept and "See jsviewer" in kept
    # An unclosed comment hides the rest of the page.
    assert without_template_comments("Broken writer <!-- System details: numpy") .strip() == "Broken writer"
    assert without_template_comments("<!-- why is this comment shown? -->") == "<!-- why is this comment shown? -->"
    assert without_template_comments("no comment at all") == "no comment at all"


_ENV_REPORT = textwrap.dedent("""\
    concat changes the order of dimensions

    ```python
    ds2 = concat([ds, ds], dim="c")
    ```

    #### Output of ``show_versions()``

    <details><summary>versions</summary>
    INSTALLED VERSIONS
    ------------------
    python: 3.7.1 | packaged by conda-forge | (default, Nov 13 2018)
    python-bits: 64
    byteorder: little
    numpy: 1.15.4
    scipy: 1.1.0
    pandas: 0.23.4
    netCDF4: 1.4.2
    dask: 1.0.0
    setuptools: 40.6.2
    pip: 18.1
    </details>
    """)


def test_an_environment_block_and_its_heading_are_not_read():
    kept = without_environment_blocks(_ENV_REPORT)
    assert "concat([ds, ds]" in kept and "concat changes the order" in kept
    assert "show_versions" not in kept and "byteorder" not in kept and "INSTALLED" not in kept
    # A session whose outputs are floats is the report itself, not a listing.
    session = "```\nIn [5]: np.pi/2\nOut[5]: 1.5707963267948966\nIn [6]: f(np.pi/2)\nOut[6]: 1.5707964\n```"
    assert without_environment_blocks(session) == session
    # A fence with one version among code is kept.
    code = "```\nimport numpy\nprint(numpy.__version__)\nnumpy 1.24.1\nx = 1\n```"
    assert without_environment_blocks(code) == code


def test_the_function_that_prints_the_environment_does_not_rank_first(tmp_path):
    _write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/util/print_versions.py": '''
            def show_versions():
                """Print INSTALLED VERSIONS: python-bits, byteorder and each dependency."""
                print("INSTALLED VERSIONS")
                print("python-bits: 64", "byteorder: little")
            ''',
        "pkg/concat.py": '''
            def concat(objs, dim):
                """Join objects along dim, keeping the order of the other dimensions."""
                return sorted(objs, key=lambda o: o[dim])
            ''',
    })
    files, _ = _files(tmp_path, _ENV_REPORT)
    assert files[0] == "pkg/concat.py"


def test_an_issue_template_does_not_pull_in_the_template_file(tmp_path):
    _write(tmp_path, {
        ".github/ISSUE_TEMPLATE/bug_report.md": """
            Please describe the bug. Run the following snippet and paste the output:
            import platform; print(platform.platform())
            import sys; print("Python", sys.version)
            """,
        "pkg/__init__.py": "",
        "pkg/viewer.py": '''
            JQUERY_URL = "https://code.jquery.com/jquery-3.1.1.min.js"

            def table_viewer(table):
                """Render a table as HTML with the bundled jQuery."""
                return f"<script src={JQUERY_URL}></script>{table}"
            ''',
    })
    question = textwrap.dedent("""\
        The bundled jQuery of the table viewer is outdated
        <!-- Please describe the bug. Run the following snippet and paste the output:
        import platform; print(platform.platform())
        import sys; print("Python", sys.version) -->
        jQuery 3.1.1 is shipped; update it.
        """)
    files, _ = _files(tmp_path, question)
    assert files[0] == "pkg/viewer.py"
    assert ".github/ISSUE_TEMPLATE/bug_report.md" not in files


_PRINTS_DUPLICATE = '''
    import logging

    logger = logging.getLogger(__name__)


    class Registry:
        def __init__(self):
            self.objects = {}

        def note_object(self, name, objtype, location):
            if name in self.objects:
                other = self.objects[name]
                logger.warning("duplicate object description of %s, other instance in %s, "
                               "use :noindex: for one of them", name, other)
            self.objects[name] = (location, objtype)
    '''
_DUPLICATE_REPORT = """Dataclass attributes are documented twice

When I document a dataclass, every attribute of the dataclass is described again and the build log says:

    WARNING: duplicate object description of pkg.Point.x, other instance in api, use :noindex: for one of them

Each dataclass attribute should be described once.
"""


def test_a_pasted_log_line_finds_the_file_that_prints_it(tmp_path, monkeypatch):
    from smartcontext.context import pipeline
    from smartcontext.retrieval import keyword

    _write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/registry.py": _PRINTS_DUPLICATE,
        # The decoy holds more of the report's own words (described, attribute, dataclass).
        "pkg/describe.py": '''
            """The object description directive: describes a documented object."""


            class ObjectDescription:
                """A directive that describes an object: its description, its signature and the
                attributes of a dataclass the description documents."""

                def run(self, attributes):
                    """Describe each attribute of the object once, in the description."""
                    return [self.describe(a) for a in attributes]

                def describe(self, attribute):
                    """The description of one dataclass attribute."""
                    return attribute
            ''',
    })
    # The unquoted log line is a message (its phrases meet the literal, %s and all), and the
    # file holding it counts as a frame.
    assert "duplicate object description" in message_phrases(_DUPLICATE_REPORT, logs_only=True)
    files, _ = _files(tmp_path, _DUPLICATE_REPORT)
    assert files[0] == "pkg/registry.py"
    proc = subprocess.run(
        [sys.executable, "-m", "smartcontext", "context", _DUPLICATE_REPORT, str(tmp_path), "--verbose"],
        capture_output=True, text=True, timeout=180, env={**os.environ, "SMARTCONTEXT_EMBEDDING_MODEL": "none"},
    )
    assert proc.returncode == 0, proc.stderr
    assert "prints the pasted log" in proc.stderr and "pkg/registry.py" in proc.stderr
    monkeypatch.setattr(pipeline, "MESSAGE_SOURCE", 0.0)
    monkeypatch.setattr(keyword, "LOG_LINES", False)
    assert _files(tmp_path, _DUPLICATE_REPORT)[0][0] == "pkg/describe.py"


def test_a_message_that_many_files_print_names_no_source(tmp_path):
    _write(tmp_path, {"pkg/__init__.py": "", **{f"pkg/registry_{n}.py": _PRINTS_DUPLICATE for n in range(3)}})
    with Workspace.open(tmp_path) as ws:
        ws.index(embeddings=False)
        searcher = KeywordSearcher(ws.store)
        assert searcher.message_sources(_DUPLICATE_REPORT, lambda rowid: True) == []
    (tmp_path / "pkg/registry_2.py").unlink()
    (tmp_path / "pkg/registry_1.py").unlink()
    with Workspace.open(tmp_path) as ws:
        ws.index(embeddings=False)
        searcher = KeywordSearcher(ws.store)
        assert searcher.message_sources(_DUPLICATE_REPORT, lambda rowid: True) == ["pkg/registry_0.py"]
        # Only the rows the caller allows are read (tests, module rows and prose are not).
        assert searcher.message_sources(_DUPLICATE_REPORT, lambda rowid: False) == []


def test_log_lines_are_messages_but_only_their_text_after_the_label():
    log = "build output:\nERROR: the toctree references an unknown document\nWarning:\n  cannot cache unpickable configuration value"
    phrases = message_phrases(log, logs_only=True)
    assert "the toctree references" in phrases and "cannot cache unpickable" in phrases
    assert not any("output" in ph or "error" in ph for ph in phrases)
    # logs_only: quoted spans are not log lines.
    assert message_phrases('It says "no number is assigned for table"', logs_only=True) == []
    assert message_phrases('A traceback:\nError:\nTraceback (most recent call last):', logs_only=True) == []


def test_message_phrases_come_from_quoted_prose_only():
    from smartcontext.retrieval.keyword import message_phrases

    # Apostrophes quote nothing; a quoted path or name is one token, read by the entities.
    assert message_phrases("I don't know why it's slow when the table is big") == []
    assert message_phrases('File "/usr/lib/python3/site-packages/pkg/mod.py", line 3, in f') == []
    assert "no number is" in message_phrases('It says "WARNING: no number is assigned for table"')


def test_the_callee_an_exception_message_names_is_placed_one_frame_deeper(tmp_path):
    # "TypeError: Fancy.__init__() got an unexpected keyword argument": the error surfaced
    # in core.py's frame, but the signature to change is Fancy's, one step deeper.
    _write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/core.py": '''
            def get_writer(writer_cls, **kwargs):
                """Make a writer of the given class with the keyword arguments."""
                return writer_cls(**kwargs)

            def write(table, writer_cls, **kwargs):
                writer = get_writer(writer_cls, **kwargs)
                return writer.write(table)
            ''',
        "pkg/fancy.py": '''
            class Plain:
                def __init__(self, delimiter=" "):
                    self.delimiter = delimiter

            class Fancy(Plain):
                """A table writer with rules above and below."""
            ''',
    })
    question = textwrap.dedent(
        """\
        Writing with header rows fails for the fancy format:

        Traceback (most recent call last):
          File "/usr/lib/python3/site-packages/pkg/core.py", line 6, in write
            writer = get_writer(writer_cls, **kwargs)
          File "/usr/lib/python3/site-packages/pkg/core.py", line 3, in get_writer
            return writer_cls(**kwargs)
        TypeError: Fancy.__init__() got an unexpected keyword argument 'header_rows'
        """
    )
    callees = [e for e in EntityExtractor().extract(question) if e.kind == "callee"]
    assert [(e.text, e.frame) for e in callees] == [("Fancy.__init__", 2)]
    with Workspace.open(tmp_path) as ws:
        ws.index(embeddings=False)
        cat = ws.catalogue()
        # Fancy inherits __init__, so the class is what is meant; its file is the deepest.
        assert scoring.frame_files(cat, EntityExtractor().extract(question)) == {
            "pkg/fancy.py": 1.0, "pkg/core.py": 0.5,
        }
        assert "pkg/fancy.py" in ws.context(question, max_tokens=8000, exclude_tests=True).files[:2]
    # Without a traceback, a call in prose is only a name.
    assert not [e for e in EntityExtractor().extract("Fancy.__init__() looks wrong") if e.kind == "callee"]


_TITLED_REPORT = textwrap.dedent("""\
    `autodoc_typehints = "description"` puts a return type on classes
    Building the html documentation with the html theme shows a return type on the html page
    of each class. I build the html documentation with the static path of the project and
    the html theme it sets; the html build writes the pages under the build path as always.
    Nothing else in the html build looks wrong, only the return type of classes.
    """)


def _titled_tree(root: Path) -> None:
    # Other writers of html pages make the build words common, as in a real project.
    _write(root, {f"pkg/writer{i}.py": f'''
        def write_html_{i}(page, build_path):
            """Write the html page of the documentation under the build path."""
            return save(page, build_path)
        ''' for i in range(6)})
    _write(root, {
        "pkg/__init__.py": "",
        "pkg/typehints.py": '''
            def merge_typehints(app, domain, objtype, contentnode):
                """Record type hints in the description when the option asks for it."""
                if app.config.autodoc_typehints not in ("both", "description"):
                    return
                contentnode.append(field_list_for(objtype))
            ''',
        "pkg/builder.py": '''
            def build_html(project, theme, static_path, build_path):
                """Build the html documentation of the project: the html theme renders each
                html page, the static path is copied, and the html build writes the pages
                under the build path. Building the html documentation again rebuilds every
                html page of the build."""
                return write_pages(render(project, theme), static_path, build_path)
            ''',
    })


def test_a_report_title_outweighs_the_words_its_body_repeats(tmp_path, monkeypatch):
    from smartcontext.retrieval import keyword

    _titled_tree(tmp_path)

    def builder_share() -> float:
        with Workspace.open(tmp_path) as ws:
            ws.index(embeddings=False)
            res = ws.context(_TITLED_REPORT, max_tokens=8000)
        score = {s.item.path: s.score for s in res.items}
        assert res.files[0] == "pkg/typehints.py"
        return score["pkg/builder.py"] / score["pkg/typehints.py"]

    # The body's build words alone keep the builder level with the file the title names;
    # the title's weight puts it well behind.
    with_title = builder_share()
    monkeypatch.setattr(keyword, "TITLE_WEIGHT", 0)
    assert builder_share() > 0.9 > 0.7 > with_title


def test_a_report_title_is_the_first_line_of_a_long_text_only():
    from smartcontext.retrieval.keyword import report_title

    assert report_title(_TITLED_REPORT).startswith("`autodoc_typehints")
    assert report_title("How does the html build copy static files?") == ""
    assert report_title("Short title\nshort body") == ""


def _wrapper_tree(root: Path) -> None:
    # Files of several functions each, as in a real package: a question ranks their items.
    others = {
        "pkg/api.py": "".join(f'''
            def {verb}(url, **kwargs):
                """Send a {verb.upper()} request and return its response.

                :param url: the URL of the request.
                :param kwargs: the optional arguments of the request.
                """
                return request("{verb}", url, **kwargs)
            ''' for verb in ("get", "put", "patch", "delete", "head", "options")),
        "pkg/sessions.py": "".join(f'''
            def merge_{name}(session_value, request_value):
                """Merge the {name} of the session with those of one request."""
                merged = dict(session_value or {{}})
                merged.update(request_value or {{}})
                return {{k: v for k, v in merged.items() if v is not None}}
            ''' for name in ("headers", "params", "hooks", "cookies")),
    }
    _write(root, {
        "pkg/__init__.py": "",
        "pkg/api.py": others["pkg/api.py"] + '''
            def post(url, data=None, json=None, **kwargs):
                """Send a POST request.

                The body is the form data or the json object; when the request is
                redirected the session follows the redirect and decides what happens to the
                body and to the content headers of the request that is sent again.

                :param url: the URL of the request.
                :param data: form data for the body of the request.
                :param json: a json object for the body of the request.
                :return: the response of the redirected request.
                """
                return request("post", url, data=data, json=json, **kwargs)
            ''',
        "pkg/sessions.py": others["pkg/sessions.py"] + '''
            def rebuild_method(prepared, response):
                """The method of a redirected request: a POST redirected by 303 is sent
                again as a GET, without its body."""
                method = prepared.method
                if response.status_code == 303 and method != "HEAD":
                    method = "GET"
                if response.status_code == 302 and method != "HEAD":
                    method = "GET"
                if method == "GET":
                    prepared.body = None
                    for header in ("Content-Length", "Content-Type", "Transfer-Encoding"):
                        prepared.headers.pop(header, None)
                prepared.method = method
                return prepared
            ''',
    })


def test_a_function_that_is_mostly_its_docstring_is_demoted_unless_named(tmp_path):
    from smartcontext.retrieval import scoring
    from smartcontext.retrieval.scoring import ScoredItem

    _wrapper_tree(tmp_path)
    with Workspace.open(tmp_path) as ws:
        ws.index(embeddings=False)
        res = ws.context("When a POST request gets redirected, what happens to the body?", max_tokens=8000)
        assert res.stats["docstring_demoted"] >= 1  # the pipeline applies the rule
        cat = ws.catalogue
        cat = cat() if callable(cat) else cat
        rows = {cat.entries[r].name: r for r in cat.entries if cat.entries[r].name in ("post", "rebuild_method")}
        scored = {r: ScoredItem(r, cat.entries[r].id, score=1.0) for r in rows.values()}
        wordy = scoring.doc_heavy_candidates(scored, cat)
        assert sorted(wordy) == sorted(rows.values())
        docs = {r: (len(si.item.docstring), len(si.item.text)) for r, si in ws.store.items_by_rowids(wordy).items()}
    assert scoring.demote_doc_heavy(scored, docs) == 1
    assert scored[rows["rebuild_method"]].score == 1.0  # code with a short docstring keeps its score
    assert 0.5 <= scored[rows["post"]].score < 0.9
    # A function the question names as an identifier is not a candidate for it.
    named = {r: ScoredItem(r, cat.entries[r].id, score=1.0, entity_score=1.0) for r in rows.values()}
    assert scoring.doc_heavy_candidates(named, cat) == []


def test_verbose_says_how_many_functions_were_demoted_for_their_docstring(tmp_path):
    import os
    import subprocess
    import sys

    _wrapper_tree(tmp_path)
    proc = subprocess.run(
        [sys.executable, "-m", "smartcontext", "context", "When a POST request gets redirected, what happens to the body?",
         str(tmp_path), "--verbose"],
        capture_output=True, text=True, timeout=180, env={**os.environ, "SMARTCONTEXT_EMBEDDING_MODEL": "none"},
    )
    assert proc.returncode == 0, proc.stderr
    assert "docstring demoted" in proc.stderr and "function that is mostly docstring" in proc.stderr


def test_the_project_package_named_as_a_plain_word_is_not_read_as_a_name(tmp_path, monkeypatch):
    from smartcontext.retrieval import scoring

    _write(tmp_path, {
        "src/shop/__init__.py": '''
            """shop: carts, prices and checkout."""
            from .cart import Cart
            ''',
        "src/shop/cart.py": '''
            class Cart:
                def total(self, items):
                    """The sum of the prices of the items in the cart."""
                    return sum(item.price for item in items)
            ''',
    })
    question = "How does shop work out the sum of the prices in a cart?"
    with Workspace.open(tmp_path) as ws:
        ws.index(embeddings=False)
        res = ws.context(question, max_tokens=2000)
        assert "shop" not in {e.text for e in res.entities}
        assert res.files[0] == "src/shop/cart.py"
        monkeypatch.setattr(scoring, "PROJECT_NAME_IS_NO_NAME", False)
        assert "shop" in {e.text for e in ws.context(question, max_tokens=2000).entities}


_DIOPHANTINE_REPORT = textwrap.dedent("""\
    ImageSet of n**2-1 returns EmptySet as intersection with Integers (diophantine bug)

    The image set of a polynomial over the integers intersected with the integers is
    empty, but it should be the set itself: the intersection of image sets solves an
    equation in integers and the solver returns no solution.
    """)


def _title_tree(root: Path) -> None:
    _write(root, {
        "pkg/__init__.py": "",
        "pkg/diophantine.py": '''
            def diophantine(eq):
                """Solve an equation in integers: the solutions of the polynomial equation."""
                return classify(eq)
            ''',
        "pkg/sets.py": '''
            def intersect_image_sets(image_set, integers):
                """The intersection of an image set with the integers: an equation in
                integers for the image set of a polynomial, its solution the set."""
                return solve_integers(image_set, integers)
            ''',
        "pkg/polynomial.py": "def degree(p):\n    return len(p)\n",
        "pkg/calculus/polynomial.py": "def roots(p):\n    return p\n",
        "tests/test_diophantine.py": "def test_diophantine():\n    assert diophantine(1)\n",
    })


def test_files_named_by_a_report_title_are_read_from_its_first_line(tmp_path):
    _title_tree(tmp_path)
    with Workspace.open(tmp_path) as ws:
        ws.index(embeddings=False)
        cat = ws.catalogue()
    everything = lambda p: True  # noqa: E731
    named = scoring.title_files(cat, _DIOPHANTINE_REPORT, everything)
    # The test file is not what a title names, nor a file the body names ("polynomial").
    assert named == {"pkg/diophantine.py": 1.0}
    # A stem two files share counts half for each.
    assert scoring.title_files(cat, "Wrong roots of a polynomial in diophantine\nmore", everything) == {
        "pkg/diophantine.py": 1.0, "pkg/polynomial.py": 0.5, "pkg/calculus/polynomial.py": 0.5}
    # A question of one line has no title; a refused file is not named.
    assert scoring.title_files(cat, "how does diophantine solve equations?", everything) == {}
    assert scoring.title_files(cat, _DIOPHANTINE_REPORT, lambda p: p != "pkg/diophantine.py") == {}


def test_the_file_a_report_title_names_gains_on_one_its_body_words_favour(tmp_path, monkeypatch):
    _title_tree(tmp_path)

    def share() -> float:
        with Workspace.open(tmp_path) as ws:
            ws.index(embeddings=False)
            res = ws.context(_DIOPHANTINE_REPORT, max_tokens=8000)
        score = {s.item.path: s.score for s in res.items}
        assert res.stats["title_files"] == (["pkg/diophantine.py"] if scoring.FILE_TITLE_WEIGHT else [])
        return score["pkg/diophantine.py"] / score["pkg/sets.py"]

    named = share()
    monkeypatch.setattr(scoring, "FILE_TITLE_WEIGHT", 0)
    assert share() < named


# -- methods of one name in sibling classes ---------------------------------------------

# Lines of a method body inside _operators_tree's template (indented for its dedent).
_STEPS = "\n".join(f"{' ' * 20}total = total + step * {i}  # the weight of step {i}" for i in range(40))


def _operators_tree(root: Path) -> None:
    """Operator classes that each print themselves with ``_latex``: the report shows the
    fault in a boson's; the tensor's ``_latex`` shares it without sharing a word with it."""
    _write(root, {
        "pkg/__init__.py": "",
        "pkg/operators.py": f'''
            class Operator:
                """Base of the second-quantisation operators."""

                def _latex(self, printer):
                    return "op"

                def __repr__(self):
                    return "Operator()"


            class CreateBoson(Operator):
                """Creates a boson in a state."""

                def apply(self, state, step):
                    total = 0
{_STEPS}
                    return total

                def _latex(self, printer):
                    return "b^\\\\dagger_{{%s}}" % self.state.name

                def __repr__(self):
                    return "CreateBoson()"


            class CreateFermion(Operator):
                """Creates a fermion in a state."""

                def apply(self, state, step):
                    total = 0
{_STEPS}
                    return total

                def _latex(self, printer):
                    return "a^\\\\dagger_{{%s}}" % self.state.name


            class Tensor:
                """An antisymmetric tensor."""

                def weights(self, step):
                    total = 0
{_STEPS}
                    return total

                def _latex(self, printer):
                    return "%s^{{%s}}_{{%s}}" % (self.symbol, self.upper, self.lower)

                def __repr__(self):
                    return "Tensor()"


            class Matrix:
                def _latex(self, printer):
                    total = 0
{_STEPS}
                    return str(total)
            ''',
        "pkg/plot.py": '''
            class Plot:
                def _latex(self, printer):
                    return "plot"
            ''',
    })


_BOSON_REPORT = (
    "Double superscript in the LaTeX of a squared boson\n\n"
    "`Bd(a)**2` prints `b^\\dagger_{0}^{2}` for a CreateBoson, which does not render. "
    "It should wrap the operator in braces.\n"
)


def test_a_method_brings_the_small_methods_of_its_name_in_sibling_classes(tmp_path):
    from smartcontext.context import pipeline

    _operators_tree(tmp_path)
    with Workspace.open(tmp_path) as ws:
        ws.index(embeddings=False)
        cat = ws.catalogue()
    row = {cat.entries[r].qualname: r for r in cat.entries}

    def brought(name: str) -> set[str]:
        pool = [scoring.ScoredItem(row[name], cat.entries[row[name]].id, score=0.9, direct=True)]
        pipeline._add_namesakes(pool, cat)
        assert all(s.score == 0.9 for s in pool)
        return {cat.entries[s.rowid].qualname for s in pool[1:]}

    # Same file only; a large namesake (Matrix._latex) would crowd out more than it shows.
    assert brought("CreateBoson._latex") == {"Operator._latex", "CreateFermion._latex", "Tensor._latex"}
    # Every class has its __repr__: no shared fault in that.
    assert brought("CreateBoson.__repr__") == set()


def test_a_sibling_override_the_report_shares_no_word_with_is_shown(tmp_path, monkeypatch):
    from smartcontext.context import pipeline

    _operators_tree(tmp_path)

    def shown() -> dict[str, str]:
        with Workspace.open(tmp_path) as ws:
            ws.index(embeddings=False)
            res = ws.context(_BOSON_REPORT, max_tokens=2000)
        return {s.item.qualname: s.mode for s in res.items}

    with_namesakes = shown()
    assert with_namesakes.get("Tensor._latex") == "full"
    assert "Plot._latex" not in with_namesakes
    monkeypatch.setattr(pipeline, "NAMESAKES", 0)
    assert "Tensor._latex" not in shown()


# -- the second file's best match --------------------------------------------------------


def _merge_method(name: str) -> str:
    steps = "\n".join(f"        rows = self.join(rows, other, how={name!r}, step={i})  # merge step {i}"
                      for i in range(14))
    return (f"    def {name}(self, other):\n        \"\"\"Merge with other: the {name.split('_')[1]} merge.\"\"\"\n"
            f"        rows = []\n{steps}\n        return rows\n")


def _frames_tree(root: Path) -> None:
    """A top file of six matching methods, too large to show whole, and a runner-up whose one
    match scores below all of them."""
    names = ("merge_left", "merge_right", "merge_outer", "merge_inner", "merge_cross", "merge_index")
    keep = "\n".join(f"    ranked = ranked + [original[{j}]]  # keep column {j}" for j in range(30))
    widen = "\n".join(f"    width = width + {j}  # widen the cell by {j}" for j in range(30))
    pads = "\n\n".join(f'def pad_{i}(width):\n    """Pad a cell to a width."""\n{widen}\n    return width\n'
                       for i in range(3))
    files = {
        "pkg/__init__.py": "",
        "pkg/frame.py": 'class Frame:\n    """A frame of columns."""\n\n' + "\n".join(_merge_method(n) for n in names),
        "pkg/layout.py": ('def restore_order(columns, original):\n    """Put columns back in their original order."""\n'
                          f"    ranked = sorted(columns)\n{keep}\n    return ranked\n\n\n{pads}"),
    }
    for rel, body in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(body, encoding="utf-8")


_MERGE_REPORT = (
    "Merge loses the column order\n\nMerging two frames with `Frame.merge_left` puts the columns in sorted "
    "order instead of their original order. The same with merge_right, merge_outer, merge_inner, "
    "merge_cross and merge_index.\n"
)


def test_the_second_files_best_match_gets_its_body_before_the_top_files_tail(tmp_path, monkeypatch):
    from smartcontext.context import pipeline

    _frames_tree(tmp_path)

    def shown() -> tuple[list[str], dict[str, str]]:
        with Workspace.open(tmp_path) as ws:
            ws.index(embeddings=False)
            res = ws.context(_MERGE_REPORT, max_tokens=2500)
        return list(res.files), {s.item.qualname: s.mode for s in res.items}

    files, modes = shown()
    assert files[:2] == ["pkg/frame.py", "pkg/layout.py"]
    assert modes["restore_order"] == "full"
    # The top file still leads: its best matches keep their bodies.
    assert modes["Frame.merge_left"] == "full"
    monkeypatch.setattr(pipeline, "SECOND_LEAD_ITEMS", 0)
    _, modes = shown()
    assert modes["restore_order"] == "signature"
    assert sum(mode == "full" for name, mode in modes.items() if name.startswith("Frame.merge_")) == 6


# -- a class past its kind's size limit --------------------------------------------------


def _intervals_tree(root: Path) -> None:
    """A class of about 1,800 tokens: past the class limit (1,500), within 0.4 of 8,000; the
    report names it, not the small helper that holds the fault."""
    helpers = "\n".join(
        f"    def axis_{i}(self, lower, upper):\n"
        f"        \"\"\"Bounds of axis {i}.\"\"\"\n"
        + "\n".join(f"        lower = min(lower, upper - {j})  # tighten step {j}" for j in range(8))
        + "\n        return (lower, upper)\n"
        for i in range(12)
    )
    body = (
        "class BoundingBox:\n    \"\"\"Intervals of a model's inputs.\"\"\"\n\n"
        "    def validate(self, model, bounding_box):\n"
        "        \"\"\"Validate a bounding box for the model.\"\"\"\n"
        "        return bounding_box\n\n"
        "    def _store_mapping(self, mapping):\n"
        "        for key, value in mapping.items():\n            self[key] = value\n\n"
        "    def _store_sequence(self, pairs):\n"
        "        for index, value in enumerate(pairs):\n            self[index] = value  # stored as passed\n\n"
        + helpers
    )
    # The rest of the file: too large together to be shown whole (0.4 of 8,000 tokens).
    rest = "\n\n\ndef render(canvas):\n    \"\"\"Draw every axis.\"\"\"\n" + "\n".join(
        f"    canvas.line({j}, {j + 1}, color='grey')  # grid line {j}" for j in range(120)) + "\n"
    _write(root, {"pkg/__init__.py": "", "pkg/bbox.py": body + rest,
                  "pkg/plot.py": "def draw(box):\n    \"\"\"Draw a box.\"\"\"\n    return box\n"})


_BBOX_REPORT = (
    "BoundingBox ignores the model's input order\n\nA `BoundingBox` made from a tuple of intervals "
    "for a two-input model keeps them in the wrong order: `BoundingBox((1, 2), (3, 4))`.\n"
)


def test_a_large_best_class_within_the_class_share_is_shown_whole(tmp_path, monkeypatch):
    from smartcontext.context import budgeter
    from smartcontext.tokens import count_tokens

    _intervals_tree(tmp_path)
    source = (tmp_path / "pkg" / "bbox.py").read_text(encoding="utf-8")
    cls = source[: source.index("\n\n\ndef render")]
    assert 1500 < count_tokens(cls) < 3200 < count_tokens(source)

    def context(max_tokens: int) -> tuple[dict[str, str], str]:
        with Workspace.open(tmp_path) as ws:
            ws.index(embeddings=False)
            res = ws.context(_BBOX_REPORT, max_tokens=max_tokens, format="markdown")
        return {s.item.qualname: s.mode for s in res.items}, res.text

    modes, text = context(8000)
    assert modes["BoundingBox"] == "full"
    assert "self[index] = value  # stored as passed" in text
    monkeypatch.setattr(budgeter, "CLASS_FULL_SHARE", 0.0)
    modes, text = context(8000)
    assert modes["BoundingBox"] == "signature"
    assert "self[index] = value  # stored as passed" not in text


# -- words a pasted block repeats ---------------------------------------------------------

_CONF_REPORT = '''Type hints in the description show a return type for classes
The `autodoc_typehints = "description"` option makes the class description include a return type.

Configuration of my project:

```py
# Configuration file for the project.
# -- Path setup: the project path and the extensions path
project = 'demo project'
author = 'someone'
import os, sys
sys.path.insert(0, os.path.abspath('..'))  # project path
extensions = ['sphinx.ext.autodoc']  # extensions of the project
templates_path = ['_templates']  # templates path of the project
autodoc_typehints = "description"
```
'''


def test_with_blocks_once_a_word_a_pasted_block_repeats_counts_once_and_the_prose_leads(tmp_path, monkeypatch):
    from smartcontext.retrieval import keyword

    _write(tmp_path, {
        "pkg/__init__.py": "",
        # The decoy writes the configuration file the report pastes: its words are the block's.
        "pkg/quickstart.py": '''
            def write_conf(project, author, path, extensions, templates):
                """Write the configuration file of a new project: the project name, its author, the
                path setup, the extensions list and the templates path, each with a comment."""
                lines = [f"project = {project!r}", f"author = {author!r}", f"sys.path.insert(0, {path!r})"]
                lines.append(f"extensions = {extensions!r}")
                lines.append(f"templates_path = {templates!r}")
                return "\\n".join(lines)
            ''',
        "pkg/typehints.py": '''
            def merge_typehints(app, objtype, contentnode):
                """Add the recorded type hints of a class to its description."""
                if app.config.autodoc_typehints not in ("both", "description"):
                    return
                contentnode.append(field_list_for(objtype))
            ''',
    })

    def first() -> str:
        with Workspace.open(tmp_path) as ws:
            ws.index(embeddings=False)
            return ws.context(_CONF_REPORT, max_tokens=8000).files[0]

    # Off by default (it cost SWE-bench dev Acc@1, docs/benchmarks.md): the block's words lead.
    assert first() == "pkg/quickstart.py"
    monkeypatch.setattr(keyword, "REPEAT_IN_BLOCKS_ONCE", True)
    assert first() == "pkg/typehints.py"


def test_block_words_count_once_beside_their_count_in_the_prose():
    from smartcontext.retrieval.keyword import _term_frequencies

    text = "the project path\n```\nproject = 1\nproject path project\n```\nagain the project\n~~~\nzzz zzz\n"
    once = _term_frequencies(text, blocks_once=True)
    # Twice in the prose, and the blocks add one however often they repeat it.
    assert once["project"] == 3 and once["path"] == 2 and once["zzz"] == 1
    assert _term_frequencies(text)["project"] == 5
    # An unclosed fence runs to the end, as on the page.
    assert _term_frequencies("a word\n```\nword word word", blocks_once=True)["word"] == 2
    # Notes and chat ask without it: only a report's keyword query reads blocks this way.
    assert _term_frequencies(text, blocks_once=False)["zzz"] == 2


def test_blocks_once_moves_only_a_reports_weights(tmp_path, monkeypatch):
    from smartcontext.retrieval import keyword

    _write(tmp_path, {"pkg/conf.py": "project = 'demo'\npath = 'x'\n", "pkg/other.py": "def run():\n    pass\n"})
    text = "Title of the report\nthe project\n```\nproject project project path\n```\n"
    monkeypatch.setattr(keyword, "REPEAT_IN_BLOCKS_ONCE", True)
    with Workspace.open(tmp_path) as ws:
        ws.index(embeddings=False)
        searcher = KeywordSearcher(ws.store)
        as_report = {t.text: t.weight for t in searcher.build_match(text, report=True)[0]}
        as_search = {t.text: t.weight for t in searcher.build_match(text)[0]}
    assert as_report["project"] == 2 and as_search["project"] == 3
