"""``smartcontext context``: the most relevant code for a question, within a budget.

Options that smartcontext.toml's ``[context]`` table sets default to None here, so only
what the user typed reaches ``Workspace.context`` and the configuration supplies the rest.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from .questions import run_context
from .root import CONTEXT_DEFAULTS, PathArg, app, from_config


@app.command()
def context(
    question: str = typer.Argument(..., help="The question, in plain language; - reads it from stdin."),
    path: Optional[Path] = PathArg,
    max_tokens: Optional[int] = typer.Option(
        None, "--max-tokens", "-t", help="Token budget (exact count).",
        show_default=from_config(CONTEXT_DEFAULTS, "max_tokens"),
    ),
    format: str = typer.Option("mu", "--format", "-f", help="mu (sigils, fewest tokens), json (for programs) or markdown (fenced code)."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Show extraction statistics on stderr."),
    no_imports: bool = typer.Option(False, "--no-imports", help="Leave out import lists (the @ lines of MU)."),
    depth: Optional[int] = typer.Option(
        None, "--depth", help="Graph expansion depth, 0-3 (0 turns the graph off).",
        show_default=from_config(CONTEXT_DEFAULTS, "expand_depth"),
    ),
    exclude_tests: Optional[bool] = typer.Option(
        None, "--exclude-tests/--include-tests", help="Leave out (or keep) test files.",
        show_default=from_config(CONTEXT_DEFAULTS, "exclude_tests"),
    ),
    scores: bool = typer.Option(False, "--scores", help="Annotate items with relevance scores (:: relevance=0.85)."),
    copy: bool = typer.Option(False, "--copy", help="Also copy the context to the clipboard."),
    encoding: Optional[str] = typer.Option(
        None, "--encoding", help="cl100k_base or o200k_base.",
        show_default=from_config(CONTEXT_DEFAULTS, "encoding"),
    ),
    as_json: bool = typer.Option(
        False, "--json",
        help="Print the whole result as JSON (text, token counts, files, items with their text, "
             "stats, omitted): the shape of the MCP context tool.",
    ),
    explain: bool = typer.Option(
        False, "--explain",
        help="After the context, list the best candidates left out (path, name, kind, score, tokens, "
             "reason) and what the budget was spent on; on stderr when the output is piped.",
    ),
    paths: list[str] = typer.Option(
        [], "--paths", "--path", help="Only these folders, files or globs (src/auth, '*.py').",
    ),
    exclude: list[str] = typer.Option(
        [], "--exclude", help="Leave out these folders, files or globs (tests, '**/*_pb2.py').",
    ),
) -> None:
    """Print the most relevant code for QUESTION within --max-tokens.

    Files changed since the last run are re-indexed first, so the answer is never stale."""
    run_context(question, path, max_tokens, format, verbose, no_imports, depth, exclude_tests, scores, copy,
                encoding, as_json, explain, paths, exclude)
