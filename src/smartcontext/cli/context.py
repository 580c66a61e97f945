"""``smartcontext context``: the most relevant code for a question, within a budget.

Its options are generated from the code-context declaration (``query.options``); options
the user leaves out fall back to smartcontext.toml's ``[context]``, then the declared
default, when the Query is built.
"""

from __future__ import annotations

from ..query.options import CONTEXT_OPTIONS
from .declared import declare
from .questions import run_context

declare(
    "context", CONTEXT_OPTIONS, run_context,
    """Print the most relevant code for QUESTION within --max-tokens.

    Files changed since the last run are re-indexed first, so the answer is never stale.
    Exits 1 when nothing matches.""",
)
