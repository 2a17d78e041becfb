"""Percentiles of a window from its KLL sketch (the bytes Spark's ``kll_sketch_agg_double``
writes, read here by the DataSketches Python binding, the same library's C++ side).

Definition: numpy's default, ``method="linear"`` (Hyndman & Fan type 7). While the sketch
holds every value (n <= ``plan.KLL_K``, its exact mode) the result *is* ``np.percentile`` of
the window's distinct values. Beyond, the two order statistics around ``r = (n - 1) p / 100``
are read at the middle of their rank intervals and interpolated as numpy does; each is off
by the sketch's rank error, measured at 0.015% and bounded by DataSketches near
2.3 / k^0.97 = 0.03% for k = 10,000 (docs/aggregator.md), inside the promised 0.5%.
Every value is clamped to the window's exact [min, max].
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["percentiles"]


def percentiles(sketch: bytes, levels: Sequence[float], low: float, high: float) -> list[float]:
    """The percentiles (0 < p < 100) of the values summarised by ``sketch``."""
    from datasketches import kll_doubles_sketch

    if not levels:
        return []
    kll = kll_doubles_sketch.deserialize(bytes(sketch))
    n = kll.n
    if not kll.is_estimation_mode():
        values = np.fromiter((item for item, _weight in kll), dtype=np.float64, count=n)
        exact = np.percentile(values, list(levels))
        return [float(v) for v in np.clip(exact, low, high)]
    out = []
    for p in levels:
        r = (n - 1) * p / 100.0
        i = int(np.floor(r))
        a = kll.get_quantile((i + 0.5) / n, inclusive=True)
        b = kll.get_quantile((min(i + 1, n - 1) + 0.5) / n, inclusive=True)
        t = r - i
        value = b - (b - a) * (1.0 - t) if t >= 0.5 else a + (b - a) * t
        out.append(float(min(max(value, low), high)))
    return out
