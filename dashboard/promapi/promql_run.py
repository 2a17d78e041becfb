"""Answering a PromQL expression (:mod:`.promql_parse`) from storage, within the API's limits:
each selector's series are chosen as a bare selector's are (at most ``max_series``), series x
steps is at most ``max_points`` before anything is read, every window read counts against
``max_points`` too (an expression reads each selector's windows once, over the range plus its
look-back or ``[range]``; one read gives all the functions of a query, or of one server of a
``BY server`` query), and the deadline is checked while reading and evaluating."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from apm.query import WindowResult
from dashboard.promapi.evaluate import Deadline, LimitError, Series
from dashboard.promapi.promql_eval import LOOKBACK_MS, Raw, Row, Steps, evaluate
from dashboard.promapi.promql_parse import Expr
from dashboard.promapi.selector import Selector
from dashboard.promapi.shape import format_time, format_value, matrix, vector
from dashboard.promapi.store import Store

__all__ = ["PromqlRunner"]

# (selectors, deadline, [start, end] of the samples wanted, unix ms) -> the series.
Select = Callable[[Sequence[Selector], Deadline, tuple[int, int]], list[Series]]


class PromqlRunner:
    def __init__(self, store: Store, select: Select) -> None:
        self._store, self._select = store, select

    def range_query(
        self, expr: Expr, times: range, deadline: Deadline, lookback_ms: int = LOOKBACK_MS
    ) -> dict[str, object]:
        found = self._run(expr, times, deadline, lookback_ms)
        if isinstance(found, float):
            self._store.on_points(len(times))
            return matrix([({}, [(t, found) for t in times])])
        rows = [
            (labels, [(t, v) for t, v in zip(times, values, strict=True) if v is not None])
            for labels, values in found
        ]
        self._store.on_points(sum(len(p) for _, p in rows))
        return matrix(rows)

    def instant_query(
        self, expr: Expr, t_ms: int, deadline: Deadline, lookback_ms: int = LOOKBACK_MS
    ) -> dict[str, object]:
        found = self._run(expr, range(t_ms, t_ms + 1), deadline, lookback_ms)
        if isinstance(found, float):
            return {"resultType": "scalar", "result": [format_time(t_ms), format_value(found)]}
        rows = [(labels, (t_ms, values[0])) for labels, values in found if values[0] is not None]
        self._store.on_points(len(rows))
        return vector(rows)

    def _run(
        self, expr: Expr, times: range, deadline: Deadline, lookback_ms: int
    ) -> float | list[Row]:
        limits = self._store.limits
        budget = [limits.max_points]

        def source(selector: Selector, before_ms: int) -> list[Raw]:
            found = self._select([selector], deadline, (times[0] - before_ms, times[-1]))
            if len(found) * len(times) > limits.max_points:
                raise LimitError(
                    f"{len(found)} series x {len(times)} steps is more than "
                    f"{limits.max_points} points (APM_DASHBOARD_PROM_MAX_POINTS); "
                    "narrow the selector, shorten the range or raise the step"
                )
            spans = [_span(s, before_ms, times) for s in found]
            planned = sum(
                (hi - lo) // (s.query.query.window_seconds * 1000) + 1
                for s, (lo, hi) in zip(found, spans, strict=True)
            )
            if planned > budget[0]:
                raise LimitError(
                    f"reading about {planned} windows is more than the "
                    f"{budget[0]} left of APM_DASHBOARD_PROM_MAX_POINTS; narrow the selector, "
                    "shorten the range, the [range] of *_over_time() or lookback_delta"
                )
            read: dict[tuple[str, str], list[WindowResult]] = {}  # (query id, server)
            for s, span in zip(found, spans, strict=True):
                if (s.query.id, s.server) not in read:
                    read[s.query.id, s.server] = self._read(s, span, budget, deadline)
            return [_raw(s, read[s.query.id, s.server]) for s in found]

        return evaluate(expr, Steps(times, source, deadline, limits.max_points, lookback_ms))

    def _read(
        self, series: Series, span: tuple[int, int], budget: list[int], deadline: Deadline
    ) -> list[WindowResult]:
        lo, hi = span[0] / 1000, span[1] / 1000
        repo, qid, server = self._store.repo, series.query.id, series.server
        if server:
            windows = self._store.guard(
                "read_server_results", lambda: repo.read_server_results(qid, server, lo, hi)
            )
        else:
            windows = self._store.guard("read_results", lambda: repo.read_results(qid, lo, hi))
        out: list[WindowResult] = []
        for i, w in enumerate(windows):
            if i % 1000 == 999:
                deadline.check()
            budget[0] -= 1
            if budget[0] < 0:
                raise LimitError(
                    "the query read more windows than APM_DASHBOARD_PROM_MAX_POINTS; shorten "
                    "the range, the [range] of *_over_time() or narrow the selector"
                )
            out.append(w)
        return out


def _raw(series: Series, windows: list[WindowResult]) -> Raw:
    """``series``' samples among its query's (or server's) ``windows``."""
    width = series.query.query.window_seconds * 1000
    stamps: list[int] = []
    values: list[float] = []
    for w in windows:
        v = w.values.get(series.fn)
        if w.window_seconds * 1000 == width and v is not None:
            stamps.append(round(w.window_start * 1000) + width)
            values.append(v)
    return Raw(dict(series.labels), stamps, values)


def _span(series: Series, before_ms: int, times: range) -> tuple[int, int]:
    """The [from, to) of window starts (ms) whose ends, the samples, fall in
    [first step - before, last step] (``before``: the look-back or the ``[range]``)."""
    width = series.query.query.window_seconds * 1000
    return max(0, times[0] - before_ms - width), times[-1] - width + 1
