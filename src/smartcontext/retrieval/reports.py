"""What a bug report says about the code, apart from what it pastes around it.

Issues paste environment listings (``pip list``, ``pip freeze``, ``xr.show_versions()``,
"Python version: 3.8.2"): every installed package named with its version. Those names
are dependencies, not the code in question, yet they match modules of the same name
(``xarray: 0.16.0`` pulls in xarray/util/print_versions.py). ``without_version_lines``
drops such lines before names and keywords are read from a question.
"""

from __future__ import annotations

import re

# "name 1.2.3", "name==1.2.3", "name: 1.2.3 (default, ...)", "name: None", "- Python version: 3.9";
# a version has at least one dot, so "assert x == 1" or "read serr 1 2" are not listings.
# Linear: bounded repeats of disjoint classes, one optional tail.
_VERSION_LINE = re.compile(
    r"^[ \t>*+-]*(?P<name>[A-Za-z_][\w.\-\[\]]{0,60}(?:[ \t][A-Za-z][\w.\-]{0,30})?)"
    r"(?:[ \t]*(?::|==|>=|<=|~=)[ \t]*|[ \t]+)"
    r"(?:v?\d+(?:\.\d+)+[\w.+\-]*|(?<=:)[ \t]*None|(?<=: )None)"
    r"(?:[ \t]+\([^()\n]{0,200}\)[^\n]{0,80})?[ \t\r]*$",
    re.MULTILINE,
)
_STATEMENTS = frozenset("return assert yield raise print del import from if elif while for".split())


def without_version_lines(text: str) -> str:
    """``text`` without the lines that list a package (or platform) and its version."""

    def drop(m: re.Match[str]) -> str:
        first = m.group("name").split()[0].lower()
        return m.group(0) if first in _STATEMENTS else ""

    return _VERSION_LINE.sub(drop, text)
