"""Results and options of a context extraction."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import InvalidArgument
from ..model import Item
from ..query.options import FORMATS, MAX_BUDGET, MIN_RELEVANCE
from ..query.profiles import CODE_CONTEXT
from ..retrieval.entities import ExtractedEntity

if TYPE_CHECKING:
    from ..background import EmbeddingStatus
    from ..query import Query

__all__ = ["FORMATS", "MAX_BUDGET", "ContextResult", "ExtractionConfig", "OmittedItem", "SelectedItem"]

_WEIGHTS = CODE_CONTEXT.fusion.weights
_CONSTANTS = CODE_CONTEXT.constants


# An answer names its question for the reader, not to hand it back: a bug report pasted
# whole (or the 100,000 characters a program may send) would come back in every answer.
ECHO_CHARS = 500


def question_echo(question: str) -> dict[str, Any]:
    """The ``question`` field of an answer: the question, cut after ``ECHO_CHARS``
    characters with its whole length beside it (``question_chars``) when longer."""
    if len(question) <= ECHO_CHARS:
        return {"question": question}
    return {"question": question[:ECHO_CHARS] + "…", "question_chars": len(question)}


@dataclass
class ExtractionConfig:
    """What the code-context pipeline runs with: a ``Query``'s options plus the
    profile's measured constants (``query.profiles.CODE_CONTEXT``), built by
    ``from_query``.

    max_tokens:       hard limit on the rendered output, counted exactly.
    include_imports:  list each module's dependencies (``@`` lines in MU).
    include_parent:   a method brings its class header, a section its note title.
    expand_depth:     graph hops from the direct matches (0 turns the graph off).
    entity_weight, keyword_weight, vector_weight, proximity_weight: fusion weights.
    min_relevance:    drop items whose normalised score is below this (0..1).
    exclude_tests:    leave out test files.
    include_scores:   annotate MU output with ``:: relevance=0.85``.
    full_code_share:  the share of the budget the top items may spend on full bodies;
                      the rest goes to signatures of further matches.
    encoding:         tokenizer used to count (cl100k_base or o200k_base).
    kinds:            restrict to these item kinds (None = all).
    paths:            restrict to these folders, files or globs (None = all).
    exclude:          leave out these folders, files or globs.
    explain:          keep the best candidates left out, with why (``ContextResult.omitted``).
    """

    max_tokens: int = 8000
    include_imports: bool = True
    include_parent: bool = True
    expand_depth: int = 1
    entity_weight: float = _WEIGHTS["names"]
    keyword_weight: float = _WEIGHTS["keywords"]
    vector_weight: float = _WEIGHTS["vectors"]
    proximity_weight: float = _WEIGHTS["proximity"]
    min_relevance: float = MIN_RELEVANCE.default
    exclude_tests: bool = False
    include_scores: bool = False
    full_code_share: float = _CONSTANTS["full_code_share"]
    encoding: str = "cl100k_base"
    kinds: list[str] | None = None
    paths: list[str] | None = None
    exclude: list[str] | None = None
    explain: bool = True

    def __post_init__(self) -> None:
        if not isinstance(self.max_tokens, int) or self.max_tokens < 1:
            raise InvalidArgument(f"max_tokens must be a positive integer, got {self.max_tokens!r}")
        if self.max_tokens > MAX_BUDGET:
            raise InvalidArgument(f"max_tokens must be at most {MAX_BUDGET:,}, got {self.max_tokens:,}")
        if not 0 <= self.expand_depth <= 3:
            raise InvalidArgument("expand_depth (--depth) must be between 0 and 3")
        if not 0.0 <= self.min_relevance <= 1.0:
            raise InvalidArgument("min_relevance must be between 0 and 1")

    @classmethod
    def from_query(cls, query: "Query") -> "ExtractionConfig":
        """The pipeline's settings for a checked code-context Query."""
        o = query.options
        return cls(
            max_tokens=query.max_tokens or 8000, include_imports=o["imports"], expand_depth=o["depth"],
            exclude_tests=o["exclude_tests"], include_scores=o["scores"], encoding=o["encoding"],
            kinds=list(query.scope.kinds) or None, paths=list(query.scope.paths) or None,
            exclude=list(query.scope.exclude) or None, explain=o["explain"], min_relevance=o["min_relevance"],
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class SelectedItem:
    """An item placed in the context: ``mode`` is ``full`` (code/body) or ``signature``."""

    item: Item
    score: float
    mode: str
    signals: dict[str, float] = field(default_factory=dict)
    context_only: bool = False  # brought in as structure (a class header), not as a match

    def to_dict(self, include_text: bool = True) -> dict[str, Any]:
        it = self.item
        d: dict[str, Any] = {
            "id": it.id,
            "path": it.path,
            "kind": it.kind,
            "name": it.name,
            "qualname": it.qualname,
            "start_line": it.start_line,
            "end_line": it.end_line,
            "signature": it.signature,
            "score": round(self.score, 4),
            "mode": self.mode,
            "signals": self.signals,
            "context_only": self.context_only,
        }
        if include_text:
            d["text"] = it.text if self.mode == "full" else ""
            d["docstring"] = it.docstring
        return d


# Why a candidate is not in the context (``OmittedItem.reason``).
OMIT_BUDGET = "over budget"
OMIT_SCORE_FLOOR = "below score floor"
OMIT_TEST = "test excluded"
OMIT_PATHS = "outside --paths"
OMIT_EXCLUDE = "matched --exclude"
OMIT_KIND = "kind not asked"
OMIT_DUPLICATE = "duplicate of a shown item"
OMIT_TOO_LARGE = "file too large"
OMIT_RANK = "ranked below the candidates considered"  # counted, never listed
OMIT_GONE = "no longer indexed"  # removed by an index run during the question


@dataclass
class OmittedItem:
    """A candidate left out of the context, and why.

    score:  its relevance on the scale of the shown items (0..1); for an item filtered
            out before ranking (tests, --paths, --exclude), the score its signals gave it.
    tokens: what showing it would have cost (whole, or as a signature when that was all
            that could have fitted).
    reason: one of the OMIT_* values; ``detail`` says more (free tokens, the shown item
            it repeats, the setting that filtered it).
    """

    path: str
    name: str
    kind: str
    score: float
    tokens: int
    reason: str
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "name": self.name, "kind": self.kind, "score": round(self.score, 4),
                "tokens": self.tokens, "reason": self.reason, "detail": self.detail}


@dataclass
class ContextResult:
    """The context for one question.

    text:             the rendered context (``format``: mu, json or markdown).
    items:            what was selected, in output order.
    token_count:      exact tokens of what the budget counts (never more than
                      ``max_tokens``): the text itself for mu and markdown; for json the
                      content a model reads, without JSON syntax (``counts`` says which).
    relevance_scores: item id -> normalised score.
    files:            files ranked by relevance (including ones that did not fit).
    context_files:    the files ``text`` holds, in its order (an item's own score orders
                      the text, so a file ranked low can hold the best item: a note titled
                      "This Week" for "what should I work on this week?").
    stats:            entities, candidates per signal, selected, tokens vs budget, timings.
    warnings:         e.g. the budget was too small, nothing matched.
    counts:           what ``token_count`` counts.
    embedding:        how far the index's vectors were (``background.EmbeddingStatus``):
                      the semantic signal covered only the embedded items.
    json_tokens:      for the json format, exact tokens of ``text`` (the JSON as printed),
                      which is more than ``token_count`` (the content a model reads).
    omitted:          the best candidates left out, best first, with why (empty when
                      ``explain`` was off).
    omitted_counts:   how many candidates were left out for each reason (all of them,
                      not only the ones listed).
    spend:            what the budget was spent on: tokens and items for bodies,
                      signatures, headers and files (framing: paths, imports lines),
                      plus ``free``.
    """

    question: str
    text: str
    format: str
    items: list[SelectedItem]
    token_count: int
    max_tokens: int
    relevance_scores: dict[str, float]
    files: list[str]
    entities: list[ExtractedEntity]
    stats: dict[str, Any]
    warnings: list[str] = field(default_factory=list)
    nearest: list[dict[str, Any]] = field(default_factory=list)
    counts: str = "the rendered text"
    embedding: EmbeddingStatus | None = None
    json_tokens: int | None = None
    omitted: list[OmittedItem] = field(default_factory=list)
    omitted_counts: dict[str, int] = field(default_factory=dict)
    spend: dict[str, Any] = field(default_factory=dict)

    @property
    def mu_text(self) -> str:
        """The seed's name for the rendered context."""
        return self.text

    @property
    def context_files(self) -> list[str]:
        return list(dict.fromkeys(s.item.path for s in self.items))

    @property
    def nodes(self) -> list[Item]:
        return [s.item for s in self.items]

    def to_dict(
        self, include_text: bool = True, details: bool = True, max_files: int | None = None
    ) -> dict[str, Any]:
        """The one JSON shape of a context answer (``context --json``, the ``context`` tool,
        HTTP). ``text`` is the rendered context in ``format`` (for json, the JSON text).

        include_text: each item carries its text (the ``context`` tool leaves it out:
                      ``text`` already holds it).
        details:      add the selected items and how they were found (``items``,
                      ``relevance_scores``, ``entities``, ``stats``).
        max_files:    list at most this many ranked files; ``more_files`` counts the rest.
        """
        shown = self.files if max_files is None else self.files[:max_files]
        d: dict[str, Any] = {
            **question_echo(self.question),
            "format": self.format,
            "text": self.text,
            "token_count": self.token_count,
            "counts": self.counts,
            "max_tokens": self.max_tokens,
            **({"json_tokens": self.json_tokens} if self.json_tokens is not None else {}),
            "item_count": len(self.items),
            "files": shown,
            "more_files": len(self.files) - len(shown),
            "context_files": self.context_files,
            "warnings": self.warnings,
            "nearest": self.nearest,
            "embedding": self.embedding.to_dict() if self.embedding is not None else None,
            "omitted": [o.to_dict() for o in self.omitted],
            "omitted_counts": self.omitted_counts,
            "spend": self.spend,
        }
        if details:
            d["items"] = [s.to_dict(include_text) for s in self.items]
            d["relevance_scores"] = self.relevance_scores
            d["entities"] = [e.to_dict() for e in self.entities]
            d["stats"] = self.stats
        return d
