"""A fleet-level chart's read at the resolution its range needs (docs/dashboard.md, "Rollup
tiers on charts"): the coarsest tier that still fills the chart's points
(``apm.tier_choice``), with the query's own windows where the tier has no rows yet.

Two edges fall back to the windows, so a chart never shows less than it did before tiers:

- the live edge: the tier's newest, still open bucket is not rolled until it closes, so the
  part of the range after the tier's newest row is read from the windows, and the chart's
  right edge stays as live as the windows are;
- before the tier existed (the rollup started later than the range, or its rows expired):
  the part of the range before the tier's oldest row is read from the windows too (kept for
  the windows' retention only, so a read never spans more windows than a 7 d chart did).

The rows are returned in time order; ``Tiered.label_at`` says what a point at ``x`` shows.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from apm.query import StoredQuery, WindowResult
from apm.tier_choice import choose_tier, query_tiers, resolution_label
from apm.tiers import TIERS

__all__ = ["Read", "Tiered", "read_tiered"]

# (tier or None for the windows, start, end) -> the rows in [start, end), ascending.
Read = Callable[[str | None, float, float], list[WindowResult]]


@dataclass(frozen=True)
class Tiered:
    """A chart's rows and what they are: the tier's rows cover [tier_from, tier_to), the
    query's windows the rest (``tier`` None: windows only)."""

    rows: list[WindowResult]
    window_seconds: int
    tier: str | None = None
    tier_from: float = 0.0
    tier_to: float = 0.0
    wanted: str | None = None  # the tier the range asks for, shown or not

    def label_at(self, x: float) -> str:
        """What the point at ``x`` shows: ``1 min rollup`` or ``10 s windows``."""
        if self.tier is not None and self.tier_from <= x < self.tier_to:
            return resolution_label(self.window_seconds, self.tier)
        return resolution_label(self.window_seconds, None)

    @property
    def steps(self) -> frozenset[int]:
        """The row lengths this read may hold (another length is an older definition's)."""
        return frozenset({self.window_seconds} | ({TIERS[self.tier]} if self.tier else set()))

    def note(self) -> str | None:
        """One line for under the chart when it shows, or would show, a tier (None: the
        range fits the windows, as every chart did before tiers; the hover says so)."""
        windows = resolution_label(self.window_seconds, None)
        if self.wanted is None:
            return None
        wanted = resolution_label(self.window_seconds, self.wanted)
        if self.tier is None:
            return f"showing {windows}: the {wanted} has no rows in this range yet"
        return (
            f"showing the {wanted}; {windows} where it has no rows yet "
            "(its newest bucket until it closes and is rolled up, and any time before it)"
        )


def read_tiered(
    read: Read,
    q: StoredQuery,
    start: float,
    end: float,
    points: int,
    read_past: Read | None = None,
) -> Tiered:
    """``q``'s rows over [start, end) at the coarsest tier that fills ``points``. ``read_past``
    (default ``read``) reads the windows before the tier's oldest row: a chart's cache keeps
    one span a series, the live one, so that older span is read past it."""
    seconds = q.query.window_seconds
    tier = choose_tier(start, end, points, query_tiers(q))
    if tier is None:
        return Tiered(_own(read(None, start, end), seconds), seconds)
    res = TIERS[tier]
    # The tier's row holding ``start`` begins before it; the axis clips what lies left of it.
    rows = read(tier, math.floor(start / res) * res, end)
    if not rows:  # no tier row in the range yet: the windows, as before tiers
        return Tiered(_own(read(None, start, end), seconds), seconds, wanted=tier)
    first, after = rows[0].window_start, rows[-1].window_start + res
    head = _own((read_past or read)(None, start, first), seconds) if first > start else []
    tail = _own(read(None, after, end), seconds) if after < end else []
    return Tiered([*head, *rows, *tail], seconds, tier, first, after, tier)


def _own(windows: list[WindowResult], seconds: int) -> list[WindowResult]:
    """The windows of the query's current length (one stored under an older definition of
    the query would draw a false line)."""
    return [w for w in windows if w.window_seconds == seconds]
