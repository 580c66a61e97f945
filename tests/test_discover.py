import os

from smartcontext.sources.discover import DiscoveryOptions, discover


def _write(root, rel, text="x = 1\n"):
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    return p


def paths(d):
    return sorted(f.path for f in d.files)


def test_finds_code_markdown_and_text(tmp_path):
    _write(tmp_path, "pkg/a.py")
    _write(tmp_path, "README.md", "# hi\n")
    _write(tmp_path, "docs/guide.rst", "Guide\n=====\n")
    _write(tmp_path, "image.png", "binary-ish")
    d = discover(tmp_path)
    assert paths(d) == ["README.md", "docs/guide.rst", "pkg/a.py"]
    kinds = {f.path: f.source for f in d.files}
    assert kinds == {"README.md": "markdown", "docs/guide.rst": "text", "pkg/a.py": "code"}


def test_gitignore_root_and_nested(tmp_path):
    _write(tmp_path, ".gitignore", "build/\n*.gen.py\n")
    _write(tmp_path, "build/x.py")
    _write(tmp_path, "a.gen.py")
    _write(tmp_path, "sub/.gitignore", "local.py\n")
    _write(tmp_path, "sub/local.py")
    _write(tmp_path, "sub/kept.py")
    _write(tmp_path, "local.py")  # the nested rule applies only below sub/
    d = discover(tmp_path)
    assert paths(d) == ["local.py", "sub/kept.py"]
    assert d.skipped["ignored"] == 3


def test_vendored_generated_large_and_pruned(tmp_path):
    _write(tmp_path, "vendor/lib.py")
    _write(tmp_path, "node_modules/m/index.js")
    _write(tmp_path, ".git/hooks/x.py")
    _write(tmp_path, "app.min.js", "var a")
    _write(tmp_path, "api_pb2.py")
    _write(tmp_path, "big.py", "x" * 2000)
    _write(tmp_path, "ok.py")
    d = discover(tmp_path, DiscoveryOptions(max_file_bytes=1000))
    assert paths(d) == ["ok.py"]
    assert d.skipped["vendored"] == 1
    assert d.skipped["generated"] == 2
    assert d.skipped["too large"] == 1


def test_include_and_exclude_globs(tmp_path):
    _write(tmp_path, "src/a.py")
    _write(tmp_path, "src/legacy/b.py")
    _write(tmp_path, "scripts/c.py")
    d = discover(tmp_path, DiscoveryOptions(include=["src/**"], exclude=["src/legacy/"]))
    assert paths(d) == ["src/a.py"]


def test_symlink_leaving_the_root_is_skipped(tmp_path):
    outside = tmp_path / "outside"
    _write(outside, "secret.py")
    root = tmp_path / "root"
    _write(root, "a.py")
    os.symlink(outside / "secret.py", root / "link.py")
    os.symlink(outside, root / "linkdir")
    d = discover(root)
    assert paths(d) == ["a.py"]
    assert d.skipped["symlink"] == 2


def test_text_files_setting_turns_off_the_optional_sources(tmp_path):
    (tmp_path / "guide.rst").write_text("Guide\n=====\n")
    (tmp_path / "notes.md").write_text("# Notes\n")
    (tmp_path / "app.py").write_text("x = 1\n")
    on = sorted(f.path for f in discover(tmp_path).files)
    off = sorted(f.path for f in discover(tmp_path, DiscoveryOptions(index_text_files=False)).files)
    assert on == ["app.py", "guide.rst", "notes.md"] and off == ["app.py", "notes.md"]


def test_a_line_git_cannot_read_is_skipped_as_git_skips_it(tmp_path):
    """A bare ``!`` (black keeps one in a test fixture's .gitignore) once stopped the whole
    repository from being indexed; git ignores the line and applies the others."""
    _write(tmp_path, "pkg/a.py")
    _write(tmp_path, "tests/data/.gitignore", "!\n\\\n*.gen.py\n")
    _write(tmp_path, "tests/data/b.gen.py")
    _write(tmp_path, "tests/data/c.py")
    d = discover(tmp_path)
    assert paths(d) == ["pkg/a.py", "tests/data/c.py"]
    assert d.skipped["ignored"] == 1


def test_ignore_matcher_answers_as_pathspec_does():
    """The one-expression matcher agrees with pathspec on random patterns and paths,
    negations included (where it defers to pathspec)."""
    import random

    import pathspec

    from smartcontext.sources.discover import IgnoreMatcher

    rng = random.Random(4)
    atoms = ["*.pyc", "build/", "/dist", "doc/**/x", "**/tmp", "a?c", "[ab]*.md", "logs/*.log",
             "*~", "node_modules", "/top.txt", "sub/", "\\#weird", "x/**", "# comment", "", "!keep.pyc",
             "!build/keep/", "*.egg-info/"]
    names = ["a", "b", "abc", "build", "dist", "doc", "x", "tmp", "logs", "keep.pyc", "m.pyc", "r.md",
             "top.txt", "sub", "file~", "#weird", "p.egg-info", "z.log"]
    for _ in range(300):
        lines = rng.sample(atoms, rng.randint(0, 8))
        ours, theirs = IgnoreMatcher(lines), pathspec.PathSpec.from_lines("gitignore", lines)
        for _ in range(40):
            path = "/".join(rng.choice(names) for _ in range(rng.randint(1, 4)))
            if rng.random() < 0.3:
                path += "/"
            assert ours.match_file(path) == theirs.match_file(path), (lines, path)
