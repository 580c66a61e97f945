"""Where Smart Context keeps what it builds for itself (parsed token ranks, distilled
models): one folder for every cache, so one variable moves them all."""

from __future__ import annotations

import os
from pathlib import Path

CACHE_ENV = "SMARTCONTEXT_CACHE_DIR"


def cache_dir() -> Path:
    """``$SMARTCONTEXT_CACHE_DIR``, else ``$XDG_CACHE_HOME/smartcontext``, else
    ``~/.cache/smartcontext``."""
    explicit = os.environ.get(CACHE_ENV)
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "smartcontext"
