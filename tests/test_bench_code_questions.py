"""The plain-English benchmark's scoring: a gold symbol counts as shown when its definition
line is in the context from its own file, whole when its body is there consecutively; a file
counts at rank k."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import code_questions as cq  # noqa: E402

SOURCE = '''\
import os


def helper(x):
    """Unrelated."""
    return x


class Loader:
    def load(self, path):
        data = open(path).read()
        return data.strip()
'''


def _question():
    return {"gold": [{"path": "pkg/loader.py", "symbols": [{"name": "Loader.load", "line": 10}]},
                     {"path": "pkg/other.py", "symbols": []}]}


def test_a_symbol_is_shown_when_its_definition_is_in_the_context(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "loader.py").write_text(SOURCE)
    head, body = cq.symbol_lines(tmp_path, "pkg/loader.py", 10)
    assert head == ["def load(self, path):"]
    assert body == ["def load(self, path):", "data = open(path).read()", "return data.strip()"]
    gold = {("pkg/loader.py", 10): (head, body)}
    shown = "### pkg/loader.py\n```python\n    def load(self, path):\n        data = open(path).read()\n" \
            "        return data.strip()\n```\n"
    ranked = ["pkg/a.py", "pkg/loader.py"]
    r = cq.score(_question(), {"ranked": ranked, "context_text": shown, "context_files": ["pkg/loader.py"]}, gold)
    assert r["symbols"] == 1.0 and r["whole"] == 1.0
    assert (r["any@1"], r["any@5"], r["first@1"], r["first@5"]) == (False, True, False, True)


def test_a_signature_is_shown_but_not_whole_and_another_file_does_not_count(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "loader.py").write_text(SOURCE)
    gold = {("pkg/loader.py", 10): cq.symbol_lines(tmp_path, "pkg/loader.py", 10)}
    signature = "    def load(self, path):\n        ...\n"
    r = cq.score(_question(), {"ranked": ["pkg/loader.py"], "context_text": signature,
                               "context_files": ["pkg/loader.py"]}, gold)
    assert (r["symbols"], r["whole"], r["first@1"]) == (1.0, 0.0, True)
    shuffled = "return data.strip()\ndef load(self, path):\ndata = open(path).read()\n"
    r = cq.score(_question(), {"ranked": ["pkg/a.py"], "context_text": shuffled,
                               "context_files": ["pkg/a.py"]}, gold)
    assert (r["symbols"], r["whole"]) == (0.0, 0.0)


def test_a_signature_listed_on_one_line_counts_and_a_longer_name_does_not(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "loader.py").write_text(SOURCE)
    gold = {("pkg/loader.py", 10): cq.symbol_lines(tmp_path, "pkg/loader.py", 10)}
    listed = "### pkg/loader.py\n\n- `def load(self,  path):` lines 10-12: Read a file.\n"
    r = cq.score(_question(), {"ranked": ["pkg/loader.py"], "context_text": listed,
                               "context_files": ["pkg/loader.py"]}, gold)
    assert (r["symbols"], r["whole"]) == (1.0, 0.0)
    other = "### pkg/loader.py\n\n- `def load_all(self, path):` lines 20-22\n"
    r = cq.score(_question(), {"ranked": ["pkg/loader.py"], "context_text": other,
                               "context_files": ["pkg/loader.py"]}, gold)
    assert r["symbols"] == 0.0


DATA = Path(__file__).resolve().parents[1] / "bench" / "data"
MIRRORS = Path(os.environ.get("SWEBENCH_MIRRORS", "/work/.mirror"))


@pytest.mark.parametrize("name", ["code-questions-2.json", "code-questions-3.json", "code-questions-4.json"])
def test_the_kept_question_sets_keep_the_dev_sets_rules(name):
    """bench/data/code-questions-2.json, -3.json and -4.json (the held-out set) follow
    code-questions/README.md: 1-3 library files per question (no tests, no docs), 1-3
    qualified symbols each, the four kinds, few identifiers; and every symbol's line is its
    ``def``/``class`` at the pinned commit (checked from the git mirror when one is there)."""
    data = json.loads((DATA / name).read_text(encoding="utf-8"))
    questions = data["questions"]
    assert len(questions) == 30 and len({q["id"] for q in questions}) == 30
    assert {q["repo"] for q in questions} == set(data["repos"])
    assert {q["kind"] for q in questions} == {"how", "where", "what-happens", "configure"}
    assert sum(q["has_identifier"] for q in questions) <= 6
    for q in questions:
        assert 1 <= len(q["gold"]) <= 3, q["id"]
        for g in q["gold"]:
            parts = g["path"].split("/")
            assert not {"tests", "testing", "doc", "docs"} & set(parts), g["path"]
            assert 1 <= len(g["symbols"]) <= 3, q["id"]
    checked = 0
    for repo, commit in data["repos"].items():
        git_dir = MIRRORS / repo.replace("/", "+") / "repo"
        if not git_dir.is_dir():
            continue
        for q in (q for q in questions if q["repo"] == repo):
            for g in q["gold"]:
                source = subprocess.run(["git", "-C", str(git_dir), "show", f"{commit}:{g['path']}"],
                                        capture_output=True, text=True, check=True).stdout
                found: dict[str, list[int]] = {}

                def walk(node, prefix=""):
                    for child in ast.iter_child_nodes(node):
                        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                            # Every definition of a name: the implementation after @overload
                            # stubs, or a property's getter before its setter.
                            found.setdefault(prefix + child.name, []).append(child.lineno)
                            walk(child, prefix + child.name + ".")

                walk(ast.parse(source))
                for s in g["symbols"]:
                    assert s["line"] in found.get(s["name"], []), (q["id"], s)
                    checked += 1
    if not checked:
        pytest.skip(f"no git mirror under {MIRRORS}: lines not checked")


def test_ablate_asks_another_question_set(tmp_path, capsys):
    """``bench/ablate.py questions --dataset``: the questions of the file given, over the
    indexes its trees hold under ``--work``, scored as the benchmark scores them."""
    import ablate
    from smartcontext import Workspace

    tree = tmp_path / "work" / "repos" / "acme+tool-0123456789ab"
    (tree / "pkg").mkdir(parents=True)
    (tree / "pkg" / "loader.py").write_text(SOURCE)
    (tree / "pkg" / "other.py").write_text("".join(f"def helper_{i}(x):\n    return x + {i}\n\n" for i in range(6)))
    with Workspace.open(tree) as ws:
        ws.index(embeddings=False)
    dataset = tmp_path / "questions.json"
    dataset.write_text(json.dumps({
        "repos": {"acme/tool": "0123456789abcdef"},
        "questions": [{"id": "tool-01", "repo": "acme/tool", "kind": "how", "has_identifier": False,
                       "question": "How does the loader read a path?",
                       "gold": [{"path": "pkg/loader.py", "symbols": [{"name": "Loader.load", "line": 10}]}]}],
    }))
    assert ablate.main(["questions", "--dataset", str(dataset), "--work", str(tmp_path / "work"), "default:"]) == 0
    out = capsys.readouterr().out
    assert "n=1  Acc@1 any 1.00" in out and "symbols shown 1.000" in out
    assert "by kind (n Acc@1/Acc@5/symbols): how 1 1.00/1.00/1.00" in out
