"""Path-safe vault tools (files, links, frontmatter, preferences, search) answering ok/err JSON."""

from .paths import resolve_in_vault
from .responses import err, ok
from .schema import TOOL_SPECS
from .tools import VaultTools

__all__ = ["TOOL_SPECS", "VaultTools", "err", "ok", "resolve_in_vault"]
