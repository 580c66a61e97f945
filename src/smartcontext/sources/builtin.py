"""The built-in sources (code, Vue and Svelte components, markdown notes, Jupyter notebooks, chat
files, plain text), registered through the same
hook as a plugin's; ``tryfirst`` puts them first, so a plugin's source of the same name
replaces one of them."""

from __future__ import annotations

import os

from ..model import Item, ItemKind, ParsedFile
from ..plugins import hookimpl
from ..words import fts_text
from .base import BaseSource, decode
from .text import TextSource, text_windows


class CodeSource(BaseSource):
    """Source files of the languages in ``sources.lang``: modules, classes, functions,
    methods and their imports, calls and bases (``sources.code``)."""

    name = "code"
    skip_generated = True

    def language_for(self, path: str) -> str | None:
        from .lang import language_for_path

        return language_for_path(path)

    def parse(self, path: str, data: bytes, language: str) -> ParsedFile:
        from .code import parse_code

        parsed = parse_code(path, data, language)
        if len(parsed.items) == 1 and parsed.items[0].kind == ItemKind.TEXT:
            # Unparsable code: line windows keep a long file findable piece by piece.
            windows = text_windows(path, decode(data))
            windows.warnings = parsed.warnings
            return windows
        return parsed

    def module_name(self, path: str) -> str:
        from .lang.paths import module_name_for_path

        return module_name_for_path(path)

    def fts_bodies(self, items: list[Item], text: str) -> list[str]:
        """Bodies without repetition: a container is indexed by the lines its members do
        not cover, so a file's text enters the index about twice (once for the whole
        file, once spread over its symbols) instead of once per nesting level. The
        whole-file row also gets camelCase parts, for file-level BM25."""
        lines = text.split("\n")
        spans: dict[str, list[tuple[int, int]]] = {}
        for it in items:
            if it.parent_id:
                spans.setdefault(it.parent_id, []).append((it.start_line, it.end_line))
        out: list[str] = []
        for it in items:
            if it.traits.whole_file:
                out.append(fts_text(it.text))
                continue
            children = spans.get(it.id)
            if not children:
                out.append(it.text)
                continue
            covered: set[int] = set()
            for a, b in children:
                covered.update(range(a, b + 1))
            own = [lines[n - 1] for n in range(it.start_line, min(it.end_line, len(lines)) + 1) if n not in covered]
            out.append("\n".join(own))
        return out

    def warm_up(self, path: str, language: str) -> None:
        from .code import parse_code

        parse_code(path, b"\n", language)


class MarkdownSource(BaseSource):
    """Notes: one item per heading block, with tags, frontmatter and links (``sources.markdown``)."""

    name = "markdown"
    extensions = frozenset({".md", ".markdown"})
    language = "markdown"
    # 1: headings named without their attribute lists, parts of encoded data left out.
    version = 1

    def parse(self, path: str, data: bytes, language: str) -> ParsedFile:
        from .markdown import parse_markdown

        return parse_markdown(path, decode(data))

    def fts_names(self, items: list[Item]) -> list[str]:
        """The item standing for the whole note (the first) is also named by the note's
        title and frontmatter aliases, so a query naming the note by either finds it
        (retrieval/titles.py checks the match)."""
        names = super().fts_names(items)
        if items:
            first = items[0]
            stem = os.path.splitext(os.path.basename(first.path))[0]
            extra = [first.meta.get("title"), *(first.meta.get("aliases") or [])]
            words = [str(x) for x in extra if isinstance(x, (str, int, float)) and str(x).strip()]
            # A title that is the file name is indexed already (the path column).
            words = [w for w in dict.fromkeys(words) if w not in (first.qualname, stem)]
            if words:
                names[0] = fts_text("\n".join([first.qualname, *words]).strip())
        return names


@hookimpl(tryfirst=True)
def register_sources(register) -> None:
    # Imported here: the plugin manager loads this module for any registry (a question on
    # an index with vectors asks the embedders'), and chat files need a reader of their own.
    from .chat import ChatSource
    from .components import ComponentSource
    from .notebook import NotebookSource

    register(MarkdownSource())
    register(CodeSource())
    register(TextSource())
    register(NotebookSource())
    register(ComponentSource())
    # Last: for a path, the latest registered source that claims it wins, and only the
    # chat source claims .memory/*.json.
    register(ChatSource())
