"""Which resolution a read shows (docs/storage.md, "Rollup tiers"): the coarsest tier whose
rows still give at least the points a chart (or an API caller) asks for. One pure function,
shared by every reader that picks a tier."""

from __future__ import annotations

from collections.abc import Iterable

from apm.query import StoredQuery
from apm.tiers import TIERS, tiers_of

__all__ = ["choose_tier", "query_tiers", "resolution_label"]


def query_tiers(q: StoredQuery) -> list[str]:
    """The tiers the rollup writes for ``q``: none for a ``BY server`` query (per-server
    series have no tiers yet), else those its window tiles (``apm.tiers.tiers_of``)."""
    return [] if q.query.by_server else tiers_of(q.query.window_seconds)


def choose_tier(start: float, end: float, points: int, tiers: Iterable[str]) -> str | None:
    """The coarsest of ``tiers`` whose rows over [start, end) number at least ``points``, or
    None for the query's own windows (no tier is coarse enough and still fills the points).
    With 600 points: 1 h reads the windows, 24 h the 1 min tier, 30 d the 1 h tier."""
    if points < 1:
        raise ValueError(f"points must be at least 1, got {points}")
    known = list(tiers)
    if any(t not in TIERS for t in known):
        raise ValueError(f"tiers must be among {', '.join(TIERS)}, got {known!r}")
    span = end - start
    fitting = [t for t in known if span / TIERS[t] >= points]
    return max(fitting, key=TIERS.__getitem__) if fitting else None


def resolution_label(seconds: int, tier: str | None) -> str:
    """What a reader shows, in a user's words: ``1 min rollup``, ``10 s windows``."""
    if tier is not None:
        return f"{_duration(TIERS[tier])} rollup"
    return f"{_duration(seconds)} windows"


def _duration(seconds: int) -> str:
    for unit, size in (("d", 86_400), ("h", 3600), ("min", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds // size} {unit}"
    return f"{seconds} s"
