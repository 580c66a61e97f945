"""A bug report's top file shows its head when the head's own lines fit (pipeline.HEAD_EXACT)."""

from __future__ import annotations

from pathlib import Path

from conftest import write_tree

from smartcontext import Workspace
from smartcontext.context import pipeline
from smartcontext.tokens import count_tokens

_REPORT = (
    "send_request gives up after five seconds on a slow server\n\n"
    "Calling `send_request(url)` against a server that answers after eight seconds raises a "
    "timeout error, though the documentation says requests wait thirty seconds.\n"
)


def _tree(root: Path) -> None:
    # A head of short lines (imports and constants) above a body of long, dense ones: the
    # head's share of the file's lines times the file's tokens overestimates it.
    head = "".join(f"import module_{i}\n" for i in range(30)) + (
        "\nDEFAULT_TIMEOUT = 5  # the fault: seconds before a request gives up\n"
        "RETRIES = 3\n"
    )
    body = "\n\ndef send_request(url, timeout=None):\n    \"\"\"Send a request to url, waiting timeout seconds.\"\"\"\n"
    body += "    timeout = timeout or DEFAULT_TIMEOUT\n"
    body += "".join(
        f"    frame_{j} = compose(alpha_{j}, beta_{j}, gamma_{j}, delta_{j}, epsilon_{j}, zeta_{j}, "
        f"eta_{j}, theta_{j}, iota_{j}, kappa_{j}, lambda_{j}, mu_{j})  # assemble frame {j}\n"
        for j in range(70)
    )
    body += "    return transport(url, timeout)\n"
    files = {"pkg/__init__.py": "", "pkg/client.py": head + body,
             "pkg/server.py": "def serve(port):\n    \"\"\"Serve on port.\"\"\"\n    return port\n"}
    write_tree(root, files)


def test_a_reports_top_file_head_is_counted_not_estimated(tmp_path, monkeypatch):
    # send_request names DEFAULT_TIMEOUT: that rule would show its line from the free tokens.
    monkeypatch.setattr(pipeline, "NAMED_STATEMENT_TOKENS", 0)
    _tree(tmp_path)
    source = (tmp_path / "pkg" / "client.py").read_text(encoding="utf-8")
    lines = source.splitlines()
    head_lines = source.index("\n\ndef send_request")
    head_count = source[:head_lines].count("\n") + 1
    estimate = count_tokens(source) * head_count / len(lines)
    assert count_tokens(source[:head_lines]) < pipeline.HEAD_MAX_TOKENS < estimate

    def context(question: str) -> str:
        with Workspace.open(tmp_path) as ws:
            ws.index(embeddings=False)
            return ws.context(question, max_tokens=8000, format="markdown").text

    assert "DEFAULT_TIMEOUT = 5  # the fault" in context(_REPORT)
    # A question about the code keeps the estimate: its budget goes to bodies.
    assert "DEFAULT_TIMEOUT = 5  # the fault" not in context("How does send_request wait for a slow server?")
    monkeypatch.setattr(pipeline, "HEAD_EXACT", 0)
    assert "DEFAULT_TIMEOUT = 5  # the fault" not in context(_REPORT)
