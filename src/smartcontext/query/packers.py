"""The packer family: fill a token budget with ranked candidates, best first.

Every profile packs the same way (``query.profiles`` names each one's packer): walk the
candidates in rank order, take each one whose cost fits the room left, stop when the
budget is spent or after a run of candidates that fit nowhere. What differs is what a
candidate costs and what taking it records, which the caller's ``offer`` decides:

- ``code`` (``context.budgeter``): an item in full or as its signature, with its file's
  heading and its class header, within a share of the budget for whole bodies;
- ``messages`` (``chat.auto``): a chat message, at its exact token count on its rendered
  line, kept in chronological order by the caller.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TypeAlias, TypeVar

__all__ = ["PASS", "Outcome", "fill_by_size", "greedy_fill"]

T = TypeVar("T")


class _Pass:
    def __repr__(self) -> str:
        return "PASS"


# What ``offer`` returns for a candidate passed over without a try (a duplicate, one
# shown inside another already): neither taken nor a miss.
PASS = _Pass()
# What an offer did: tokens taken, None (a miss) or PASS.
Outcome: TypeAlias = "int | None | _Pass"


def greedy_fill(
    ranked: Iterable[T],
    budget: int,
    offer: Callable[[T, int], Outcome],
    used: int = 0,
    max_misses: int | None = None,
    stop_below: int = 0,
) -> int:
    """Walk ``ranked`` best first; returns the tokens used at the end.

    offer(candidate, room): takes the candidate and returns how many tokens that added
    to ``used``; None when it did not fit in ``room`` (a miss); ``PASS`` for a candidate
    passed over without a try. ``max_misses`` consecutive misses
    end the walk (the long tail seldom fits once the head did not). The walk also ends
    once ``used`` reaches ``budget``, or the room left is under ``stop_below`` (the
    smallest candidate, when the caller knows it).
    """
    misses = 0
    for cand in ranked:
        spent = offer(cand, budget - used)
        if spent is None:
            misses += 1
            if max_misses is not None and misses >= max_misses:
                break
            continue
        if isinstance(spent, _Pass):
            continue
        misses = 0
        used += spent
        if used >= budget or budget - used < stop_below:
            break
    return used


def fill_by_size(order: Iterable[int], sizes: Sequence[int], budget: int, chosen: list[bool],
                 used: int = 0) -> int:
    """The ``greedy_fill`` of candidates with a fixed size each: positions in ``order``
    whose size fits the room left are marked in ``chosen`` (positions chosen already are
    passed over); returns the tokens used."""
    # Once the room left is under the smallest size nothing more fits: the walk ends
    # there rather than offering every other candidate (a long chat's 50,000 messages).
    smallest = min(sizes, default=0)
    if used >= budget or budget - used < smallest:
        return used

    def offer(i: int, room: int) -> Outcome:
        if chosen[i]:
            return PASS
        if sizes[i] > room:
            return None
        chosen[i] = True
        return sizes[i]

    return greedy_fill(order, budget, offer, used, stop_below=smallest)
