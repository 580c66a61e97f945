"""The CLI behaves like git and rg (issue 12), end to end: `python -m smartcontext ...` in a
subprocess, on real folders, git repositories and vaults built in tmp_path."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ENV = {**os.environ, "SMARTCONTEXT_EMBEDDING_MODEL": "none"}
HAS_GIT = shutil.which("git") is not None
needs_git = pytest.mark.skipif(not HAS_GIT, reason="git is not installed")


def run(*args, cwd=None, check=True, env=None, input=None):
    proc = subprocess.run(
        [sys.executable, "-m", "smartcontext", *args], capture_output=True, text=True,
        cwd=cwd, env=env or ENV, timeout=180, input=input,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"exit {proc.returncode}\nstdout: {proc.stdout}\nstderr: {proc.stderr}")
    return proc


def git(*args, cwd):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, env=ENV)


# -- finding the workspace and staying fresh -----------------------------------------------


@pytest.mark.parametrize("marker", [".git", ".obsidian", ".smartcontext"])
def test_a_subfolder_finds_the_enclosing_workspace(sample_repo, marker):
    (sample_repo / marker).mkdir(exist_ok=True)
    st = json.loads(run("status", "--json", cwd=sample_repo / "shop").stdout)
    assert st["root"] == str(sample_repo)
    out = run("context", "How does AuthService handle login?", "-t", "1500", cwd=sample_repo / "shop")
    assert "! shop/auth.py" in out.stdout  # paths relative to the root, not to shop/
    assert not (sample_repo / "shop" / ".smartcontext").exists()


def test_an_explicit_path_wins_over_the_enclosing_workspace(sample_repo):
    (sample_repo / ".git").mkdir()
    st = json.loads(run("status", "shop", "--json", cwd=sample_repo).stdout)
    assert st["root"] == str(sample_repo / "shop")


def test_without_a_marker_the_current_folder_is_the_workspace(sample_repo):
    env = {**ENV, "GIT_CEILING_DIRECTORIES": str(sample_repo.parent)}
    st = json.loads(run("status", "--json", cwd=sample_repo / "shop", env=env).stdout)
    assert st["root"] == str(sample_repo / "shop")


@needs_git
def test_the_index_folder_ignores_itself(sample_repo):
    git("init", "-q", cwd=sample_repo)
    run("index", cwd=sample_repo)
    assert (sample_repo / ".smartcontext" / ".gitignore").read_text().splitlines()[-1] == "*"
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=sample_repo,
                            capture_output=True, text=True, check=True).stdout
    assert "shop/auth.py" in status and ".smartcontext" not in status


@needs_git
def test_git_info_exclude_and_core_excludes_file_are_read(sample_repo, tmp_path):
    git("init", "-q", cwd=sample_repo)
    (sample_repo / ".git" / "info").mkdir(exist_ok=True)
    (sample_repo / ".git" / "info" / "exclude").write_text("shop/db.py\n")
    global_ignore = tmp_path / "global-ignore"
    global_ignore.write_text("shop/pricing.py\n")
    gitconfig = tmp_path / "gitconfig"
    gitconfig.write_text(f"[core]\n\texcludesFile = {global_ignore}\n")
    env = {**ENV, "GIT_CONFIG_GLOBAL": str(gitconfig)}
    stats = json.loads(run("index", "--json", cwd=sample_repo, env=env).stdout)
    assert stats["skipped"].get("ignored") == 2
    found = json.loads(run("search", "Database", "--json", "--mode", "keyword", cwd=sample_repo,
                           env=env, check=False).stdout)
    assert all(r["path"] != "shop/db.py" for r in found["results"])


def test_context_and_search_see_a_function_added_after_indexing(sample_repo):
    run("index", str(sample_repo))
    with (sample_repo / "shop" / "pricing.py").open("a") as fh:
        fh.write("\n\ndef zebra_unicorn_helper(herd):\n    return len(herd)\n")
    out = run("context", "zebra_unicorn_helper", str(sample_repo), "-t", "1000")
    assert "zebra_unicorn_helper(herd)" in out.stdout
    found = json.loads(run("search", "zebra_unicorn_helper", str(sample_repo), "--json").stdout)
    assert found["results"][0]["name"] == "zebra_unicorn_helper"
    (sample_repo / "shop" / "pricing.py").unlink()  # deletions are seen too
    gone = run("search", "zebra_unicorn_helper", str(sample_repo), "--mode", "keyword", check=False)
    assert gone.returncode == 1


# -- output ----------------------------------------------------------------------------------


def test_version_and_shell_completion():
    from smartcontext import __version__

    assert run("--version").stdout.strip() == f"smartcontext {__version__}"
    # --show-completion asks shellingham which shell runs us, which depends on the parent
    # process (CI may have none it knows); naming the shell gives the same script anywhere.
    script = run(env={**ENV, "_SMARTCONTEXT_COMPLETE": "source_bash"}).stdout
    assert "_smartcontext_completion()" in script and "complete_bash" in script


def test_context_reads_the_question_from_stdin(sample_repo):
    out = run("context", "-", str(sample_repo), "-t", "1000", input="How is apply_discount computed?\n")
    assert "apply_discount(amount)" in out.stdout


def test_piped_output_is_not_wrapped(sample_repo):
    deep = sample_repo / "a_rather_long_folder_name_for_testing" / "another_long_subfolder_name_here"
    deep.mkdir(parents=True)
    (deep / "module_with_a_long_file_name.py").write_text("def wrapped_line_probe():\n    return 1\n")
    out = run("search", "wrapped_line_probe", str(sample_repo), "--mode", "keyword").stdout
    first = out.splitlines()[0]
    assert len(first) > 80 and first.split()[1].endswith("module_with_a_long_file_name.py:1")


def test_status_prints_readable_text_and_json(sample_repo):
    run("index", str(sample_repo))
    text = run("status", str(sample_repo)).stdout
    assert "Files 9, items" in text and "Kinds: " in text
    assert "{" not in text and "'" not in text  # not a Python dict
    assert json.loads(run("status", str(sample_repo), "--json").stdout)["files"] == 9


def test_a_search_that_finds_nothing_exits_1(sample_repo):
    proc = run("search", "qqzzxx", str(sample_repo), "--mode", "keyword", check=False)
    assert proc.returncode == 1 and proc.stdout == "" and "No results" in proc.stderr
    as_json = run("search", "qqzzxx", str(sample_repo), "--mode", "keyword", "--json", check=False)
    assert as_json.returncode == 1 and json.loads(as_json.stdout)["count"] == 0
    assert run("search", "discount", str(sample_repo), "--mode", "keyword").returncode == 0


def test_unknown_kind_and_missing_folder_say_so(sample_repo):
    kind = run("search", "login", str(sample_repo), "--kind", "fucntion", check=False)
    assert kind.returncode == 1 and "unknown kind 'fucntion'; did you mean 'function'?" in kind.stderr
    assert "Traceback" not in kind.stderr
    folder = run("search", "login", str(sample_repo), "--path", "shpo", check=False)
    assert folder.returncode == 1 and "no folder or file 'shpo'" in folder.stderr
    assert "did you mean 'shop'?" in folder.stderr
    fine = json.loads(run("search", "login", str(sample_repo), "--path", "shop", "--kind", "method", "--json").stdout)
    assert fine["results"] and all(r["kind"] == "method" for r in fine["results"])


def test_sc_similar_accepts_a_bare_note_name(tmp_path):
    from test_smart_connections import VaultBuilder, unit

    vault = tmp_path / "vault"
    b = VaultBuilder(vault)
    base = unit(np.arange(1, 17, dtype=float))
    b.standard_note("Concepts/Attention.md", "# Attention\nQueries meet keys.\n", base)
    b.standard_note("Concepts/Transformers.md", "# Transformers\nStacks of attention.\n", unit(np.asarray(base) + 0.1))
    data = json.loads(run("sc", "similar", "Attention", str(vault), "--json").stdout)
    assert data["path"] == "Concepts/Attention.md"
    assert [r["path"] for r in data["results"]][:1] == ["Concepts/Transformers.md"]
    missing = run("sc", "similar", "Atention", str(vault), check=False)
    assert missing.returncode == 1 and "no vector for 'Atention'" in missing.stderr


def test_similar_resolves_a_bare_note_name(tmp_path):
    from smartcontext import Workspace
    from smartcontext.errors import InvalidArgument

    (tmp_path / "Concepts").mkdir()
    (tmp_path / "Concepts" / "Attention.md").write_text("# Attention\nQueries meet keys.\n")
    (tmp_path / "Other.md").write_text("# Other\nText.\n")
    with Workspace.open(tmp_path) as ws:
        ws.index(embeddings=False)
        assert ws.note_path("Attention") == "Concepts/Attention.md"
        assert ws.note_path("Concepts/Attention.md") == "Concepts/Attention.md"
        with pytest.raises(InvalidArgument, match="did you mean 'Other.md'"):
            ws.note_path("Othr.md")


def test_tool_help_lists_the_tools_arguments(sample_repo):
    out = run("tool", "search", "--help", "-C", str(sample_repo)).stdout
    assert out.startswith("Usage: smartcontext tool search --query TEXT")
    assert "--mode" in out and "one of hybrid, keyword, semantic" in out and "(required" in out
    assert "--json" not in out  # the tool's arguments, not the command's options
    plain = run("tool", "--help").stdout
    assert "--vault" in plain and "--json" in plain
    typo = run("tool", "serch", "--help", "-C", str(sample_repo), check=False)
    assert typo.returncode == 1 and "did you mean 'search'" in typo.stderr


@pytest.mark.parametrize(
    ("config", "file", "expected"),
    [
        ("[index]\nexlude = ['docs']\n", "smartcontext.toml",
         "smartcontext.toml: unknown key 'exlude' in [index]; did you mean 'exclude'?"),
        ("[context]\nmax_tokens = 'many'\n", "smartcontext.toml",
         "smartcontext.toml: [context] max_tokens must be an integer"),
        ("[contxt]\nmax_tokens = 10\n", "smartcontext.toml",
         "smartcontext.toml: unknown section [contxt]; did you mean 'context'?"),
        ("[plugins.smart_context.index]\nexlude = ['x']\n", ".vault.toml",
         ".vault.toml: unknown key 'exlude' in [plugins.smart_context.index]; did you mean 'exclude'?"),
    ],
)
def test_config_errors_name_the_file_section_and_nearest_key(sample_repo, config, file, expected):
    (sample_repo / file).write_text(config)
    proc = run("status", str(sample_repo), check=False)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert expected in " ".join(proc.stderr.split()), proc.stderr


def _fake_tool(bin_dir: Path, name: str, body: str) -> None:
    path = bin_dir / name
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)


def test_copy_tries_the_next_clipboard_tool_and_never_lies(sample_repo, tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _fake_tool(bin_dir, "xclip", "echo 'Error: no display' >&2; exit 1")
    env = {**ENV, "PATH": str(bin_dir)}
    failed = run("context", "apply_discount", str(sample_repo), "-t", "800", "--copy", env=env)
    assert "Copied" not in failed.stderr
    assert "could not copy to the clipboard (xclip exited 1: Error: no display)" in " ".join(failed.stderr.split())
    clip = tmp_path / "clipboard.txt"
    _fake_tool(bin_dir, "xsel", f"{shutil.which('cat')} > '{clip}'")
    copied = run("context", "apply_discount", str(sample_repo), "-t", "800", "--copy", env=env)
    assert "Copied to the clipboard (xsel)." in copied.stderr
    assert clip.read_text().strip() == copied.stdout.strip() and "apply_discount" in clip.read_text()


def test_a_busy_http_port_is_one_clear_error(sample_repo):
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    port = taken.getsockname()[1]
    try:
        proc = run("serve", "mcp", str(sample_repo), "--transport", "http", "--port", str(port), check=False)
    finally:
        taken.close()
    assert proc.returncode == 1
    assert proc.stderr.startswith(f"Error: cannot listen on 127.0.0.1:{port}")
    assert "http://" not in proc.stderr and "Traceback" not in proc.stderr
    assert not (sample_repo / ".smartcontext" / "index.db").exists()  # nothing started
