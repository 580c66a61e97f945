"""``smartcontext sc ...``: search the vectors the Obsidian Smart Connections plugin wrote."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from ..query.options import MIN_SIMILARITY, SCOPE
from .root import FOUND_ROOT, JsonOpt, LimitOpt, app, workspace_root
from .output import EXIT_ERROR, errors, print_json, print_text

sc_app = typer.Typer(
    help="Search a vault through the vectors Smart Connections already computed (.smart-env/).",
    no_args_is_help=True,
)
app.add_typer(sc_app, name="sc")

VaultArg = typer.Argument(None, help="The Obsidian vault (the folder holding .smart-env/).", show_default=FOUND_ROOT)
# Defaults (and the bounds the library checks) from the vault-semantic options.
ScopeOpt = typer.Option(SCOPE.default, "--scope", help="notes, blocks or both.")
MinScoreOpt = typer.Option(MIN_SIMILARITY.default, "--min-score", help="Minimum cosine similarity.")


@sc_app.command("search")
def search(
    query: str = typer.Argument(..., help="What to look for, in plain language."),
    vault: Optional[Path] = VaultArg,
    limit: int = LimitOpt,
    min_score: float = MinScoreOpt,
    tag: list[str] = typer.Option([], "--tag", help="Only notes with this tag."),
    in_path: list[str] = typer.Option([], "--path", help="Only under this folder."),
    scope: str = ScopeOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Semantic search over the plugin's note and block vectors."""
    from ..smart_connections.tools import render_search, sc_search, semantic_search_answer

    with errors():
        result = sc_search(query, workspace_root(vault), limit=limit, min_score=min_score, tags=tag or None,
                           paths=in_path or None, scope=scope)
    if as_json:
        print_json(semantic_search_answer(result))  # the semantic_search tool's answer
    else:
        print_text(render_search(result))


@sc_app.command("similar")
def similar(
    note: str = typer.Argument(..., help="The note: a path relative to the vault, or a bare note name."),
    vault: Optional[Path] = VaultArg,
    min_score: float = MinScoreOpt,
    limit: int = LimitOpt,
    scope: str = ScopeOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Notes most like NOTE, from the stored vectors alone (no model needed)."""
    from ..smart_connections.tools import render_similar, sc_similar, similar_notes_answer

    with errors():
        result = sc_similar(note, workspace_root(vault), limit=limit, min_score=min_score, scope=scope)
    if as_json:
        print_json(similar_notes_answer(result))  # the similar_notes tool's answer
    else:
        print_text(render_similar(result))


@sc_app.command("status")
def status(vault: Optional[Path] = VaultArg, as_json: bool = JsonOpt) -> None:
    """Whether the plugin is set up, which model its vectors use, and how search will answer."""
    from ..smart_connections.tools import render_status, sc_status

    with errors():
        st = sc_status(workspace_root(vault))
    if as_json:
        print_json(st.to_dict())
    else:
        print_text(render_status(st))
    if st.error:
        raise typer.Exit(EXIT_ERROR)
