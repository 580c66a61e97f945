import os
import stat

import pytest

from smartcontext.errors import InvalidArgument, PathOutsideWorkspace
from smartcontext.vault.paths import (
    atomic_write,
    move_no_clobber,
    rel_path,
    resolve_in_vault,
    walk_vault,
)


@pytest.fixture
def vault(tmp_path):
    root = tmp_path / "vault"
    (root / "notes").mkdir(parents=True)
    (root / "notes" / "a.md").write_text("a")
    (root / ".obsidian").mkdir()
    (root / ".obsidian" / "app.json").write_text("{}")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("secret")
    return root


def test_resolves_relative_paths_inside(vault):
    assert resolve_in_vault(vault, "notes/a.md") == (vault / "notes" / "a.md").resolve()
    assert resolve_in_vault(vault, "notes/../notes/a.md", must_exist=True).name == "a.md"
    assert resolve_in_vault(vault, "notes\\a.md") == (vault / "notes" / "a.md").resolve()
    assert resolve_in_vault(vault, "new/folder/b.md") == (vault / "new/folder/b.md").resolve()
    assert resolve_in_vault(vault, str(vault / "notes" / "a.md")).name == "a.md"  # absolute but inside
    assert rel_path(vault, resolve_in_vault(vault, "notes/a.md")) == "notes/a.md"


@pytest.mark.parametrize("bad", ["../x", "../outside/secret.md", "notes/../../outside/secret.md", "/etc/passwd", "/"])
def test_refuses_paths_outside(vault, bad):
    with pytest.raises(PathOutsideWorkspace):
        resolve_in_vault(vault, bad)


@pytest.mark.parametrize("hidden", [".obsidian/app.json", ".git/config", ".smartcontext/index.db", "notes/.env", ".x.md"])
def test_refuses_hidden_files_and_folders(vault, hidden):
    with pytest.raises(PathOutsideWorkspace, match="hidden"):
        resolve_in_vault(vault, hidden)


def test_symlinks_pointing_outside_are_refused(vault, tmp_path):
    (vault / "link.md").symlink_to(tmp_path / "outside" / "secret.md")
    (vault / "linkdir").symlink_to(tmp_path / "outside", target_is_directory=True)
    (vault / "to_hidden").symlink_to(vault / ".obsidian", target_is_directory=True)
    with pytest.raises(PathOutsideWorkspace):
        resolve_in_vault(vault, "link.md")
    with pytest.raises(PathOutsideWorkspace):
        resolve_in_vault(vault, "linkdir/new.md")  # a destination that does not exist yet
    with pytest.raises(PathOutsideWorkspace, match="hidden"):
        resolve_in_vault(vault, "to_hidden/app.json")


def test_symlinked_vault_root_works(vault, tmp_path):
    alias = tmp_path / "alias"
    alias.symlink_to(vault, target_is_directory=True)
    assert resolve_in_vault(alias, "notes/a.md", must_exist=True) == (vault / "notes/a.md").resolve()


def test_bad_arguments(vault):
    with pytest.raises(InvalidArgument):
        resolve_in_vault(vault, "")
    with pytest.raises(InvalidArgument):
        resolve_in_vault(vault, "a\x00b")
    with pytest.raises(InvalidArgument):
        resolve_in_vault(vault, 5)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument):
        resolve_in_vault(vault, ".")
    assert resolve_in_vault(vault, "", allow_root=True) == vault.resolve()
    with pytest.raises(FileNotFoundError, match="File not found: nope.md"):
        resolve_in_vault(vault, "nope.md", must_exist=True)


def test_walk_vault_skips_hidden_and_outside_links(vault, tmp_path):
    (vault / "in.md").symlink_to(vault / "notes" / "a.md")
    (vault / "out.md").symlink_to(tmp_path / "outside" / "secret.md")
    (vault / "to_hidden.md").symlink_to(vault / ".obsidian" / "app.json")
    (vault / "dirlink").symlink_to(vault / "notes", target_is_directory=True)
    (vault / "notes" / ".hidden.md").write_text("h")
    (vault / "notes" / "sub").mkdir()
    (vault / "notes" / "sub" / "b.md").write_text("bb")
    files = walk_vault(vault)
    assert [f.rel for f in files] == ["in.md", "notes/a.md", "notes/sub/b.md"]
    b = files[-1]
    assert b.size == 2 and b.mtime_ns == (vault / "notes/sub/b.md").stat().st_mtime_ns
    assert [f.rel for f in walk_vault(vault, vault / "notes", recursive=False)] == ["notes/a.md"]


def test_atomic_write_creates_and_never_overwrites_unless_asked(vault):
    target = vault / "deep" / "new.md"
    atomic_write(target, b"one", overwrite=False)
    assert target.read_bytes() == b"one"
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    with pytest.raises(FileExistsError):
        atomic_write(target, b"two", overwrite=False)
    assert target.read_bytes() == b"one"
    os.chmod(target, 0o600)
    atomic_write(target, b"three", overwrite=True)
    assert target.read_bytes() == b"three"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600  # the file keeps its permissions
    assert sorted(p.name for p in target.parent.iterdir()) == ["new.md"]  # no temp file left


def test_failed_write_leaves_original_and_no_temp(vault, monkeypatch):
    target = vault / "notes" / "a.md"

    def broken_replace(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError):
        atomic_write(target, b"new content", overwrite=True)
    assert target.read_text() == "a"
    assert sorted(p.name for p in target.parent.iterdir()) == ["a.md"]


def test_move_no_clobber(vault):
    src = vault / "notes" / "a.md"
    dst = vault / "archive" / "2024" / "a.md"
    move_no_clobber(src, dst)
    assert dst.read_text() == "a" and not src.exists()
    other = vault / "b.md"
    other.write_text("b")
    with pytest.raises(FileExistsError):
        move_no_clobber(other, dst)
    assert dst.read_text() == "a" and other.read_text() == "b"


def test_move_without_hard_links_still_refuses_to_clobber(vault, monkeypatch):
    def no_links(src, dst):
        raise OSError(1, "Operation not permitted")

    monkeypatch.setattr(os, "link", no_links)
    src = vault / "notes" / "a.md"
    other = vault / "b.md"
    other.write_text("b")
    with pytest.raises(FileExistsError):
        move_no_clobber(src, other)
    move_no_clobber(src, vault / "c.md")
    assert (vault / "c.md").read_text() == "a" and not src.exists()
    atomic_write(vault / "d.md", b"d", overwrite=False)
    with pytest.raises(FileExistsError):
        atomic_write(vault / "d.md", b"x", overwrite=False)
    assert (vault / "d.md").read_text() == "d"
