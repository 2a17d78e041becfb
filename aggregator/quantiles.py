"""Percentiles of a window from its KLL sketch (the bytes Spark's ``kll_sketch_agg_double``
writes, read here by the DataSketches Python binding, the same library's C++ side). Since v4
the job computes them in the executors with the same rule (``io.apm.aggregator.Percentiles``,
evaluate.py); this module is the rule's reference, which tests/aggregator/test_quantiles.py
holds the JVM to, and ``levels`` says which percentiles a query reads.

Definition: numpy's default, ``method="linear"`` (Hyndman & Fan type 7). While the sketch
holds every value (n <= ``KLL_K``, its exact mode) the result *is* ``np.percentile`` of
the window's distinct values. Beyond, the two order statistics around ``r = (n - 1) p / 100``
are read at the middle of their rank intervals and interpolated as numpy does; each is off
by the sketch's rank error, measured at 0.015% and bounded by DataSketches near
2.3 / k^0.97 = 0.03% for k = 10,000 (docs/aggregator.md), inside the promised 0.5%.
Every value is clamped to the window's exact [min, max].

Finite in, finite out: when two neighbours are so far apart that their difference overflows a
double (``-1.7e308`` and ``1.7e308``), numpy's ``a + (b - a) t`` gives inf, or NaN at
``t = 0``. Then the same point is computed as ``a (1 - t) + b t``, whose terms cannot
overflow; where the difference is finite the result is numpy's, bit for bit.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from apm.functions import Summary, compute, needs
from apm.query import Query

__all__ = [
    "KLL_K",
    "SERVER_KLL_MIN_K",
    "SketchPercentiles",
    "lerp",
    "levels",
    "percentiles",
    "sketch_k",
]

# The k of every KLL sketch the aggregator builds (plan.py, partials.py; here, beside the
# code that reads the sketches, so that those two need not import each other). A KLL sketch
# holds every value until it has seen k of them, so percentiles are exact up to k samples a
# window; beyond, its rank error is ~0.02% (measured; DataSketches bounds it
# near 2.3/k^0.97), far inside the 0.5% the platform promises. Sketch size: <= 80 KB exact,
# ~160 KB at 50k samples.
KLL_K = 10_000
# A BY server query keeps a sketch per server and window: 10,000 servers' worth of 80 KB heap
# sketches (KLL allocates k slots whatever it holds) made its batches 10-50x slower. Its k is
# ``sketch_k``: twice the samples a window holds at an agent's 1 s snapshots, rounded up to a
# power of two, at least this and at most KLL_K. 1,024 keeps the promised 0.5% beyond k
# (~0.27% by DataSketches' bound) and is 8 KB.
SERVER_KLL_MIN_K = 1024


def sketch_k(query: Query) -> int:
    """The k of every sketch of ``query``'s series: KLL_K, or for a ``BY server`` query the
    per-server k above (exact up to k samples of one server in one window, within the rank
    error beyond). Every partial of a series must carry the same k: the window's merge adopts
    the first one's (plan.py)."""
    if not query.by_server:
        return KLL_K
    wanted = 1 << max(0, (2 * query.window_seconds - 1).bit_length())
    return max(SERVER_KLL_MIN_K, min(KLL_K, wanted))


def levels(query: Query) -> list[float]:
    """The percentile levels ``query``'s functions read from a window's sketch, in the order
    the JVM's ``io.apm.aggregator.Percentiles`` returns them (plan.query_row hands it these;
    evaluate.summary reads them back). Found by asking each function that needs the sketch
    for its value from a summary that records the levels it is asked for: a catalogue entry
    (``median``, ``iqr``) may read levels of its own, which it must not choose by the
    window's values (tests/apm/test_functions.py checks the catalogue for that)."""
    asked: set[float] = set()

    def record(p: float) -> float:
        asked.add(float(p))
        return 0.0

    probe = Summary(n=1, sum=0.0, min=0.0, max=0.0, percentile=record)
    for f in query.functions:
        if "sketch" in needs([f]):
            compute(f, probe)
    return sorted(asked)


def lerp(a: float, b: float, t: float) -> float:
    """numpy's linear interpolation between neighbours ``a <= b`` at ``t`` in [0, 1], and a
    finite value whenever ``a`` and ``b`` are finite (module docstring)."""
    span = b - a
    if math.isfinite(span):
        return b - span * (1.0 - t) if t >= 0.5 else a + span * t
    if t == 0.0:
        return a
    return a * (1.0 - t) + b * t


class SketchPercentiles:
    """``percentile(p)`` (0 < p < 100) of the values summarised by ``sketch``, clamped to
    [low, high]: the reader behind ``apm.functions.Summary.percentile``. The sketch is
    deserialised on the first call only, so a window whose query reads no percentile never
    reads its sketch, and one that reads several reads it once."""

    def __init__(self, sketch: bytes | None, low: float, high: float) -> None:
        self._raw, self._low, self._high = sketch, float(low), float(high)
        self._kll: Any = None
        self._values: np.ndarray | None = None  # every value, in exact mode

    def _load(self) -> None:
        from datasketches import kll_doubles_sketch

        if self._raw is None:
            raise ValueError("this window's sketch was not kept (its query reads none)")
        kll = kll_doubles_sketch.deserialize(bytes(self._raw))
        if not kll.is_estimation_mode():
            self._values = np.fromiter(
                (item for item, _weight in kll), dtype=np.float64, count=kll.n
            )
        self._kll = kll

    def __call__(self, p: float) -> float:
        if self._kll is None:
            self._load()
        if self._values is not None:
            values = self._values
            if math.isfinite(self._high - self._low):  # every neighbours' span is finite
                value = float(np.percentile(values, p))
            else:
                ordered = np.sort(values)
                r = (ordered.size - 1) * (p / 100.0)  # numpy's virtual index for "linear"
                i = int(np.floor(r))
                b = ordered[min(i + 1, ordered.size - 1)]
                value = lerp(float(ordered[i]), float(b), r - i)
        else:
            kll = self._kll
            n = kll.n
            r = (n - 1) * p / 100.0
            i = int(np.floor(r))
            a = kll.get_quantile((i + 0.5) / n, inclusive=True)
            b = kll.get_quantile((min(i + 1, n - 1) + 0.5) / n, inclusive=True)
            value = lerp(a, b, r - i)
        return float(min(max(value, self._low), self._high))


def percentiles(sketch: bytes, levels: Sequence[float], low: float, high: float) -> list[float]:
    """The percentiles (0 < p < 100) of the values summarised by ``sketch``."""
    read = SketchPercentiles(sketch, low, high)
    return [read(p) for p in levels]
