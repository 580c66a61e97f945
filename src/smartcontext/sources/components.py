"""Vue and Svelte single-file components (``.vue``, ``.svelte``): their scripts as code.

A component keeps its code in ``<script>`` blocks (``lang="ts"`` for TypeScript) beside a
template and styles. The scripts are parsed by the JavaScript or TypeScript reader with
every other line blanked, so each function, class and import keeps its own line numbers in
the file; the file's own row holds the whole text, template and styles included, so a
question about what a component shows still finds it, and the context shows the file as
it is.
"""

from __future__ import annotations

import os
import re

from ..model import ItemKind, ParsedFile
from .base import decode
from .builtin import CodeSource
from .text import text_windows

# An opening <script ...> tag at the start of a line (Vue's <script setup>, Svelte's
# <script context="module">), up to its closing tag.
_SCRIPT = re.compile(r"^[ \t]*<script\b([^>]*)>(.*?)</script\s*>", re.DOTALL | re.MULTILINE | re.IGNORECASE)
_LANG = re.compile(r"""\blang\s*=\s*["']?(ts|typescript|tsx|js|javascript|jsx)\b""", re.IGNORECASE)
_TYPESCRIPT = {"ts", "typescript", "tsx"}


_NOT_A_LINE_BREAK = re.compile(r"[^\r\n]")
_LANGUAGES = {".vue": "vue", ".svelte": "svelte"}


def script_view(text: str) -> tuple[str, str]:
    """``(language, text)``: the file with every character outside its script blocks
    blanked (line breaks kept), and the scripts' language, TypeScript when any block
    says so."""
    language = "javascript"
    pieces: list[str] = []
    done = 0
    for m in _SCRIPT.finditer(text):
        lang = _LANG.search(m.group(1))
        if lang and lang.group(1).lower() in _TYPESCRIPT:
            language = "typescript"
        pieces += [_NOT_A_LINE_BREAK.sub(" ", text[done:m.start(2)]), m.group(2)]
        done = m.end(2)
    pieces.append(_NOT_A_LINE_BREAK.sub(" ", text[done:]))
    return language, "".join(pieces)


class ComponentSource(CodeSource):
    """Vue and Svelte components: the scripts' definitions, imports and calls, and the
    whole file as the module's text."""

    name = "component"
    skip_generated = True

    def language_for(self, path: str) -> str | None:
        return _LANGUAGES.get(os.path.splitext(path)[1].lower())

    def parse(self, path: str, data: bytes, language: str) -> ParsedFile:
        from .code import parse_code

        text = decode(data)
        script_language, view = script_view(text)
        parsed = parse_code(path, view.encode("utf-8"), script_language)
        if len(parsed.items) == 1 and parsed.items[0].kind == ItemKind.TEXT:
            # No grammar for the script: the file as it is, in windows, as for any code.
            windows = text_windows(path, text)
            windows.warnings = parsed.warnings
            return windows
        for item in parsed.items:
            if item.traits.whole_file:
                item.text = text  # the template and styles are the component too
        parsed.language = language
        return parsed

    def warm_up(self, path: str, language: str) -> None:
        from .code import parse_code

        for script_language in ("javascript", "typescript"):
            parse_code(path, b"\n", script_language)
