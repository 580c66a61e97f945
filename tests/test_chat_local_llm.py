"""The optional local model: joining and checking its slices (always), and a real topic
extraction only where it is installed and SMARTCONTEXT_TEST_LOCAL_LLM=1 asks for it (it
takes about a minute on 2 cores; the suite never downloads or requires it)."""

from __future__ import annotations

import hashlib
import importlib.util
import os

import pytest

from smartcontext.chat import local_llm
from smartcontext.errors import LLMError


def test_join_parts_checks_the_sha256(tmp_path):
    parts = []
    for i, data in enumerate([b"GGUF", b"-slice-", b"tail"]):
        p = tmp_path / f"part{i}.bin"
        p.write_bytes(data)
        parts.append(p)
    good = hashlib.sha256(b"GGUF-slice-tail").hexdigest()
    dest = tmp_path / "models" / "m.gguf"
    assert local_llm.join_parts(parts, dest, good).read_bytes() == b"GGUF-slice-tail"
    bad = tmp_path / "models" / "bad.gguf"
    with pytest.raises(LLMError, match="sha256"):
        local_llm.join_parts(list(reversed(parts)), bad, good)
    assert not bad.exists() and [p.name for p in (tmp_path / "models").iterdir()] == ["m.gguf"]


def test_missing_slices_name_the_install_command(monkeypatch):
    monkeypatch.setattr(local_llm, "PART_PACKAGES", ("smartcontext-no-such-slice-package",))
    with pytest.raises(LLMError, match=r"smartcontext\[local-llm\]"):
        local_llm.part_files()


@pytest.mark.skipif(
    os.environ.get("SMARTCONTEXT_TEST_LOCAL_LLM") != "1" or importlib.util.find_spec("xllamacpp") is None,
    reason="the local model is opt-in: install smartcontext[local-llm] and set SMARTCONTEXT_TEST_LOCAL_LLM=1",
)
def test_local_model_extracts_topics(tmp_path):
    from test_chat import make_chat

    from smartcontext.workspace import Workspace

    make_chat(tmp_path)
    (tmp_path / "smartcontext.toml").write_text('[llm]\nfast = "local:qwen2.5-coder-0.5b"\n')
    with Workspace.open(tmp_path) as ws:
        result = ws.chat("c1").extract_topics()
    assert result.method == "llm:local:qwen2.5-coder-0.5b" and result.error is None
    regular = [t for t in result.topics if not t.get("sticky")]
    assert regular and all(2 <= len(t["label"].split()) <= 4 for t in regular)
    assert {"u1", "u6"} <= set(result.sticky_ids)
