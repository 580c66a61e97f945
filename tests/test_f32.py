"""embeddings/f32.py gives the very bits numpy's float32 loops give: the static model's
query vector (summed and scaled in Python) then equals the same text's vector from a batch."""

from __future__ import annotations

from array import array

import numpy as np
import pytest

from smartcontext.embeddings import f32
from smartcontext.embeddings.base import l2_normalise


@pytest.mark.parametrize("dim", [1, 7, 8, 9, 100, 128, 129, 255, 256, 384, 1000])
def test_unit_equals_l2_normalise(dim):
    rng = np.random.default_rng(dim)
    for scale in (1.0, 1e-3, 40.0):
        for _ in range(20):
            v = (rng.standard_normal(dim) * scale).astype(np.float32)
            got = np.frombuffer(f32.unit(array("f", v.tobytes())), dtype=np.float32)
            assert np.array_equal(got, l2_normalise(v[None, :])[0])
    zero = array("f", bytes(4 * dim))
    assert f32.unit(zero) == zero  # stays zero, as numpy leaves it


@pytest.mark.parametrize("rows", [1, 2, 5, 8, 9, 16, 17, 64, 129, 300])
def test_add_rows_equals_reduceat(rows):
    rng = np.random.default_rng(rows)
    for _ in range(10):
        m = rng.standard_normal((rows, 33)).astype(np.float32)
        got = np.frombuffer(f32.add_rows([tuple(r) for r in m.tolist()], 33), dtype=np.float32)
        assert np.array_equal(got, np.add.reduceat(m, [0], axis=0)[0])
    assert f32.add_rows([], 4) == array("f", [0.0] * 4)
