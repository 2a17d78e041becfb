"""Which stored windows a bare selector's query reads for the steps of a request (by
:class:`~.run.Evaluator`), and how many, so the limit is checked before anything is read.

A query reads only what its steps need: the whole range when its windows are no more than two
per step, else the one window a step that can give that step's point, by its start, in one
statement per day and 100 starts (a 30-day range at a 1 h step over 10 s windows reads 720
windows in 30 statements, not 259,200 windows, nor 720 range reads). A ``BY server`` query's
servers are read over the whole range, per server or per window (:mod:`.server_reads`)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

from dashboard.promapi.evaluate import Series, read_window
from dashboard.promapi.server_reads import planned_rows

__all__ = ["Span", "by_query", "plan", "planned", "reads_of", "windows_in"]

Span = tuple[float, float]  # [from, to) of window starts, epoch seconds


def plan(window_ms: int, times: range) -> Span | list[float]:
    """The reads one query needs for ``times``: the span of starts over the range when that is
    at most two windows a step, else the one start a step that can give its point (windows are
    tumbling and aligned to the epoch: the window ending in (t - w, t] starts at
    floor((t - w) / w) w), read together in a few statements."""
    whole = read_window(window_ms, times[0], times[-1])
    if len(times) == 1 or windows_in(window_ms, whole) <= 2 * len(times):
        return whole
    starts = {(t - window_ms) // window_ms * window_ms for t in times}
    return sorted(s / 1000 for s in starts if s >= 0)


def windows_in(window_ms: int, span: Span) -> int:
    """Windows of ``window_ms`` whose starts fall in ``span`` (at most)."""
    return max(0, math.ceil((span[1] - span[0]) * 1000 / window_ms))


def planned(window_ms: int, times: range) -> int:
    """The windows :func:`plan`'s reads return at most (without :func:`plan`'s list)."""
    whole = windows_in(window_ms, read_window(window_ms, times[0], times[-1]))
    return whole if len(times) == 1 or whole <= 2 * len(times) else len(times)


def reads_of(found: Sequence[Series], times: range) -> int:
    """The samples reading the queries of ``found`` loads at most: the windows read (a query's
    windows once for all its functions, a ``BY server`` query's for all its servers selected)
    x the series each window feeds (:func:`per_window`)."""
    total = 0
    for group in by_query(found).values():
        width = group[0].query.query.window_seconds * 1000
        if group[0].server:
            span = read_window(width, times[0], times[-1])
            windows = planned_rows(width, span, len({s.server for s in group}), group[0].fleet)
        else:
            windows = planned(width, times)
        total += windows * per_window(group)
    return total


def per_window(group: Sequence[Series]) -> int:
    """The samples one window of ``group``'s query gives: its series selected, of one server
    for a ``BY server`` query (the most any server has)."""
    return max(Counter(s.server for s in group).values())


def by_query(found: Sequence[Series]) -> dict[str, list[Series]]:
    out: dict[str, list[Series]] = {}
    for s in found:
        out.setdefault(s.query.id, []).append(s)
    return out
