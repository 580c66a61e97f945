"""Reliability under faults, hostile input and concurrency (issue 13).

Everything that could hang runs in a child process with a hard time limit, so a
regression fails the test instead of hanging CI. Longer fault injection (many random
SIGKILLs) lives in ``bench/robustness.py``.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from proc_support import alive, children_of

SRC = str(Path(__file__).resolve().parents[1] / "src")


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = SRC + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("COLUMNS", None)
    return env


def run_python(code: str, timeout: float, *args: str) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter; a hang past ``timeout`` fails the test."""
    try:
        return subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args], capture_output=True,
                              text=True, timeout=timeout, env=child_env())
    except subprocess.TimeoutExpired:
        pytest.fail(f"did not finish within {timeout} s")


def run_cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    try:
        return subprocess.run([sys.executable, "-c", "from smartcontext.cli import main; main()", *args],
                              capture_output=True, text=True, timeout=timeout, env=child_env())
    except subprocess.TimeoutExpired:
        pytest.fail(f"smartcontext {' '.join(args)} did not finish within {timeout} s")


BOMB = textwrap.dedent("""\
    ---
    a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
    b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
    c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
    d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
    e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
    f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
    g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
    h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
    i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
    ---
    # Bomb

    Body text.
    """)


# -- 1. YAML anchor bomb ----------------------------------------------------------------


def test_update_frontmatter_on_anchor_bomb_answers_quickly(tmp_path):
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "bomb.md").write_text(BOMB)
    (vault / "ok.md").write_text("---\ntitle: fine\n---\nhello\n")
    out = run_python("""
        import json, sys
        from smartcontext.tools import ToolRegistry
        reg = ToolRegistry.open(sys.argv[1], refresh_interval=-1)
        answers = [
            reg.call("update_frontmatter", {"path": "bomb.md", "updates": {"status": "done"}}),
            reg.call("update_frontmatter", {"path": "bomb.md", "append": {"tags": ["x"]}}),
            reg.call("update_frontmatter", {"path": "ok.md", "updates": {"status": "done"}}),
            reg.call("read_file", {"path": "bomb.md"}),
            reg.call("get_current_date", {}),
        ]
        print(json.dumps(answers))
    """, 30, str(vault))
    assert out.returncode == 0, out.stderr
    bomb_set, bomb_append, fine, read, date = json.loads(out.stdout)
    for answer in (bomb_set, bomb_append):
        assert answer["success"] is False
        assert "expands to more than" in answer["error"]
    assert fine["success"] is True
    assert read["success"] is True and "Body text." in read["content"]
    assert date["success"] is True
    assert (vault / "bomb.md").read_text() == BOMB  # refused, not rewritten


def test_frontmatter_readers_and_writers_refuse_bombs_and_deep_nesting():
    from smartcontext.notes.frontmatter import load_frontmatter_yaml, read_frontmatter
    from smartcontext.errors import InvalidArgument
    from smartcontext.vault.frontmatter import edit_frontmatter

    raw = BOMB.split("---\n")[1]
    data, error = load_frontmatter_yaml(raw)
    assert data is None and "expands" in error
    assert read_frontmatter(BOMB)[0] == {}
    with pytest.raises(InvalidArgument):
        edit_frontmatter(BOMB, {"x": 1})
    deep = "---\nk: " + "[" * 5000 + "]" * 5000 + "\n---\n"
    data, error = load_frontmatter_yaml(deep.split("---\n")[1])
    assert data is None and error


# -- 2. lost writes across processes ----------------------------------------------------

APPENDER = """
    import sys
    from smartcontext.vault import VaultTools
    tools = VaultTools(sys.argv[1])
    who, n = sys.argv[2], int(sys.argv[3])
    bad = 0
    for i in range(n):
        if not tools.append_to_file("log.md", f"{who}-{i}")["success"]:
            bad += 1
        if not tools.update_frontmatter("fm.md", append={"seen": [f"{who}-{i}"]})["success"]:
            bad += 1
        if not tools.save_preference(f"pref {who} {i}")["success"]:
            bad += 1
    print(bad)
"""


def test_concurrent_writers_in_two_processes_lose_nothing(tmp_path):
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "log.md").write_text("# Log\n")
    (vault / "fm.md").write_text("---\nseen: []\n---\nbody\n")
    n = 40
    procs = [subprocess.Popen([sys.executable, "-c", textwrap.dedent(APPENDER), str(vault), who, str(n)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=child_env())
             for who in ("a", "b", "c")]
    for p in procs:
        try:
            out, err = p.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            p.kill()
            pytest.fail("writers did not finish within 60 s")
        assert p.returncode == 0, err
        assert out.strip() == "0"
    lines = (vault / "log.md").read_text().splitlines()
    expected = {f"{w}-{i}" for w in "abc" for i in range(n)}
    assert set(lines[1:]) == expected and len(lines) == 1 + 3 * n
    from smartcontext.notes import read_frontmatter

    fm, _, _ = read_frontmatter((vault / "fm.md").read_text())
    assert set(fm["seen"]) == expected
    prefs = (vault / ".smartcontext" / "preferences.md").read_text()
    assert sum(line.startswith("- pref ") for line in prefs.splitlines()) == 3 * n


# -- 3. orphans --------------------------------------------------------------------------


def make_big_repo(root: Path, files: int = 120, functions: int = 300) -> None:
    """A repository that takes the parse workers a few seconds."""
    pkg = root / "pkg"
    pkg.mkdir(parents=True)
    body = "".join(f"def f{i}(x):\n    '''Doc {i}.'''\n    return x * {i} + helper{i % 7}(x)\n\n"
                   for i in range(functions))
    for n in range(files):
        (pkg / f"m{n}.py").write_text(f'"""Module {n}."""\n' + body)


def start_index(folder: Path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", "from smartcontext.cli import main; main()", "index",
                             str(folder), "--no-embeddings", *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=child_env(),
                            start_new_session=True)


def wait_for_workers(proc: subprocess.Popen, count: int = 2, timeout: float = 30) -> list[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        kids = children_of(proc.pid)
        if len(kids) >= count:
            return kids
        if proc.poll() is not None:
            break
        time.sleep(0.02)
    proc.kill()
    pytest.fail(f"index never started {count} workers (exit {proc.poll()})")


def wait_gone(pids: list[int], timeout: float = 5) -> list[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        left = [p for p in pids if alive(p)]
        if not left:
            return []
        time.sleep(0.05)
    return [p for p in pids if alive(p)]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="counts processes through /proc")
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_killing_index_leaves_no_worker_alive(tmp_path, sig):
    make_big_repo(tmp_path / "repo")
    proc = start_index(tmp_path / "repo")
    workers = wait_for_workers(proc)
    time.sleep(0.3)  # mid-parse
    os.kill(proc.pid, sig)
    try:
        _, err = proc.communicate(timeout=15)  # the stderr pipe closes: no worker holds it
    except subprocess.TimeoutExpired:
        for p in workers:
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
        proc.kill()
        pytest.fail("the index command's output pipes stayed open after it was killed")
    left = wait_gone(workers)
    for p in left:
        os.kill(p, signal.SIGKILL)
    assert not left, f"workers outlived index: {left}"
    if sig == signal.SIGTERM:
        assert proc.returncode != 0
        assert b"Traceback" not in err
    assert_index_intact(tmp_path / "repo")


def assert_index_intact(folder: Path, cli: bool = True) -> None:
    db = folder / ".smartcontext" / "index.db"
    if db.exists():
        con = sqlite3.connect(db)
        try:
            assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        finally:
            con.close()
    if cli:
        status = run_cli("status", str(folder), "--json")
        assert status.returncode == 0, status.stderr


def test_stdio_server_exits_when_its_client_closes_stdin(tmp_path):
    make_big_repo(tmp_path / "repo")
    proc = subprocess.Popen([sys.executable, "-c", "from smartcontext.cli import main; main()", "serve", "mcp",
                             str(tmp_path / "repo")], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=child_env(), start_new_session=True)
    workers = wait_for_workers(proc)  # the background build of the missing index is running
    proc.stdin.close()
    try:
        proc.wait(timeout=4)
    except subprocess.TimeoutExpired:
        for p in [proc.pid, *workers]:
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
        pytest.fail("the stdio server kept running after its client closed stdin")
    assert not wait_gone(workers)
    assert_index_intact(tmp_path / "repo")


# -- 4. FIFOs and other non-regular files ------------------------------------------------


def test_fifo_never_hangs_indexing_or_tools(tmp_path):
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "note.md").write_text("# Note\n\nThe harbour lighthouse keeper.\n")
    os.mkfifo(vault / "pipe.md")
    os.mkfifo(vault / "pipe.py")
    out = run_cli("index", str(vault), "--no-embeddings", "--json", timeout=30)
    assert out.returncode == 0, out.stderr
    stats = json.loads(out.stdout)
    assert stats["skipped"].get("not a regular file") == 2
    answers = run_python("""
        import json, sys
        from smartcontext.tools import ToolRegistry
        reg = ToolRegistry.open(sys.argv[1], refresh_interval=0)
        calls = [("search", {"query": "lighthouse"}), ("context", {"question": "lighthouse keeper"}),
                 ("read_file", {"path": "pipe.md"}), ("append_to_file", {"path": "pipe.md", "content": "x"}),
                 ("update_frontmatter", {"path": "pipe.md", "updates": {"a": 1}}),
                 ("search_vault", {"query": "lighthouse"}), ("list_files", {})]
        print(json.dumps({name: reg.call(name, args) for name, args in calls}))
    """, 30, str(vault))
    assert answers.returncode == 0, answers.stderr
    got = json.loads(answers.stdout)
    assert got["search"]["success"] and got["search"]["results"][0]["path"] == "note.md"
    assert got["context"]["success"] and "lighthouse" in got["context"]["text"]
    for name in ("read_file", "append_to_file", "update_frontmatter"):
        assert got[name]["success"] is False, name
    assert got["search_vault"]["success"]


def test_fifo_appearing_after_discovery_is_not_opened_blocking(tmp_path):
    from smartcontext.safeio import NotRegularFile, read_regular

    os.mkfifo(tmp_path / "late.md")
    out = run_python("""
        import sys
        from smartcontext.safeio import read_regular
        try:
            read_regular(sys.argv[1])
        except OSError as exc:
            print(type(exc).__name__)
    """, 10, str(tmp_path / "late.md"))
    assert out.stdout.strip() == "NotRegularFile"
    (tmp_path / "f.txt").write_bytes(b"abc" * 50_000)
    assert read_regular(tmp_path / "f.txt") == b"abc" * 50_000
    with pytest.raises(NotRegularFile):
        read_regular(tmp_path)


# -- 5. symlinks to hidden files ---------------------------------------------------------


def test_symlink_to_hidden_file_is_neither_indexed_nor_served(tmp_path):
    vault = tmp_path / "vault"
    (vault / ".obsidian").mkdir(parents=True)
    (vault / ".obsidian" / "hidden.json").write_text('{"apiKey": "zebracrossingsecret", "token": "quokkavault"}\n')
    (vault / "visible.md").write_text("# Visible\n\nOrdinary zebra notes.\n")
    (vault / "hidlink.md").symlink_to(".obsidian/hidden.json")
    (vault / "fine.md").symlink_to("visible.md")
    out = run_cli("index", str(vault), "--no-embeddings", "--json", timeout=30)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["skipped"].get("symlink") == 1
    answers = run_python("""
        import json, sys
        from smartcontext.tools import ToolRegistry
        reg = ToolRegistry.open(sys.argv[1], refresh_interval=0)
        calls = [("search", {"query": "zebracrossingsecret apiKey", "mode": "keyword"}),
                 ("context", {"question": "zebracrossingsecret apiKey"}),
                 ("search_vault", {"query": "zebracrossingsecret"}), ("read_file", {"path": "hidlink.md"})]
        print(json.dumps({name: reg.call(name, args) for name, args in calls}))
    """, 30, str(vault))
    assert answers.returncode == 0, answers.stderr
    assert "quokkavault" not in answers.stdout  # the hidden file's content, never asked for
    got = json.loads(answers.stdout)
    assert all(hit["path"] != "hidlink.md" for hit in got["search"]["results"])
    assert got["read_file"]["success"] is False
    # the update path after a tool's write follows the same rule
    from smartcontext.workspace import Workspace

    with Workspace.open(vault) as ws:
        ws.update_files(["hidlink.md"])
        assert not ws.search("zebracrossingsecret", mode="keyword")


# -- 6. first-index race -----------------------------------------------------------------


def _race_worker(folder: str, job: str, start, results) -> None:
    from smartcontext.workspace import Workspace

    start.wait(10)
    try:
        with Workspace.open(folder) as ws:
            if job == "index":
                ws.index(embeddings=False)
            elif job == "context":
                ws.ensure_index()
                ws.context("harbour", max_tokens=500)
            else:
                ws.ensure_index()
                ws.search("harbour", mode="keyword")
        results.put((job, None))
    except BaseException as exc:  # reported to the test
        import traceback

        results.put((job, f"{type(exc).__name__}: {exc} {traceback.format_exc()[-1500:]}"))


def make_notes(vault: Path, n: int = 5) -> None:
    vault.mkdir()
    for i in range(n):
        (vault / f"n{i}.md").write_text(f"# Note {i}\n\nAbout topic {i} and the shared harbour.\n")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forks workers")
def test_first_index_race_between_processes_never_fails(tmp_path):
    import multiprocessing

    from smartcontext.workspace import Workspace

    make_notes(tmp_path / "warm")
    with Workspace.open(tmp_path / "warm") as ws:  # imports and encoders loaded once, inherited
        ws.index(embeddings=False)
        ws.context("harbour", max_tokens=500)
    ctx = multiprocessing.get_context("fork")
    failures = []
    for round_ in range(6):
        vault = tmp_path / f"v{round_}"
        make_notes(vault)
        start, results = ctx.Event(), ctx.Queue()
        jobs = ["index", "index", "context", "search"]
        procs = [ctx.Process(target=_race_worker, args=(str(vault), job, start, results)) for job in jobs]
        for p in procs:
            p.start()
        start.set()
        for p in procs:
            p.join(30)
            if p.is_alive():
                p.kill()
                pytest.fail("a first index hung")
        outcomes = [results.get(timeout=5) for _ in jobs]
        failures += [f"round {round_} {job}: {error}" for job, error in outcomes if error]
        assert_index_intact(vault, cli=False)
    assert not failures, failures


def test_first_index_race_through_the_cli(tmp_path):
    vault = tmp_path / "v"
    make_notes(vault)
    commands = [["index", str(vault), "--no-embeddings"], ["index", str(vault), "--no-embeddings"],
                ["context", "harbour", str(vault)]]
    procs = [subprocess.Popen([sys.executable, "-c", "from smartcontext.cli import main; main()", *cmd],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=child_env())
             for cmd in commands]
    for cmd, p in zip(commands, procs):
        try:
            _, err = p.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            p.kill()
            pytest.fail(f"{cmd[0]} hung on a first index")
        assert p.returncode == 0, f"{cmd[0]}: {err}"
    assert_index_intact(vault)


# -- 7. damaged and unwritable indexes ---------------------------------------------------


def damage_pages(db: Path, pages: range) -> None:
    data = bytearray(db.read_bytes())
    for page in pages:
        off = (page - 1) * 4096
        if off < len(data):
            data[off : off + 4096] = b"\xde\xad" * 2048
    db.write_bytes(bytes(data))


@pytest.mark.parametrize("pages", [range(8, 9)])
def test_damaged_index_is_one_sentence_and_index_repairs_it(tmp_path, pages):
    vault = tmp_path / "v"
    vault.mkdir()
    for i in range(150):
        (vault / f"n{i}.md").write_text(f"# Note {i}\n\nharbour text {i} " + "lorem ipsum dolor " * 40 + "\n")
    assert run_cli("index", str(vault), "--no-embeddings").returncode == 0
    damage_pages(vault / ".smartcontext" / "index.db", pages)
    failed = 0
    for cmd in (["status", str(vault)], ["search", "harbour", str(vault)], ["context", "harbour", str(vault)]):
        out = run_cli(*cmd)
        assert "Traceback" not in out.stderr and "sqlite3" not in out.stderr, out.stderr
        if out.returncode:
            failed += 1
            assert out.returncode == 1
            assert out.stderr.count("\n") == 1 and "damaged" in out.stderr and "smartcontext index" in out.stderr
    assert failed, "the damage was not noticed"
    fixed = run_cli("index", str(vault), "--no-embeddings")
    assert fixed.returncode == 0, fixed.stderr
    assert "rebuilt" in fixed.stderr
    found = run_cli("search", "harbour", str(vault), "--json")
    assert found.returncode == 0 and json.loads(found.stdout)["count"] > 0
    assert_index_intact(vault)


def test_missing_folder_is_a_clear_error():
    for cmd in ("status", "index"):
        out = run_cli(cmd, "/nonexistent/smartcontext-folder")
        assert out.returncode == 1 and "Traceback" not in out.stderr
        assert "no such folder" in out.stderr


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
def test_read_only_folder_is_a_clear_message(tmp_path):
    import tempfile

    as_nobody = os.geteuid() == 0  # root ignores permissions: drop to an ordinary user
    base = Path(tempfile.mkdtemp(prefix="sc-ro-"))
    try:
        vault = base / "v"
        make_notes(vault)
        indexed = base / "w"
        make_notes(indexed)
        assert run_cli("index", str(indexed), "--no-embeddings").returncode == 0
        for p in [base, vault, indexed, indexed / ".smartcontext", *vault.iterdir(), *indexed.rglob("*")]:
            os.chmod(p, 0o755 if p.is_dir() else 0o644)
        if not as_nobody:
            os.chmod(vault, 0o555)
            os.chmod(indexed / ".smartcontext", 0o555)

        def run(*args):
            kwargs = {"user": 65534, "group": 65534, "extra_groups": []} if as_nobody else {}
            return subprocess.run([sys.executable, "-c", "from smartcontext.cli import main; main()", *args],
                                  capture_output=True, text=True, timeout=60, env=child_env(), **kwargs)

        for cmd in (["index", str(vault)], ["context", "harbour", str(vault)], ["search", "harbour", str(vault)],
                    ["index", str(indexed)], ["status", str(indexed)]):
            out = run(*cmd)
            assert "Traceback" not in out.stderr, (cmd, out.stderr)
            if out.returncode:
                assert out.returncode == 1
                assert "writable" in out.stderr, (cmd, out.stderr)
                assert "--rebuild" not in out.stderr, (cmd, out.stderr)
    finally:
        for p in base.rglob("*"):
            if p.is_dir():
                os.chmod(p, 0o755)
        import shutil

        shutil.rmtree(base, ignore_errors=True)


# -- 8. readers run in parallel, writers alone -------------------------------------------


def test_read_tools_do_not_wait_for_each_other(tmp_path, monkeypatch):
    import threading

    from smartcontext.tools import ToolRegistry
    from smartcontext.vault.files import FileTools
    from smartcontext.workspace import Workspace

    vault = tmp_path / "v"
    make_notes(vault)
    registry = ToolRegistry.open(vault, refresh_interval=-1)
    assert registry.call("search", {"query": "harbour"})["success"]  # builds the index
    slow_search, slow_read = Workspace.search_with_info, FileTools.read_file.checked

    def search_with_info(self, *a, **k):
        time.sleep(0.6)
        return slow_search(self, *a, **k)

    def read_file(self, arguments):
        time.sleep(0.6)
        return slow_read(self, arguments)

    monkeypatch.setattr(Workspace, "search_with_info", search_with_info)
    monkeypatch.setattr(FileTools.read_file, "checked", read_file)
    answers: list[dict] = []

    def call(name, args):
        answers.append(registry.call(name, args))

    calls = [("search", {"query": "harbour"})] * 3 + [("read_file", {"path": "n1.md"})] * 3
    threads = [threading.Thread(target=call, args=c) for c in calls]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    elapsed = time.perf_counter() - t0
    registry.close()
    assert len(answers) == 6 and all(a["success"] for a in answers), answers
    assert elapsed < 1.5, f"six 0.6 s reads took {elapsed:.1f} s: they waited for each other"


def test_read_write_lock_lets_readers_share_and_writers_run_alone():
    import threading

    from smartcontext.tools.rwlock import ReadWriteLock

    lock = ReadWriteLock()
    inside: list[str] = []
    overlap = []

    def reader():
        with lock.reader:
            inside.append("r")
            time.sleep(0.2)
            overlap.append(inside.count("r"))
            inside.remove("r")

    def writer():
        with lock.writer:
            inside.append("w")
            overlap.append(("w", len(inside)))
            time.sleep(0.1)
            inside.remove("w")

    threads = [threading.Thread(target=reader) for _ in range(4)] + [threading.Thread(target=writer) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert ("w", 1) in overlap and overlap.count(("w", 1)) == 2  # each writer was alone
    assert max(x for x in overlap if isinstance(x, int)) > 1  # readers overlapped
    with lock.writer:  # re-entrant, and the writer may read
        with lock.writer, lock.reader:
            pass
    assert lock.acquire_write(timeout=0.1)
    lock.release_write()


# -- 9. smaller points -------------------------------------------------------------------


def test_edit_with_same_size_and_mtime_is_seen(tmp_path):
    from smartcontext.workspace import Workspace

    vault = tmp_path / "v"
    make_notes(vault)
    note = vault / "n1.md"
    with Workspace.open(vault) as ws:
        ws.index(embeddings=False)
        st = note.stat()
        old = note.read_text()
        new = old.replace("harbour", "lantern")  # same length
        assert len(new) == len(old)
        note.write_text(new)
        os.utime(note, ns=(st.st_atime_ns, st.st_mtime_ns))
        assert note.stat().st_size == st.st_size and note.stat().st_mtime_ns == st.st_mtime_ns
        assert ws.pending_changes()
        stats = ws.index(embeddings=False)
        assert stats.files_indexed == 1
        assert [h.path for h in ws.search("lantern", mode="keyword")] == ["n1.md"]
        again = ws.index(embeddings=False)  # seen once: the next runs trust the stamps again
        assert again.files_indexed == 0


def test_find_outlinks_has_a_limit(tmp_path):
    from smartcontext.tools import ToolRegistry

    vault = tmp_path / "v"
    vault.mkdir()
    (vault / "hub.md").write_text("# Hub\n" + " ".join(f"[[target {i}]]" for i in range(5000)) + "\n")
    (vault / "target 1.md").write_text("# one\n")
    registry = ToolRegistry.open(vault, refresh_interval=-1)
    answer = registry.call("find_outlinks", {"path": "hub.md"})
    assert answer["success"] and len(answer["results"]) == 100 and answer["total"] == 5000
    assert len(answer["unresolved"]) == 100 and answer["unresolved_total"] == 4999
    answer = registry.call("find_outlinks", {"path": "hub.md", "limit": 3})
    assert len(answer["results"]) == 3 and len(json.dumps(answer)) < 2000
    registry.close()


def test_hostile_notes_are_indexed_and_served_in_bounded_time(tmp_path):
    vault = tmp_path / "v"
    vault.mkdir()
    (vault / "bomb.md").write_text(BOMB)
    (vault / "links.md").write_text("# Links\n" + " ".join(f"[[n{i}]]" for i in range(40_000)) + "\n")
    (vault / "deep.md").write_text("---\nk: " + "[" * 3000 + "]" * 3000 + "\n---\n" + "> " * 2000 + "quote\n"
                                   + "".join("  " * i + "- item\n" for i in range(500)))
    (vault / "bad.md").write_bytes(b"# Bad \xff\xfe bytes\n\ninvalid \xc3\x28 utf8 harbour\n")
    (vault / "line.txt").write_text("harbour " * 120_000)  # one 960 kB line
    (vault / "ok.md").write_text("# Ok\n\nharbour\n")
    out = run_python("""
        import json, sys
        from smartcontext.tools import ToolRegistry
        reg = ToolRegistry.open(sys.argv[1], refresh_interval=-1)
        calls = [("search", {"query": "harbour"}), ("context", {"question": "harbour", "max_tokens": 1000}),
                 ("find_outlinks", {"path": "links.md"}), ("read_file", {"path": "bad.md"}),
                 ("read_file", {"path": "deep.md"}), ("search_vault", {"query": "harbour"}),
                 ("update_frontmatter", {"path": "deep.md", "updates": {"a": 1}}),
                 ("append_to_file", {"path": "bad.md", "content": "more"})]
        print(json.dumps({name + str(i): reg.call(name, args) for i, (name, args) in enumerate(calls)}))
    """, 60, str(vault))
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert got["search0"]["success"] and got["search0"]["count"] > 0
    assert got["context1"]["success"] and got["context1"]["token_count"] <= 1000
    assert got["find_outlinks2"]["success"] and len(got["find_outlinks2"]["results"]) == 100
    assert got["read_file3"]["success"] and "\ufffd" in got["read_file3"]["content"]
    assert got["search_vault5"]["success"]
    assert got["update_frontmatter6"]["success"] is False  # refused, not rewritten
    assert got["append_to_file7"]["success"]


def test_one_line_files_of_megabytes_are_found_and_shown_piece_by_piece(tmp_path):
    # A 2 MB one-line text and a minified bundle used to be one item each: unfindable in
    # a budget and a gigabyte of memory to index (issue 13, item 9).
    from smartcontext import Workspace
    from smartcontext.sources.text import WINDOW_CHARS

    words = " ".join(f"w{i % 997}" for i in range(400_000))
    (tmp_path / "dump.txt").write_text(words[:1_000_000] + " needle_marker " + words[:1_000_000])
    (tmp_path / "bundle.js").write_text("var a=1;" * 5_000 + "function needle_marker(){}" + ";var b=2" * 5_000)
    (tmp_path / "smartcontext.toml").write_text("[index]\nmax_file_bytes = 5000000\n")
    ws = Workspace.open(tmp_path)
    stats = ws.index(embeddings=False)
    pieces = [e for e in ws.catalogue().entries.values() if e.path == "dump.txt"]
    assert len(pieces) > 400  # about 2 MB / WINDOW_CHARS
    assert any("minified" in w and "bundle.js" in w for w in stats.warnings)
    hits = ws.search("needle_marker", mode="keyword", limit=5)
    assert {h.path for h in hits} == {"dump.txt", "bundle.js"}
    res = ws.context("needle_marker", max_tokens=4000)
    ws.close()
    assert "needle_marker" in res.text and res.token_count <= 4000
    assert all(len(s.item.text) <= WINDOW_CHARS for s in res.items)
