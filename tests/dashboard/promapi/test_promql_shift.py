"""``offset`` and ``@``: the times a shifted selector is evaluated at, and its answers put back
at the query's steps (hand-computed)."""

from __future__ import annotations

import pytest

from dashboard.promapi.promql_shift import moved, shifted, spread
from dashboard.promapi.promql_tree import NO_SHIFT, Shift

pytestmark = pytest.mark.unit

STEPS = range(100_000, 160_001, 30_000)  # 100, 130, 160 s
BOUNDS = (100_000, 170_000)  # the query's end is past its last step


def test_offset_moves_every_step_earlier_or_later() -> None:
    assert shifted(NO_SHIFT, STEPS, BOUNDS) == STEPS
    assert list(shifted(Shift(60_000), STEPS, BOUNDS)) == [40_000, 70_000, 100_000]
    assert list(shifted(Shift(-1), STEPS, BOUNDS)) == [100_001, 130_001, 160_001]


def test_at_is_one_time_the_querys_start_or_end_or_a_given_one() -> None:
    assert list(shifted(Shift(0, 5_000), STEPS, BOUNDS)) == [5_000]
    assert list(shifted(Shift(0, "start"), STEPS, BOUNDS)) == [100_000]
    assert list(shifted(Shift(10_000, "end"), STEPS, BOUNDS)) == [160_000]  # 170 s - 10 s


def test_an_at_value_is_every_steps() -> None:
    rows = [({"id": "q"}, [4.0])]
    assert spread(rows, range(5_000, 5_001), 3) == [({"id": "q"}, [4.0, 4.0, 4.0])]
    assert spread(rows, range(1, 2), 1) == rows


def test_a_bare_selectors_points_go_back_to_the_steps() -> None:
    read = [({"id": "q"}, [(40_000, 1.0), (100_000, 3.0)]), ({"id": "r"}, [])]
    assert moved(read, Shift(60_000), STEPS) == [
        ({"id": "q"}, [(100_000, 1.0), (160_000, 3.0)]),
        ({"id": "r"}, []),
    ]
    at = [({"id": "q"}, [(5_000, 2.0)]), ({"id": "r"}, [])]  # r has no point at the @ time
    assert moved(at, Shift(0, 5_000), STEPS) == [
        ({"id": "q"}, [(100_000, 2.0), (130_000, 2.0), (160_000, 2.0)])
    ]
