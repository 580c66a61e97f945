"""`store copy`, `store list` and `store drop` as a user runs them (the CLI in a
subprocess), on SQLite and on a real PostgreSQL (conftest.pg_url): a copy that is refused
changes nothing and creates nothing, a dry run writes nothing, a copy cut short is
reported, and the workspaces of a database can be listed and dropped."""

import json
import os
import subprocess
import sys

import pytest

from smartcontext.store import open_store
from smartcontext.store.copy import copy_index
from smartcontext.store.postgres import drop_workspace


def run(*args, check=True, stdin=None):
    env = {**os.environ, "SMARTCONTEXT_EMBEDDING_MODEL": "none"}
    env.pop("SMARTCONTEXT_STORE_URL", None)
    proc = subprocess.run([sys.executable, "-m", "smartcontext", *args], capture_output=True, text=True,
                          env=env, timeout=180, stdin=subprocess.DEVNULL if stdin is None else stdin)
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


def with_ws(url, name):
    return f"{url}{'&' if '?' in url else '?'}workspace={name}"


def schemas(url):
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        return sorted(r[0] for r in conn.execute("SELECT nspname FROM pg_namespace WHERE nspname LIKE 'sc\\_%'"))


def items_in(location, workspace=None):
    store = open_store(location, workspace=workspace)
    try:
        return store.item_count()
    finally:
        store.close()


def one_error_line(proc, *words):
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), proc.stderr
    for w in words:
        assert w in lines[0], (w, lines[0])
    return lines[0]


@pytest.fixture
def indexed(sample_repo):
    run("index", str(sample_repo))
    return sample_repo


@pytest.fixture
def hub(pg_url, pg_workspace, indexed):
    """A database holding one workspace (``<pg_workspace>_hub``, a copy of the sample
    repository); every workspace the test makes under ``pg_workspace`` is dropped after."""
    names = [f"{pg_workspace}_{s}" for s in ("hub", "new", "other", "typo", "sq")]
    run("store", "copy", str(indexed), pg_url, "--workspace", names[0])
    yield names[0]
    for name in names:
        drop_workspace(pg_url, name)


def test_a_missing_source_workspace_is_refused_and_nothing_changes(pg_url, hub, indexed, tmp_path):
    # Into a folder that has an index: the copy must not empty it (it did, with exit 0).
    before = items_in(indexed / ".smartcontext" / "index.db")
    listed = schemas(pg_url)
    typo = hub[:-3] + "typo"
    for args in ([with_ws(pg_url, typo), str(indexed)], [pg_url, str(indexed), "--workspace", typo]):
        line = one_error_line(run("store", "copy", *args, check=False), f"no workspace '{typo}'", hub)
        assert "did you mean" in line
        assert items_in(indexed / ".smartcontext" / "index.db") == before
    assert schemas(pg_url) == listed  # no empty sc_* schema left behind
    # an empty folder as the destination is not created either
    empty = tmp_path / "empty"
    empty.mkdir()
    one_error_line(run("store", "copy", with_ws(pg_url, typo), str(empty), check=False), "no workspace")
    assert not (empty / ".smartcontext").exists()


def test_the_workspace_in_the_url_is_the_one_copied(pg_url, hub, indexed, tmp_path):
    dest = tmp_path / "dest"
    dest.mkdir()
    out = json.loads(run("store", "copy", with_ws(pg_url, hub), str(dest), "--json").stdout)
    assert out["files"] == 9 and items_in(dest / ".smartcontext" / "index.db") == items_in(pg_url, hub)
    # the URL and --workspace naming two workspaces is refused
    one_error_line(run("store", "copy", with_ws(pg_url, hub), str(tmp_path / "x.db"), "--workspace", "other",
                       check=False), "--workspace")


@pytest.mark.parametrize("dest_kind", ["sqlite", "postgres"])
def test_a_destination_with_an_index_is_replaced_only_with_force(pg_url, hub, indexed, tmp_path, dest_kind):
    # The destination holds another index (one file); the source is the sample repository.
    other = tmp_path / "other"
    other.mkdir()
    (other / "note.md").write_text("# Only note\n\nSome text about gardens.\n")
    run("index", str(other))
    if dest_kind == "sqlite":
        dest_args, count = [str(other)], (lambda: items_in(other / ".smartcontext" / "index.db"))
    else:
        name = hub[:-3] + "other"
        run("store", "copy", str(other), with_ws(pg_url, name))
        dest_args, count = [with_ws(pg_url, name)], (lambda: items_in(pg_url, name))
    before, listed = count(), schemas(pg_url)
    one_error_line(run("store", "copy", str(indexed), *dest_args, check=False), "already holds an index", "--force")
    assert count() == before and schemas(pg_url) == listed
    # a dry run says what would change and changes nothing
    dry = run("store", "copy", str(indexed), *dest_args, "--dry-run")
    assert "Would copy 9 file(s)" in dry.stdout and "1 removed" in dry.stdout and "--force" in dry.stdout
    plan = json.loads(run("store", "copy", str(indexed), *dest_args, "--dry-run", "--json").stdout)
    assert plan["new_files"] == 9 and plan["removed_files"] == 1 and plan["needs_force"]
    assert count() == before and schemas(pg_url) == listed
    run("store", "copy", str(indexed), *dest_args, "--force")
    assert count() == items_in(indexed / ".smartcontext" / "index.db") != before


def test_a_dry_run_into_a_new_workspace_creates_nothing(pg_url, hub, indexed):
    listed = schemas(pg_url)
    name = hub[:-3] + "new"
    out = run("store", "copy", str(indexed), with_ws(pg_url, name), "--dry-run").stdout
    assert "does not exist yet" in out and "Would copy 9 file(s)" in out
    assert schemas(pg_url) == listed
    run("store", "copy", str(indexed), with_ws(pg_url, name))
    assert schemas(pg_url) == sorted(listed + [f"sc_{name}"])
    assert items_in(pg_url, name) == items_in(indexed / ".smartcontext" / "index.db")


def test_an_empty_source_is_refused(pg_url, hub, tmp_path):
    # A workspace with an index of no file, in SQLite and in PostgreSQL.
    empty_db = tmp_path / "empty.db"
    open_store(empty_db).close()
    dest = tmp_path / "d.db"
    one_error_line(run("store", "copy", str(empty_db), str(dest), check=False), "empty")
    assert not dest.exists()
    name = hub[:-3] + "new"
    open_store(pg_url, workspace=name).close()
    listed = schemas(pg_url)
    one_error_line(run("store", "copy", with_ws(pg_url, name), str(dest), check=False), "is empty", hub)
    assert not dest.exists() and schemas(pg_url) == listed


@pytest.mark.parametrize("dest_kind", ["sqlite", "postgres"])
def test_a_copy_cut_short_is_reported_then_completed(pg_url, hub, indexed, tmp_path, dest_kind):
    target = str(tmp_path / "cut.db") if dest_kind == "sqlite" else with_ws(pg_url, hub[:-3] + "sq")
    src = open_store(indexed / ".smartcontext" / "index.db")
    dst = open_store(target)

    def stop(phase, done, total):
        raise KeyboardInterrupt  # as Ctrl-C after the first batch of files

    with pytest.raises(KeyboardInterrupt):
        copy_index(src, dst, progress=stop)
    src.close()
    dst.close()
    if dest_kind == "sqlite":
        folder = tmp_path / "ws"
        (folder / ".smartcontext").mkdir(parents=True)
        os.replace(target, folder / ".smartcontext" / "index.db")
        target, status_args = str(folder), [str(folder)]
    else:
        status_args = ["--store", target, "status", str(indexed)]
    status = run(*(["status"] + status_args if dest_kind == "sqlite" else status_args), "--json", check=False)
    assert any("unfinished `store copy`" in p for p in json.loads(status.stdout)["problems"])
    one_error_line(status, "unfinished `store copy`")
    # copying again needs no --force and says the earlier one was cut short
    again = run("store", "copy", str(indexed), target)
    assert "cut short" in again.stderr
    status = run(*(["status"] + status_args if dest_kind == "sqlite" else status_args), "--json").stdout
    assert json.loads(status)["problems"] == [] and json.loads(status)["files"] == 9


def test_store_list_and_drop(pg_url, hub):
    listed = json.loads(run("store", "list", pg_url, "--json").stdout)
    mine = [w for w in listed if w["name"] == hub]
    assert mine and mine[0]["files"] == 9 and mine[0]["schema"] == f"sc_{hub}"
    assert hub in run("--store", pg_url, "store", "list").stdout
    # an unknown name, and no confirmation without a terminal: nothing dropped
    one_error_line(run("store", "drop", hub + "x", pg_url, check=False), "no workspace", "did you mean")
    one_error_line(run("store", "drop", hub, pg_url, check=False), "--yes")
    assert f"sc_{hub}" in schemas(pg_url)
    out = run("store", "drop", hub, pg_url, "--yes").stdout
    assert "Dropped" in out and f"sc_{hub}" not in schemas(pg_url)
    one_error_line(run("store", "list", check=False), "postgresql://")
