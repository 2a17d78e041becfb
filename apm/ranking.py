"""The top-N of one window of a ``BY server ... TOP n BY f`` query (``BOTTOM``: the lowest).

The aggregator ranks each window it updates from every server's result of that window and
stores the ranking (``storage``), so that reading the top-N of a window reads ``n + 1`` rows,
not every server's. The rule, here once for the aggregator, the dashboard and the tests:

- servers are ordered by the value of ``f`` (highest first for ``TOP``, lowest for
  ``BOTTOM``); equal values by server name, ascending, so a tie always ranks the same way;
- a server without a finite value of ``f`` (a NaN, a window with no value) is not ranked;
  it counts in "others";
- the servers after the first ``n`` fold into one row, :data:`OTHERS`: its ``samples`` add
  up, and of the functions only those that fold exactly from per-server results are given
  (``count``, ``sum``, ``min``, ``max``, and ``avg`` as the sample-weighted mean); a
  percentile of the rest would need their sketches, so "others" has none. With no server
  left over there is no "others" row.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import NamedTuple

from apm.query import Query, WindowResult

__all__ = ["OTHERS", "Ranked", "rank"]

# Not a server name (apm.model.SERVER_NAME_RE starts with a letter or digit).
OTHERS = "(others)"


class Ranked(NamedTuple):
    """One row of a window's ranking: ``rank`` 1..n, then n + 1 for :data:`OTHERS`."""

    query_id: str
    window_start: float
    window_seconds: int
    rank: int
    server: str
    values: dict[str, float]
    samples: int
    updated_at: float


def _finite(value: object) -> bool:
    return isinstance(value, int | float) and math.isfinite(value)


def rank(query: Query, rows: Iterable[WindowResult]) -> list[Ranked]:
    """The ranking of one window from each server's result of it (``rows``: one per server,
    all of one query and window). Empty when ``query`` has no ``TOP``/``BOTTOM``."""
    top = query.top
    rows = [r for r in rows if r.server]
    if top is None or not rows:
        return []
    key = top.function.key
    ranked = [r for r in rows if _finite(r.values.get(key))]
    sign = 1.0 if top.bottom else -1.0
    ranked.sort(key=lambda r: (sign * r.values[key], r.server))
    head = ranked[: top.n]
    chosen = {r.server for r in head}
    rest = [r for r in rows if r.server not in chosen]
    first = rows[0]
    updated = max(r.updated_at for r in rows)
    out = [
        Ranked(
            first.query_id,
            first.window_start,
            first.window_seconds,
            i + 1,
            r.server,
            r.values,
            r.samples,
            r.updated_at,
        )
        for i, r in enumerate(head)
    ]
    if rest:
        out.append(
            Ranked(
                first.query_id,
                first.window_start,
                first.window_seconds,
                len(head) + 1,
                OTHERS,
                _fold(query, rest),
                sum(r.samples for r in rest),
                updated,
            )
        )
    return out


def _fold(query: Query, rest: list[WindowResult]) -> dict[str, float]:
    """The functions of the servers in ``rest`` that fold exactly from their results. A fold
    that overflows a double (sums near 1e308) is left out, as the window's own value would be
    (aggregator/evaluate.py, "Overflow"): storage refuses a number that is not finite."""
    out: dict[str, float] = {}
    weights = [r.samples for r in rest]
    total = sum(weights)
    for fn in query.functions:
        values = [r.values.get(fn.key) for r in rest]
        if not all(_finite(v) for v in values):
            continue
        vals = [float(v) for v in values if v is not None]
        try:
            if fn.name in ("count", "sum"):
                folded = math.fsum(vals)
            elif fn.name == "min":
                folded = min(vals)
            elif fn.name == "max":
                folded = max(vals)
            elif fn.name == "avg" and total > 0:
                folded = math.fsum(v * w / total for v, w in zip(vals, weights, strict=True))
            else:
                continue
        except OverflowError:  # fsum's intermediate sum left the double range
            continue
        if math.isfinite(folded):
            out[fn.key] = folded
    return out
