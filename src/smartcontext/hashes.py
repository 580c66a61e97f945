"""SHA-256 and BLAKE2b from CPython's own modules where there are: ``import hashlib`` loads
OpenSSL's bindings first, about 3 ms of a question process that hashes only an item key or
a model's name. Another Python implementation gets hashlib's."""

from __future__ import annotations

try:
    from _blake2 import blake2b
except ImportError:  # pragma: no cover - not CPython
    from hashlib import blake2b

try:
    from _sha2 import sha256  # type: ignore[import-not-found]  # CPython 3.12+
except ImportError:
    try:
        from _sha256 import sha256  # type: ignore[import-not-found]  # CPython 3.11
    except ImportError:  # pragma: no cover - not CPython
        from hashlib import sha256

__all__ = ["blake2b", "sha256"]
