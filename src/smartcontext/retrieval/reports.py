"""What a bug report says about the code, apart from what it pastes around it.

Issues paste environment listings (``pip list``, ``pip freeze``, ``xr.show_versions()``,
"Python version: 3.8.2"): every installed package named with its version. Those names
are dependencies, not the code in question, yet they match modules of the same name
(``xarray: 0.16.0`` pulls in xarray/util/print_versions.py). ``without_version_lines``
drops such lines before names and keywords are read from a question.

Issue templates leave their instructions in HTML comments (``<!-- Please run the
following snippet ... import platform -->``), which the page never shows and the reporter
never wrote: ``without_template_comments`` drops them.
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


_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.DOTALL)
_WORD = re.compile(r"[^\W\d_]{2}")
# Measured with bench/ablate.py: dev2 one-file Acc@1/5/10 57.5/75.0/77.5 -> 60.0/77.5/80.0,
# hunks 51.9 -> 55.7% (multi-file hunks 22.2 -> 19.9%); SWE-bench dev unchanged.
STRIP_COMMENTS = True


def without_version_lines(text: str) -> str:
    """``text`` without the lines that list a package (or platform) and its version."""

    def drop(m: re.Match[str]) -> str:
        first = m.group("name").split()[0].lower()
        return m.group(0) if first in _STATEMENTS else ""

    return _VERSION_LINE.sub(drop, text)


def without_template_comments(text: str) -> str:
    """``text`` without HTML comments (an unclosed one runs to the end, as on the page);
    the text itself when it is all comment (a question about the comment, then)."""
    if "<!--" not in text:
        return text
    kept = _COMMENT.sub(" ", text)
    return kept if _WORD.search(kept) else text
