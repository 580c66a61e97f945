"""Float32 vector arithmetic in plain Python, rounding as numpy's float32 loops do.

A question's query vector (the static model: the sum of about ten table rows, scaled to
unit length) is too small a job to import numpy for, which costs a one-question process
more than the rest of its vector search. These functions give the very bits numpy gives
for the same steps, so a query embedded here equals the same text embedded in a batch
(tests hold them equal):

- each operation is done in double precision and rounded to float32, which is exactly
  float32's own correctly rounded ``+``, ``*``, ``/`` and ``sqrt`` (a double holds more
  than twice float32's precision plus two bits, so rounding twice never differs);
- a sum is numpy's pairwise sum (``loops_utils.h``: eight partial sums up to 128
  values, halves above), which ``np.linalg.norm`` uses over a row, and
  ``np.add.reduceat`` over a column of rows after its first value.
"""

from __future__ import annotations

import math
import operator
from array import array
from collections.abc import Sequence

# numpy's blocking of a pairwise sum (PW_BLOCKSIZE) and its unrolling.
_BLOCK = 128
_UNROLL = 8


def rounded(x: float) -> float:
    """``x`` rounded to the nearest float32."""
    return array("f", (x,))[0]


def add_rows(rows: Sequence[Sequence[float]], dim: int) -> array:
    """The rows' float32 sum as ``np.add.reduceat`` gives it for one segment along rows:
    each column's first value plus the pairwise sum of the column's others (a strided
    reduction); zeros when there are no rows."""
    if not rows:
        return array("f", bytes(4 * dim))
    if len(rows) == 1:
        return array("f", rows[0])
    return array("f", [column[0] + pairwise_sum(column, 1) for column in zip(*rows)])


def pairwise_sum(values: Sequence[float], start: int = 0, n: int | None = None) -> float:
    """numpy's float32 sum of ``values[start:start + n]``."""
    if n is None:
        n = len(values) - start
    if n < _UNROLL:
        total = 0.0
        for i in range(start, start + n):
            total = rounded(total + values[i])
        return total
    if n <= _BLOCK:
        partial = array("f", values[start : start + _UNROLL])
        end = start + n - n % _UNROLL
        for i in range(start + _UNROLL, end, _UNROLL):
            partial = array("f", map(operator.add, partial, values[i : i + _UNROLL]))
        r = partial
        total = rounded(rounded(rounded(r[0] + r[1]) + rounded(r[2] + r[3]))
                        + rounded(rounded(r[4] + r[5]) + rounded(r[6] + r[7])))
        for i in range(end, start + n):
            total = rounded(total + values[i])
        return total
    half = n // 2
    half -= half % _UNROLL
    return rounded(pairwise_sum(values, start, half) + pairwise_sum(values, start + half, n - half))


def unit(vector: array) -> array:
    """``vector`` scaled to unit length as ``embeddings.base.l2_normalise`` scales a row
    (a zero vector stays zero)."""
    norm = rounded(math.sqrt(pairwise_sum(array("f", map(operator.mul, vector, vector)))))
    divisor = max(norm, rounded(1e-12))
    return array("f", [x / divisor for x in vector])
