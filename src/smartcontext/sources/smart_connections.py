"""Smart Connections as a source: the reader lives in ``smartcontext.smart_connections``.

Unlike the other sources it yields no items: the plugin's vectors are read in place
(read-only) and searched there, because they belong to a model the workspace index
may not use. This module keeps the import path of the design's layout.
"""

# The package's __all__ lists exactly the public API, so a star import re-exports it.
from ..smart_connections import *
from ..smart_connections import __all__  # noqa: F401
