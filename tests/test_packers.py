"""The packer family: one greedy fill under a token budget, priced by each profile."""

from __future__ import annotations

from smartcontext.query.packers import PASS, fill_by_size, greedy_fill


def test_greedy_fill_takes_what_fits_best_first_and_stops_when_spent():
    taken: list[str] = []
    sizes = {"a": 5, "b": 8, "c": 3, "d": 2, "e": 1}

    def offer(name: str, room: int):
        if sizes[name] > room:
            return None
        taken.append(name)
        return sizes[name]

    used = greedy_fill(["a", "b", "c", "d", "e"], 10, offer)
    assert taken == ["a", "c", "d"] and used == 10  # b did not fit; e never asked: the budget is spent


def test_greedy_fill_passes_over_without_a_miss_and_ends_after_a_run_of_misses():
    seen: list[int] = []

    def offer(n: int, room: int):
        seen.append(n)
        if n % 2:
            return PASS  # a duplicate: neither taken nor a miss
        return None  # never fits

    assert greedy_fill(range(20), 100, offer, max_misses=3) == 0
    assert seen == [0, 1, 2, 3, 4]  # misses 0, 2, 4: the third ends the walk; 1 and 3 did not count


def test_fill_by_size_marks_positions_and_keeps_what_was_chosen():
    chosen = [False, True, False, False]
    sizes = [4, 3, 5, 2]
    used = fill_by_size([2, 1, 0, 3], sizes, 10, chosen, used=3)
    assert chosen == [False, True, True, True] and used == 10  # 0 (4) did not fit after 2 (5)
    assert fill_by_size([0], sizes, 10, chosen, used=10) == 10 and not chosen[0]  # spent already


def test_fill_by_size_ending_early_chooses_what_offering_every_candidate_would():
    """The walk ends once the room left is under the smallest size: the same positions as
    offering each candidate in turn (random sizes, orders, budgets and chosen ones)."""
    import random

    rng = random.Random(5)
    for _ in range(300):
        n = rng.randint(0, 40)
        sizes = [rng.randint(1, 30) for _ in range(n)]
        order = rng.sample(range(n), n)
        chosen = [rng.random() < 0.1 for _ in range(n)]
        budget = rng.randint(0, 300)
        start = sum(s for s, c in zip(sizes, chosen) if c)
        expect, used = list(chosen), start
        for i in order:  # the plain rule: take what fits, best first, until spent
            if used >= budget:
                break
            if not expect[i] and sizes[i] <= budget - used:
                expect[i] = True
                used += sizes[i]
        got = list(chosen)
        assert fill_by_size(order, sizes, budget, got, start) == used and got == expect
