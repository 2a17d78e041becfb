"""The percentile definition over KLL sketches, without Spark: the sketches are built by the
same DataSketches library Spark uses, through its Python binding."""

from __future__ import annotations

import numpy as np
import pytest
from datasketches import kll_doubles_sketch

from aggregator.quantiles import KLL_K, percentiles, sketch_k
from apm.query import parse

pytestmark = pytest.mark.unit

LEVELS = [0.01, 1.0, 12.5, 33.3, 50.0, 95.0, 99.0, 99.99]


def _sketch(values: np.ndarray) -> bytes:
    sketch = kll_doubles_sketch(KLL_K)
    for v in values:
        sketch.update(float(v))
    return sketch.serialize()


@pytest.mark.parametrize("n", [1, 2, 3, 10, 999, KLL_K])
def test_numpys_value_bit_for_bit_while_the_sketch_holds_every_value(n):
    values = np.round(np.random.default_rng(n).lognormal(3, 1, n), 2)  # ties included
    got = percentiles(_sketch(values), LEVELS, values.min(), values.max())
    assert got == [float(v) for v in np.percentile(values, LEVELS)]


def test_beyond_k_each_percentile_is_within_half_a_percent_of_rank_and_inside_min_max():
    values = np.random.default_rng(7).lognormal(3, 1.5, 8 * KLL_K)
    ordered = np.sort(values)
    got = percentiles(_sketch(values), LEVELS, values.min(), values.max())
    for p, value in zip(LEVELS, got, strict=True):
        # Held to 0.05 points of rank (measured 0.015; the promise is 0.5).
        low = np.percentile(ordered, max(p - 0.05, 0.0))
        high = np.percentile(ordered, min(p + 0.05, 100.0))
        assert low <= value <= high, (p, low, value, high)
        assert values.min() <= value <= values.max()


@pytest.mark.parametrize("n", [5, 3 * KLL_K])  # exact mode, then estimation mode
def test_the_clamp_to_min_max_holds_even_if_the_sketch_disagrees(n):
    values = np.arange(n, dtype=float)
    assert percentiles(_sketch(values), [1.0, 99.0], n / 2, n / 2 + 0.5) == [n / 2, n / 2 + 0.5]


def test_no_levels_reads_no_sketch():
    assert percentiles(b"not a sketch", [], 0.0, 1.0) == []


HUGE = 1.7e308  # finite, accepted by the ingest; two of them overflow a double's sum or span


@pytest.mark.parametrize(
    "values",
    [
        [-HUGE, HUGE],
        [-HUGE, HUGE, HUGE],
        [-HUGE, -HUGE, HUGE],
        [-HUGE, 0.0, 1.0, HUGE],
        [-1.7976931348623157e308, 1.7976931348623157e308],
    ],
)
def test_finite_values_whose_span_overflows_give_finite_monotone_percentiles(values):
    # Fails before: numpy's a + (b - a) t is NaN at t = 0 and +-inf otherwise, and NaN got
    # through the clamp to [min, max].
    levels = [0.01, 25.0, 33.3, 50.0, 66.7, 75.0, 99.0, 99.99]
    arr = np.array(values)
    got = percentiles(_sketch(arr), levels, arr.min(), arr.max())
    assert all(np.isfinite(got)), got
    assert got == sorted(got)
    assert all(arr.min() <= v <= arr.max() for v in got)


def test_the_middle_of_two_opposite_extremes_is_zero():
    assert percentiles(_sketch(np.array([-HUGE, HUGE])), [50.0], -HUGE, HUGE) == [0.0]
    got = percentiles(_sketch(np.array([-HUGE, -HUGE, HUGE])), [50.0], -HUGE, HUGE)
    assert got == [-HUGE]  # t = 0 at the middle value: exactly it, not NaN


def test_beyond_k_a_span_that_overflows_still_gives_finite_percentiles():
    values = np.concatenate([np.full(KLL_K, -HUGE), np.full(KLL_K, HUGE)])
    got = percentiles(_sketch(values), LEVELS, -HUGE, HUGE)
    assert all(np.isfinite(got)), got
    assert got == sorted(got)


def test_lerp_is_numpys_interpolation_bit_for_bit_where_the_span_is_finite():
    from aggregator.quantiles import lerp

    rng = np.random.default_rng(3)
    for a, b, t in zip(
        rng.normal(0, 1e6, 500), rng.normal(0, 1e6, 500), rng.random(500), strict=True
    ):
        a, b = sorted((float(a), float(b)))
        want = float(np.percentile([a, b], 100 * float(t)))
        assert lerp(a, b, (2 - 1) * (100 * float(t) / 100.0)) == want


@pytest.mark.parametrize(
    ("window", "k"), [("10s", 1024), ("5m", 1024), ("9m", 2048), ("1h", 8192), ("1d", KLL_K)]
)
def test_a_server_series_sketches_at_twice_its_windows_seconds_within_bounds(window, k):
    text = f"FROM * SELECT cpu WINDOW {window} COMPUTE p99"
    assert sketch_k(parse(text)) == KLL_K, "a query's one series keeps KLL_K"
    assert sketch_k(parse(f"{text} BY server")) == k
