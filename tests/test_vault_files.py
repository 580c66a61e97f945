import json
import os

import pytest

from smartcontext.vault import VaultTools


class RecordingWorkspace:
    """Stands in for the caller's index: records which files the tools report as changed."""

    def __init__(self):
        self.updates: list[list[str]] = []

    def update_files(self, paths):
        self.updates.append(list(paths))


def call(result: dict) -> dict:
    """A tool's answer: a dict of plain JSON values with its success flag."""
    assert isinstance(result, dict) and isinstance(result["success"], bool)
    assert json.loads(json.dumps(result)) == result
    return result


@pytest.fixture
def vault(tmp_path):
    root = tmp_path / "vault"
    files = {
        "Inbox/Idea.md": "# Idea\nA small idea.\n",
        "Projects/Plan.md": "---\nstatus: draft\n---\n# Plan\nSteps.\n",
        "long.md": "".join(f"{i:04d}\n" for i in range(2000)),  # 10,000 chars
        "🚀 Launch.md": "# Launch 🚀\nGo.\n",
    }
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    (root / ".obsidian").mkdir()
    (root / ".obsidian" / "app.json").write_text('{"apiKey": "secret"}')
    (tmp_path / "outside.md").write_text("outside")
    return root


@pytest.fixture
def ws():
    return RecordingWorkspace()


@pytest.fixture
def tools(vault, ws):
    return VaultTools(vault, workspace=ws)


# ---------------------------------------------------------------- read_file


def test_read_whole_file(tools):
    r = call(tools.read_file("Inbox/Idea.md"))
    assert r == {"success": True, "content": "# Idea\nA small idea.\n", "path": "Inbox/Idea.md"}


def test_read_accepts_name_without_extension_and_bare_note_names(tools):
    assert call(tools.read_file("Inbox/Idea"))["path"] == "Inbox/Idea.md"
    assert call(tools.read_file("Plan"))["path"] == "Projects/Plan.md"  # found like [[Plan]]
    assert call(tools.read_file("🚀 Launch"))["content"].startswith("# Launch 🚀")


def test_read_pagination_markers_exactly_as_the_seed(tools):
    text = "".join(f"{i:04d}\n" for i in range(2000))
    first = call(tools.read_file("long.md"))
    assert first["content"] == text[:4000] + "\n\n[... truncated at char 4000 of 10000. Use offset=4000 to read more.]"
    middle = call(tools.read_file("long.md", offset=4000))
    assert middle["content"] == (
        "[Continuing from char 4000 of 10000]\n\n"
        + text[4000:8000]
        + "\n\n[... truncated at char 8000 of 10000. Use offset=8000 to read more.]"
    )
    last = call(tools.read_file("long.md", offset=8000))
    assert last["content"] == "[Continuing from char 8000 of 10000]\n\n" + text[8000:]
    exact = call(tools.read_file("long.md", offset=0, length=10000))
    assert exact["content"] == text
    assert call(tools.read_file("long.md", offset=10000)) == {
        "success": False, "error": "offset 10000 exceeds file length 10000"}


def test_read_counts_characters_not_bytes_and_normalises_newlines(tools, vault):
    (vault / "crlf.md").write_bytes("é€\r\nline\r\n".encode("utf-8"))
    r = call(tools.read_file("crlf.md", length=3))
    assert r["content"] == "é€\n\n\n[... truncated at char 3 of 8. Use offset=3 to read more.]"


def test_read_errors(tools, vault):
    assert call(tools.read_file("missing.md")) == {"success": False, "error": "File not found: missing.md"}
    assert "folder" in call(tools.read_file("Inbox"))["error"]
    (vault / "bin.md").write_bytes(b"\x00\x01\x02")
    assert "not a text file" in call(tools.read_file("bin.md"))["error"]
    assert "at least 0" in call(tools.read_file("long.md", offset=-1))["error"]
    assert "at least 1" in call(tools.read_file("long.md", length=0))["error"]


MALICIOUS = ["../outside.md", "/etc/passwd", "Inbox/../../outside.md", ".obsidian/app.json", ".git/config"]


@pytest.mark.parametrize("bad", MALICIOUS)
def test_every_path_taking_tool_refuses_malicious_paths(tools, vault, ws, bad):
    before = sorted(p.relative_to(vault).as_posix() for p in vault.rglob("*"))
    calls = [
        tools.read_file(bad),
        tools.create_file(bad, "x", overwrite=True),
        tools.append_to_file(bad, "x"),
        tools.move_file("Inbox/Idea.md", bad),
        tools.move_file(bad, "Inbox/stolen.md"),
        tools.update_frontmatter(bad, updates={"a": 1}),
        tools.find_outlinks(bad),
        tools.search_by_folder(bad),
    ]
    for result in calls:
        data = call(result)
        assert data["success"] is False, (bad, data)
        assert "secret" not in result and "root:" not in result
    assert sorted(p.relative_to(vault).as_posix() for p in vault.rglob("*")) == before
    assert (vault.parent / "outside.md").read_text() == "outside"
    assert ws.updates == []


def test_symlink_out_of_the_vault_is_refused_for_reads_and_writes(tools, vault):
    (vault / "escape.md").symlink_to(vault.parent / "outside.md")
    (vault / "escape_dir").symlink_to(vault.parent, target_is_directory=True)
    assert not call(tools.read_file("escape.md"))["success"]
    assert not call(tools.append_to_file("escape.md", "pwned"))["success"]
    assert not call(tools.create_file("escape_dir/new.md", "pwned"))["success"]
    assert not call(tools.move_file("Inbox/Idea.md", "escape_dir/Idea.md"))["success"]
    assert (vault.parent / "outside.md").read_text() == "outside"
    assert not (vault.parent / "new.md").exists() and (vault / "Inbox/Idea.md").exists()


# ---------------------------------------------------------------- create_file


def test_create_file_adds_md_makes_folders_and_notifies(tools, vault, ws):
    r = call(tools.create_file("New/Deep/Meeting 2024.01.05", "# Meeting\n"))
    assert r == {"success": True, "message": "Created New/Deep/Meeting 2024.01.05.md",
                 "path": "New/Deep/Meeting 2024.01.05.md"}
    assert (vault / "New/Deep/Meeting 2024.01.05.md").read_text() == "# Meeting\n"
    assert ws.updates == [["New/Deep/Meeting 2024.01.05.md"]]
    assert call(tools.create_file("data.csv", "a,b\n"))["path"] == "data.csv"


def test_create_file_never_overwrites_without_permission(tools, vault, ws):
    r = call(tools.create_file("Inbox/Idea.md", "replaced"))
    assert r["success"] is False and r["error"].startswith("File already exists: Inbox/Idea.md")
    assert (vault / "Inbox/Idea.md").read_text() == "# Idea\nA small idea.\n"
    assert ws.updates == []
    r = call(tools.create_file("Inbox/Idea.md", "replaced", overwrite=True))
    assert r["success"] and r["message"] == "Overwrote Inbox/Idea.md"
    assert (vault / "Inbox/Idea.md").read_text() == "replaced"
    assert ws.updates == [["Inbox/Idea.md"]]


def test_create_file_needs_a_file_name(tools, vault):
    r = call(tools.create_file("Projects/", "x"))
    assert r["success"] is False and "names a folder" in r["error"]
    (vault / "Folder.md").mkdir()
    assert call(tools.create_file("Folder.md", "x", overwrite=True))["error"] == "Folder.md is a folder"


def test_create_file_refuses_binary_formats_and_hidden_names(tools, vault):
    assert "binary" in call(tools.create_file("pic.png", "not an image"))["error"]
    assert not (vault / "pic.png").exists()
    assert not call(tools.create_file(".smartcontext/preferences.md", "- evil"))["success"]
    assert not (vault / ".smartcontext").exists()


def test_failed_write_keeps_the_original(tools, vault, ws, monkeypatch):
    def disk_full(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", disk_full)
    r = call(tools.create_file("Inbox/Idea.md", "new", overwrite=True))
    assert r == {"success": False, "error": "create_file failed: No space left on device"}
    assert not call(tools.append_to_file("Inbox/Idea.md", "more"))["success"]
    assert (vault / "Inbox/Idea.md").read_text() == "# Idea\nA small idea.\n"
    assert sorted(p.name for p in (vault / "Inbox").iterdir()) == ["Idea.md"]
    assert ws.updates == []


def test_index_failure_is_a_warning_not_a_failed_write(vault):
    class BrokenIndex:
        def update_files(self, paths):
            raise RuntimeError("database is locked")

    r = call(VaultTools(vault, workspace=BrokenIndex()).create_file("n.md", "x"))
    assert r["success"] is True and "database is locked" in r["warning"]
    assert (vault / "n.md").read_text() == "x"


# ---------------------------------------------------------------- move_file


def test_move_file_creates_folders_and_reports_both_paths(tools, vault, ws):
    r = call(tools.move_file("Inbox/Idea.md", "Archive/2024/Idea.md"))
    assert r["success"] and r["message"] == "Moved Inbox/Idea.md to Archive/2024/Idea.md"
    assert r["source"] == "Inbox/Idea.md" and r["destination"] == "Archive/2024/Idea.md"
    assert (vault / "Archive/2024/Idea.md").read_text().startswith("# Idea")
    assert not (vault / "Inbox/Idea.md").exists()
    assert ws.updates == [["Inbox/Idea.md", "Archive/2024/Idea.md"]]


def test_move_into_folder_and_keep_extension(tools, vault):
    assert call(tools.move_file("Inbox/Idea.md", "Projects/"))["destination"] == "Projects/Idea.md"
    assert call(tools.move_file("Projects/Idea", "Projects/Renamed"))["destination"] == "Projects/Renamed.md"
    assert call(tools.move_file("Projects/Renamed.md", "Inbox"))["destination"] == "Inbox/Renamed.md"


def test_move_refuses_to_overwrite(tools, vault, ws):
    (vault / "Archive").mkdir()
    (vault / "Archive/Idea.md").write_text("older idea")
    r = call(tools.move_file("Inbox/Idea.md", "Archive/Idea.md"))
    assert r == {"success": False, "error": "Destination already exists: Archive/Idea.md"}
    assert (vault / "Archive/Idea.md").read_text() == "older idea"
    assert (vault / "Inbox/Idea.md").exists()
    assert call(tools.move_file("Inbox/Idea.md", "Inbox/Idea.md"))["success"] is False
    assert call(tools.move_file("nope.md", "x.md"))["error"] == "File not found: nope.md"
    assert ws.updates == []


def test_batch_move_reports_each_item(tools, vault, ws):
    r = call(tools.batch_move_files([
        {"source": "Inbox/Idea.md", "destination": "Archive/Idea.md"},
        {"source": "missing.md", "destination": "Archive/missing.md"},
        {"source": "Projects/Plan.md", "destination": "../escape.md"},
        {"source": "🚀 Launch.md", "destination": "Archive/"},
    ]))
    assert r["success"] is True
    assert r["message"] == "Moved 2 of 4 files; 2 failed (see results)"
    assert (r["moved"], r["failed"]) == (2, 2)
    assert [x["success"] for x in r["results"]] == [True, False, False, True]
    assert r["results"][1]["error"] == "File not found: missing.md"
    assert "outside the vault" in r["results"][2]["error"]
    assert r["results"][3]["destination"] == "Archive/🚀 Launch.md"
    assert all("source" in x for x in r["results"])  # compaction stubs list these as files
    assert ws.updates == [["Inbox/Idea.md", "Archive/Idea.md", "🚀 Launch.md", "Archive/🚀 Launch.md"]]
    assert (vault / "Projects/Plan.md").exists()


def test_batch_move_validates_its_argument(tools):
    assert "at least 1" in call(tools.batch_move_files([]))["error"]
    assert "missing destination" in call(tools.batch_move_files([{"source": "a.md"}]))["error"]
    assert "must be an array" in call(tools.batch_move_files("a.md"))["error"]


# ---------------------------------------------------------------- append_to_file


def test_append_adds_on_a_new_line_and_notifies(tools, vault, ws):
    (vault / "no_newline.md").write_text("last line")
    assert call(tools.append_to_file("no_newline.md", "- added\n"))["message"] == "Appended to no_newline.md"
    assert (vault / "no_newline.md").read_text() == "last line\n- added\n"
    call(tools.append_to_file("Inbox/Idea", "more"))
    assert (vault / "Inbox/Idea.md").read_text() == "# Idea\nA small idea.\nmore"
    assert ws.updates == [["no_newline.md"], ["Inbox/Idea.md"]]


def test_append_keeps_crlf_files_crlf(tools, vault):
    (vault / "win.md").write_bytes(b"a\r\nb")
    call(tools.append_to_file("win.md", "c\nd\n"))
    assert (vault / "win.md").read_bytes() == b"a\r\nb\r\nc\r\nd\r\n"


def test_append_needs_an_existing_file_and_content(tools, vault):
    assert call(tools.append_to_file("nope.md", "x"))["error"] == "File not found: nope.md"
    assert not (vault / "nope.md").exists()
    assert call(tools.append_to_file("Inbox/Idea.md", ""))["error"] == "content cannot be empty"
