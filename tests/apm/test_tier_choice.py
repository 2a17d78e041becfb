"""Which resolution a read shows (apm/tier_choice.py): the coarsest tier that still fills the
points asked for, for the ranges a user picks and, by hypothesis, for any range."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from apm.query import StoredQuery, parse
from apm.tier_choice import choose_tier, query_tiers, resolution_label
from apm.tiers import TIERS

pytestmark = pytest.mark.unit

HOUR, DAY = 3600, 86_400
BOTH = ["1m", "1h"]


@pytest.mark.parametrize(
    ("span", "points", "tiers", "expected"),
    [
        (HOUR, 600, BOTH, None),  # 60 one-minute rows would not fill 600 points
        (6 * HOUR, 600, BOTH, None),  # 360 < 600
        (DAY, 600, BOTH, "1m"),  # 1,440 rows; 24 hourly rows are too few
        (7 * DAY, 600, BOTH, "1m"),  # 168 hourly rows are too few
        (30 * DAY, 600, BOTH, "1h"),  # 720 hourly rows
        (30 * DAY, 600, ["1m"], "1m"),  # a query without the 1 h tier
        (30 * DAY, 600, [], None),  # a BY server query: windows only
        (10 * HOUR, 600, BOTH, "1m"),  # exactly 600 rows fill 600 points
    ],
)
def test_the_ranges_a_user_picks(span: int, points: int, tiers: list[str], expected: str) -> None:
    assert choose_tier(1_000_000.0, 1_000_000.0 + span, points, tiers) == expected


def test_bad_input_is_refused_with_a_reason() -> None:
    with pytest.raises(ValueError, match="points must be at least 1"):
        choose_tier(0, DAY, 0, BOTH)
    with pytest.raises(ValueError, match="tiers must be among 1m, 1h"):
        choose_tier(0, DAY, 600, ["5m"])


@given(
    start=st.floats(0, 4e9, allow_nan=False),
    span=st.floats(0, 800 * DAY, allow_nan=False),
    points=st.integers(1, 20_000),
    tiers=st.sampled_from([[], ["1m"], ["1h"], BOTH]),
)
def test_the_choice_is_the_coarsest_that_fills_the_points(
    start: float, span: float, points: int, tiers: list[str]
) -> None:
    end = start + span
    chosen = choose_tier(start, end, points, tiers)
    if chosen is not None:
        assert chosen in tiers
        assert (end - start) / TIERS[chosen] >= points  # it fills the points...
    for t in tiers:
        if (end - start) / TIERS[t] >= points:  # ...and no coarser tier would
            assert chosen is not None and TIERS[chosen] >= TIERS[t]


def test_which_queries_have_tiers() -> None:
    def q(text: str) -> StoredQuery:
        return StoredQuery("q", parse(text))

    assert query_tiers(q("FROM * SELECT cpu.util WINDOW 10s COMPUTE avg, p99")) == BOTH
    assert query_tiers(q("FROM * SELECT cpu.util WINDOW 1m COMPUTE avg")) == ["1h"]
    assert query_tiers(q("FROM * SELECT cpu.util WINDOW 10s COMPUTE avg BY server")) == []


def test_the_labels_a_user_reads() -> None:
    assert resolution_label(10, None) == "10 s windows"
    assert resolution_label(60, None) == "1 min windows"
    assert resolution_label(10, "1m") == "1 min rollup"
    assert resolution_label(10, "1h") == "1 h rollup"
