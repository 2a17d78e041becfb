"""Evaluating a :mod:`.promql_parse` tree at each step of a query, over raw samples.

A series' samples are its stored windows, each at its end (:mod:`.evaluate`). An instant
selector at step ``t`` takes the newest sample in ``[t - lookback, t]`` (Prometheus 2.x's
look-back delta, 5 minutes unless the query's ``lookback_delta`` says otherwise, both ends
included); stored series carry no staleness markers, so a series that stops keeps its last
value for the look-back, as a series imported into Prometheus does. A range selector ``[r]``
takes every sample in ``[t - r, t]``, both ends included, as Prometheus 2.x does. A vector is
a list of rows, each a label set and its values aligned with the steps (None: no point
there); a scalar is one float (no time functions). A selector with ``offset`` or ``@`` is
evaluated at its own times (:mod:`.promql_shift`); a subquery once over its whole range, at
the multiples of its step, into the samples of its function; ``absent`` is 1 where its vector
has no point.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from dashboard.promapi.evaluate import Deadline, LimitError
from dashboard.promapi.promql_aggregate import aggregate
from dashboard.promapi.promql_elementwise import apply
from dashboard.promapi.promql_functions import binary, compare, over_time
from dashboard.promapi.promql_labels import relabel
from dashboard.promapi.promql_match import vector_binop
from dashboard.promapi.promql_rows import Row, dense
from dashboard.promapi.promql_shift import shifted, spread
from dashboard.promapi.promql_sort import sort_rows
from dashboard.promapi.promql_tree import (
    Absent,
    Aggregate,
    Binary,
    Elementwise,
    Node,
    Number,
    OverTime,
    Relabel,
    Sort,
    Subquery,
    Vector,
)
from dashboard.promapi.selector import Selector

__all__ = [
    "LOOKBACK_MS",
    "MAX_POINTS",
    "SUBQUERY_STEP_MS",
    "Raw",
    "Row",
    "Source",
    "Steps",
    "evaluate",
]


@dataclass(frozen=True)
class Raw:
    """One series' samples (its windows' values at their ends, unix ms), oldest first."""

    labels: dict[str, str]
    times: list[int]
    values: list[float]


# (selector, how far before the first time its samples are needed, in ms, the times it is
# evaluated at: the steps, or those of its offset or @) -> its series.
Source = Callable[[Selector, int, range], list[Raw]]
_CHECK_EVERY = 512
MAX_POINTS = 500_000  # the API's default APM_DASHBOARD_PROM_MAX_POINTS
LOOKBACK_MS = 300_000  # Prometheus' default --query.lookback-delta
SUBQUERY_STEP_MS = 60_000  # Prometheus' default global evaluation_interval


@dataclass(frozen=True)
class Steps:
    """What every node of one evaluation shares: the steps (unix ms), where samples come
    from, the deadline, the cells an operator's result may have, the look-back."""

    times: range
    source: Source
    deadline: Deadline
    max_points: int = MAX_POINTS
    lookback_ms: int = LOOKBACK_MS
    # Where an instant selector's samples come from, when only the newest one at or before
    # each step matters (storage may then read less); None: ``source``.
    latest: Source | None = None
    # The query's start and end (``@ start()``, ``@ end()``); None: the first and last step.
    bounds: tuple[int, int] | None = None
    # A subquery's step when it names none (``[1h:]``): Prometheus' evaluation_interval.
    subquery_step_ms: int = SUBQUERY_STEP_MS
    # Charges the samples budget (:mod:`.budget`) with the cells a selector's rows hold past
    # what ``source`` charged before reading (an @ value repeated at every step).
    charge: Callable[[int], None] = lambda _samples: None

    def span(self) -> tuple[int, int]:
        return self.bounds or (self.times[0], self.times[-1])


def evaluate(node: Node, at: Steps) -> float | list[Row]:
    """``node`` at each of ``at.times``: a scalar, or a vector's rows (an operator between
    vectors or ``count_values`` makes at most ``at.max_points`` cells)."""
    times, deadline = at.times, at.deadline
    if isinstance(node, Number):
        return node.value
    if isinstance(node, Vector):
        own = shifted(node.shift, times, at.span())
        found = (at.latest or at.source)(node.selector, at.lookback_ms, own)
        at.charge(len(found) * (len(times) - len(own)))  # an @ value at every step
        rows = [_instant(raw, own, at.lookback_ms, deadline) for raw in found]
        return spread(rows, own, len(times))
    if isinstance(node, OverTime):
        own = shifted(node.shift, times, at.span())
        if isinstance(node.selector, Subquery):
            found = _subquery(node.selector, node.range_ms, own, at)
            at.charge(len(found) * len(own))  # its rows, as a selector's are charged
        else:
            found = at.source(node.selector, node.range_ms, own)
        at.charge(len(found) * (len(times) - len(own)))  # an @ value at every step
        rows = [_ranged(node, raw, own, deadline) for raw in found]
        kept = [row for row in rows if any(v is not None for v in row[1])]
        return spread(kept, own, len(times))
    if isinstance(node, Absent):
        inner = evaluate(node.expr, at)
        assert isinstance(inner, list)  # the parser refuses absent() of a number
        return _absent(node, inner, len(times), deadline)
    if isinstance(node, Aggregate):
        inner = evaluate(node.expr, at)
        assert isinstance(inner, list)  # the parser refuses aggregating a number
        return aggregate(node, inner, len(times), deadline, at.max_points)
    if isinstance(node, Elementwise):
        inner = evaluate(node.expr, at)
        assert isinstance(inner, list)  # the parser refuses a function of a number
        return apply(node.fn, node.params, inner)
    if isinstance(node, Sort):
        inner = evaluate(node.expr, at)
        assert isinstance(inner, list)  # the parser refuses sorting a number
        return sort_rows(node.desc, inner, len(times))
    if isinstance(node, Relabel):
        inner = evaluate(node.expr, at)
        assert isinstance(inner, list)  # the parser refuses relabelling a number
        return relabel(node.fn, node.args, inner, (len(times), at.max_points, deadline))
    assert isinstance(node, Binary)
    lhs, rhs = evaluate(node.lhs, at), evaluate(node.rhs, at)
    if isinstance(lhs, list) and isinstance(rhs, list):
        return dense(vector_binop(node, lhs, rhs, len(times), deadline), len(times), at.max_points)
    if isinstance(lhs, list):
        assert not isinstance(rhs, list)
        return _with_scalar(node, lhs, rhs, swap=False)
    assert isinstance(rhs, list)
    return _with_scalar(node, rhs, lhs, swap=True)


def _instant(raw: Raw, times: range, lookback_ms: int, deadline: Deadline) -> Row:
    out: list[float | None] = []
    for n, t in enumerate(times):
        if n % _CHECK_EVERY == 0:
            deadline.check()
        i = bisect.bisect_right(raw.times, t) - 1
        out.append(raw.values[i] if i >= 0 and t - raw.times[i] <= lookback_ms else None)
    return dict(raw.labels), out


def _ranged(node: OverTime, raw: Raw, times: range, deadline: Deadline) -> Row:
    out: list[float | None] = []
    for n, t in enumerate(times):
        if n % _CHECK_EVERY == 0:
            deadline.check()
        lo = bisect.bisect_left(raw.times, t - node.range_ms)
        hi = bisect.bisect_right(raw.times, t)
        out.append(over_time(node.fn, raw.values[lo:hi], node.param) if hi > lo else None)
    labels = dict(raw.labels)
    if node.fn != "last":  # last_over_time keeps the metric name, as in Prometheus
        labels.pop("__name__", None)
    return labels, out


def _subquery(sub: Subquery, range_ms: int, own: range, at: Steps) -> list[Raw]:
    """The subquery's series: its expression at each multiple of its step from the first
    ``own`` time less its range to the last (Prometheus' alignment, to the epoch), at most
    ``max_points`` steps, the points of each series its samples."""
    step = sub.step_ms or at.subquery_step_ms
    first = -(-(own[0] - range_ms) // step) * step  # the first multiple of step in the range
    inner = range(first, own[-1] + 1, step)
    if len(inner) > at.max_points:
        raise LimitError(
            f"the subquery evaluates its expression at {len(inner)} steps, more than "
            f"{at.max_points} (APM_DASHBOARD_PROM_MAX_POINTS); raise its step, or shorten "
            "its range or the query's"
        )
    if not inner:
        return []
    found = evaluate(sub.expr, replace(at, times=inner, bounds=at.span()))
    assert isinstance(found, list)  # the parser refuses a subquery of a number
    return [
        Raw(
            labels,
            [t for t, v in zip(inner, values, strict=True) if v is not None],
            [v for v in values if v is not None],
        )
        for labels, values in found
    ]


def _absent(node: Absent, rows: Sequence[Row], steps: int, deadline: Deadline) -> list[Row]:
    present = [False] * steps
    for n, (_, values) in enumerate(rows):
        if n % _CHECK_EVERY == 0:
            deadline.check()
        for i, v in enumerate(values):
            if v is not None:
                present[i] = True
    if all(present):
        return []
    return [(dict(node.labels), [None if p else 1.0 for p in present])]


def _with_scalar(node: Binary, rows: Sequence[Row], scalar: float, swap: bool) -> list[Row]:
    """``vector op scalar`` (or ``scalar op vector`` when ``swap``): arithmetic and ``bool``
    drop the metric name; a comparison without ``bool`` filters, keeping the vector's value."""
    arithmetic = node.op in ("+", "-", "*", "/", "%", "^")
    out: list[Row] = []
    for labels, values in rows:
        new: list[float | None] = []
        for v in values:
            if v is None:
                new.append(None)
                continue
            a, b = (scalar, v) if swap else (v, scalar)
            if arithmetic:
                new.append(binary(node.op, a, b))
            elif node.bool_:
                new.append(1.0 if compare(node.op, a, b) else 0.0)
            else:
                new.append(v if compare(node.op, a, b) else None)
        if arithmetic or node.bool_:
            labels = {k: x for k, x in labels.items() if k != "__name__"}
        out.append((labels, new))
    return out
