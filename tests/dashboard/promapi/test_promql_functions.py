"""PromQL's arithmetic on samples against hand-computed values: each ``*_over_time``
function, Prometheus' quantile (interpolation, φ outside [0, 1], NaN) and the binary operators
with Go's float edge cases."""

from __future__ import annotations

import math

import pytest

from dashboard.promapi.promql_functions import binary, compare, over_time, quantile

pytestmark = pytest.mark.unit

VALUES = [4.0, 1.0, 7.0, 2.0]


@pytest.mark.parametrize(
    ("fn", "expected"),
    [
        ("avg", 3.5),
        ("min", 1.0),
        ("max", 7.0),
        ("sum", 14.0),
        ("count", 4.0),
        ("last", 2.0),
        ("stdvar", 5.25),
        ("stddev", math.sqrt(5.25)),
    ],
)
def test_over_time(fn: str, expected: float) -> None:
    assert over_time(fn, VALUES) == expected


def test_min_and_max_skip_nan_unless_every_value_is() -> None:
    assert over_time("min", [math.nan, 3.0, 2.0]) == 2.0
    assert over_time("max", [math.nan, 3.0, 2.0]) == 3.0
    assert math.isnan(over_time("max", [math.nan, math.nan]))


def test_sums_and_means_are_exact_and_keep_infinities() -> None:
    assert over_time("sum", [1e16, 1.0, -1e16]) == 1.0
    assert over_time("avg", [1e16, 1.0, -1e16]) == 1 / 3
    assert over_time("avg", [0.1] * 10) == pytest.approx(0.1, rel=1e-15)
    assert over_time("avg", [1.0, math.inf]) == math.inf
    assert math.isnan(over_time("avg", [math.inf, -math.inf]))


def test_quantile_interpolates_between_ranks() -> None:
    # sorted 1, 2, 4, 7: rank φ(n-1)
    assert quantile(0.0, VALUES) == 1.0
    assert quantile(1.0, VALUES) == 7.0
    assert quantile(0.5, VALUES) == 3.0  # rank 1.5: 2 + (4 - 2) / 2
    assert quantile(0.9, VALUES) == pytest.approx(4 + 0.7 * 3)  # rank 2.7
    assert over_time("quantile", VALUES, 0.25) == pytest.approx(1.75)  # rank 0.75
    assert quantile(-0.1, VALUES) == -math.inf
    assert quantile(1.1, VALUES) == math.inf
    assert math.isnan(quantile(math.nan, VALUES))
    assert quantile(0.3, [5.0]) == 5.0


@pytest.mark.parametrize(
    ("op", "a", "b", "expected"),
    [
        ("+", 1.5, 2.0, 3.5),
        ("-", 1.5, 2.0, -0.5),
        ("*", 1.5, 2.0, 3.0),
        ("/", 3.0, 2.0, 1.5),
        ("/", 3.0, 0.0, math.inf),
        ("/", -3.0, 0.0, -math.inf),
        ("%", 7.0, 3.0, 1.0),
        ("%", -7.0, 3.0, -1.0),  # Go's math.Mod keeps the dividend's sign
        ("^", 2.0, 10.0, 1024.0),
        ("^", 0.0, -1.0, math.inf),
        ("^", 10.0, 400.0, math.inf),
        ("^", -10.0, 401.0, -math.inf),
    ],
)
def test_arithmetic(op: str, a: float, b: float, expected: float) -> None:
    assert binary(op, a, b) == expected


@pytest.mark.parametrize(
    ("op", "a", "b"), [("/", 0.0, 0.0), ("%", 1.0, 0.0), ("%", math.inf, 2.0), ("^", -8.0, 1 / 3)]
)
def test_arithmetic_nan(op: str, a: float, b: float) -> None:
    assert math.isnan(binary(op, a, b))


def test_comparisons() -> None:
    assert compare("<", 1.0, 2.0) and not compare(">", 1.0, 2.0)
    assert compare("<=", 2.0, 2.0) and compare(">=", 2.0, 2.0) and compare("==", 2.0, 2.0)
    assert compare("!=", math.nan, math.nan) and not compare("==", math.nan, math.nan)
