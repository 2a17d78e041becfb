"""``offset`` and ``@`` (:class:`~.promql_tree.Shift`), as Prometheus 2.x applies them: a
selector with ``offset d`` is evaluated at each step ``t`` as it would be at ``t - d`` (a
negative ``d``: later) and its points stay at ``t``; with ``@ T`` (a unix time, or the query's
``start()`` or ``end()``, both the instant's time for an instant query) it is evaluated once,
at ``T - d``, and that value is every step's. A range selector's ``[r]`` then ends at the
shifted time."""

from __future__ import annotations

from collections.abc import Sequence

from dashboard.promapi.promql_rows import Row
from dashboard.promapi.promql_tree import Shift
from dashboard.promapi.shape import Point

__all__ = ["moved", "shifted", "spread"]


def shifted(shift: Shift, times: range, bounds: tuple[int, int]) -> range:
    """The times (unix ms) a selector with ``shift`` is evaluated at, for the steps ``times``
    of a query from ``bounds[0]`` to ``bounds[1]``: one time if it has ``@``."""
    if shift.at is None:
        return range(times.start - shift.offset_ms, times.stop - shift.offset_ms, times.step)
    at = {"start": bounds[0], "end": bounds[1]}.get(str(shift.at), shift.at)
    assert isinstance(at, int)
    return range(at - shift.offset_ms, at - shift.offset_ms + 1)


def spread(rows: Sequence[Row], own: range, steps: int) -> list[Row]:
    """Rows evaluated at ``own`` as the rows of ``steps`` steps: an ``@`` selector's one
    value repeated at each step (else the rows as they are)."""
    if len(own) == steps:
        return list(rows)
    return [(labels, values * steps) for labels, values in rows]


def moved(
    rows: Sequence[tuple[dict[str, str], list[Point]]], shift: Shift, times: range
) -> list[tuple[dict[str, str], list[Point]]]:
    """A bare selector's points read at :func:`shifted` times, put back at the steps
    ``times``: later by the offset, or (``@``) the one point at every step."""
    if shift.at is not None:
        return [(labels, [(t, points[0][1]) for t in times]) for labels, points in rows if points]
    return [(labels, [(t + shift.offset_ms, v) for t, v in points]) for labels, points in rows]
