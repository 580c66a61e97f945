"""What a bug report says about the code, apart from what it pastes around it.

Issues paste environment listings (``pip list``, ``pip freeze``, ``xr.show_versions()``,
"Python version: 3.8.2"): every installed package named with its version. Those names
are dependencies, not the code in question, yet they match modules of the same name
(``xarray: 0.16.0`` pulls in xarray/util/print_versions.py). ``without_version_lines``
drops such lines before names and keywords are read from a question.

Issue templates leave their instructions in HTML comments (``<!-- Please run the
following snippet ... import platform -->``), which the page never shows and the reporter
never wrote: ``without_template_comments`` drops them.

Some templates fold the whole environment into a block (``<details>`` or a code fence) under
a heading ("Output of ``xr.show_versions()``"): beside the versions, the block holds the
lines the listing function prints ("INSTALLED VERSIONS", ``python-bits: 64``,
``byteorder: little``), which match that function better than anything the reporter wrote.
``without_environment_blocks`` drops a block made mostly of version lines, with its heading.

A pasted interactive session holds what ran (``>>> Range(3, 5, 2)``) and what it printed
(``Range(3, 5, 2)``, a repr): ``without_session_output`` keeps the prompts' lines only, for
the rules that read what the reporter called.
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


# A <details> block or a code fence, with the markdown heading right above it (the label).
_BLOCK = re.compile(
    r"(?P<head>^[ \t]*#{1,6}[ \t][^\n]{0,200}\n(?:[ \t\r]*\n){0,3})?"
    r"(?P<body>^[ \t]*<details\b.*?(?:</details>|\Z)|^[ \t]*(?P<fence>```|~~~).*?(?:^[ \t]*(?P=fence)|\Z))",
    re.DOTALL | re.MULTILINE | re.IGNORECASE,
)
# A release number ("3.7.1", "2.14"; or "None", not installed), not a measured float
# ("Out[5]: 1.5707963267948966").
_RELEASE = re.compile(r"(?<![\d.])\d{1,4}\.\d{1,4}(?:\.\d{1,4})*(?!\d)")
# Measured with bench/ablate.py: dev2 one-file Acc@5/10 77.5/80.0 -> 80.0/82.5, hunks 55.7 -> 58.2%;
# dev Acc@5 88.9 -> 90.5; questions unchanged. A switch for the "before" variant.
DROP_ENV_BLOCKS = True


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


def without_environment_blocks(text: str) -> str:
    """``text`` without the ``<details>`` blocks and code fences in which at least half the
    lines list a package or platform with its version, nor the heading that labels them."""
    if "<details" not in text.lower() and "```" not in text and "~~~" not in text:
        return text

    def drop(m: re.Match[str]) -> str:
        body = m.group("body")
        lines = [ln for ln in body.splitlines() if _WORD.search(ln)]
        listed = sum(1 for v in _VERSION_LINE.finditer(body)
                     if _RELEASE.search(v.group(0)) or v.group(0).rstrip().endswith("None"))
        if len(lines) >= 3 and listed * 2 >= len(lines):
            return "\n"
        return m.group(0)

    return _BLOCK.sub(drop, text)


def without_session_output(text: str) -> str:
    """``text`` less what an interactive session printed: in a run of lines with ``>>>``
    prompts, the lines after a prompt that carry none (a repr like ``Range(3, 5, 2)`` is
    what the session printed, not what the reporter called)."""
    out: list[str] = []
    in_session = False
    for line in text.splitlines():
        stripped = line.lstrip()
        if stripped.startswith((">>>", "...")):
            in_session = True
            out.append(line)
        elif in_session and stripped and not stripped.startswith("```"):
            continue
        else:
            in_session = False
            out.append(line)
    return "\n".join(out)
