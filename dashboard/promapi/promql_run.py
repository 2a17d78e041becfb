"""Answering a PromQL expression (:mod:`.promql_parse`) from storage, within the API's limits:
one samples budget (:mod:`.budget`, ``max_samples``) a query. Each selector's series are
chosen as a bare selector's are, at most as many as the budget has left; its series x steps and
its planned windows x the series each feeds are charged before anything is read, and every
window read is charged again as it comes, so a query past the budget stops there (an expression
reads each selector's windows once, over the range plus its look-back or ``[range]``; one read
gives all the functions of a query, or of one server of a ``BY server`` query). The deadline is
checked while reading and evaluating; ``max_points`` bounds the answer and what operators
build."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial

from apm.query import WindowResult
from dashboard.promapi.budget import Samples
from dashboard.promapi.evaluate import Deadline, Series, check_points
from dashboard.promapi.plan import by_query, per_window
from dashboard.promapi.promql_eval import LOOKBACK_MS, Raw, Row, Steps, evaluate
from dashboard.promapi.promql_sort import ordered
from dashboard.promapi.promql_tree import Node
from dashboard.promapi.selector import Selector
from dashboard.promapi.server_reads import collect, planned_rows, read_servers
from dashboard.promapi.shape import format_time, format_value, matrix, vector
from dashboard.promapi.store import Store

__all__ = ["PromqlRunner"]

# (selectors, deadline, [start, end] of the samples wanted (unix ms), the budget) -> the series.
Select = Callable[[Sequence[Selector], Deadline, tuple[int, int], Samples], list[Series]]


class PromqlRunner:
    def __init__(self, store: Store, select: Select) -> None:
        self._store, self._select = store, select

    def range_query(
        self,
        expr: Node,
        times: range,
        deadline: Deadline,
        lookback_ms: int = LOOKBACK_MS,
        end_ms: int | None = None,
    ) -> dict[str, object]:
        """``end_ms``: the query's ``end`` (``@ end()``), when it is not the last step."""
        bounds = (times[0], times[-1] if end_ms is None else end_ms)
        found = self._run(expr, times, deadline, lookback_ms, bounds)
        if isinstance(found, float):
            self._store.on_points(len(times))
            return matrix([({}, [(t, found) for t in times])])
        # What was evaluated fit the samples budget; the answer must fit max_points too.
        check_points(len(found), len(times), self._store.limits.max_points)
        rows = [
            (labels, [(t, v) for t, v in zip(times, values, strict=True) if v is not None])
            for labels, values in found
        ]
        self._store.on_points(sum(len(p) for _, p in rows))
        return matrix(rows)

    def instant_query(
        self, expr: Node, t_ms: int, deadline: Deadline, lookback_ms: int = LOOKBACK_MS
    ) -> dict[str, object]:
        found = self._run(expr, range(t_ms, t_ms + 1), deadline, lookback_ms, (t_ms, t_ms))
        if isinstance(found, float):
            return {"resultType": "scalar", "result": [format_time(t_ms), format_value(found)]}
        rows = [(labels, (t_ms, values[0])) for labels, values in found if values[0] is not None]
        self._store.on_points(len(rows))
        return vector(rows, keep_order=ordered(expr))

    def _run(
        self,
        expr: Node,
        steps: range,
        deadline: Deadline,
        lookback_ms: int,
        bounds: tuple[int, int],
    ) -> float | list[Row]:
        limits = self._store.limits
        samples = Samples(limits.max_samples)

        def source(
            selector: Selector, before_ms: int, times: range, newest: bool = False
        ) -> list[Raw]:
            span_ms = (times[0] - before_ms, times[-1])
            found = self._select([selector], deadline, span_ms, samples)
            samples.spend(len(found) * len(times))  # the rows the selector's values make
            groups = by_query(found)
            spans = {qid: _span(group[0], before_ms, times) for qid, group in groups.items()}
            # Instant selectors want, of the windows ending by the first step, the newest.
            until = {qid: _until(group, times) if newest else None for qid, group in groups.items()}
            each = {qid: per_window(g) for qid, g in groups.items()}
            planned = sum(_planned(g, spans[q], until[q]) * each[q] for q, g in groups.items())
            samples.plan(planned, "windows read x the series each feeds")
            read: dict[tuple[str, str], list[WindowResult]] = {}  # (query id, server)
            for qid, group in groups.items():
                spend = partial(samples.spend, each[qid])
                got = self._read(group, spans[qid], spend, deadline, until[qid])
                read.update(((qid, server), rows) for server, rows in got.items())
            return [_raw(s, read[s.query.id, s.server]) for s in found]

        latest = partial(source, newest=True)
        sub_ms = round(limits.subquery_step_seconds * 1000)
        at = Steps(
            steps,
            source,
            deadline,
            limits.max_points,
            lookback_ms,
            latest,
            bounds,
            sub_ms,
            charge=samples.spend,
        )
        return evaluate(expr, at)

    def _read(
        self,
        group: list[Series],
        span: tuple[int, int],
        spend: Callable[[], None],
        deadline: Deadline,
        newest_until: int | None,
    ) -> dict[str, list[WindowResult]]:
        """server ("" for a plain query) -> the windows of ``group``'s query in ``span``
        (``newest_until``: of those starting by then, at least each server's newest)."""
        lo, hi = span[0] / 1000, span[1] / 1000
        store, query = self._store, group[0].query
        if query.query.by_server:
            servers = list(dict.fromkeys(s.server for s in group))
            width, fleet = query.query.window_seconds * 1000, group[0].fleet
            read_all = partial(read_servers, store.repo, store.guard, query.id, servers, fleet)
            return read_all(width, (lo, hi), spend, deadline, newest_until)
        read = partial(store.repo.read_results, query.id, lo, hi)
        return {"": store.guard("read_results", partial(collect, read, spend, deadline))}


def _planned(group: list[Series], span: tuple[int, int], newest_until: int | None) -> int:
    """The windows reading ``group``'s query over ``span`` (ms) returns at most."""
    width = group[0].query.query.window_seconds * 1000
    if group[0].server:
        servers, fleet, span_s = (
            len({s.server for s in group}),
            group[0].fleet,
            (span[0] / 1000, span[1] / 1000),
        )
        return planned_rows(width, span_s, servers, fleet, newest_until)
    return (span[1] - span[0]) // width + 1


def _until(group: list[Series], times: range) -> int:
    """The start (ms) of the last window that ends by the first step."""
    return times[0] - group[0].query.query.window_seconds * 1000


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
