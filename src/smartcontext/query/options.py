"""Every option of a question, declared once.

An ``Option`` is a name (the one spelling used by the Python API, the MCP/HTTP tools and
JSON), a kind, a default, its bounds and its help text, plus how the CLI spells it. The
CLI commands (typer and the fast path), the tool schemas and the docs are generated from
these declarations (``cli/query_options.py``, ``tools/workspace.py``), so a limit, a
default or a name is the same in every front end. Nothing here imports typer, rich or
numpy: the fast path reads it on every question.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidArgument, did_you_mean

__all__ = [
    "CONTEXT_OPTIONS", "SEARCH_OPTIONS", "FORMATS", "MAX_BUDGET", "MAX_QUESTION_CHARS", "Option",
    "SEMANTIC_SEARCH_OPTIONS", "SIMILAR_NOTES_OPTIONS", "check_all", "json_schema",
]

# A pasted bug report or log of 100,000 characters is a normal question; past this, a
# question is refused (not cut silently) in every front end.
MAX_QUESTION_CHARS = 500_000
MAX_BUDGET = 2_000_000
FORMATS = ("mu", "json", "markdown")
ENCODINGS = ("cl100k_base", "o200k_base")
MODES = ("hybrid", "keyword", "semantic")
MAX_LIST_ITEMS = 100
MAX_GLOB_CHARS = 1000


@dataclass(frozen=True)
class Option:
    """One option of a question.

    name:        the one spelling: Python keyword, tool argument, JSON key.
    kind:        "str", "int", "float", "bool" or "list" (of strings).
    default:     when the user gives nothing (``config_key`` may replace it).
    flags:       the CLI's spellings, long first (``--max-tokens``, ``-t``); empty for the
                 question itself (a positional argument) and for tool-only options.
    off_flag:    a boolean's negative CLI spelling (``--include-tests``).
    config_key:  the ``[context]`` key of smartcontext.toml that sets the default.
    where:       the front ends that offer it: "cli", "tool" or both.
    part_of_query: False for options that shape only how an answer is printed
                 (``--copy``) or returned (``include_items``): they never reach the Query.
    minimum, maximum, max_length, max_items, choices: the bounds, checked everywhere.
    """

    name: str
    kind: str
    help: str
    default: Any = None
    flags: tuple[str, ...] = ()
    off_flag: str | None = None
    config_key: str | None = None
    where: tuple[str, ...] = ("cli", "tool")
    minimum: float | None = None
    maximum: float | None = None
    max_length: int | None = None
    max_items: int | None = None
    choices: tuple[str, ...] = ()
    metavar: str | None = None
    part_of_query: bool = True
    what: str | None = None  # how messages name it, when not by its name ("search mode")
    cli_note: str = ""  # added to the help on the CLI only ("- reads it from stdin")

    @property
    def on_cli(self) -> bool:
        return "cli" in self.where

    @property
    def in_tools(self) -> bool:
        return "tool" in self.where

    def check(self, value: Any) -> Any:
        """``value`` when it is within bounds; InvalidArgument (the same words from every
        front end) otherwise. None means "not given" and passes."""
        if value is None:
            return None
        label = self.flags[0] if self.flags else self.name
        if self.kind == "bool":
            if not isinstance(value, bool):
                raise InvalidArgument(f"{self.name} must be true or false, got {value!r}")
            return value
        if self.kind in ("int", "float"):
            ok_type = (int,) if self.kind == "int" else (int, float)
            if isinstance(value, bool) or not isinstance(value, ok_type):
                raise InvalidArgument(f"{self.name} ({label}) must be a number, got {value!r}")
            if (self.minimum is not None and value < self.minimum) or (
                self.maximum is not None and value > self.maximum
            ):
                raise InvalidArgument(
                    f"{self.name} ({label}) must be between {_num(self.minimum)} and {_num(self.maximum)}, "
                    f"got {_num(value)}"
                )
            return float(value) if self.kind == "float" else value
        if self.kind == "list":
            if isinstance(value, str) or not isinstance(value, Sequence):
                raise InvalidArgument(f"{self.name} must be a list of strings, got {value!r}")
            if self.max_items is not None and len(value) > self.max_items:
                raise InvalidArgument(f"{self.name} takes at most {self.max_items} values, got {len(value)}")
            for v in value:
                if not isinstance(v, str):
                    raise InvalidArgument(f"{self.name} must be a list of strings, got {v!r} in it")
                if self.max_length is not None and len(v) > self.max_length:
                    raise InvalidArgument(f"a value of {self.name} is longer than {self.max_length:,} characters")
                if not v.strip():
                    # An empty tag or glob matches nothing: a filter that silently empties the
                    # answer (a model's ``tags: [""]``) is refused, and says how to mean "all".
                    raise InvalidArgument(f"{self.name} holds an empty value: leave {self.name} out "
                                          "(or send an empty list) to apply no such filter")
            return list(value)
        if not isinstance(value, str):
            raise InvalidArgument(f"{self.name} must be a string, got {value!r}")
        if self.choices and value not in self.choices:
            raise InvalidArgument(
                f"unknown {self.what or self.name} {value!r}{did_you_mean(value, self.choices)}; "
                f"choose one of {', '.join(self.choices)}"
            )
        if self.max_length is not None and len(value) > self.max_length:
            raise InvalidArgument(
                f"the {self.name} is {len(value):,} characters long; the limit is {self.max_length:,}"
            )
        return value

    def schema(self) -> dict[str, Any]:
        """This option as a JSON-schema property (for MCP and HTTP clients)."""
        if self.kind == "list":
            s: dict[str, Any] = {"type": "array", "items": {"type": "string", "minLength": 1}}
            if self.max_length is not None:
                s["items"]["maxLength"] = self.max_length
            if self.max_items is not None:
                s["maxItems"] = self.max_items
        else:
            s = {"type": {"str": "string", "int": "integer", "float": "number", "bool": "boolean"}[self.kind]}
        if self.kind == "str" and self.name in ("question", "query", "path"):
            s["minLength"] = 1
        if self.choices:
            s["enum"] = list(self.choices)
        if self.minimum is not None:
            s["minimum"] = self.minimum
        if self.maximum is not None:
            s["maximum"] = self.maximum
        if self.max_length is not None and self.kind == "str":
            s["maxLength"] = self.max_length
        if self.default is not None:
            s["default"] = self.default
        s["description"] = self.help
        return s


def _num(value: Any) -> str:
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else str(value)


def json_schema(options: Iterable[Option], required: Sequence[str]) -> dict[str, Any]:
    """The tool schema of a command: its tool-side options, nothing else accepted."""
    return {
        "type": "object",
        "properties": {o.name: o.schema() for o in options if o.in_tools},
        "required": list(required),
        "additionalProperties": False,
    }


def check_all(options: Iterable[Option], values: dict[str, Any]) -> dict[str, Any]:
    """``values`` checked against the declarations; an unknown name is refused with the
    closest known one."""
    by_name = {o.name: o for o in options}
    out = {}
    for name, value in values.items():
        option = by_name.get(name)
        if option is None:
            raise InvalidArgument(
                f"unknown option {name!r}{did_you_mean(name, by_name)}; valid: {', '.join(sorted(by_name))}"
            )
        out[name] = option.check(value)
    return out


# -- the declarations -------------------------------------------------------------------

QUESTION = Option(
    "question", "str", "The question in plain language (a pasted bug report or traceback is fine); "
    "naming functions, classes or files helps.",
    max_length=MAX_QUESTION_CHARS, cli_note="- reads it from stdin.",
)
QUERY = Option("query", "str", "What to look for.", max_length=MAX_QUESTION_CHARS)
MAX_TOKENS = Option(
    "max_tokens", "int", "Token budget of the context (exact count of what a model reads).",
    default=8000, flags=("--max-tokens", "-t", "--budget"), config_key="max_tokens", minimum=1, maximum=MAX_BUDGET,
)
FORMAT = Option(
    "format", "str", "mu (sigils, fewest tokens), json (for programs) or markdown (fenced code).",
    default="mu", flags=("--format", "-f"), choices=FORMATS,
)
DEPTH = Option(
    "depth", "int", "Hops along calls, imports and links from the direct matches, 0-3 (0 turns the graph off).",
    default=1, flags=("--depth",), config_key="expand_depth", minimum=0, maximum=3,
)
EXCLUDE_TESTS = Option(
    "exclude_tests", "bool",
    "Leave out test files (kept by default, ranked below the source unless a question, not a long bug report, names a test).",
    default=False, flags=("--exclude-tests",), off_flag="--include-tests", config_key="exclude_tests",
)
IMPORTS = Option(
    "imports", "bool", "List each file's imports (the @ lines of MU).",
    default=True, flags=("--imports",), off_flag="--no-imports",
)
SCORES = Option(
    "scores", "bool", "Annotate items with relevance scores (:: relevance=0.85).",
    default=False, flags=("--scores",),
)
ENCODING = Option(
    "encoding", "str", "The tokenizer that counts the budget: cl100k_base or o200k_base.",
    default="cl100k_base", flags=("--encoding",), config_key="encoding", choices=ENCODINGS,
    what="token encoding",
)
PATHS = Option(
    "paths", "list", "Only these folders, files or globs (relative to the workspace, e.g. src/ or "
    "'src/**/*.py').",
    flags=("--paths", "--path"), max_items=MAX_LIST_ITEMS, max_length=MAX_GLOB_CHARS, metavar="GLOB",
)
EXCLUDE = Option(
    "exclude", "list", "Leave out these folders, files or globs (gitignore style).",
    flags=("--exclude",), max_items=MAX_LIST_ITEMS, max_length=MAX_GLOB_CHARS, metavar="GLOB",
)
KINDS = Option(
    "kinds", "list", "Only items of these kinds: module, class, function, method, section or text.",
    flags=("--kind",), max_items=MAX_LIST_ITEMS, max_length=100, metavar="KIND",
)
TAGS = Option(
    "tags", "list", "Only notes with one of these tags (# optional; 'ai' also matches 'ai/llm').",
    flags=("--tag",), max_items=MAX_LIST_ITEMS, max_length=MAX_GLOB_CHARS, metavar="TAG",
)
MIN_RELEVANCE = Option(
    "min_relevance", "float", "The score floor: candidates scoring below this share of the best one (0..1) "
    "are not considered.", default=0.1, flags=("--min-relevance",), minimum=0.0, maximum=1.0,
)
EXPLAIN = Option(
    "explain", "bool", "Say what was left out and why (over the budget, below the score floor, a test, "
    "outside paths...) in 'omitted', and what the budget was spent on in 'spend'.",
    default=True, where=("tool",),
)
# On the CLI the explanation is always recorded (JSON carries it); the flag prints it.
SHOW_EXPLANATION = Option(
    "show_explanation", "bool", "Also print what was left out and why (over the budget, below the score "
    "floor, a test, outside --paths...), and what the budget was spent on: after the context, or on "
    "stderr when the context goes to a pipe.",
    default=False, flags=("--explain",), where=("cli",), part_of_query=False,
)
MODE = Option(
    "mode", "str", "hybrid (BM25 and vectors fused by reciprocal rank), keyword or semantic "
    "(semantic needs embeddings).",
    default="hybrid", flags=("--mode", "-m"), choices=MODES, what="search mode",
)
LIMIT = Option("limit", "int", "Number of results.", default=10, flags=("--limit", "-n"), minimum=1, maximum=1000)
MIN_SCORE = Option(
    "min_score", "float", "Drop results scoring below this (scores are 0..1).",
    default=0.0, flags=("--min-score",), minimum=0.0,
)
# How an answer is printed (CLI) or returned (tools): not part of the question.
VERBOSE = Option("verbose", "bool", "Show extraction statistics on stderr.", default=False,
                 flags=("--verbose", "-v"), where=("cli",), part_of_query=False)
COPY = Option("copy", "bool", "Also copy the context to the clipboard.", default=False, flags=("--copy",),
              where=("cli",), part_of_query=False)
AS_JSON = Option(
    "as_json", "bool", "Print the whole result as JSON, the shape the MCP tool and the HTTP API return.",
    default=False, flags=("--json",), where=("cli",), part_of_query=False,
)
INCLUDE_ITEMS = Option(
    "include_items", "bool", "Also list the selected items (id, path, lines, score, signals), without their text.",
    default=False, where=("tool",), part_of_query=False,
)

# The options of each command, in the order the CLI's help lists them.
CONTEXT_OPTIONS: tuple[Option, ...] = (
    QUESTION, MAX_TOKENS, FORMAT, EXCLUDE_TESTS, DEPTH, PATHS, EXCLUDE, KINDS, IMPORTS, SCORES, ENCODING,
    MIN_RELEVANCE, EXPLAIN, SHOW_EXPLANATION, VERBOSE, COPY, AS_JSON, INCLUDE_ITEMS,
)
SEARCH_OPTIONS: tuple[Option, ...] = (
    QUERY, MODE, LIMIT, TAGS, PATHS, EXCLUDE, KINDS, MIN_SCORE, AS_JSON,
)

# Smart Connections' two questions (the vault-semantic profile). The score floor is a
# cosine (-1..1) and keeps the seed's tool name, minScore; the library's keyword for it
# is min_score, checked by this same declaration.
SEMANTIC_QUERY = Option("query", "str", "Search query.", max_length=MAX_QUESTION_CHARS)
NOTE_PATH = Option(
    "path", "str", "The note's path relative to the vault, e.g. 'Projects/Plan.md', or a bare note name.",
    max_length=MAX_GLOB_CHARS,
)
SEMANTIC_LIMIT = Option("limit", "int", "Max results.", default=10, minimum=1, maximum=1000)
MIN_SIMILARITY = Option("minScore", "float", "Minimum similarity.", default=0.3, minimum=-1.0, maximum=1.0)
NOTE_TAGS = Option("tags", "list", "Only notes with one of these tags.", max_items=MAX_LIST_ITEMS,
                   max_length=MAX_GLOB_CHARS)
NOTE_FOLDERS = Option("paths", "list", "Only notes under these folders.", max_items=MAX_LIST_ITEMS,
                      max_length=MAX_GLOB_CHARS)
SCOPES = ("notes", "blocks", "both")
SCOPE = Option("scope", "str", "Rank whole notes, heading blocks, or both.", default="notes", choices=SCOPES)
SEMANTIC_SEARCH_OPTIONS: tuple[Option, ...] = (
    SEMANTIC_QUERY, SEMANTIC_LIMIT, MIN_SIMILARITY, NOTE_TAGS, NOTE_FOLDERS, SCOPE,
)
SIMILAR_NOTES_OPTIONS: tuple[Option, ...] = (NOTE_PATH, SEMANTIC_LIMIT, MIN_SIMILARITY, SCOPE)
