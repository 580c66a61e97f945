import datetime as dt
import json
import os

import pytest
import yaml

from smartcontext.vault import VaultTools
from smartcontext.vault.frontmatter import edit_frontmatter


class RecordingWorkspace:
    def __init__(self):
        self.updates = []

    def update_files(self, paths):
        self.updates.append(list(paths))


def call(result: dict) -> dict:
    """A tool's answer: a dict of plain JSON values with its success flag."""
    assert isinstance(result, dict) and isinstance(result["success"], bool)
    assert json.loads(json.dumps(result)) == result
    return result


BODY = "# Heading\n\nBody text with trailing spaces   \n\n```yaml\n---\nnot: frontmatter\n---\n```\n"
NOTES = {
    "a.md": (
        "---\n# a comment that must survive\ntitle: 'Alpha'  # inline comment\nstatus: draft\n"
        "tags:\n  - project\n  - q3/planning\ncreated: 2024-01-05\n---\n" + BODY
    ),
    "b.md": "---\nstatus: Done\ntags: project, idea\npriority: 2\npublished: true\ndue: 2024-03-01\n---\nb body\n",
    "c.md": "---\nstatus: [draft, review]\ntags: [Other]\nreviewed: 2024-02-10T09:30:00\n---\nc\n",
    "bad.md": "---\nstatus: [unclosed\n---\nbad body\n",
    "plain.md": "No frontmatter at all.\n",
    "sub/d.md": "---\naliases: [Delta, D]\nStatus: draft\n---\nd\n",
}


@pytest.fixture
def vault(tmp_path):
    root = tmp_path / "vault"
    for rel, text in NOTES.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(text.encode("utf-8"))
    return root


@pytest.fixture
def ws():
    return RecordingWorkspace()


@pytest.fixture
def tools(vault, ws):
    return VaultTools(vault, workspace=ws, clock=lambda: dt.datetime(2024, 3, 15, 12, 0).astimezone())


# ---------------------------------------------------------------- list_files_by_frontmatter


def test_list_by_field_presence(tools):
    r = call(tools.list_files_by_frontmatter("status"))
    assert r["results"] == ["a.md", "b.md", "c.md", "sub/d.md"]  # Status matches case-insensitively
    assert r["invalid_frontmatter"] == ["bad.md"]


@pytest.mark.parametrize(
    ("field", "value", "match_type", "expected"),
    [
        ("status", "draft", "contains", ["a.md", "c.md", "sub/d.md"]),  # list values match by element
        ("status", "DONE", "exact", ["b.md"]),
        ("status", "dra", "exact", []),
        ("tags", "#project", "exact", ["a.md", "b.md"]),  # string "project, idea" is a list of tags
        ("tags", "q3", "contains", ["a.md"]),  # nested tag q3/planning
        ("tags", "idea", "exact", ["b.md"]),
        ("priority", 2, "exact", ["b.md"]),
        ("published", True, "exact", ["b.md"]),
        ("due", "2024-03", "contains", ["b.md"]),  # YAML dates compare as ISO text
        ("aliases", "delta", "exact", ["sub/d.md"]),
    ],
)
def test_list_by_value(tools, field, value, match_type, expected):
    r = call(tools.list_files_by_frontmatter(field, value, match_type=match_type))
    assert r["success"] and r["results"] == expected


def test_list_by_frontmatter_messages_and_validation(tools):
    r = call(tools.list_files_by_frontmatter("status", "archived"))
    assert r["message"] == "No files found where status contains 'archived'" and r["results"] == []
    assert call(tools.list_files_by_frontmatter("nothing"))["message"] == "No files found where nothing has the property"
    assert "must be one of contains, exact" in call(tools.list_files_by_frontmatter("status", "x", match_type="regex"))["error"]
    assert call(tools.list_files_by_frontmatter(" "))["error"] == "field cannot be empty"
    limited = call(tools.list_files_by_frontmatter("status", limit=2))
    assert limited["results"] == ["a.md", "b.md"] and limited["total"] == 4


# ---------------------------------------------------------------- update_frontmatter


def test_update_keeps_body_and_untouched_lines_byte_identical(tools, vault, ws):
    r = call(tools.update_frontmatter("a.md", updates={"status": "done", "reviewed": "2024-03-15"},
                                      remove=["title"], append={"tags": ["#project", "launch"]}))
    assert r["success"] and r["path"] == "a.md"
    assert r["message"] == "Updated frontmatter of a.md: set status, reviewed; removed title; appended to tags"
    text = (vault / "a.md").read_text(encoding="utf-8")
    fm_text, body = text.split("\n---\n", 1)
    assert body == BODY
    assert "# a comment that must survive" in fm_text
    lines = fm_text.split("\n")
    assert "created: 2024-01-05" in lines  # untouched line, unchanged
    assert "reviewed: 2024-03-15" in lines  # a date, not the quoted string '2024-03-15'
    assert "title" not in fm_text
    data = yaml.safe_load(fm_text.removeprefix("---\n"))
    assert data == {"status": "done", "tags": ["project", "q3/planning", "launch"],
                    "created": dt.date(2024, 1, 5), "reviewed": dt.date(2024, 3, 15)}
    assert r["frontmatter"]["reviewed"] == "2024-03-15" and r["frontmatter"]["tags"][-1] == "launch"
    assert ws.updates == [["a.md"]]


def test_update_note_without_frontmatter_adds_a_block(tools, vault):
    call(tools.update_frontmatter("plain", updates={"tags": ["new"], "count": 3}))
    assert (vault / "plain.md").read_text() == "---\ntags:\n- new\ncount: 3\n---\nNo frontmatter at all.\n"


def test_update_crlf_note_stays_crlf_and_body_identical(tools, vault):
    original = b"---\r\nstatus: draft\r\n---\r\nline 1\r\nline 2\r\n"
    (vault / "win.md").write_bytes(original)
    call(tools.update_frontmatter("win.md", updates={"status": "done", "owner": "me"}))
    assert (vault / "win.md").read_bytes() == b"---\r\nstatus: done\r\nowner: me\r\n---\r\nline 1\r\nline 2\r\n"


def test_update_refuses_malformed_frontmatter_and_leaves_it(tools, vault, ws):
    r = call(tools.update_frontmatter("bad.md", updates={"status": "ok"}))
    assert r["success"] is False and "not valid YAML" in r["error"] and "by hand" in r["error"]
    assert (vault / "bad.md").read_text() == NOTES["bad.md"]
    assert ws.updates == []


def test_update_unchanged_and_nothing_to_do(tools, vault, ws):
    before = (vault / "b.md").stat().st_mtime_ns
    r = call(tools.update_frontmatter("b.md", updates={"status": "Done"}))
    assert r["success"] and "unchanged" in r["message"]
    assert (vault / "b.md").stat().st_mtime_ns == before and ws.updates == []
    assert "Nothing to change" in call(tools.update_frontmatter("b.md"))["error"]
    assert "not present: nope" in call(tools.update_frontmatter("b.md", remove=["nope"]))["message"]
    assert "appears twice" in call(tools.update_frontmatter("b.md", updates={"x": 1}, remove=["x"]))["error"]
    assert "must be an object" in call(tools.update_frontmatter("b.md", updates=["x"]))["error"]


def test_property_names_match_case_insensitively(tools, vault):
    call(tools.update_frontmatter("sub/d.md", updates={"status": "done"}, append={"ALIASES": "Dee"}))
    assert (vault / "sub/d.md").read_text() == "---\naliases:\n- Delta\n- D\n- Dee\nStatus: done\n---\nd\n"


def test_removing_every_property_drops_the_block(tools, vault):
    call(tools.update_frontmatter("sub/d.md", remove=["aliases", "Status"]))
    assert (vault / "sub/d.md").read_text() == "d\n"


def test_update_refuses_non_notes(tools, vault):
    (vault / "data.txt").write_text("x")
    assert "not a markdown note" in call(tools.update_frontmatter("data.txt", updates={"a": 1}))["error"]


def test_edit_falls_back_to_a_full_dump_for_flow_style_blocks():
    text = "---\n{a: 1, b: [x, y]}\n---\nbody"
    new, fm, _ = edit_frontmatter(text, {"a": 2})
    assert new.endswith("---\nbody") and fm == {"a": 2, "b": ["x", "y"]}
    assert yaml.safe_load(new.split("---\n")[1]) == {"a": 2, "b": ["x", "y"]}


def test_edit_handles_block_scalars_and_bom():
    text = "\ufeff---\nnote: |\n  line one\n  line two\nkeep: yes\n---\nbody\n"
    new, fm, _ = edit_frontmatter(text, {"note": "short"})
    assert new == "\ufeff---\nnote: short\nkeep: yes\n---\nbody\n"
    assert fm == {"note": "short", "keep": True}


# ---------------------------------------------------------------- search_by_date_range


def _set_mtime(path, day: dt.date):
    ts = dt.datetime(day.year, day.month, day.day, 12, 0).timestamp()
    os.utime(path, (ts, ts))


def test_date_range_by_modification_time(tools, vault):
    for rel, day in [("a.md", dt.date(2024, 3, 1)), ("b.md", dt.date(2024, 3, 10)), ("c.md", dt.date(2024, 2, 1)),
                     ("bad.md", dt.date(2024, 1, 1)), ("plain.md", dt.date(2024, 3, 15)), ("sub/d.md", dt.date(2024, 3, 5))]:
        _set_mtime(vault / rel, day)
    r = call(tools.search_by_date_range("2024-03-01", "2024-03-10"))
    assert r["results"] == ["b.md", "sub/d.md", "a.md"]  # newest first, both ends inclusive
    assert r["dates"] == {"b.md": "2024-03-10", "sub/d.md": "2024-03-05", "a.md": "2024-03-01"}
    assert call(tools.search_by_date_range("today"))["results"] == ["plain.md"]  # end defaults to today
    assert call(tools.search_by_date_range("2024-03-01", "2024-03-10", limit=1))["total"] == 3


def test_date_range_by_frontmatter_field_and_created(tools, vault):
    assert call(tools.search_by_date_range("2024-02-01", "2024-02-28", date_field="reviewed"))["results"] == ["c.md"]
    assert call(tools.search_by_date_range("2024-03-01", "2024-03-01", date_field="due"))["results"] == ["b.md"]
    created = call(tools.search_by_date_range("2024-01-01", "2024-01-31", date_field="created"))
    assert created["results"] == ["a.md"]  # the 'created' property wins over file times


def test_date_range_validation(tools):
    assert call(tools.search_by_date_range("March 1st")) == {
        "success": False, "error": "Invalid start_date 'March 1st': use YYYY-MM-DD"}
    assert "after end_date" in call(tools.search_by_date_range("2024-03-10", "2024-03-01"))["error"]
    r = call(tools.search_by_date_range("2020-01-01", "2020-01-02", date_field="due"))
    assert r == {"success": True, "message": "No files found with due between 2020-01-01 and 2020-01-02", "results": []}
