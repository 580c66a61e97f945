"""The CLI end to end, as a user runs it: `python -m smartcontext ...` in a subprocess."""

import json
import os
import subprocess
import sys

import pytest

# Every test once on SQLite and once on PostgreSQL (conftest.store_env).
pytestmark = pytest.mark.usefixtures("store_env")


ENV = {**os.environ, "SMARTCONTEXT_EMBEDDING_MODEL": "none"}


def run(*args, cwd=None, check=True):
    proc = subprocess.run(
        [sys.executable, "-m", "smartcontext", *args], capture_output=True, text=True,
        cwd=cwd, env=ENV, timeout=180,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"exit {proc.returncode}\nstdout: {proc.stdout}\nstderr: {proc.stderr}")
    return proc


def test_index_json_then_status(sample_repo):
    stats = json.loads(run("index", str(sample_repo), "--json").stdout)
    assert stats["files_indexed"] == 9 and stats["items"] > 20
    again = json.loads(run("index", str(sample_repo), "--json").stdout)
    assert again["files_indexed"] == 0 and again["files_unchanged"] == 9
    st = json.loads(run("status", str(sample_repo), "--json").stdout)
    assert st["indexed"] and st["files"] == 9


def test_context_default_path_is_the_current_folder(sample_repo):
    out = run("context", "How does AuthService handle login?", "--max-tokens", "1500", cwd=sample_repo)
    assert "! shop/auth.py" in out.stdout
    assert "login(self, name, password)" in out.stdout


def test_context_formats_and_verbose(sample_repo):
    js = json.loads(run("context", "apply_discount", str(sample_repo), "-f", "json", "-t", "800").stdout)
    assert js["token_count"] <= 800 and js["max_tokens"] == 800 and js["counts"].startswith("content")
    items = [i for f in js["files"] for i in f["items"]]
    found = next(i for i in items if i["name"] == "apply_discount")
    assert found["mode"] == "full" and "def apply_discount" in found["code"]
    md = run("context", "apply_discount", str(sample_repo), "--format", "markdown", "--verbose")
    assert "```python" in md.stdout
    assert "signals used" in md.stderr and "tokens" in md.stderr


def test_context_options(sample_repo):
    out = run("context", "test login", str(sample_repo), "--exclude-tests", "--no-imports", "--depth", "0")
    assert "tests/test_auth.py" not in out.stdout
    assert "\n@ " not in out.stdout


def test_search_json(sample_repo):
    data = json.loads(run("search", "discount", str(sample_repo), "--json", "--mode", "keyword").stdout)
    assert data["count"] >= 1 and data["results"][0]["path"] == "shop/pricing.py"


@pytest.mark.parametrize(
    "args, message",
    [
        (("context", "q", "/no/such/folder"), "no such folder"),
        (("context", "q", ".", "--max-tokens", "0"), "max_tokens"),
        (("context", "q", ".", "--format", "xml"), "unknown format"),
        (("search", "q", ".", "--mode", "fuzzy"), "unknown search mode"),
    ],
)
def test_errors_are_clear_and_exit_nonzero(sample_repo, args, message):
    proc = run(*args, cwd=sample_repo, check=False)
    assert proc.returncode != 0
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr


def test_empty_folder(tmp_path):
    proc = run("context", "anything", str(tmp_path), check=False)
    assert proc.returncode == 1 and "nothing to index" in proc.stderr


def test_corrupt_index_is_reported_and_rebuildable(sample_repo):
    run("index", str(sample_repo))
    db = sample_repo / ".smartcontext" / "index.db"
    for suffix in ("-wal", "-shm"):
        p = db.with_name(db.name + suffix)
        if p.exists():
            p.unlink()
    db.write_bytes(b"garbage" * 1000)
    proc = run("context", "login", str(sample_repo), check=False)
    assert proc.returncode == 1 and "--rebuild" in proc.stderr
    run("index", str(sample_repo), "--rebuild")
    assert "AuthService" in run("context", "AuthService", str(sample_repo)).stdout


def _vault(tmp_path):
    v = tmp_path / "vault"
    v.mkdir()
    (v / "note.md").write_text("---\ntags: [x]\n---\n# Hello\n\nSee [[Other]].\n")
    (v / "Other.md").write_text("# Other\nbody\n")
    return v


def test_tool_command_prints_the_tools_json(tmp_path):
    v = _vault(tmp_path)
    data = json.loads(run("tool", "read_file", "--vault", str(v), "--path", "note.md").stdout)
    assert data["success"] and "See [[Other]]" in data["content"]
    back = json.loads(run("tool", "find_backlinks", "-C", str(v), "--note_name", "Other").stdout)
    assert back["results"] == ["note.md"]
    upd = run("tool", "update_frontmatter", "-C", str(v), "--path", "note.md",
              "--updates", '{"status": "done"}')
    assert json.loads(upd.stdout)["success"]
    assert "status: done" in (v / "note.md").read_text()
    listing = run("tool", "-C", str(v)).stdout
    assert "read_file" in listing and "index_documents" not in listing


def test_tool_command_refuses_paths_outside_and_exits_nonzero(tmp_path):
    v = _vault(tmp_path)
    proc = run("tool", "read_file", "-C", str(v), "--path", "../../etc/passwd", check=False)
    assert proc.returncode == 1
    assert json.loads(proc.stdout)["success"] is False
    proc = run("tool", "no_such_tool", "-C", str(v), check=False)
    assert proc.returncode == 1 and json.loads(proc.stdout)["success"] is False


def test_sc_commands_on_a_generated_smart_env(tmp_path):
    from test_smart_connections import standard_vault

    standard_vault(tmp_path / "v")
    v = tmp_path / "v"
    status = json.loads(run("sc", "status", str(v), "--json").stdout)
    assert status["configured"] and status["notes"] > 0
    note = next(p.relative_to(v).as_posix() for p in sorted(v.rglob("*.md")) if ".smart-env" not in p.parts)
    sim = json.loads(run("sc", "similar", note, str(v), "--json", "--min-score", "0").stdout)
    assert sim["results"] and all(r["path"] != note for r in sim["results"])
    found = json.loads(run("sc", "search", "notes", str(v), "--json", "--min-score", "0").stdout)
    assert found["mode"] in ("model", "keyword-rerank")


def test_sc_not_configured_is_a_clear_error(tmp_path):
    proc = run("sc", "search", "anything", str(tmp_path), check=False)
    assert proc.returncode == 1
    assert "Smart Connections plugin not configured" in proc.stderr


def _configure(repo, **context):
    lines = ["[context]"] + [f"{k} = {json.dumps(v)}" for k, v in context.items()]
    (repo / "smartcontext.toml").write_text("\n".join(lines) + "\n")


def test_context_options_default_to_the_configuration(sample_repo):
    _configure(sample_repo, max_tokens=700, exclude_tests=True, expand_depth=0, encoding="o200k_base")
    js = json.loads(run("context", "test login password", str(sample_repo), "-f", "json", "-v").stdout)
    assert js["max_tokens"] == 700 and js["encoding"] == "o200k_base" and js["token_count"] <= 700
    assert js["files"] and not any(f["path"].startswith("tests/") for f in js["files"])
    verbose = run("context", "test login password", str(sample_repo), "-v")
    assert "/ 700" in verbose.stderr
    assert "candidates: graph" in verbose.stderr and "signals used" in verbose.stderr
    assert "graph" not in verbose.stderr.split("signals used", 1)[1].splitlines()[0]  # depth 0


def test_a_flag_overrides_the_configuration(sample_repo):
    _configure(sample_repo, max_tokens=700, exclude_tests=True, expand_depth=0, encoding="o200k_base")
    js = json.loads(run("context", "test login password", str(sample_repo), "-f", "json",
                        "-t", "2500", "--include-tests", "--encoding", "cl100k_base").stdout)
    assert js["max_tokens"] == 2500 and js["encoding"] == "cl100k_base"
    assert any(f["path"] == "tests/test_auth.py" for f in js["files"])
    deep = run("context", "Where is the cart total computed?", str(sample_repo), "--depth", "2", "-v")
    assert "graph" in deep.stderr.split("signals used", 1)[1].splitlines()[0]


def test_help_says_which_defaults_come_from_the_configuration(monkeypatch):
    from typer.testing import CliRunner

    from smartcontext.cli import app

    monkeypatch.setenv("COLUMNS", "250")  # rich wraps help text at the terminal's width
    text = " ".join(CliRunner().invoke(app, ["context", "--help"]).output.split())
    assert "from config, 8000" in text and "from config, 1" in text and "from config, false" in text
    assert "--include-tests" in text


def test_error_messages_are_printed_verbatim(sample_repo):
    proc = run("context", "q", str(sample_repo), "--format", "[bold]xml", check=False)
    assert proc.returncode == 1
    assert "unknown format '[bold]xml'" in proc.stderr


def test_sc_status_of_a_missing_folder_is_an_error_not_a_traceback(tmp_path):
    proc = run("sc", "status", str(tmp_path / "no-such-vault"), check=False)
    assert proc.returncode == 1
    assert "does not exist" in proc.stderr and "Traceback" not in proc.stderr


def test_context_json_prints_the_result_to_dict(sample_repo):
    data = json.loads(run("context", "apply_discount", str(sample_repo), "-t", "800", "--json").stdout)
    assert data["question"] == "apply_discount" and data["format"] == "mu"
    assert data["text"] and 0 < data["token_count"] <= 800 == data["max_tokens"]
    assert data["item_count"] == len(data["items"]) > 0
    assert any(it["text"] for it in data["items"])  # the items carry their text
    assert {"files", "more_files", "warnings", "nearest", "relevance_scores", "entities", "stats"} <= set(data)
