"""`smartcontext index` and embeddings: an estimate from the measured rate before the bulk
of the work, and keyword + graph only by --no-embeddings or by configuration."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from smartcontext.cli.index import duration

pytestmark = pytest.mark.timeout(300)

SRC = str(Path(__file__).resolve().parents[1] / "src")


def cli(*args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "SMARTCONTEXT_EMBEDDING_MODEL"}
    env["PYTHONPATH"] = SRC + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-c", "from smartcontext.cli import main; main()", *args],
                          capture_output=True, text=True, timeout=timeout, env=env, stdin=subprocess.DEVNULL)


def make_notes(folder: Path, n: int, config: str) -> Path:
    folder.mkdir()
    (folder / "smartcontext.toml").write_text(config)
    for i in range(n):
        (folder / f"n{i:03d}.md").write_text(f"# Note {i}\n\nThe keeper planted tulip bulb {i} by the harbour.\n")
    return folder


def test_index_says_how_long_embedding_will_take_from_the_measured_rate(tmp_path):
    folder = make_notes(tmp_path / "v", 40, '[embeddings]\nmodel = "local:minilm"\nbatch_size = 8\n')
    out = cli("index", str(folder))
    assert out.returncode == 0, out.stderr
    assert "Embedding 40 items, about " in out.stderr and " items/s (" in out.stderr
    assert "40 item(s) embedded" in out.stdout
    status = json.loads(cli("status", str(folder), "--json").stdout)
    assert status["embedding"].items() >= {"state": "complete", "model": "local:minilm", "embedded": 40,
                                           "total": 40}.items()


def test_no_embeddings_flag_and_config_switch_give_keyword_and_graph_only(tmp_path):
    flagged = make_notes(tmp_path / "flag", 5, '[embeddings]\nmodel = "local:minilm"\n')
    out = cli("index", str(flagged), "--no-embeddings", "--json")
    assert out.returncode == 0, out.stderr
    stats = json.loads(out.stdout)
    assert stats["embedded"] == 0 and stats["embedding_model"] is None and "Embedding" not in out.stderr
    status = json.loads(cli("status", str(flagged), "--json").stdout)
    # embeddings are on: these items should get vectors
    assert status["embedding"].items() >= {"state": "pending", "embedded": 0, "total": 5}.items()

    switched = make_notes(tmp_path / "off", 5, '[embeddings]\nmodel = "local:minilm"\nenabled = false\n')
    out = cli("index", str(switched), "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["embedded"] == 0
    status = json.loads(cli("status", str(switched), "--json").stdout)
    assert status["embedding"] == {"state": "off", "model": None, "embedded": 0, "total": 0,
                                   "items_per_second": None, "error": None}
    text = cli("status", str(switched)).stdout
    assert "vectors off" in text


def test_estimates_are_rounded_as_estimates():
    assert duration(0.2) == "1 s" and duration(42) == "42 s"
    assert duration(240) == "4 min" and duration(3900) == "1 h 5 min"
