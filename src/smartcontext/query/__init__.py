"""One way to ask: the ``Query`` declaration, the profiles that answer it, the one fusion
of signals and the packers that fit answers into a budget.

    query = Query.build("code-context", "How are retries configured?", max_tokens=4000)
    result = Workspace.open("repo").answer(query)
"""

from .options import CONTEXT_OPTIONS, SEARCH_OPTIONS, Option
from .profiles import PROFILES, Fusion, Profile, profile
from .query import Query, Scope

__all__ = ["CONTEXT_OPTIONS", "PROFILES", "SEARCH_OPTIONS", "Fusion", "Option", "Profile", "Query", "Scope",
           "profile"]
