"""The package type-checks: mypy at the level set in pyproject.toml ([tool.mypy]), run
here so `python -m pytest` (and .ci/run) fails on a type error."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "smartcontext"


def mypy(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mypy", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=1200)


# A cold run checks ~150 modules: about a minute of CPU, several on a loaded machine.
@pytest.mark.timeout(1500)
def test_mypy_finds_no_errors_in_the_package():
    proc = mypy()  # files and level from pyproject.toml
    assert proc.returncode == 0, f"`python -m mypy` found errors:\n{proc.stdout}{proc.stderr}"
    assert "Success" in proc.stdout


@pytest.mark.timeout(600)
def test_the_configured_level_checks_bodies_of_unannotated_functions(tmp_path):
    # check_untyped_defs is what separates the chosen level from mypy's default, which
    # skips this body; an unused ignore is refused too (warn_unused_ignores).
    bad = tmp_path / "bad.py"
    bad.write_text("def f():\n    return 1 + 'a'\n\n\nx: int = 1  # type: ignore[assignment]\n")
    proc = mypy("--config-file", str(ROOT / "pyproject.toml"), "--cache-dir", str(tmp_path / "cache"),
                str(bad), cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "bad.py:2: error: Unsupported operand types" in proc.stdout
    assert 'bad.py:5: error: Unused "type: ignore" comment' in proc.stdout


def test_the_package_is_marked_typed():
    # PEP 561: without py.typed, projects importing smartcontext ignore its annotations.
    assert (PACKAGE / "py.typed").is_file()
    assert '"py.typed"' in (ROOT / "pyproject.toml").read_text()  # shipped as package data
