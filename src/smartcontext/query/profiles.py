"""Profiles: what kind of question is asked, and how it is answered.

A profile names the signals it gathers, how it fuses them (``query.fusion``: a weighted
sum or reciprocal rank fusion), which packer fits the result into the budget
(``query.packers``) and the constants it was measured with. The retrieval stages read
their constants from here, so a profile is the one place a measured number lives; a new
kind of question is a new profile, not a new stack.

| profile          | signals                                   | fusion        | packer   |
|------------------|-------------------------------------------|---------------|----------|
| code-context     | names, keywords, vectors (prose), graph   | weighted sum  | code     |
| search           | keywords, vectors                         | reciprocal    | ranked   |
| chat-history     | keywords, vectors, speaker, neighbours    | reciprocal    | messages |
| vault-semantic   | stored vectors, keywords (rerank)         | weighted sum  | ranked   |
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping

from ..errors import InvalidArgument, did_you_mean
from .options import CONTEXT_OPTIONS, SEARCH_OPTIONS, Option

__all__ = ["Fusion", "PROFILES", "Profile", "profile"]


@dataclass(frozen=True)
class Fusion:
    """How a profile combines its signals.

    method:  "weighted" (``fusion.weighted_sum`` of 0..1 scores) or "reciprocal"
             (``fusion.reciprocal_rank`` of ranks).
    weights: per signal.
    k:       the rank constant of reciprocal rank fusion.
    """

    method: str
    weights: Mapping[str, float]
    k: float = 0.0


@dataclass(frozen=True)
class Profile:
    name: str
    description: str
    noun: str  # what its questions are called in messages: "context", "search"...
    signals: tuple[str, ...]
    fusion: Fusion
    packer: str
    options: tuple[Option, ...] = ()
    constants: Mapping[str, Any] = field(default_factory=dict)

    def option(self, name: str) -> Option:
        for o in self.options:
            if o.name == name:
                return o
        raise KeyError(name)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name, "description": self.description, "signals": list(self.signals),
            "fusion": {"method": self.fusion.method, "weights": dict(self.fusion.weights), "k": self.fusion.k},
            "packer": self.packer, "options": [o.name for o in self.options], "constants": dict(self.constants),
        }


def _frozen(d: dict[str, Any]) -> Mapping[str, Any]:
    return MappingProxyType(d)


CODE_CONTEXT = Profile(
    "code-context",
    "The most relevant code or note sections for a question, packed into a token budget.",
    noun="context",
    signals=("names", "keywords", "vectors", "graph"),
    # Graph neighbours are not fused: they are added afterwards, capped below the strong
    # direct matches, so they add to and never push out what the question named
    # (retrieval/scoring.add_graph, weight ``proximity``).
    fusion=Fusion("weighted", _frozen({"names": 1.0, "keywords": 1.0, "vectors": 0.7, "proximity": 0.3})),
    packer="code",
    options=CONTEXT_OPTIONS,
    constants=_frozen({
        # The share of the budget the top items may spend on whole bodies; the rest goes
        # to signatures of further matches.
        "full_code_share": 0.8,
        # Candidates each signal contributes before fusion, and the best fused items the
        # graph expands from.
        "candidates_per_signal": 200,
        "graph_seeds": 12,
    }),
)

SEARCH = Profile(
    "search",
    "Ranked locations (code symbols, note sections) with snippets.",
    noun="search",
    signals=("keywords", "vectors"),
    # Measured on LoCoMo (bench/vault.py): with filters applied before the pools are cut,
    # k=10 lifts hybrid Recall@10 above both signals; the textbook k=60 flattens the ranks
    # of a small filtered pool too much.
    fusion=Fusion("reciprocal", _frozen({"keywords": 1.0, "vectors": 1.0}), k=10),
    packer="ranked",
    options=SEARCH_OPTIONS,
    constants=_frozen({
        # Each signal's pool is this many times the limit (at least ``min_pool``), so
        # fusion sees hits one signal ranks low.
        "pool_factor": 10,
        "min_pool": 100,
    }),
)

CHAT_HISTORY = Profile(
    "chat-history",
    "The messages of one chat that the next answer needs, within a token budget; sticky "
    "instructions always kept.",
    noun="chat history",
    signals=("keywords", "vectors", "speaker", "neighbours"),
    # The rank constant: a chat's turns are short and many, and a steeper curve (5 rather
    # than search's 10) lets the few best turns of each signal lead: recall at 10% of the
    # tokens 0.853 -> 0.857, at 25% 0.929 -> 0.933 (bench/chat_context.py, LoCoMo).
    # Semantic counted twice was best with k 10 and no speaker signal; with the speaker
    # boost, equal weights are.
    fusion=Fusion("reciprocal", _frozen({"keywords": 1.0, "vectors": 1.0}), k=5),
    packer="messages",
    constants=_frozen({
        # The share of a retrieved turn's score lent to the turns 1 and 2 away, both
        # directions (lending more forward than backward measured no better).
        "neighbour_decay": (0.5, 0.25),
        # A question about one named speaker: 96% of LoCoMo's evidence turns are that
        # speaker's; their scores are multiplied by 1 + this after neighbour spreading.
        # 3 gains 0.006 at 25% of the tokens but costs adversarial questions at 10%.
        "speaker_boost": 2.0,
        # Selection order is score * tokens ** this: at equal relevance a longer turn
        # holds more of what a question asks than "Wow!" (score per token lost 0.08).
        "length_exponent": 0.75,
    }),
)

VAULT_SEMANTIC = Profile(
    "vault-semantic",
    "Notes and blocks by meaning, from the vectors Obsidian's Smart Connections plugin stored.",
    noun="semantic search",
    signals=("vectors", "keywords"),
    # keyword-rerank mode: the stored vectors of the top keyword hits form a pseudo-query;
    # each note scores 0.7 * cosine to it + 0.3 * its note's normalised keyword score.
    fusion=Fusion("weighted", _frozen({"vectors": 0.7, "keywords": 0.3})),
    packer="ranked",
    constants=_frozen({
        # How many keyword hits form the pseudo-query, and how many are asked for.
        "rerank_seeds": 8,
        "rerank_candidates": 50,
    }),
)

PROFILES: Mapping[str, Profile] = MappingProxyType(
    {p.name: p for p in (CODE_CONTEXT, SEARCH, CHAT_HISTORY, VAULT_SEMANTIC)}
)


def profile(name: str) -> Profile:
    found = PROFILES.get(name)
    if found is None:
        raise InvalidArgument(
            f"unknown profile {name!r}{did_you_mean(name, PROFILES)}; choose one of {', '.join(PROFILES)}"
        )
    return found
