"""Memory and the collector: giving memory back to the system once a long-running
process has gone idle, and pausing the cyclic collector while many objects are made.

CPython frees objects into its own pools and the C allocator's arenas (glibc keeps one
per thread that allocated, and a server's worker threads all do); both keep freed
memory mapped, so a server's resident size stays at its busiest until it exits. After
the caches are dropped, a collection and ``malloc_trim`` hand the free pages back.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache


@lru_cache(maxsize=1)
def _malloc_trim():
    """glibc's ``malloc_trim``, or None (another C library, another system)."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes  # only for a server gone idle: not on a one-question process's path
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return trim


def return_free_memory() -> bool:
    """Collect garbage and return the allocator's free pages to the system; whether the
    allocator could be asked (glibc)."""
    gc.collect()
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True


@contextmanager
def collector_paused() -> Iterator[None]:
    """Around making hundreds of thousands of objects of which none is garbage (a large
    index's catalogue, a long chat's messages and maps): the cyclic collector would walk
    them again and again while they are made (a third to a half of that time)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()
