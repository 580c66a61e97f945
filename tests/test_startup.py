"""Start-up stays cheap (issue 12): ``import smartcontext`` loads no engine module and no
numpy; the public names load on first use; ``--version`` needs none of the engine."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

HEAVY = ["numpy", "smartcontext.workspace", "smartcontext.indexer", "smartcontext.store.sqlite"]


def _loaded_after(code: str) -> dict[str, bool]:
    probe = code + f"\nimport json, sys\nprint(json.dumps({{m: m in sys.modules for m in {HEAVY!r}}}))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_import_smartcontext_loads_no_engine():
    assert not any(_loaded_after("import smartcontext").values())


def test_public_names_load_on_first_use():
    assert _loaded_after("from smartcontext import Workspace")["smartcontext.workspace"]
    import smartcontext

    assert smartcontext.Workspace.__name__ == "Workspace"
    assert set(smartcontext.__all__) <= set(dir(smartcontext))
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        smartcontext.Nope  # noqa: B018


def test_version_runs_without_the_engine():
    probe = ("import runpy, sys\nsys.argv = ['smartcontext', '--version']\n"
             "try:\n    runpy.run_module('smartcontext', run_name='__main__')\nexcept SystemExit:\n    pass")
    loaded = _loaded_after(probe)
    assert not loaded["numpy"] and not loaded["smartcontext.workspace"], loaded
    env = {**os.environ}
    out = subprocess.run([sys.executable, "-m", "smartcontext", "--version"], capture_output=True, text=True, env=env)
    assert out.returncode == 0 and out.stdout.startswith("smartcontext ")


def test_a_keyword_only_question_loads_no_numpy_jsonschema_or_model(sample_repo):
    """A `context` process on an index without vectors needs neither numpy (vectors), nor
    jsonschema (tools), nor onnxruntime (the embedding model)."""
    out = subprocess.run([sys.executable, "-m", "smartcontext", "index", str(sample_repo), "--no-embeddings"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    probe = (
        "import contextlib, io, json, runpy, sys\n"
        f"sys.argv = ['smartcontext', 'context', 'How does the session send requests?', {str(sample_repo)!r}]\n"
        "buf = io.StringIO()\n"
        "try:\n    with contextlib.redirect_stdout(buf):\n        runpy.run_module('smartcontext', run_name='__main__')\n"
        "except SystemExit as exc:\n    assert not exc.code, exc.code\n"
        "print(json.dumps({'text': len(buf.getvalue()), **{m: m in sys.modules for m in "
        "('numpy', 'jsonschema', 'onnxruntime')}}))"
    )
    env = {k: v for k, v in os.environ.items() if k != "SMARTCONTEXT_EMBEDDING_MODEL"}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    loaded = json.loads(done.stdout.strip().splitlines()[-1])
    assert loaded == {"text": loaded["text"], "numpy": False, "jsonschema": False, "onnxruntime": False}
    assert loaded["text"] > 0


def test_a_question_with_vectors_maps_them_and_loads_no_tokenizer_library(tmp_path, embedding_model_cache):
    """A `context` process on a vault indexed with the default static model: the vectors
    and the model's table are mapped files searched without numpy, the question is split
    without the tokenizers library, its emoji and accents are counted without building tiktoken, and the plugins
    are found without importlib.metadata (after a first process has remembered them) nor
    the language specs' tree-sitter loaded for them."""
    vault = tmp_path / "vault"
    (vault / ".obsidian").mkdir(parents=True)
    for i, (title, body) in enumerate([("Sync 🔄", "Keep the vault in sync across devices with a plugin."),
                                       ("Garden", "Plant tomatoes in spring; water them daily."),
                                       ("Café notes", "Naïve ideas about coffee and croissants ✅.")]):
        (vault / f"n{i}.md").write_text(f"# {title}\n\n## Part\n\n{body}\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "SMARTCONTEXT_EMBEDDING_MODEL"}
    env["SMARTCONTEXT_CACHE_DIR"] = str(embedding_model_cache)
    out = subprocess.run([sys.executable, "-m", "smartcontext", "index", str(vault)], capture_output=True,
                         text=True, env=env)
    assert out.returncode == 0, out.stderr
    probe = (
        "import contextlib, io, json, runpy, sys\n"
        f"sys.argv = ['smartcontext', 'context', 'how do I sync my vault across devices', {str(vault)!r}]\n"
        "buf = io.StringIO()\n"
        "try:\n    with contextlib.redirect_stdout(buf):\n        runpy.run_module('smartcontext', run_name='__main__')\n"
        "except SystemExit as exc:\n    assert not exc.code, exc.code\n"
        "print(json.dumps({'text': buf.getvalue(), **{m: m in sys.modules for m in "
        "('numpy', 'tokenizers', 'tiktoken', 'importlib.metadata', 'onnxruntime', 'tree_sitter')}}))"
    )
    # Past the racy window of the notes just written: until then each process walks the
    # folder again, and classifying files loads the language specs (and tree-sitter).
    time.sleep(2.1)
    for i in range(2):  # the first one may remember what the second finds saved
        if i:
            # Past the racy window of the vector file the first one saved: until then a
            # process checks the whole matrix (with numpy) rather than trusting its stamp.
            time.sleep(2.1)
        done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env)
        assert done.returncode == 0, done.stderr
    loaded = json.loads(done.stdout.strip().splitlines()[-1])
    assert "Sync" in loaded.pop("text")
    # The query vector is summed in Python and the mapped vectors searched with simsimd.
    assert loaded == {"numpy": False, "tokenizers": False, "tiktoken": False, "importlib.metadata": False,
                      "onnxruntime": False, "tree_sitter": False}
    assert (vault / ".smartcontext" / "index.db.vectors").is_file()
