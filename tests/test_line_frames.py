"""A place written as ``path:line`` in another language's error finds the definition holding it.

A Rust panic says only ``crates/ignore/src/walk.rs:1300:17``; a Go trace and a Node stack
give the line beside the function. Python's tracebacks name their function and are read as
before (tests/test_issue_ranking.py).
"""

from __future__ import annotations

from pathlib import Path

from conftest import write_tree

from smartcontext import Workspace
from smartcontext.retrieval import entities
from smartcontext.retrieval.entities import EntityExtractor


def _method(name: str, body: str) -> str:
    lines = "".join(f"        let step_{i} = self.stack.len() + {i}; // {name} keeps the walk's depth\n" for i in range(8))
    return f"    pub fn {name}(&mut self) -> String {{\n{lines}{body}    }}\n\n"


# Five methods of one size; the panic's line is in next_entry, the second.
WALK_RS = ("pub struct Walker {\n    stack: Vec<Option<String>>,\n}\n\nimpl Walker {\n"
           + _method("open_root", "        String::new()\n")
           + _method("next_entry", "        let entry = self.stack.pop().unwrap().unwrap();\n        entry\n")
           + _method("skip_folder", "        String::new()\n")
           + _method("sort_entries", "        String::new()\n")
           + _method("close_walk", "        String::new()\n")
           + "}\n")

PANIC_LINE = 27
PANIC = f"""thread 'main' panicked at src/walk.rs:{PANIC_LINE}:44:
called `Option::unwrap()` on a `None` value
note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace"""


BUDGET = 400  # the whole file does not fit: the context picks its methods


def _context(root: Path, question: str) -> str:
    with Workspace.open(root) as ws:
        ws.index(embeddings=False)
        return ws.context(question, max_tokens=BUDGET).text


def test_places_in_other_languages_are_read_with_their_lines():
    text = """thread 'main' panicked at crates/ignore/src/walk.rs:1300:17:
        at ServerResponse.send (/app/node_modules/express/lib/response.js:135:22)
    \t/home/u/go/pkg/mod/github.com/spf13/cobra@v1.8.0/command.go:1784 +0x71
    src\\main.c:12:5: error: expected ';'
       at Shop.Worker.Run() in /build/Shop/Worker.cs:line 42
    #0 /var/www/src/Cart.php(57): Cart->total()
    src/app.ts(12,5): error TS2304: Cannot find name 'x'.
        at file:///srv/app/lib/boot.mjs:7:3
    see http://example.com/a.js:3 at 10:30, and pkg/mod.py:12"""
    frames = {(e.text, e.line, e.frame) for e in EntityExtractor().extract(text) if e.kind == "frame"}
    assert frames == {
        ("crates/ignore/src/walk.rs", 1300, 7),  # first in the text: the deepest
        ("app/node_modules/express/lib/response.js", 135, 6),
        ("home/u/go/pkg/mod/github.com/spf13/cobra@v1.8.0/command.go", 1784, 5),
        ("src/main.c", 12, 4),
        ("build/Shop/Worker.cs", 42, 3),
        ("var/www/src/Cart.php", 57, 2),
        ("src/app.ts", 12, 1),
        ("srv/app/lib/boot.mjs", 7, 0),
    }


def test_a_rust_panic_shows_the_function_holding_its_line(tmp_path, monkeypatch):
    write_tree(tmp_path, {"src/walk.rs": WALK_RS})
    assert WALK_RS.splitlines()[PANIC_LINE - 1].strip().startswith("let entry")
    body = "let entry = self.stack.pop().unwrap().unwrap();"
    assert body in _context(tmp_path, PANIC)
    # Without the line the methods are alike to the panic's words, and another one is shown
    # in its place: the check above is not vacuous.
    monkeypatch.setattr(entities, "LINE_FRAMES", False)
    assert body not in _context(tmp_path, PANIC)
