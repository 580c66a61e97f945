"""retrieval/matrix.py directly: slots, growth, compaction and exact top-k."""

from __future__ import annotations

import numpy as np
import pytest

from smartcontext.retrieval.matrix import DOT_BLOCK, MIN_CAPACITY, VectorMatrix, top_k


def unit_rows(n: int, dim: int, seed: int = 0) -> np.ndarray:
    m = np.random.default_rng(seed).normal(size=(n, dim)).astype(np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def test_add_remove_reuses_slots_and_checks_dimensions():
    vm = VectorMatrix()
    rows = vm.add(unit_rows(5, 8))
    assert rows.tolist() == [0, 1, 2, 3, 4] and vm.dim == 8 and len(vm) == 5
    vm.remove([1, 3])
    assert len(vm) == 3 and vm.alive().tolist() == [True, False, True, False, True]
    again = vm.add(unit_rows(3, 8, seed=1))
    assert sorted(again.tolist()) == [1, 3, 5] and vm.n_rows == 6  # two freed slots, one new row
    assert vm.add(np.ones(8)).tolist() == [6]  # a single vector is one row
    with pytest.raises(ValueError, match="8"):
        vm.add(np.ones((1, 4)))
    vm.remove([99, 1, 1])  # unknown rows and repeats are ignored
    assert vm.free_rows == 1


def test_growth_fit_and_compaction_report_where_rows_went():
    vm = VectorMatrix(4)
    data = unit_rows(600, 4)
    for start in range(0, 600, 100):
        vm.add(data[start : start + 100])
    assert vm.capacity == 1024  # 256, then doubled twice
    vm.fit()
    assert vm.capacity == max(MIN_CAPACITY, 600 + 600 // 8)
    vm.remove(np.arange(0, 500))
    moved = vm.compact()
    assert moved is not None and moved.tolist() == list(range(500, 600))
    assert vm.n_rows == 100 and vm.free_rows == 0 and vm.alive().all()
    assert np.allclose(vm.matrix(), data[500:])
    assert vm.capacity < 600
    vm.remove([0])
    assert vm.compact() is None  # one free row is not worth moving 99


def test_dot_is_exact_across_blocks_and_top_k_respects_masks():
    n = DOT_BLOCK * 2 + 17
    data = unit_rows(n, 16, seed=3)
    vm = VectorMatrix()
    vm.add(data)
    q = data[1234]
    assert np.allclose(vm.dot(q), data @ q, atol=1e-5)
    rows, scores = vm.top_k(q, 3)
    assert rows[0] == 1234 and scores[0] == pytest.approx(1.0, abs=1e-5)
    assert list(scores) == sorted(scores, reverse=True)
    allowed = np.zeros(n, dtype=bool)
    allowed[[5, 6, 7]] = True
    rows, _ = vm.top_k(q, 10, allowed)
    assert sorted(rows.tolist()) == [5, 6, 7]  # fewer than k when the mask allows fewer
    vm.remove([1234])
    assert 1234 not in vm.top_k(q, 5)[0].tolist()  # dead rows never come back


def test_top_k_of_scores_orders_ties_by_index_and_skips_minus_infinity():
    scores = np.array([0.5, 0.9, 0.5, -np.inf, 0.9, 0.1], dtype=np.float32)
    rows, top = top_k(scores, 4)
    assert rows.tolist() == [1, 4, 0, 2] and top.tolist() == pytest.approx([0.9, 0.9, 0.5, 0.5])
    assert top_k(scores, 10)[0].tolist() == [1, 4, 0, 2, 5]
    assert top_k(scores, 0)[0].size == 0 and top_k(np.full(3, -np.inf), 2)[0].size == 0
