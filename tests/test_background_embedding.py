"""Embedding in the background of a server: questions answer while it runs, the vector
count grows to the end, a restart resumes, and the thread never keeps a process alive.

The embedder is a real one registered through the embeddings registry (as a plugin
registers a model): deterministic vectors from the text's hash, with a gate that holds
one batch inside ``embed`` for as long as the test wants, so "a question while the
embedder is busy" is a fact of the test, not a matter of timing.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

from smartcontext.embeddings import registry as embedder_registry
from smartcontext.tools import ToolRegistry

pytestmark = pytest.mark.timeout(120)

NOTES = 40
BATCH = 8
MODEL = "gated-hash"
# Nothing in these tests waits longer than this for an event that should come at once.
PATIENCE = 30.0


class GatedEmbedder:
    """Vectors from the sha256 of each text. After ``free_batches`` batches, each call
    waits for ``gate`` (the test opens it); ``blocked`` tells the test a call is waiting."""

    dim = 16

    def __init__(self, free_batches: int = 1):
        self.name = MODEL
        self.free_batches = free_batches
        self.gate = threading.Event()
        self.blocked = threading.Event()
        self.calls = 0
        self.texts = 0

    def embed(self, texts):
        self.calls += 1
        if self.calls > self.free_batches:
            self.blocked.set()
            if not self.gate.wait(PATIENCE):
                raise TimeoutError("the test never opened the gate")
        self.texts += len(texts)
        m = np.stack([np.frombuffer(hashlib.sha256(t.encode()).digest()[: self.dim], dtype=np.uint8) + 1.0
                      for t in texts]).astype(np.float32)
        return m / np.linalg.norm(m, axis=1, keepdims=True)

    def embed_query(self, text):
        m = np.frombuffer(hashlib.sha256(text.encode()).digest()[: self.dim], dtype=np.uint8) + 1.0
        v = m.astype(np.float32)
        return v / np.linalg.norm(v)


@pytest.fixture
def embedder(monkeypatch):
    """A GatedEmbedder registered under MODEL for this test only."""
    embedder_registry._load_plugins()
    monkeypatch.setattr(embedder_registry, "_named", dict(embedder_registry._named))
    emb = GatedEmbedder()
    embedder_registry.register_embedder(MODEL, lambda **options: emb)
    yield emb
    emb.gate.set()  # a thread still waiting ends now


def make_vault(folder, notes: int = NOTES):
    folder.mkdir(exist_ok=True)
    (folder / "smartcontext.toml").write_text(f'[embeddings]\nmodel = "{MODEL}"\nbatch_size = {BATCH}\n')
    for i in range(notes):
        (folder / f"note{i:03d}.md").write_text(
            f"# Garden note {i}\n\nThe lighthouse keeper planted tulip bulb number {i} by the harbour.\n"
        )
    return folder


def call_soon(reg: ToolRegistry, name: str, args: dict) -> dict:
    """A tool call that must answer while the embedder is held at its gate: run on a
    thread, so a regression (a question waiting for embedding) fails instead of hanging."""
    out: dict = {}
    t = threading.Thread(target=lambda: out.update(reg.call(name, args)), daemon=True)
    t.start()
    t.join(PATIENCE)
    assert not t.is_alive(), f"{name} did not answer while the background embedder was busy"
    return out


def test_questions_answer_while_a_background_embed_runs_and_the_count_grows_to_the_end(tmp_path, embedder):
    reg = ToolRegistry.open(make_vault(tmp_path / "vault"), refresh_interval=-1)
    try:
        first = reg.call("search", {"query": "lighthouse tulip"})
        assert first["success"] and first["results"]
        # The first build is keyword + graph only: vectors come from the background.
        assert embedder.blocked.wait(PATIENCE), "the server never started embedding"
        ws = reg.context.workspace
        total = ws.store.item_count()
        assert total >= NOTES

        status = call_soon(reg, "status", {})
        running = {"state": "running", "model": MODEL, "embedded": BATCH, "total": total}
        assert status["success"] and status["embedding"].items() >= running.items()
        assert status["embedding"]["items_per_second"] > 0 and status["embedding"]["error"] is None

        hybrid = call_soon(reg, "search", {"query": "lighthouse tulip bulb 7"})
        assert hybrid["success"] and hybrid["results"]
        assert hybrid["embedding"] == status["embedding"]  # one object, the same in every answer
        assert "semantic" in hybrid["signals"]  # the first batch is already searchable
        semantic = call_soon(reg, "search", {"query": "harbour", "mode": "semantic", "limit": 50})
        assert semantic["success"] and 0 < semantic["count"] <= BATCH
        context = call_soon(reg, "context", {"question": "Where did the keeper plant bulbs?"})
        assert context["success"] and "lighthouse" in context["text"]
        assert context["embedding"] == status["embedding"]
        loaded = ws._vectors

        embedder.gate.set()
        assert ws.background.join(PATIENCE)
        done = reg.call("status", {})
        assert done["embedding"].items() >= {"state": "complete", "embedded": total, "total": total}.items()
        assert embedder.texts == total  # each item embedded once
        semantic = reg.call("search", {"query": "harbour", "mode": "semantic", "limit": 50})
        assert semantic["count"] == min(50, total) and semantic["embedding"] == done["embedding"]
        # The loaded matrix grew batch by batch; it was not rebuilt.
        assert ws._vectors is loaded and len(loaded) == total
    finally:
        reg.close()


def test_a_new_file_is_keyword_searchable_at_once_and_embedded_after(tmp_path, embedder):
    embedder.free_batches = 1 << 30
    reg = ToolRegistry.open(make_vault(tmp_path / "vault", notes=5), refresh_interval=0)
    try:
        assert reg.call("search", {"query": "lighthouse"})["success"]
        ws = reg.context.workspace
        assert ws.background.join(PATIENCE)
        before = ws.vector_progress()
        assert before[0] == before[1] > 0
        (tmp_path / "vault" / "Kelp.md").write_text("# Kelp\n\nSeaweed farming in the estuary.\n")
        got = reg.call("search", {"query": "seaweed estuary"})
        assert got["results"][0]["path"] == "Kelp.md"
        assert ws.background.join(PATIENCE)
        after = ws.vector_progress()
        assert after[0] == after[1] == before[1] + 1
    finally:
        reg.close()


def test_stopping_the_server_stops_embedding_and_a_restart_resumes(tmp_path, embedder):
    vault = make_vault(tmp_path / "vault")
    reg = ToolRegistry.open(vault, refresh_interval=-1)
    reg.call("search", {"query": "lighthouse"})
    assert embedder.blocked.wait(PATIENCE)
    job = reg.context.workspace.background
    closed = threading.Thread(target=reg.close, daemon=True)
    closed.start()
    time.sleep(0.1)
    embedder.gate.set()  # the batch in flight ends; no further batch starts
    closed.join(PATIENCE)
    assert not closed.is_alive()
    assert job.join(PATIENCE) and job.state().state == "stopped"
    embedded = embedder.texts
    assert BATCH <= embedded < NOTES

    again = ToolRegistry.open(vault, refresh_interval=-1)
    try:
        again.call("search", {"query": "lighthouse"})
        ws = again.context.workspace
        assert ws.background.join(PATIENCE)
        done, total = ws.vector_progress()
        assert done == total
        assert embedder.texts == total  # what was stored before the stop was not embedded again
    finally:
        again.close()


def test_embedding_errors_are_reported_in_status_not_raised_into_questions(tmp_path, monkeypatch):
    embedder_registry._load_plugins()
    monkeypatch.setattr(embedder_registry, "_named", dict(embedder_registry._named))

    class Broken(GatedEmbedder):
        def embed(self, texts):
            raise RuntimeError("the model file is damaged")

    embedder_registry.register_embedder(MODEL, lambda **options: Broken())
    reg = ToolRegistry.open(make_vault(tmp_path / "vault", notes=3), refresh_interval=-1)
    try:
        got = reg.call("search", {"query": "lighthouse"})
        assert got["success"] and got["results"]
        ws = reg.context.workspace
        assert ws.background.join(PATIENCE)
        status = reg.call("status", {})
        assert status["embedding"]["state"] == "failed"
        assert "the model file is damaged" in status["embedding"]["error"]
        again = reg.call("search", {"query": "lighthouse"})
        assert again["success"] and again["embedding"] == status["embedding"]
    finally:
        reg.close()


def test_keyword_only_when_embeddings_are_switched_off(tmp_path, embedder):
    vault = make_vault(tmp_path / "vault", notes=3)
    (vault / "smartcontext.toml").write_text(f'[embeddings]\nmodel = "{MODEL}"\nenabled = false\n')
    reg = ToolRegistry.open(vault, refresh_interval=-1)
    try:
        got = reg.call("search", {"query": "lighthouse"})
        off = {"state": "off", "model": None, "embedded": 0, "total": 0, "items_per_second": None, "error": None}
        assert got["success"] and got["signals"] == ["keyword"] and got["embedding"] == off
        assert reg.context.workspace.background is None and embedder.calls == 0
        assert reg.call("status", {})["embedding"] == off
    finally:
        reg.close()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads a thread's niceness from /proc")
def test_the_embedding_thread_runs_at_low_priority_and_never_keeps_the_process_alive(tmp_path):
    vault = make_vault(tmp_path / "vault")
    script = textwrap.dedent(f"""
        import atexit, os, sys, threading
        sys.path.insert(0, {str(__file__.rsplit('/', 1)[0])!r})
        from test_background_embedding import GatedEmbedder, MODEL
        from smartcontext.embeddings.registry import register_embedder
        from smartcontext.tools import ToolRegistry

        emb = GatedEmbedder()
        register_embedder(MODEL, lambda **o: emb)
        reg = ToolRegistry.open(sys.argv[1], refresh_interval=-1)
        reg.call("search", {{"query": "lighthouse"}})
        assert emb.blocked.wait(30)
        thread = next(t for t in threading.enumerate() if t.name == "smartcontext-embed")
        print(os.getpriority(os.PRIO_PROCESS, thread.native_id), flush=True)
        # The batch in flight ends as the interpreter exits (atexit runs newest first).
        atexit.register(emb.gate.set)
        # main ends here with the embedder held inside its second batch, the registry open
    """)
    proc = subprocess.run([sys.executable, "-c", script, str(vault)], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr  # a clean exit: no abort under a model call
    assert int(proc.stdout.strip()) >= 10
    # It stored the batch in flight and started no other: the backlog did not keep it alive.
    con = sqlite3.connect(vault / ".smartcontext" / "index.db")
    try:
        assert con.execute("SELECT COUNT(*) FROM embedding_cache").fetchone()[0] == 2 * BATCH
    finally:
        con.close()


def test_a_process_that_is_done_does_not_wait_for_the_static_model_to_be_built(tmp_path):
    """On a machine where the default static model is not built yet, a tool process's
    background embedder starts building it (30 CPU seconds, minutes at its low priority
    on a busy machine). A process that is done exits within a model call or two, and
    leaves nothing half-written: the next process builds the model."""
    vault = make_vault(tmp_path / "vault")
    cache = tmp_path / "model-cache"
    script = textwrap.dedent("""
        import sys, time
        from smartcontext.tools import ToolRegistry

        reg = ToolRegistry.open(sys.argv[1], refresh_interval=-1)
        assert reg.call("search", {"query": "lighthouse"})["success"]
        job = reg.context.workspace.background
        deadline = time.monotonic() + 60
        while job.state().model is None:  # the embedder made: the build is next
            assert time.monotonic() < deadline
            time.sleep(0.05)
        time.sleep(1.0)
        print(job.state().state, flush=True)
    """)
    env = {**os.environ, "SMARTCONTEXT_CACHE_DIR": str(cache), "SMARTCONTEXT_EMBEDDING_MODEL": "local:static"}
    proc = subprocess.Popen([sys.executable, "-c", script, str(vault)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout.readline().strip() == "running"
        done = time.monotonic()
        proc.wait(90)
        waited = time.monotonic() - done
    finally:
        proc.kill()
    assert proc.returncode == 0, proc.stderr.read()
    assert waited < 15, f"the process waited {waited:.0f} s for the model build after it was done"
    # No model and no temporary file; the cache's small stamps of other kinds (model file
    # digests, plugin entry points) may be there.
    left = [p for p in cache.rglob("*") if p.is_file() and p.name not in ("digests.bin", "entry_points.bin")]
    assert not left, left
