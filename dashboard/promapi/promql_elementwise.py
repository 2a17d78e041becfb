"""PromQL's functions of one sample: ``abs``, ``round``, ``clamp``, ``clamp_min`` and
``clamp_max``, as Prometheus computes them (Go's ``math.Max``/``math.Min``: NaN wins over any
number; ``round`` rounds half up to a multiple of ``to_nearest``). Each drops the metric name;
``clamp`` with ``max < min`` is an empty vector, as in Prometheus."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from dashboard.promapi.promql_rows import Row

__all__ = ["ELEMENTWISE", "PARAMS", "apply", "elementwise"]

# Each function's number of scalar parameters after the vector: (required, optional).
PARAMS: dict[str, tuple[int, int]] = {
    "abs": (0, 0),
    "round": (0, 1),
    "clamp": (2, 0),
    "clamp_min": (1, 0),
    "clamp_max": (1, 0),
}
ELEMENTWISE = tuple(PARAMS)


def _go_max(a: float, b: float) -> float:
    if math.inf in (a, b):
        return math.inf
    if math.isnan(a) or math.isnan(b):
        return math.nan
    return max(a, b)


def _go_min(a: float, b: float) -> float:
    if -math.inf in (a, b):
        return -math.inf
    if math.isnan(a) or math.isnan(b):
        return math.nan
    return min(a, b)


def _round(v: float, to_nearest: float) -> float:
    inverse = 1.0 / to_nearest if to_nearest != 0 else math.inf  # Go: 1/0 is +Inf
    scaled = v * inverse
    if not math.isfinite(scaled):  # Go's Floor keeps ±Inf and NaN; Python's raises
        return scaled / inverse
    return math.floor(scaled + 0.5) / inverse


def elementwise(fn: str, params: Sequence[float]) -> Callable[[float], float]:
    """The function ``fn`` with its scalar parameters bound, as a map of one value."""
    if fn == "abs":
        return abs
    if fn == "round":
        to_nearest = params[0] if params else 1.0
        return lambda v: _round(v, to_nearest)
    if fn == "clamp":
        low, high = params
        return lambda v: _go_max(low, _go_min(high, v))
    if fn == "clamp_min":
        return lambda v: _go_max(params[0], v)
    if fn == "clamp_max":
        return lambda v: _go_min(params[0], v)
    raise ValueError(f"not an element-wise function: {fn}")


def apply(fn: str, params: Sequence[float], rows: Sequence[Row]) -> list[Row]:
    """``fn`` of every point of ``rows``, the metric name dropped."""
    if fn == "clamp" and params[1] < params[0]:
        return []
    f = elementwise(fn, params)
    return [
        (
            {k: x for k, x in labels.items() if k != "__name__"},
            [None if v is None else f(v) for v in values],
        )
        for labels, values in rows
    ]
