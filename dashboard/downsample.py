"""Turning stored windows into chart series: gaps made explicit, then downsampled to the pixels.

Missing windows are a signal, so they are drawn as breaks in the line (a ``None`` point, with
Plotly's ``connectgaps`` off), never interpolated. Downsampling keeps each pixel column's
minimum and maximum, so a one-window spike survives a 24 h view. Both are pure functions.
"""

from __future__ import annotations

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


def with_gaps(
    x: Sequence[float],
    y: Sequence[float | None],
    step: float,
    lengths: Sequence[float] | None = None,
) -> Series:
    """Inserts one ``None`` after every run of consecutive windows that is followed by a missing
    one. ``x`` must be ascending; ``step`` is the window length in seconds, or ``lengths`` each
    window's own (a chart mixing a rollup tier's rows with windows). A window whose value
    is missing (``None``) is itself a gap and is kept as such."""
    if step <= 0:
        raise ValueError(f"step must be positive, got {step}")
    if len(x) != len(y) or (lengths is not None and len(lengths) != len(x)):
        raise ValueError(f"x, y and lengths differ in length: {len(x)} != {len(y)}")
    out_x: list[float] = []
    out_y: list[float | None] = []
    prev: float | None = None
    prev_step = step
    for i, (xi, yi) in enumerate(zip(x, y, strict=True)):
        # Half a step of slack absorbs float noise in window starts without hiding a gap.
        if prev is not None and xi - prev > prev_step * 1.5 and out_y and out_y[-1] is not None:
            out_x.append(prev + prev_step)
            out_y.append(None)
        out_x.append(xi)
        out_y.append(yi)
        prev = xi
        prev_step = step if lengths is None else lengths[i]
    return Series(out_x, out_y)


def _segments(series: Series) -> list[tuple[int, int]]:
    """[start, end) index ranges of the unbroken runs (no None/NaN inside)."""
    runs: list[tuple[int, int]] = []
    start = None
    for i, v in enumerate(series.y):
        broken = v is None or v != v  # NaN != NaN
        if broken and start is not None:
            runs.append((start, i))
            start = None
        elif not broken and start is None:
            start = i
    if start is not None:
        runs.append((start, len(series.y)))
    return runs


def downsample_minmax(series: Series, max_points: int) -> Series:
    """At most about ``max_points`` points: the time range is cut into ``max_points // 2``
    columns and each column keeps its lowest and highest point, in time order. Gaps stay gaps:
    each unbroken segment is reduced on its own and segments stay separated by ``None``.
    A series already small enough is returned unchanged."""
    if max_points < 2:
        raise ValueError(f"max_points must be at least 2, got {max_points}")
    if series.points <= max_points:
        return series
    xs, ys = series.x, series.y
    runs = _segments(series)
    lo, hi = xs[runs[0][0]], xs[runs[-1][1] - 1]
    columns = max(1, max_points // 2)
    scale = columns / ((hi - lo) or 1.0)
    last = columns - 1
    out_x: list[float] = []
    out_y: list[float | None] = []
    for n, (start, end) in enumerate(runs):
        if n:
            out_x.append(xs[start])
            out_y.append(None)
        # The last column is closed on the right, so the final point joins it.
        cols = [min(last, int((x - lo) * scale)) for x in xs[start:end]]
        first = start
        for i in range(start + 1, end + 1):
            if i == end or cols[i - start] != cols[first - start]:
                _emit(xs, ys, first, i, out_x, out_y)
                first = i
    return Series(out_x, out_y)


def _emit(
    xs: list[float],
    ys: list[float | None],
    start: int,
    end: int,
    out_x: list[float],
    out_y: list[float | None],
) -> None:
    if end - start == 1:
        out_x.append(xs[start])
        out_y.append(ys[start])
        return
    window = range(start, end)
    low = min(window, key=ys.__getitem__)  # type: ignore[arg-type]
    high = max(window, key=ys.__getitem__)  # type: ignore[arg-type]
    for i in sorted({low, high}):
        out_x.append(xs[i])
        out_y.append(ys[i])
