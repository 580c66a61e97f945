"""The one fusion of ranked signals, used by every profile.

Two ways to combine signals, both here and nowhere else:

- ``weighted_sum``: scores already on one scale (0..1 per signal) are added with the
  profile's weights and divided by the weights of the signals present, so a missing
  signal (no vectors yet) does not lower every score.
- ``reciprocal_rank``: only ranks count (BM25 and cosines are on different scales):
  each ranking lends ``weight / (k + 1 + rank)``; ``k`` sets how steeply the first
  places lead.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, overload

if TYPE_CHECKING:  # numpy only for the dense form; sparse callers never import it
    import numpy as np

K = TypeVar("K", bound=Hashable)

__all__ = ["reciprocal_rank", "rrf_ceiling", "weighted_sum"]


@overload
def weighted_sum(signals: Mapping[str, "np.ndarray"], weights: Mapping[str, float]) -> "np.ndarray": ...


@overload
def weighted_sum(signals: Mapping[str, Mapping[K, float]], weights: Mapping[str, float]) -> dict[K, float]: ...


def weighted_sum(signals: Mapping[str, Any], weights: Mapping[str, float]) -> Any:
    """key -> sum(weight * score) / sum(weights of the signals given), over every key any
    signal scored (or, for numpy arrays over the same rows, that sum elementwise). Signals without a weight are ignored; an empty signal still counts in
    the denominator only when it is given (a signal that ran and found nothing)."""
    used = {name: weights[name] for name in signals if name in weights}
    total = sum(used.values()) or 1.0
    if any(hasattr(v, "shape") for v in signals.values()):
        # Dense scores (numpy arrays over the same rows): the same sum, elementwise.
        return sum((w * signals[name] for name, w in used.items()), 0.0) / total
    out: dict[Any, float] = {}
    for name, w in used.items():
        for key, score in signals[name].items():
            out[key] = out.get(key, 0.0) + w * score
    return {key: s / total for key, s in out.items()}


def reciprocal_rank(
    rankings: Sequence[Sequence[K]], k: float, weights: Sequence[float] | None = None
) -> dict[K, float]:
    """key -> sum over rankings of ``weight / (k + 1 + position)``. A key appears at most
    once in a ranking."""
    out: dict[K, float] = {}
    for j, ranking in enumerate(rankings):
        w = 1.0 if weights is None else weights[j]
        base = k + 1.0
        for i, key in enumerate(ranking):
            out[key] = out.get(key, 0.0) + w / (base + i)
    return out


def rrf_ceiling(k: float, weights: Sequence[float]) -> float:
    """The fused score of a key ranked first by every ranking: divide by it to put
    fused scores on 0..1."""
    return sum(weights) / (k + 1.0)
