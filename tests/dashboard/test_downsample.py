"""Gaps and downsampling: pure functions, checked on examples and with hypothesis."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dashboard.downsample import Series, downsample_minmax, with_gaps

pytestmark = pytest.mark.unit


def test_missing_windows_become_one_gap_each() -> None:
    s = with_gaps([0, 10, 20, 50, 60, 100], [1, 2, 3, 4, 5, 6], 10)
    assert s.y == [1, 2, 3, None, 4, 5, None, 6]
    assert s.x[3] == 30 and s.x[6] == 70
    assert s.points == 6


def test_contiguous_windows_get_no_gap_and_none_values_stay_gaps() -> None:
    assert with_gaps([0, 10, 20], [1, None, 3], 10).y == [1, None, 3]
    assert with_gaps([], [], 10) == Series([], [])


def test_with_gaps_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError, match="step"):
        with_gaps([0], [1], 0)
    with pytest.raises(ValueError, match="length"):
        with_gaps([0, 1], [1], 1)


def test_small_series_are_untouched() -> None:
    s = Series([0, 1, 2], [3.0, 1.0, 2.0])
    assert downsample_minmax(s, 10) is s


def test_a_single_spike_survives_downsampling() -> None:
    n = 8640
    ys: list[float | None] = [1.0] * n
    ys[4321] = 99.0
    ys[77] = -5.0
    out = downsample_minmax(Series([float(i * 10) for i in range(n)], ys), 1000)
    assert out.points <= 1000
    assert max(v for v in out.y if v is not None) == 99.0
    assert min(v for v in out.y if v is not None) == -5.0


def test_gaps_survive_downsampling() -> None:
    xs = [float(i) for i in range(1000)]
    s = with_gaps([x for x in xs if not 400 <= x < 450], [1.0] * 950, 1)
    out = downsample_minmax(s, 100)
    assert out.y.count(None) == 1
    gap = out.y.index(None)
    assert out.x[gap - 1] < 400 and out.x[gap + 1] >= 450


def test_max_points_must_allow_two() -> None:
    with pytest.raises(ValueError):
        downsample_minmax(Series([0.0], [1.0]), 1)


@given(
    st.lists(st.one_of(st.none(), st.floats(-1e6, 1e6)), min_size=1, max_size=3000),
    st.integers(2, 500),
)
def test_properties(values: list[float | None], max_points: int) -> None:
    xs = [float(i) for i in range(len(values))]
    out = downsample_minmax(Series(xs, values), max_points)
    drawn = [v for v in out.y if v is not None]
    real = [v for v in values if v is not None]
    assert out.x == sorted(out.x)
    assert set(drawn) <= set(real)
    if real:
        assert max(drawn) == max(real) and min(drawn) == min(real)
    # Only a series with gaps may exceed the budget (each segment keeps its own extremes).
    if None not in values:
        assert len(out.x) <= max_points
