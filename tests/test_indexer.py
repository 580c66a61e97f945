"""Incremental indexing, deletions, skips, and crash safety (SIGKILL mid-run)."""

import os
import signal
import subprocess
import sys
import textwrap
import time

from smartcontext import Workspace
from smartcontext.store import open_store


def _ws(root):
    w = Workspace.open(root)
    w.config.embeddings.model = "none"
    return w


def test_second_run_parses_nothing(sample_repo):
    w = _ws(sample_repo)
    first = w.index()
    assert first.files_indexed == 9 and first.files_unchanged == 0
    second = w.index()
    assert second.files_indexed == 0 and second.files_unchanged == 9


def test_changed_new_and_deleted_files(sample_repo):
    w = _ws(sample_repo)
    w.index()
    (sample_repo / "shop/pricing.py").write_text("def vat(amount):\n    return amount * 0.2\n")
    (sample_repo / "shop/extra.py").write_text("def shipping_cost():\n    return 5\n")
    (sample_repo / "shop/db.py").unlink()
    st = w.index()
    assert st.files_indexed == 2 and st.files_deleted == 1
    cat = w.catalogue()
    names = {e.name for e in cat.entries.values()}
    assert "vat" in names and "shipping_cost" in names
    assert "apply_discount" not in names and "Database" not in names


def test_touched_but_identical_file_is_not_reparsed(sample_repo):
    w = _ws(sample_repo)
    w.index()
    before = w.store.generation()
    p = sample_repo / "shop/cart.py"
    os.utime(p, (time.time() + 10, time.time() + 10))
    st = w.index()
    assert st.files_indexed == 0 and st.files_unchanged == 9
    assert w.store.generation() == before


def test_binary_and_unparsable_files(sample_repo):
    (sample_repo / "shop/blob.py").write_bytes(b"\x00\x01\x02binary")
    (sample_repo / "shop/broken.py").write_text("def ok():\n    return 1\n\ndef broken(:\n")
    w = _ws(sample_repo)
    st = w.index()
    assert st.skipped.get("binary") == 1
    names = {e.name for e in w.catalogue().entries.values()}
    assert "ok" in names  # a file with a syntax error still yields what parsed


def test_update_files_follows_a_single_write(sample_repo):
    w = _ws(sample_repo)
    w.index()
    (sample_repo / "shop/new.py").write_text("def refund_order():\n    pass\n")
    w.update_files(["shop/new.py"])
    assert "refund_order" in {e.name for e in w.catalogue().entries.values()}
    (sample_repo / "shop/new.py").unlink()
    w.update_files(["shop/new.py"])
    assert "refund_order" not in {e.name for e in w.catalogue().entries.values()}


_KILL_SCRIPT = textwrap.dedent(
    """
    import sys
    from smartcontext import Workspace
    from smartcontext.store import sqlite as s
    original = s.SQLiteStore.replace_file
    count = 0
    def slow(self, **kw):
        global count
        original(self, **kw)
        count += 1
        if count == 12:
            print("ready", flush=True)
        import time; time.sleep(0.1)
    s.SQLiteStore.replace_file = slow
    w = Workspace.open(sys.argv[1])
    w.config.embeddings.model = "none"
    w.index(workers=1)
    """
)


def test_sigkill_mid_run_leaves_a_consistent_index(tmp_path):
    root = tmp_path / "big"
    root.mkdir()
    for i in range(60):
        (root / f"mod_{i}.py").write_text(f"def func_{i}(x):\n    return x + {i}\n")
    proc = subprocess.Popen(
        [sys.executable, "-c", _KILL_SCRIPT, str(root)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout.readline().strip() == "ready"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    store = open_store(root / ".smartcontext" / "index.db")
    assert store.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    files = store.counts()["files"]
    # whole batches of files were committed, the batch in flight was not
    assert 1 <= files < 60
    # every stored file has its items (no half-written file)
    orphans = store.db.execute(
        "SELECT COUNT(*) FROM files f WHERE NOT EXISTS (SELECT 1 FROM items i WHERE i.file_id=f.id)"
    ).fetchone()[0]
    assert orphans == 0
    store.close()
    w = _ws(root)
    st = w.index()
    assert st.files_indexed == 60 - files
    assert w.store.counts()["files"] == 60
