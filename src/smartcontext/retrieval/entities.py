"""Find the code entities a question names: identifiers, qualified names, paths, quotes.

Every pattern here is linear: character classes joined by single separators, no nested
quantifiers that can overlap, so a 100,000-character question cannot backtrack
catastrophically. Known names (from the index) raise confidence.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from typing import Any

from .english import COMMON_WORDS

# Identifier: a letter or underscore, then word characters (Unicode-aware).
_WORD = r"[^\W\d]\w*"
_IDENT_RE = re.compile(r"(?<!\w)[^\W\d]\w*+")
# Dotted names (auth.service.login, self.session.send): separators are single dots.
# Possessive quantifiers and the look-behind keep matching linear on long inputs.
_DOTTED_RE = re.compile(r"(?<![\w.])[^\W\d]\w*+(?:\.[^\W\d]\w*+)++")
# A maximal run of path characters; whether it is a path is decided in Python.
_PATHLIKE_RE = re.compile(r"(?<![\w/.-])[\w./-]++")
_MAX_WORD = 200
# Traceback frames: Python's ``File "pkg/mod.py", line 12, in func``, pytest's
# ``pkg/mod.py:12: in func`` and IPython's ``File ~/pkg/mod.py:12, in Cls.func(args)`` and
# ``~/pkg/mod.py in func(args)``. Anchored at "File " or a line start, with bounded
# character classes, so matching stays linear in practice.
_FRAME_RE = re.compile(
    r'File "([^"\n]{1,400})", line \d{1,9}, in ([^\s,(]{1,200})'
    r"|File ~?([\w./\\:-]{1,400}\.py):\d{1,9}, in ([^\s,(]{1,200})"
    r"|^[ \t]*~?([\w./\\:-]{1,400}\.py):\d{1,9}: in ([^\s,(]{1,200})"
    r"|^[ \t]*~?([\w./\\:-]{1,400}\.py) in ([^\s,(]{1,200})\(",
    re.MULTILINE,
)
MAX_FRAMES = 60
# A place written as ``path:line`` in another language's error: a Rust panic
# (``crates/ignore/src/walk.rs:1300:17``), a Node stack (``(/app/node_modules/express/lib/
# response.js:135:22)``), a Go trace (``.../cobra@v1.8.0/command.go:1784 +0x71``), a
# compiler's ``src/main.c:12:5: error``, .NET's ``Worker.cs:line 42``, PHP's and tsc's
# ``src/Foo.php(12)``, ``src/app.ts(12,5)``. Where no function is named, the definition
# holding that line is the frame's function (scoring._frame_hits). Their stacks list the
# deepest frame first. Python's frames name their function and keep the forms above.
LINE_FRAMES = True
_LINE_PLACE_RE = re.compile(
    r"(?<![\w.\\/@+:-])((?:[A-Za-z]:)?[\w./\\@+-]{0,400}?\."
    r"(?:js|jsx|mjs|cjs|ts|tsx|go|rs|java|c|h|cc|cpp|cxx|hpp|hh|cs|rb|php|kt|swift|scala))"
    r"(?::(?:line )?(\d{1,7})(?::\d{1,5})?(?![\w.])|\((\d{1,7})(?:,\d{1,5})?\))"
)
# pytest's long traceback names a frame's place on a line of its own under the frame's
# source (``astropy/table/column.py:329: FutureWarning``, or nothing after the colon when an
# inner frame follows); the function is the last ``def`` shown above it in that frame.
PYTEST_LONG_FRAMES = True
_PYTEST_PLACE_RE = re.compile(r"^[ \t]*([\w./\\-]{1,400}\.py):\d{1,9}:(?:[ \t]+[\w.]{1,100})?[ \t\r]*$", re.MULTILINE)
_DEF_RE = re.compile(r"^[ \t]*(?:async[ \t]+)?def[ \t]+([^\W\d]\w{0,100})[ \t]*\(", re.MULTILINE)
# The exception line under a traceback ("TypeError: RST.__init__() got an unexpected keyword
# argument 'header_rows'"): a name written as a call in its message is the callee that
# refused the call, one step deeper than the deepest frame shown.
_RAISED_RE = re.compile(r"^[ \t]*(?:E[ \t]+)?[\w.]{0,100}(?:Error|Exception): ([^\n]{1,400})$", re.MULTILINE)
_CALLED_RE = re.compile(r"(?<![\w.])([^\W\d]\w{0,100}(?:\.[^\W\d]\w{0,100}){0,4})\(\)")
_QUOTED_RE = re.compile(r"`([^`\n]{1,200})`|\"([^\"\n]{1,200})\"|'([^'\n]{1,200})'")
_SOURCE_EXTS = {
    "py", "pyi", "js", "jsx", "mjs", "cjs", "ts", "tsx", "go", "rs", "java", "c", "h", "cc",
    "cpp", "cxx", "hpp", "hh", "cs", "rb", "php", "kt", "swift", "scala", "md", "rst", "txt",
    "toml", "json", "yaml", "yml", "cfg", "ini",
}

# Confidence by how an entity was found; a name the index knows is raised to >= 0.9.
CONFIDENCE = {
    "path": 0.95,
    "quoted": 0.8,
    "qualified": 0.8,
    "camel": 0.75,
    "snake": 0.7,
    "constant": 0.7,
    "known": 0.6,
    "frame": 0.9,
    "callee": 0.9,
}
KNOWN_BONUS = 0.2
MAX_ENTITIES = 200
# A plain word that some item is named after ("login", "session") is a name in a short
# question, where every word was chosen; in a long bug report most such words are prose
# ("output", "Description", "list"), so there they weigh PLAIN_NAME_IN_LONG_TEXT. Measured
# on bench/code_context.py (issues of 100-2,000 words): 0.9 -> 0.35 raised Acc@5 and
# the hunks shown.
LONG_TEXT_WORDS = 60  # distinct words
PLAIN_NAME_IN_LONG_TEXT = 0.35
# In a short question a plain word is still weaker evidence than an identifier: "the
# whole session", "a fixture's value" name `session` and `value` only by accident as
# often as not. Measured with bench/ablate.py (0.9, the identifier's confidence, ->
# 0.5): plain-English questions Acc@1 0.72 -> 0.75, symbols shown 0.56 -> 0.62;
# SWE-bench dev unchanged; dev2 one-file hunks 50.6 -> 51.9%, multi-file Acc@10
# 44.4 -> 38.9 (one instance, gold rank 10 -> 11).
PLAIN_NAME_IN_SHORT_TEXT = 0.5


@dataclass
class ExtractedEntity:
    """A name found in a question.

    text:       as written (``AuthService``, ``config.py``, ``auth.service.login``).
    kind:       how it was found: path, quoted, qualified, camel, snake, constant, known.
    confidence: 0..1; names the index knows get higher confidence.
    known:      True when an indexed item has this name (exactly or as a suffix).
    symbol:     for a traceback frame (kind ``frame``, text its file): the function the
                frame is in (``<module>`` for top-level code).
    frame:      for a traceback frame: its place in the question's tracebacks, 0 for
                the outermost; deeper frames have higher numbers. -1 otherwise.
    """

    text: str
    kind: str
    confidence: float
    known: bool = False
    symbol: str = ""
    frame: int = -1
    line: int = 0  # a frame placed by its line (LINE_FRAMES), with no function named

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _as_path(token: str) -> str | None:
    """``src/auth/service.py`` or ``config.py`` -> itself; anything else -> None."""
    token = token.strip("./-")
    if "." not in token or len(token) > 300:
        return None
    ext = token.rsplit(".", 1)[-1].lower()
    if ext not in _SOURCE_EXTS:
        return None
    return token


def _shape(word: str) -> str | None:
    """camel, snake or constant for identifier-shaped words; None for plain words.

    Plain string checks rather than regexes: Unicode-aware (``größeKlasse``) and linear.
    """
    if len(word) > _MAX_WORD:
        return None
    core = word.strip("_")
    if not core:
        return None
    has_lower = any(c.islower() for c in core)
    has_upper = any(c.isupper() for c in core)
    if "_" in core:
        if has_lower:
            return "snake"
        return "constant" if has_upper else None
    if has_upper and not has_lower:
        return "constant" if len(core) >= 3 and core[0].isalpha() else None
    if has_lower and any(c.isupper() for c in core[1:]):
        return "camel"
    return None


def is_long_text(text: str) -> bool:
    """A text of more than LONG_TEXT_WORDS distinct words: a bug report, not a question."""
    return _more_words_than(text, LONG_TEXT_WORDS)


def _more_words_than(text: str, n: int) -> bool:
    """More than ``n`` distinct words (a repeated line of a log counts once)."""
    seen: set[str] = set()
    for m in _IDENT_RE.finditer(text):
        seen.add(m.group(0).lower())
        if len(seen) > n:
            return True
    return False


class EntityExtractor:
    """Extract code entity names from natural-language text.

    known_names: names of indexed items (lower-cased lookups are done through ``is_known``
    so a large index need not be copied into a set here).
    """

    def __init__(
        self,
        known_names: Iterable[str] | None = None,
        is_known: Callable[[str], bool] | None = None,
    ):
        names = {n.lower() for n in known_names} if known_names else set()
        self._is_known = is_known or (lambda s: s.lower() in names)

    def extract(self, text: str) -> list[ExtractedEntity]:
        found: dict[str, ExtractedEntity] = {}
        long_text = _more_words_than(text, LONG_TEXT_WORDS)
        if self._add_frames(text, found):
            # A frame's line says only where; read names from the rest (code lines, message).
            text = _FRAME_RE.sub(" ", text)

        def add(value: str, kind: str) -> None:
            value = value.strip().strip(".,;:()[]{}")
            if len(value) < 2 or len(value) > 200:
                return
            key = value.lower()
            confidence = CONFIDENCE[kind]
            known = self._is_known(value) or (
                "." in value and self._is_known(value.rsplit(".", 1)[-1])
            )
            if known and kind == "known":
                confidence = PLAIN_NAME_IN_LONG_TEXT if long_text else PLAIN_NAME_IN_SHORT_TEXT
            elif known:
                confidence = min(1.0, max(confidence + KNOWN_BONUS, 0.9))
            prev = found.get(key)
            if prev is None or confidence > prev.confidence:
                found[key] = ExtractedEntity(value, kind, round(confidence, 3), known)

        for m in _QUOTED_RE.finditer(text):
            inner = next(g for g in m.groups() if g is not None)
            # Only quotes that look like names or paths; skip quoted prose.
            if " " not in inner.strip():
                add(inner, "path" if _as_path(inner) == inner.strip() else "quoted")
            else:
                for w in _IDENT_RE.findall(inner):
                    if _shape(w):
                        add(w, _shape(w) or "quoted")
        for m in _PATHLIKE_RE.finditer(text):
            value = _as_path(m.group(0))
            if value and ("/" in value or not self._is_known(value)):
                add(value, "path")
        for m in _DOTTED_RE.finditer(text):
            value = m.group(0)
            if len(value) > _MAX_WORD:
                continue
            if _as_path(value) and not self._is_known(value):
                continue  # a file name, handled above
            add(value, "qualified")
            for part in value.split("."):
                if _shape(part):
                    add(part, _shape(part) or "known")
                elif len(part) > 2 and part.lower() not in COMMON_WORDS and self._is_known(part):
                    add(part, "known")
        for m in _IDENT_RE.finditer(text):
            word = m.group(0)
            if len(word) > _MAX_WORD:
                continue
            shape = _shape(word)
            if shape:
                add(word, shape)
            elif len(word) > 2 and word.lower() not in COMMON_WORDS and self._is_known(word):
                # "done" in "where is X done?" is English, even if some class has done().
                add(word, "known")
            if len(found) >= MAX_ENTITIES * 2:
                break
        ranked = sorted(found.values(), key=lambda e: (-e.confidence, e.text))
        return ranked[:MAX_ENTITIES]

    def _add_frames(self, text: str, found: dict[str, ExtractedEntity]) -> int:
        """Add the frames of the question's tracebacks as ``frame`` entities (the deepest
        MAX_FRAMES when there are more); returns how many."""
        frames: dict[tuple[str, str], int] = {}
        for raw, func in _frame_places(text):
            path = _as_path(raw.replace("\\", "/"))
            if path is None:
                continue
            frames.pop((path, func), None)  # a repeated frame counts where it is deepest
            frames[(path, func)] = len(frames)
        kept = list(frames)[-MAX_FRAMES:]
        for n, (path, func) in enumerate(kept):
            found[f"frame:{path}:{func}"] = ExtractedEntity(
                path, "frame", CONFIDENCE["frame"], False, symbol=func, frame=n
            )
        count = len(kept)
        if LINE_FRAMES:
            places: dict[tuple[str, int], None] = {}
            # Node's ES modules print file URLs (``at file:///app/server.mjs:12:7``); other URLs
            # (``https://host/a.js:3``) are no place in the repository.
            for m in _LINE_PLACE_RE.finditer(text.replace("file://", "")):
                path = _as_path(m.group(1).replace("\\", "/"))
                if path is not None:
                    places.setdefault((path, int(m.group(2) or m.group(3))), None)
            lined = list(places)[:MAX_FRAMES]
            for i, (path, line) in enumerate(lined):
                # Deepest first in the text: the first place gets the deepest number.
                found[f"frame:{path}:L{line}"] = ExtractedEntity(
                    path, "frame", CONFIDENCE["frame"], False, frame=len(kept) + len(lined) - 1 - i, line=line
                )
            count += len(lined)
        if count:
            for m in _RAISED_RE.finditer(text):
                for name in _CALLED_RE.findall(m.group(1)):
                    found[f"callee:{name}"] = ExtractedEntity(
                        name, "callee", CONFIDENCE["callee"], False, symbol=name, frame=count
                    )
        return count


def _frame_places(text: str) -> Iterable[tuple[str, str]]:
    """(file, function) of each traceback frame in ``text``, outermost first."""
    found: list[tuple[int, str, str]] = []
    for m in _FRAME_RE.finditer(text):
        n = next(i for i in (1, 3, 5, 7) if m.group(i) is not None)
        found.append((m.start(), m.group(n), m.group(n + 1)))
    if PYTEST_LONG_FRAMES and ".py:" in text:
        start = 0
        for m in _PYTEST_PLACE_RE.finditer(text):
            defs = _DEF_RE.findall(text, start, m.start())
            start = m.end()
            # A bare file name (``test_foo.py:7: AssertionError``) is the reporter's own
            # module, run from their folder; the project's files show their folders.
            if "/" in m.group(1) or "\\" in m.group(1):
                found.append((m.start(), m.group(1), defs[-1] if defs else "<module>"))
    found.sort()
    return [(raw, func) for _, raw, func in found]
