"""PromQL's arithmetic on samples, as Prometheus 2.x computes it: the ``*_over_time`` functions
over the values of a range, the binary operators between two numbers (IEEE floats as Go's:
``x/0`` is ±Inf or NaN, ``%`` is Go's ``math.Mod``, ``^`` its ``math.Pow``), and the
quantile and the variance that ``quantile_over_time``/``stddev_over_time`` share with the
``quantile``/``stddev`` aggregations."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from dashboard.promapi.selector import divide

__all__ = ["OVER_TIME_FUNCTIONS", "binary", "compare", "over_time", "quantile", "stdvar"]


def quantile(phi: float, values: Sequence[float]) -> float:
    """Prometheus' quantile: linear interpolation between the closest ranks; φ < 0 is -Inf,
    φ > 1 is +Inf, NaN is NaN."""
    if not values or math.isnan(phi):
        return math.nan
    if phi < 0:
        return -math.inf
    if phi > 1:
        return math.inf
    ordered = sorted(values, key=lambda v: (v == v, v if v == v else 0.0))  # NaN first, as Go
    rank = phi * (len(ordered) - 1)
    lower = max(0, math.floor(rank))
    upper = min(len(ordered) - 1, lower + 1)
    weight = rank - math.floor(rank)
    return ordered[lower] * (1 - weight) + ordered[upper] * weight


def stdvar(values: Sequence[float]) -> float:
    """The population variance (Prometheus' ``stdvar``): two exact passes, which agree with
    Prometheus' running (Welford) form to far better than 1e-9 on finite values."""
    if any(math.isinf(v) or math.isnan(v) for v in values):
        return math.nan
    mean = math.fsum(values) / len(values)
    return math.fsum((v - mean) ** 2 for v in values) / len(values)


def _avg(values: Sequence[float]) -> float:
    if any(math.isinf(v) for v in values):
        return sum(values) / len(values)  # ±Inf, or NaN when both signs (as Prometheus)
    return math.fsum(values) / len(values)


def _min(values: Sequence[float]) -> float:
    out = values[0]
    for v in values[1:]:
        if v < out or math.isnan(out):  # NaN only when every value is NaN
            out = v
    return out


def _max(values: Sequence[float]) -> float:
    out = values[0]
    for v in values[1:]:
        if v > out or math.isnan(out):
            out = v
    return out


def _sum(values: Sequence[float]) -> float:
    if any(math.isinf(v) or math.isnan(v) for v in values):
        return sum(values)
    return math.fsum(values)


OVER_TIME_FUNCTIONS: dict[str, Callable[[Sequence[float]], float]] = {
    "avg": _avg,
    "min": _min,
    "max": _max,
    "sum": _sum,
    "count": lambda values: float(len(values)),
    "last": lambda values: values[-1],
    "stdvar": stdvar,
    "stddev": lambda values: math.sqrt(stdvar(values)),
}


def over_time(fn: str, values: Sequence[float], param: float | None = None) -> float:
    """``<fn>_over_time`` of a non-empty range's values, oldest first."""
    if fn == "quantile":
        return quantile(math.nan if param is None else param, values)
    return OVER_TIME_FUNCTIONS[fn](values)


def _mod(a: float, b: float) -> float:
    try:
        return math.fmod(a, b)
    except ValueError:  # Go's math.Mod: NaN for x % 0 and ±Inf % y
        return math.nan


def _pow(a: float, b: float) -> float:
    try:
        return math.pow(a, b)
    except OverflowError:
        return math.inf if a > 0 or b % 2 == 0 else -math.inf
    except ValueError:  # 0 ^ negative is +Inf in Go; a negative base to a fraction is NaN
        return math.inf if a == 0 else math.nan


_ARITHMETIC: dict[str, Callable[[float, float], float]] = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "/": divide,
    "%": _mod,
    "^": _pow,
}
_COMPARE: dict[str, Callable[[float, float], bool]] = {
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    "<": lambda a, b: a < b,
    ">": lambda a, b: a > b,
    "<=": lambda a, b: a <= b,
    ">=": lambda a, b: a >= b,
}


def binary(op: str, a: float, b: float) -> float:
    """An arithmetic operator's value."""
    return _ARITHMETIC[op](a, b)


def compare(op: str, a: float, b: float) -> bool:
    """A comparison operator's truth (NaN compares false, but ``!=`` true, as in Go)."""
    return _COMPARE[op](a, b)
