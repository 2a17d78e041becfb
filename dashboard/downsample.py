"""Turning stored windows into chart series: gaps made explicit, then downsampled to the pixels.

Missing windows are a signal, so they are drawn as breaks in the line (a ``None`` point, with
Plotly's ``connectgaps`` off), never interpolated. Downsampling keeps each pixel column's
minimum and maximum, so a one-window spike survives a 24 h view. Both are pure functions.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

__all__ = ["Series", "downsample_minmax", "with_gaps"]


class Series(NamedTuple):
    """One line of a chart: x in epoch seconds, y with ``None`` where the line must break."""

    x: list[float]
    y: list[float | None]

    @property
    def points(self) -> int:
        """The drawn points (gap markers excluded)."""
        return sum(1 for v in self.y if v is not None)


def with_gaps(x: Sequence[float], y: Sequence[float | None], step: float) -> Series:
    """Inserts one ``None`` after every run of consecutive windows that is followed by a missing
    one. ``x`` must be ascending; ``step`` is the window length in seconds. A window whose value
    is missing (``None``) is itself a gap and is kept as such."""
    if step <= 0:
        raise ValueError(f"step must be positive, got {step}")
    if len(x) != len(y):
        raise ValueError(f"x and y differ in length: {len(x)} != {len(y)}")
    out_x: list[float] = []
    out_y: list[float | None] = []
    prev: float | None = None
    for xi, yi in zip(x, y, strict=True):
        # Half a step of slack absorbs float noise in window starts without hiding a gap.
        if prev is not None and xi - prev > step * 1.5 and out_y and out_y[-1] is not None:
            out_x.append(prev + step)
            out_y.append(None)
        out_x.append(xi)
        out_y.append(yi)
        prev = xi
    return Series(out_x, out_y)


def _segments(series: Series) -> list[list[tuple[float, float]]]:
    segments: list[list[tuple[float, float]]] = [[]]
    for xi, yi in zip(series.x, series.y, strict=True):
        if yi is None or (isinstance(yi, float) and math.isnan(yi)):
            if segments[-1]:
                segments.append([])
        else:
            segments[-1].append((xi, yi))
    return [s for s in segments if s]


def downsample_minmax(series: Series, max_points: int) -> Series:
    """At most about ``max_points`` points: the time range is cut into ``max_points // 2``
    columns and each column keeps its lowest and highest point, in time order. Gaps stay gaps:
    each unbroken segment is reduced on its own and segments stay separated by ``None``.
    A series already small enough is returned unchanged."""
    if max_points < 2:
        raise ValueError(f"max_points must be at least 2, got {max_points}")
    if series.points <= max_points:
        return series
    segments = _segments(series)
    lo = segments[0][0][0]
    hi = segments[-1][-1][0]
    columns = max(1, max_points // 2)
    width = (hi - lo) / columns or 1.0
    out_x: list[float] = []
    out_y: list[float | None] = []
    for n, segment in enumerate(segments):
        if n:
            out_x.append(segment[0][0])
            out_y.append(None)
        column: list[tuple[float, float]] = []
        current = None
        for point in segment:
            # The last column is closed on the right, so the final point joins it.
            index = min(columns - 1, int((point[0] - lo) / width))
            if index != current and column:
                _emit(column, out_x, out_y)
                column = []
            current = index
            column.append(point)
        _emit(column, out_x, out_y)
    return Series(out_x, out_y)


def _emit(column: list[tuple[float, float]], out_x: list[float], out_y: list[float | None]
          ) -> None:
    low = min(column, key=lambda p: p[1])
    high = max(column, key=lambda p: p[1])
    for px, py in sorted({low, high}):
        out_x.append(px)
        out_y.append(py)
